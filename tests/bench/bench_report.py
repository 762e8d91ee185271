# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Naming a large JIT profile: a jitdump with FUNCTIONS functions and a
recording with about FREQ * SECONDS samples in JIT code, named by
`jittrace report` and by `perf inject --jit` + `perf report` on the same
workload recorded by perf. perf gets a fixed time budget; when it runs
out, the ratio is printed as a lower bound.
usage: bench_report.py BUILD [FUNCTIONS SECONDS FREQ BUDGET]"""
import json
import os
import pwd
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
SECS = float(sys.argv[3]) if len(sys.argv) > 3 else 20
FREQ = int(sys.argv[4]) if len(sys.argv) > 4 else 50000
BUDGET = float(sys.argv[5]) if len(sys.argv) > 5 else 300
JT = os.path.join(BUILD, "jittrace")
PW = pwd.getpwnam("nobody")
AS_USER = ["setpriv", "--reuid", str(PW.pw_uid), "--regid", str(PW.pw_gid),
           "--clear-groups"]


# report's time is the median of these runs: this VM's times swing 20%.
REPORT_RUNS = 11


def waited(args):
    """(seconds, peak RSS in MB) of a command that must succeed, waited
    for at once rather than polled."""
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"{args[:2]} failed"
    return time.monotonic() - t0, ru.ru_maxrss / 1024


def timed(args, budget=None, stdout=subprocess.DEVNULL):
    """(seconds, peak RSS in MB, finished) of one command."""
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=stdout, stderr=subprocess.DEVNULL)
    deadline = t0 + budget if budget else None
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            return time.monotonic() - t0, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status) == 0
        if deadline and time.monotonic() > deadline:
            p.kill()
            _, _, ru = os.wait4(p.pid, 0)
            return time.monotonic() - t0, ru.ru_maxrss / 1024, False
        time.sleep(0.05)


def workload(d):
    return [os.path.join(BUILD, "workloads/jitgen"), "many", str(N), str(SECS), "-j", d]


def main():
    tmp = tempfile.mkdtemp(prefix="jt-bench-")
    os.chmod(tmp, 0o777)
    jd, pd = os.path.join(tmp, "j"), os.path.join(tmp, "p")
    for d in (jd, pd):
        os.makedirs(d)
        os.chmod(d, 0o777)
    jdata, pdata = os.path.join(tmp, "j.data"), os.path.join(tmp, "perf.data")
    subprocess.run([JT, "record", "-F", str(FREQ), "-o", jdata, "--user", "nobody",
                    "--", *workload(jd)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    subprocess.run(["perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-F", str(FREQ),
                    "-o", pdata, "--", *AS_USER, *workload(pd)], check=True,
                   stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    rep = json.loads(subprocess.run([JT, "report", "-i", jdata, "--json", "--sort", "dso"],
                                    check=True, capture_output=True, text=True).stdout)
    jit = sum(r["samples"] for r in rep if r["source"] == "jitdump")
    total = sum(r["samples"] for r in rep)
    print(f"jitdump: {N} functions; jittrace recording: {total} samples, {jit} named "
          f"from the jitdump")
    runs = sorted(waited([JT, "report", "-i", jdata]) for _ in range(REPORT_RUNS))
    jt_s = runs[len(runs) // 2][0]
    jt_mb = max(r[1] for r in runs)
    print(f"jittrace report:              {jt_s:8.3f} s  peak {jt_mb:7.0f} MB"
          f"  (median of {REPORT_RUNS}; min {runs[0][0]:.3f} s)")
    # The same profile for stock perf: export, then perf report on it.
    out = os.path.join(tmp, "export.perf")
    ex_s, ex_mb, ok = timed([JT, "export", "-i", jdata, "--format", "perf", "-o", out])
    assert ok, "jittrace export failed"
    pr_s, pr_mb, ok = timed(["perf", "report", "-i", out, "--stdio"], BUDGET)
    print(f"jittrace export --format perf:{ex_s:8.1f} s  peak {ex_mb:7.0f} MB")
    print(f"  then perf report:           {pr_s:8.1f} s  peak {pr_mb:7.0f} MB"
          f"{'' if ok else '  (stopped at the budget)'}")
    inj_s, inj_mb, inj_ok = timed(["perf", "inject", "--jit", "-i", pdata, "-o",
                                   pdata + ".jit"], BUDGET)
    if inj_ok:
        rep_s, rep_mb, rep_ok = timed(["perf", "report", "-i", pdata + ".jit", "--stdio"],
                                      BUDGET - inj_s)
    else:
        rep_s, rep_mb, rep_ok = 0, 0, False
    perf_s = inj_s + rep_s
    done = inj_ok and rep_ok
    print(f"perf inject --jit:            {inj_s:8.1f} s  peak {inj_mb:7.0f} MB"
          f"{'' if inj_ok else f'  (stopped at the {BUDGET:.0f} s budget)'}")
    if inj_ok:
        print(f"perf report:                  {rep_s:8.1f} s  peak {rep_mb:7.0f} MB"
              f"{'' if rep_ok else '  (stopped at the budget)'}")
    print(f"perf / jittrace time: {'' if done else '>= '}{perf_s / jt_s:.1f}x; "
          f"peak memory perf {max(inj_mb, rep_mb):.0f} MB vs jittrace {jt_mb:.0f} MB")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
