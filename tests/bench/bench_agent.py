#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The always-on agent's own cost, against `perf record -a -F 19 -g` in
the same run, over SECS (default 60) per scenario:
  - quiet: nothing but the machine's own background;
  - churn: 50 short-lived processes a second, each writing a 1,000-line
    perf-map (tests/workloads/churn);
  - churn-overlay: the same in a mount namespace of its own whose /tmp is
    an overlayfs root made, as a rootful container runtime does;
  - node: Node with --perf-basic-prof, compiling and running new
    functions the whole time.
For each: the tracer's CPU (user+sys of all its threads, from
/proc/PID/stat) as a share of one core, and its peak RSS (VmHWM). The
agent is scraped once per scenario, as Parca would.
usage: [AGENT_CALL_GRAPH=fp|dwarf] [SCENARIOS="quiet churn ..."]
       bench_agent.py BUILD_DIR [SECS]"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 60
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JT = os.path.join(BUILD, "jittrace")
CHURN = os.path.join(BUILD, "workloads", "churn")
JS = os.path.join(ROOT, "tests/workloads/compile-loop.js")
TMP = tempfile.mkdtemp(prefix="jt-bench-agent-", dir="/var/tmp")
AS_USER = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]
HZ = os.sysconf("SC_CLK_TCK")
# The agent's -g is --call-graph dwarf; AGENT_CALL_GRAPH=fp for the cheap one.
CALL_GRAPH = os.environ.get("AGENT_CALL_GRAPH", "dwarf")


def cpu_seconds(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ


def peak_rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_tracer(name):
    if name == "agent":
        port = free_port()
        p = subprocess.Popen([JT, "agent", "--call-graph", CALL_GRAPH,
                              "--listen", f"127.0.0.1:{port}"],
                             stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if "agent: serving" in line:
                break
        p.port = port
        return p
    data = os.path.join(TMP, "perf.data")
    p = subprocess.Popen(["perf", "record", "-q", "-a", "-F", "19", "-g", "-o", data],
                         stderr=subprocess.DEVNULL)
    time.sleep(1)
    return p


def workload(scenario):
    if scenario == "churn":
        return subprocess.Popen([*AS_USER, CHURN, "50", str(SECS), "1000"],
                                stdout=subprocess.DEVNULL)
    if scenario == "churn-overlay":
        d = os.path.join(TMP, "ovl")
        for sub in ("lower", "upper", "work"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.chmod(os.path.join(d, "upper"), 0o1777)
        # In the lower layer: a build under /tmp is hidden by the mount.
        shutil.copy(CHURN, os.path.join(d, "lower", "churn"))
        opts = f"lowerdir={d}/lower,upperdir={d}/upper,workdir={d}/work"
        return subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             f'mount -t overlay overlay -o {opts} /tmp && exec "$@"', "sh",
             *AS_USER, "/tmp/churn", "50", str(SECS), "1000"], stdout=subprocess.DEVNULL)
    if scenario == "node":
        return subprocess.Popen([*AS_USER, "node", "--perf-basic-prof", JS, str(SECS)],
                                stdout=subprocess.DEVNULL, cwd=TMP)
    return None


def one(name, scenario):
    tr = start_tracer(name)
    wl = workload(scenario)
    c0, t0 = cpu_seconds(tr.pid), time.monotonic()
    if name == "agent":
        # Parca's scrape: the last 10 s as one profile, once.
        time.sleep(max(SECS - 12, 0))
        urllib.request.urlopen(
            f"http://127.0.0.1:{tr.port}/debug/pprof/profile?seconds=10", timeout=60).read()
    left = SECS - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
    c1, t1 = cpu_seconds(tr.pid), time.monotonic()
    rss = peak_rss_mb(tr.pid)
    if wl:
        wl.wait()
    tr.send_signal(signal.SIGTERM if name == "agent" else signal.SIGINT)
    tr.wait()
    return 100.0 * (c1 - c0) / (t1 - t0), rss


def main():
    if not os.path.exists(CHURN):
        sys.exit("bench_agent: build the workloads first (make)")
    print(f"agent vs perf record -a -F 19 -g, {SECS:.0f} s per scenario "
          "(CPU: % of one core; RSS: peak)")
    print(f"  {'scenario':<13} {'agent CPU':>10} {'perf CPU':>9} {'agent RSS':>10} "
          f"{'perf RSS':>9}")
    for scenario in os.environ.get("SCENARIOS", "quiet churn churn-overlay node").split():
        a_cpu, a_rss = one("agent", scenario)
        p_cpu, p_rss = one("perf", scenario)
        print(f"  {scenario:<13} {a_cpu:>9.2f}% {p_cpu:>8.2f}% {a_rss:>8.1f}MB "
              f"{p_rss:>7.1f}MB", flush=True)


if __name__ == "__main__":
    main()
