# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The model at scale: time and peak RSS of the views, on one core.
  - report and maps on one process that keeps N one-page mappings (one
    merged kernel VMA), N = 10K and 100K, and their growth
  - report on ~2M BPF events: a perf-map written a byte per write(2)
    while 500 short-lived processes come and go; events per second
  - peak RSS of report on 1x and 10x the duration of a steady
    mmap/munmap churn, and their ratio
JT_BASE=/path/to/older/jittrace runs the same views with it alongside
(each bounded by BASE_BUDGET seconds, default 600).
usage: bench_model.py BUILD [SCALE]   (SCALE divides every size; for tests)"""
import os
import re
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
SCALE = int(sys.argv[2]) if len(sys.argv) > 2 else 1
JT = os.path.join(BUILD, "jittrace")
LOAD = os.path.join(BUILD, "workloads", "modelload")
BASE = os.environ.get("JT_BASE")
BUDGET = float(os.environ.get("BASE_BUDGET", "600"))
ONE_CORE = ["taskset", "-c", "0"]


def timed(args, budget=None):
    """(seconds, peak RSS MB, finished) of one command on one core."""
    t0 = time.monotonic()
    p = subprocess.Popen(ONE_CORE + args, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            return (time.monotonic() - t0, ru.ru_maxrss / 1024,
                    os.waitstatus_to_exitcode(status) == 0)
        if budget and time.monotonic() - t0 > budget:
            p.kill()
            _, _, ru = os.wait4(p.pid, 0)
            return time.monotonic() - t0, ru.ru_maxrss / 1024, False
        time.sleep(0.01)


def record(tmp, name, args, opts=()):
    data = os.path.join(tmp, name + ".data")
    p = subprocess.run([JT, "record", "-o", data, "-e", "cpu-clock",
                        *opts, "--user", "nobody", "--", LOAD, *args],
                       capture_output=True, text=True, check=True)
    m = re.search(r"\((\d+) BPF events, (\d+) perf records", p.stderr)
    return data, int(m.group(1)) + int(m.group(2))


def view(what, data, label):
    t, rss, ok = timed([JT, what, "-i", data])
    line = f"  {label:34s} {t:7.2f} s {rss:7.0f} MB"
    if BASE:
        bt, brss, bok = timed([BASE, what, "-i", data], BUDGET)
        line += (f"   base: {bt:7.2f} s {brss:7.0f} MB" if bok else
                 f"   base: did not finish in {bt:.0f} s ({brss:.0f} MB)")
    print(line, flush=True)
    if not ok:
        sys.exit(f"bench: jittrace {what} failed on {data}")
    return t, rss


def main():
    tmp = tempfile.mkdtemp(prefix="jt-bench-model-")
    print(f"model at scale, one core (taskset -c 0){', base ' + BASE if BASE else ''}")
    small, big = 10000 // SCALE, 100000 // SCALE
    print(f"one process keeping N one-page mappings (one kernel VMA):")
    res = {}
    for n in (small, big):
        data, _ = record(tmp, f"keep{n}", ["keep", str(n)])
        for what in ("report", "maps"):
            res[what, n] = view(what, data, f"{what} N={n}")
    for what in ("report", "maps"):
        print(f"  {what}: {big // small}x the mappings took "
              f"{res[what, big][0] / res[what, small][0]:.1f}x the time")

    n = 2000000 // SCALE
    data, events = record(tmp, "perfmap", ["perfmap", str(n), str(500 // SCALE)],
                          ["--bpf-ring", "131072"])
    for f in os.listdir("/tmp"):
        if re.fullmatch(r"perf-\d+\.map", f) and os.stat("/tmp/" + f).st_uid == 65534:
            os.unlink("/tmp/" + f)
    print(f"a perf-map written a byte per write(2), {500 // SCALE} processes churning:")
    t, _ = view("report", data, f"report, {events} events")
    print(f"  {events / t / 1e6:.2f} M events per second")

    print("steady mmap/munmap churn, 1x and 10x as long:")
    rss = []
    for k in (1, 10):
        data, events = record(tmp, f"churn{k}", ["churn", str(100000 * k // SCALE)])
        rss.append(view("report", data, f"report, {k}x ({events} events)")[1])
    print(f"  peak RSS 10x / 1x: {rss[1] / rss[0]:.2f}")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
