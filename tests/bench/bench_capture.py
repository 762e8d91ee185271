#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What capture costs outside the traced loop, against perf in the same
run (medians of interleaved runs):
  - start-up and teardown of `record -- CMD`, apart: CMD prints the
    monotonic time it ran at, the bench notes when the tracer was started
    and when it returned;
  - a bystander: a getppid loop in a process nobody traces, while the
    tracer records another (`-p OTHER`): syscall tracepoints make every
    task take the slow syscall path;
  - a busy /tmp: the recorder's own CPU while it records an idle process
    and a logger appends 10,000 lines a second to a file in /tmp.
usage: bench_capture.py BUILD_DIR [RUNS]"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
JT = os.path.join(BUILD, "jittrace")
LOOP = os.path.join(BUILD, "workloads", "mmloop")
TMP = tempfile.mkdtemp(prefix="jt-bench-")
os.chmod(TMP, 0o755)
AS_USER = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]


def value(out, key):
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == key:
            return float(f[1])
    raise RuntimeError(f"no {key} in {out!r}")


def tracer(name, data, tail):
    if name == "jittrace":
        return [JT, "record", "-o", data, "--user", "nobody", "--", *tail]
    return ["perf", "record", "-q", "-o", data, "--", *AS_USER, *tail]


def startup_teardown(name):
    """(start-up, teardown) in ms of one run of `record -- mmloop now`."""
    data = os.path.join(TMP, f"{name}.data")
    t0 = time.monotonic_ns()
    p = subprocess.run(tracer(name, data, [LOOP, "now"]), capture_output=True, text=True)
    t2 = time.monotonic_ns()
    t1 = value(p.stdout, "now_ns")
    return (t1 - t0) / 1e6, (t2 - t1) / 1e6


def attached(name, pid, secs):
    data = os.path.join(TMP, f"{name}-p.data")
    if name == "jittrace":
        args = [JT, "record", "-p", str(pid), "-o", data, "--duration", str(secs)]
    else:
        args = ["perf", "record", "-q", "-p", str(pid), "-o", data, "--", "sleep", str(secs)]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)  # attached and settled
    return p


def bystander(name, other, n):
    """ns per getppid in an untraced process, the tracer on OTHER."""
    p = attached(name, other, 30) if name != "none" else None
    try:
        out = subprocess.run([*AS_USER, LOOP, "getppid", str(n)],
                             capture_output=True, text=True).stdout
    finally:
        if p:
            p.terminate()
            p.wait()
    return value(out, "ns_per_op")


def recorder_cpu(other, writer, secs):
    """CPU seconds of `record -p OTHER --duration SECS`, a /tmp logger or not."""
    data = os.path.join(TMP, "cpu.data")
    log = subprocess.Popen([*AS_USER, LOOP, "tmplog", str(secs + 2), "10000"],
                           stdout=subprocess.DEVNULL) if writer else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([JT, "record", "-p", str(other), "-o", data, "--duration", str(secs)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if log:
        log.wait()
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def med(xs):
    return statistics.median(xs)


def main():
    print(f"capture cost outside the loop, median of {RUNS} interleaved runs")
    st = {"jittrace": [], "perf": []}
    for _ in range(RUNS):
        for name in st:
            st[name].append(startup_teardown(name))
    for name, runs in st.items():
        s, t = med([r[0] for r in runs]), med([r[1] for r in runs])
        print(f"  record -- CMD, {name:8s}: start-up {s:7.1f} ms  teardown {t:7.1f} ms"
              f"  total {s + t:7.1f} ms")
    js = med([sum(r) for r in st["jittrace"]])
    ps = med([sum(r) for r in st["perf"]])
    print(f"  wall ratio jittrace/perf: {js / ps:.2f}")

    other = subprocess.Popen([*AS_USER, "sleep", "1000"])
    try:
        by = {"none": [], "jittrace": [], "perf": []}
        for _ in range(RUNS):
            for name in by:
                by[name].append(bystander(name, other.pid, 300000))
        base = med(by["none"])
        print("getppid in an untraced process while the tracer records -p OTHER:")
        for name, xs in by.items():
            print(f"  {name:8s} {med(xs):8.1f} ns/call  ratio {med(xs) / base:.3f}")
        secs = 10
        idle = [recorder_cpu(other.pid, False, secs) for _ in range(3)]
        busy = [recorder_cpu(other.pid, True, secs) for _ in range(3)]
        print(f"recorder CPU over {secs} s of record -p IDLE (median of 3):")
        print(f"  quiet /tmp: {med(idle) * 1000:7.1f} ms   10,000 writes/s to a "
              f"/tmp log: {med(busy) * 1000:7.1f} ms")
    finally:
        other.kill()
        other.wait()
        subprocess.run(["rm", "-rf", TMP])


if __name__ == "__main__":
    main()
