#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Each BPF program's own cost while a command runs: turns on
kernel.bpf_stats_enabled, reads every program's run count and run time
(bpftool) AFTER s in (default 1.5) and again WINDOW s later, and prints calls per second
and ns per run of each program that ran between. The counts include
bpf_stats' own two clock reads per run (about 45 ns here: an empty
program's figure). Default command: jittrace record of the mmap loop.
usage: bpf_stats.py BUILD_DIR [WINDOW [AFTER]] [-- CMD...]"""
import json
import subprocess
import sys
import time

SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"


def snap():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                         text=True, check=True).stdout
    return {(p["id"], p.get("name", "?")): (p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in json.loads(out)}


def main():
    args = sys.argv[1:]
    build = args.pop(0) if args and args[0] != "--" else "build"
    window = float(args.pop(0)) if args and args[0] != "--" else 2.5
    after = float(args.pop(0)) if args and args[0] != "--" else 1.5
    cmd = args[1:] if args[:1] == ["--"] else [
        f"{build}/jittrace", "record", "-o", "/tmp/jt-bpf-stats.data", "--user", "nobody",
        "--", f"{build}/workloads/mmloop", "callsfor", str(window + 2.5)]
    print(f"BPF programs' own cost (bpf_stats) over {window:.1f} s of: {' '.join(cmd)}")
    with open(SYSCTL) as f:
        was = f.read().strip()
    with open(SYSCTL, "w") as f:
        f.write("1")
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(after)
        a, t0 = snap(), time.monotonic()
        time.sleep(window)
        b, dt = snap(), time.monotonic() - t0
        p.wait()
    finally:
        with open(SYSCTL, "w") as f:
            f.write(was)
    for k in sorted(b, key=lambda k: k[1]):
        if k in a and b[k][1] > a[k][1]:
            ns, n = b[k][0] - a[k][0], b[k][1] - a[k][1]
            print(f"  {k[1]:24s} {n / dt:10.0f} runs/s {ns / n:8.1f} ns/run")


if __name__ == "__main__":
    main()
