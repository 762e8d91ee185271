# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The engine of compare-perf.sh; see there."""
import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests/e2e"))
import jitdump  # noqa: E402

BUILD = os.environ.get("JT_BUILD", os.path.join(ROOT, "build"))
JT = os.path.join(BUILD, "jittrace")
PW = pwd.getpwnam("nobody")
AS_USER = ["setpriv", "--reuid", str(PW.pw_uid), "--regid", str(PW.pw_gid),
           "--clear-groups"]
JS = os.path.join(ROOT, "tests/workloads/compile-loop.js")
LL = os.path.join(ROOT, "tests/workloads/hot.ll")
ALL = ["jitgen:adjacent:jitdump", "jitgen:adjacent:perfmap",
       "jitgen:reuse:jitdump", "jitgen:reuse:perfmap", "jitgen:memfd:jitdump",
       "jitgen:shanon:jitdump",
       "jitgen:late:jitdump", "jitgen:move:jitdump", "node:jitdump",
       "node:perfmap", "lli"]


def command(workload, d, secs):
    """The shell command, and whether perf needs inject --jit."""
    kind = workload.split(":")
    if kind[0] == "jitgen":
        src = f"-j {d}" if kind[2] == "jitdump" else f"-t {d} -m"
        return f"exec {BUILD}/workloads/jitgen {kind[1]} 6 {secs} {src}", kind[2] == "jitdump"
    if workload == "node:jitdump":
        return f"cd {d} && exec node --perf-prof {JS} {secs}", True
    if workload == "node:perfmap":
        # The jitdump is the truth; perf is not given it (no inject).
        return f"cd {d} && exec node --perf-prof --perf-basic-prof {JS} {secs}", False
    if workload == "lli":
        # hot.ll runs about 0.5 s per argument-plus-one.
        rounds = " x" * max(0, int(secs * 2) - 1)
        return f"JITDUMPDIR={d} exec lli -jit-kind=mcjit {LL}{rounds}", True
    raise SystemExit(f"compare-perf: unknown workload {workload}")


def target(workload, d, attach):
    """Record the command (attach 0), or start it and give its pid once
    it has run attach seconds, as a profiler attaching with -p sees it."""
    cmd, inject = command(workload, d, 1.5 if not attach else attach + 4)
    if not attach:
        return ["sh", "-c", cmd], inject, None
    p = subprocess.Popen([*AS_USER, "sh", "-c", cmd], stdout=subprocess.DEVNULL)
    time.sleep(attach)
    return ["-p", str(p.pid)], inject, p


def truth_file(d):
    dumps = glob.glob(f"{d}/jit-*.dump") + glob.glob(f"{d}/.debug/jit/*/jit-*.dump")
    if len(dumps) != 1:
        raise SystemExit(f"compare-perf: expected one jitdump in {d}, got {dumps}")
    return dumps[0], int(os.path.basename(dumps[0])[4:-5])


def score(samples, d):
    """(JIT samples with a known truth, how many the tool named right)."""
    path, pid = truth_file(d)
    records = jitdump.read(path)
    mine = [(ip, t, sym) for p, ip, t, sym in samples if p == pid]
    want = jitdump.truths(records, [(ip, t) for ip, t, _ in mine])
    jit = [(sym, want[(ip, t)]) for ip, t, sym in mine if want[(ip, t)]]
    return len(jit), sum(1 for sym, w in jit if sym == w)


def workdir(tmp, name):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    os.chmod(d, 0o777)
    return d


def run_perf(workload, tmp, attach):
    d = workdir(tmp, "perf")
    what, inject, p = target(workload, d, attach)
    data = os.path.join(tmp, "perf.data")
    if not p:
        what = ["--", *AS_USER, *what]
    subprocess.run(["perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-F", "999",
                    "-o", data, *what],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p:
        p.wait()
    if inject:
        subprocess.run(["perf", "inject", "--jit", "-i", data, "-o", data + ".jit"],
                       check=True, stderr=subprocess.DEVNULL)
        data += ".jit"
    out = subprocess.run(["perf", "script", "-i", data, "-F", "pid,time,ip,sym", "--ns"],
                         check=True, capture_output=True, text=True).stdout
    samples = []
    for line in out.splitlines():
        f = line.split(None, 3)
        if len(f) < 3:
            continue
        sec, ns = f[1].rstrip(":").split(".")
        sym = f[3].strip() if len(f) > 3 else ""
        samples.append((int(f[0]), int(f[2], 16), int(sec) * 10**9 + int(ns), sym))
    return score(samples, d)


def run_jittrace(workload, tmp, attach):
    d = workdir(tmp, "jittrace")
    what, _, p = target(workload, d, attach)
    data = os.path.join(tmp, "jittrace.data")
    if not p:
        what = ["--user", "nobody", "--", *what]
    subprocess.run([JT, "record", "-o", data, *what],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p:
        p.wait()
    out = subprocess.run([JT, "script", "-i", data, "--json"], check=True,
                         capture_output=True, text=True).stdout
    samples = []
    for line in out.splitlines():
        e = json.loads(line)
        if e["type"] == "sample" and not e["kernel"]:
            samples.append((e["pid"], int(e["ip"], 16), e["time"], e["sym"] or ""))
    return score(samples, d)


def main(args):
    attach = 0
    if args[:1] == ["--attach"]:
        attach, args = float(args[1]), args[2:]
    workloads = args
    if not shutil.which("perf"):
        raise SystemExit("compare-perf: perf is not installed")
    print(f"{'workload':26} {'tool':9} {'JIT samples':>11} {'named right':>11} {'share':>7}")
    for w in workloads or ALL:
        for tool, fn in (("perf", run_perf), ("jittrace", run_jittrace)):
            with tempfile.TemporaryDirectory(prefix="jt-compare-") as tmp:
                os.chmod(tmp, 0o755)
                n, right = fn(w, tmp, attach)
            share = f"{100.0 * right / n:6.1f}%" if n else "    n/a"
            print(f"{w:26} {tool:9} {n:11} {right:11} {share}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
