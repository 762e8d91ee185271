# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Attaching to JITs that were running before jittrace: a jitdump mapped
before attach is found in the snapshot of the process's mappings, read
from its start and tailed; its own timestamps name every sample after
attach. Scored sample by sample against the runtime's own jitdump, read
by an independent reader."""
import glob
import os
import pwd
import signal
import subprocess

import jitdump
from jt import AS_USER, JT, ROOT, TMP, WL, hx, run, script, start_attached, wait_for
from test_jit import runs, truth
from test_runtimes import JS, need, user_samples, workdir

LL = os.path.join(ROOT, "tests/workloads/hot.ll")


def score(samples, records):
    """(JIT samples, named right): a JIT sample is one the runtime's own
    jitdump says ran JIT code, right when jittrace names that function."""
    want = jitdump.truths(records, [(hx(s["ip"]), s["time"]) for s in samples])
    jit = [s for s in samples if want[(hx(s["ip"]), s["time"])] is not None]
    right = [s for s in jit if s["sym"] == want[(hx(s["ip"]), s["time"])]]
    return len(jit), len(right)


def as_user(cmd, **kw):
    return subprocess.Popen([*AS_USER, *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, **kw)


def node_running(name, secs):
    need("node")
    d = workdir(name)
    node = as_user(["node", "--perf-prof", JS, str(secs)], cwd=d)
    dump = os.path.join(d, f"jit-{node.pid}.dump")
    wait_for("node's jitdump", lambda: os.path.exists(dump))
    return node, dump


def lli_running(name, rounds):
    need("lli")
    d = workdir(name)
    lli = as_user(["env", f"JITDUMPDIR={d}", "lli", "-jit-kind=mcjit", LL,
                   *["x"] * (rounds - 1)])
    pattern = os.path.join(d, f".debug/jit/*/jit-{lli.pid}.dump")
    # Attach once its module is compiled: the load record is in the file
    # (which exists, for a moment, shorter than its header).
    wait_for("lli's first code load", lambda: any(
        os.path.getsize(p) >= 40 and any(r[1] == "load" for r in jitdump.read(p))
        for p in glob.glob(pattern)))
    return lli, glob.glob(pattern)[0]


def cpu_seconds(pid):
    """User and system CPU time of pid so far, or None once it is gone."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run_for_cpu(p, secs):
    """Let p run secs more of CPU time, then stop it: its samples from
    here are sized by the work it does, not by the clock, which a loaded
    machine (or a slow attach) would spend before we came."""
    start = cpu_seconds(p.pid)

    def done():
        now = cpu_seconds(p.pid)
        return start is None or now is None or now - start >= secs

    wait_for(f"{secs} s of CPU in pid {p.pid}", done, timeout=300)
    p.terminate()
    p.wait(timeout=60)


def check_named(data, pid, dump, at_least):
    samples = user_samples(data, pid)
    n, right = score(samples, jitdump.read(dump))
    assert n >= at_least and right >= 0.99 * n, (n, right, len(samples))
    rep = run([JT, "report", "-i", data]).stdout
    assert f"# {dump} (pid {pid}, mapped before attach):" in rep, rep
    return n, right


def test_node_jitdump_mapped_before_attach():
    node, dump = node_running("attach-node", 600)
    # The runtime has been running for a while when we come.
    wait_for("node to run a second", lambda: (cpu_seconds(node.pid) or 1) >= 1)
    data = os.path.join(TMP, "attach-node.data")
    rec = start_attached(["-p", str(node.pid), "-o", data, "--duration", "300"])
    run_for_cpu(node, 2)
    rec.communicate(timeout=60)
    assert rec.returncode == 0
    check_named(data, node.pid, dump, 300)


def test_lli_attached_after_its_first_module():
    lli, dump = lli_running("attach-lli", 10)
    data = os.path.join(TMP, "attach-lli.data")
    rec = start_attached(["-p", str(lli.pid), "-o", data, "--duration", "60"])
    lli.wait(timeout=60)
    rec.communicate(timeout=60)
    assert rec.returncode == 0
    n, right = check_named(data, lli.pid, dump, 300)
    spin = [s for s in user_samples(data, lli.pid) if s["sym"] == "spin"]
    assert len(spin) >= 0.9 * n


def test_system_wide_after_both_runtimes():
    node, node_dump = node_running("attach-all-node", 600)
    lli, lli_dump = lli_running("attach-all-lli", 1000)
    data = os.path.join(TMP, "attach-all.data")
    rec = start_attached(["-a", "-o", data, "--duration", "300"])
    run_for_cpu(node, 2)
    run_for_cpu(lli, 2)
    rec.send_signal(signal.SIGINT)
    rec.communicate(timeout=60)
    assert rec.returncode == 0
    check_named(data, node.pid, node_dump, 300)
    check_named(data, lli.pid, lli_dump, 300)


def jitgen_attached(mode, name):
    """jitgen MODE with its jitdump mapped and its first function run
    before attach, the rest after; its stdout and the recording."""
    jd = workdir(name)
    w = subprocess.Popen([*AS_USER, f"{WL}/jitgen", mode, "4", "1.2", "-j", jd,
                          "-w", "1"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    before = []
    for line in w.stdout:
        before.append(line)
        if line == "waiting\n":
            break
    data = os.path.join(TMP, f"{name}.data")
    rec = start_attached(["-p", str(w.pid), "-o", data, "--duration", "60"])
    out, _ = w.communicate("go\n", timeout=60)
    rec.communicate(timeout=60)
    assert rec.returncode == 0
    return w.pid, "".join(before) + out, data


def check_stretches(pid, stdout, data):
    """Every sample in a stretch jitgen says a function ran is named that
    function, from the jitdump; what ran after attach has samples."""
    stretches = runs(stdout)
    per_name = {}
    for s in user_samples(data, pid):
        want = truth(s, stretches)
        if want is None:
            continue
        assert s["sym"] == want and s["source"] == "jitdump", (s, want)
        per_name[want] = per_name.get(want, 0) + 1
    return per_name


def test_jitgen_reuse_after_attach():
    pid, out, data = jitgen_attached("reuse", "attach-reuse")
    per_name = check_stretches(pid, out, data)
    # reused_0 ran only before attach; the same address then held 1..3.
    assert set(per_name) == {"reused_1", "reused_2", "reused_3"}, per_name
    assert min(per_name.values()) >= 5, per_name


def test_jitgen_loaded_before_attach_moved_after():
    pid, out, data = jitgen_attached("move", "attach-move")
    per_name = check_stretches(pid, out, data)
    # moved_0 was loaded before attach and moved after: named at its new
    # address by a load the recording read from before it started.
    assert {"moved_0", "moved_1", "moved_2", "moved_3"} == set(per_name), per_name
    moves = [e for e in script(data) if e["type"] == "jit_move"]
    assert len(moves) == 4


PLANTED = r'''
import mmap, os, sys
print(os.getpid(), flush=True)
sys.stdin.readline()
fd = os.open(os.path.join(sys.argv[1], f"jit-{os.getpid()}.dump"), os.O_RDONLY)
marker = mmap.mmap(fd, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)
print("mapped", flush=True)
sys.stdin.readline()
'''


def test_jitdump_of_another_user_mapped_before_attach_is_refused():
    d = workdir("attach-planted")
    w = subprocess.Popen([*AS_USER, "python3", "-c", PLANTED, d], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline())
    path = os.path.join(d, f"jit-{pid}.dump")
    with open(path, "wb") as f:
        f.write(b"\0" * 4096)
    os.chmod(path, 0o644)
    # Not the process's user, not root.
    daemon = pwd.getpwnam("daemon")
    os.chown(path, daemon.pw_uid, daemon.pw_gid)
    w.stdin.write("map\n")
    w.stdin.flush()
    assert w.stdout.readline() == "mapped\n"
    data = os.path.join(TMP, "attach-planted.data")
    rec = start_attached(["-p", str(pid), "-o", data, "--duration", "60"])
    w.communicate("exit\n", timeout=30)
    _, err = rec.communicate(timeout=60)
    err = rec.said_first + err
    assert f"not reading {path} of pid {pid}: Operation not permitted" in err, err
    rep = run([JT, "report", "-i", data]).stdout
    assert f"# {path} (pid {pid}, mapped before attach): refused: Operation not permitted" \
        in rep, rep
