# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""JIT processes in containers: their own PID namespace and mount
namespace with a /tmp of their own, so the runtime writes
/tmp/perf-<its ns pid>.map where the host cannot see it at /tmp. The
container's /tmp is a bind mount of a host directory, so that the test
can read the truth after the container is gone; jittrace reaches it only
as /proc/PID/root/tmp."""
import glob
import json
import os
import pwd
import re
import shutil
import signal
import subprocess

import jitdump
from jt import (AS_USER, JT, ROOT, TMP, USER, WL, Skip, hx, inotify_watches, record, run,
                script, start_attached, wait_for)
from test_runtimes import check_against_jitdump

JS = os.path.join(ROOT, "tests/workloads/compile-loop.js")


def need(tool):
    if not shutil.which(tool):
        raise Skip(f"{tool} is not installed")


def box_dir(name):
    """A host directory that becomes a container's /tmp, holding the
    script: whatever lay under the host's /tmp is hidden in there."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    shutil.copy(JS, os.path.join(d, "compile-loop.js"))
    os.chmod(os.path.join(d, "compile-loop.js"), 0o644)
    return d


# The script as the container sees it.
BOX_JS = "/tmp/compile-loop.js"


def container(tmp, inner, user_ns=True):
    """A shell as pid 1 of new PID and mount namespaces, tmp its /tmp."""
    flags = "-Urpmf" if user_ns else "-pmf"
    return ["unshare", flags, "sh", "-c", f"mount --bind {tmp} /tmp && {inner}"]


def perfmap_truth(path):
    out = []
    with open(path) as f:
        for line in f:
            a, sz, name = line.rstrip("\n").split(" ", 2)
            out.append((int(a, 16), int(sz, 16), name))
    return out


def node_pid(data):
    execs = [e for e in script(data) if e["type"] == "exec" and e["comm"] == "node"]
    assert len(execs) == 1, execs
    return execs[0]["pid"], execs[0].get("nspid")


def check_perfmap(data, pid, truth):
    """At least 99% of the JIT samples named, each as the runtime had it."""
    samples = [s for s in script(data) if s["type"] == "sample" and s["pid"] == pid
               and not s["kernel"] and s["source"] in ("perfmap", "anon")]
    named = [s for s in samples if s["source"] == "perfmap"]
    assert len(named) >= 0.99 * len(samples) and len(named) > 200, \
        (len(named), len(samples))
    for s in named:
        ip = hx(s["ip"])
        assert s["sym"] in {n for a, sz, n in truth if a <= ip < a + sz}, s
        assert s["nspid"] == 1, s
    return len(named), len(samples)


def test_container_node_perf_basic_prof():
    need("node")
    need("unshare")
    tmp = box_dir("ct-perfmap")
    p, data = record(container(tmp, f"exec node --perf-basic-prof {BOX_JS} 2"), ["-v"])
    pid, nspid = node_pid(data)
    assert nspid == 1
    # Its /tmp is on a local disk: the file opened there, with no worker.
    assert "file opens: 1 in a /tmp on a local disk" in p.stderr, p.stderr
    named, total = check_perfmap(data, pid, perfmap_truth(f"{tmp}/perf-1.map"))
    rep = run([JT, "report", "-i", data]).stdout
    assert f"# /proc/{pid}/root/tmp/perf-1.map (pid {pid}, found while recording)" in rep, rep
    assert f" {pid}:1 " in rep
    rows = json.loads(run([JT, "report", "-i", data, "--json"]).stdout)
    assert any(r["pid"] == pid and r.get("nspid") == 1 for r in rows)
    print(f"    jittrace: {named}/{total} JIT samples named")
    perf_share(container(tmp, f"exec node --perf-basic-prof {BOX_JS} 2"), "perf-basic-prof")


def overlay_tmp(name, workload):
    """A command that mounts an overlayfs on /tmp, its layers in a host
    directory on the local disk, as a container runtime mounts a root,
    with the workload in its lower layer: the build may be under the
    host's /tmp, which the mount hides (CI's clone is)."""
    d = os.path.join(TMP, name)
    for sub in ("lower", "upper", "work"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.chmod(os.path.join(d, sub), 0o1777)
    shutil.copy(os.path.join(WL, workload), os.path.join(d, "lower", workload))
    return (f"mount -t overlay overlay -o lowerdir={d}/lower,upperdir={d}/upper,"
            f"workdir={d}/work /tmp")


def jitgen_perfmap(p, data):
    """jitgen's one perf-map, read whole: its pid and the stderr's opens."""
    pid = next(e["pid"] for e in script(data) if e["type"] == "exec" and e["comm"] == "jitgen")
    rep = run([JT, "report", "-i", data]).stdout
    assert (f"# /proc/{pid}/root/tmp/perf-{pid}.map (pid {pid}, found while recording): "
            "4 records, 0 malformed skipped") in rep, rep
    return re.search(r"file opens: (\d+) in a /tmp on a local disk, \d+ by the opener's "
                     r"worker; reads by the worker \(files not on a local disk\): (\d+)",
                     p.stderr).groups()


def test_an_overlay_tmp_root_made_is_a_local_disk():
    """A rootful container runtime gives a container an overlayfs root,
    its layers on the host's disk. Made by root, of layers on local
    disks, it is as safe as they are: the runtime's perf-map opens and
    is read on the recorder's own thread, as on ext4. One made in a user
    namespace (rootless: its layers are whatever that user chose, FUSE
    among them) stays with the worker."""
    need("unshare")
    gen = "/tmp/jitgen adjacent 4 0.5 -m"
    p, data = record(["unshare", "-m", "--propagation", "private", "sh", "-c",
                      f"{overlay_tmp('ovl-root', 'jitgen')} && "
                      f"exec {' '.join(AS_USER)} {gen}"],
                     ["-v", "--run-as-root"])
    assert jitgen_perfmap(p, data) == ("1", "0"), p.stderr
    p, data = record(["unshare", "-Urm", "sh", "-c",
                      f"{overlay_tmp('ovl-userns', 'jitgen')} && exec {gen}"], ["-v"])
    local, worker_reads = jitgen_perfmap(p, data)
    assert local == "0" and int(worker_reads) > 0, p.stderr


def test_a_containers_execs_reuse_its_tmp():
    """Each exec in a container used to ask the worker for its /tmp (a
    walk into its root, two thread switches): under churn its processes
    were gone before the answer came. An exec that sees the same mounts
    from the same root as an earlier one that asked (JT_EXEC_VIEW) takes
    that answer. Three execs here cannot: unshare's own (our /tmp), the
    shell's in the new namespace, and setpriv's, the first after the
    mount, which changed what /tmp is; the mount's own exec reuses the
    shell's answer, and the inner sh, churn, its children and sleep reuse
    setpriv's. Every child's perf-map is read whole from the overlayfs."""
    need("unshare")
    # The container's shell outlives churn, so its /tmp is still held
    # when the last child's perf-map is read.
    churn = "/tmp/churn 10 2 100 keep; sleep 1"
    p, data = record(["unshare", "-m", "--propagation", "private", "sh", "-c",
                      f"{overlay_tmp('ovl-execs', 'churn')} && exec {' '.join(AS_USER)} "
                      f"sh -c '{churn}'"],
                     ["-v", "--run-as-root"])
    execs = [e for e in script(data) if e["type"] == "exec"]
    assert [e["comm"] for e in execs[:6] + execs[-1:]] == \
        ["unshare", "sh", "mount", "setpriv", "sh", "churn", "sleep"], execs
    kids = [e["pid"] for e in execs[6:-1]]
    assert kids and all(e["path"].endswith("/churn") for e in execs[6:-1]), execs
    reused = re.search(r"execs whose /tmp an earlier exec's answer gave .*: (\d+)$",
                       p.stderr, re.M)
    assert reused and int(reused.group(1)) == len(execs) - 3, p.stderr
    rep = run([JT, "report", "-i", data]).stdout
    for pid in kids:
        assert (f"# /proc/{pid}/root/tmp/perf-{pid}.map (pid {pid}, found while recording): "
                "100 records, 0 malformed skipped") in rep, rep
    assert "reads by the worker (files not on a local disk): 0" in p.stderr, p.stderr


def perf_share(cmd, what):
    """perf on the same container: it looks for /tmp/perf-<host pid>.map."""
    if not shutil.which("perf"):
        return
    pdata = os.path.join(TMP, f"perf-ct-{what}.data")
    run(["perf", "record", "-q", "-e", "cpu-clock", "-o", pdata, "--", *AS_USER, *cmd])
    out = run(["perf", "report", "-i", pdata, "--stdio", "--sort", "sym",
               "--comm", "node"], errors="replace").stdout
    js = sum(float(l.split("%")[0]) for l in out.splitlines()
             if "JS:" in l or "LazyCompile" in l)
    print(f"    perf {what} in a container: {js:.1f}% of node's samples named as JS")


def test_container_node_perf_prof_jitdump():
    need("node")
    need("unshare")
    tmp = box_dir("ct-jitdump")
    # The host's /tmp is hidden in the container: work in its own.
    work = box_dir("ct-jitdump/cwd")
    _, data = record(container(tmp, f"cd /tmp/cwd && exec node --perf-prof {BOX_JS} 2"))
    pid, nspid = node_pid(data)
    dumps = glob.glob(os.path.join(work, "jit-*.dump"))
    assert [os.path.basename(d) for d in dumps] == ["jit-1.dump"], dumps
    records = jitdump.read(dumps[0])
    samples = [s for s in script(data) if s["type"] == "sample" and s["pid"] == pid
               and not s["kernel"]]
    named = check_against_jitdump(samples, records)
    jit = [s for s in samples if s["source"] in ("jitdump", "anon")]
    assert named >= 0.99 * len(jit) and named > 200, (named, len(jit))
    print(f"    jittrace: {named}/{len(jit)} JIT samples named from jit-1.dump")


def test_container_planted_perfmap_is_refused():
    need("node")
    need("unshare")
    tmp = box_dir("ct-planted")
    planted = os.path.join(tmp, "perf-1.map")
    with open(planted, "w") as f:
        f.write("0 ffffffffffff planted_in_the_container\n")
    daemon = pwd.getpwnam("daemon")
    os.chown(planted, daemon.pw_uid, daemon.pw_gid)
    os.chmod(planted, 0o666)
    # A root container whose runtime runs as nobody; the file is daemon's.
    inner = (f"exec {' '.join(AS_USER)} node --perf-basic-prof {BOX_JS} 1")
    p, data = record(["unshare", "-pmf", "sh", "-c",
                      f"mount --bind {tmp} /tmp && {inner}"], ["--run-as-root"])
    os.unlink(planted)
    pid, _ = node_pid(data)
    rep = run([JT, "report", "-i", data]).stdout
    assert (f"# /proc/{pid}/root/tmp/perf-1.map (pid {pid}, found while "
            "recording): refused: Operation not permitted") in rep, rep
    assert "planted_in_the_container" not in rep
    assert not any(s.get("source") == "perfmap" for s in script(data))


def started_container(name):
    """A containerised node started before jittrace; its host pid."""
    tmp = box_dir(name)
    proc = subprocess.Popen([*AS_USER, *container(tmp, f"exec node --perf-basic-prof {BOX_JS} 4")],
                            stdout=subprocess.DEVNULL)
    wait_for("node in its container",
             lambda: os.path.exists(f"{tmp}/perf-1.map") and
             os.path.getsize(f"{tmp}/perf-1.map") > 0)
    out = subprocess.run(["pgrep", "-P", str(proc.pid), "-x", "node"],
                         capture_output=True, text=True).stdout.split()
    return proc, tmp, int(out[0])


def test_attach_to_a_container_started_before():
    need("node")
    need("unshare")
    for how in ("-p", "-a"):
        proc, tmp, pid = started_container(f"ct-attach{how}")
        data = os.path.join(TMP, f"ct-attach{how}.data")
        # Until node has used its CPU seconds, not for a time: a loaded
        # machine gives it fewer samples a second.
        rec = start_attached([how] + ([str(pid)] if how == "-p" else []) +
                             ["-o", data, "--duration", "120"])
        proc.wait(timeout=120)
        if how == "-a":
            rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=60)
        assert rec.returncode == 0
        truth = perfmap_truth(f"{tmp}/perf-1.map")
        samples = [s for s in script(data) if s["type"] == "sample" and s["pid"] == pid
                   and not s["kernel"] and s["source"] in ("perfmap", "anon")]
        named = [s for s in samples if s["source"] == "perfmap"]
        assert len(named) >= 0.99 * len(samples) and len(named) > 100, \
            (how, len(named), len(samples))
        for s in named:
            ip = hx(s["ip"])
            assert s["sym"] in {n for a, sz, n in truth if a <= ip < a + sz}, s
        rep = run([JT, "report", "-i", data]).stdout
        assert f"# /proc/{pid}/root/tmp/perf-1.map (pid {pid}, there before attach)" in rep, rep


def test_system_wide_sees_a_container_started_after():
    need("node")
    need("unshare")
    tmp = box_dir("ct-after")
    data = os.path.join(TMP, "ct-after.data")
    rec = start_attached(["-a", "-o", data, "--duration", "30"])
    proc = subprocess.Popen([*AS_USER, *container(tmp, f"exec node --perf-basic-prof {BOX_JS} 2")],
                            stdout=subprocess.DEVNULL)
    proc.wait(timeout=60)
    rec.send_signal(2)
    rec.communicate(timeout=60)
    pid, nspid = node_pid_of(data, proc.pid)
    assert nspid == 1
    named, total = check_perfmap(data, pid, perfmap_truth(f"{tmp}/perf-1.map"))
    print(f"    -a, container started after: {named}/{total} JIT samples named")


def node_pid_of(data, parent):
    """The node a given process forked, in a system-wide recording."""
    forks = {e["child_pid"]: e.get("child_nspid") for e in script(data)
             if e["type"] == "fork" and e["pid"] == parent and not e["thread"]}
    execs = [e for e in script(data) if e["type"] == "exec" and e["comm"] == "node"
             and e["pid"] in forks]
    assert len(execs) == 1, (forks, execs)
    return execs[0]["pid"], execs[0].get("nspid")


def release(fifo):
    """Let a container's `cat FIFO` end: True once its reader had it."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False  # ENXIO: cat has not opened it yet
    os.write(fd, b"go\n")
    os.close(fd)
    return True


def test_a_gone_containers_tmp_is_let_go():
    # record -a watches each container's /tmp while a process in it is
    # tracked, and lets the watch go at its last exit: a recording that
    # outlives many containers holds the live ones' watches, not all.
    need("unshare")
    data = os.path.join(TMP, "ct-gone.data")
    rec = start_attached(["-a", "-o", data])
    try:
        base = inotify_watches(rec.pid)
        assert base >= 1, "our own /tmp is not watched"
        for i in range(3):
            tmp = box_dir(f"ct-gone{i}")
            fifo = os.path.join(tmp, "go")
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            os.chmod(fifo, 0o666)
            box = subprocess.Popen([*AS_USER, *container(tmp, "exec cat /tmp/go")],
                                   stdout=subprocess.DEVNULL)
            wait_for(f"container {i}'s /tmp watched",
                     lambda: inotify_watches(rec.pid) == base + 1, timeout=30)
            wait_for(f"container {i}'s cat to read", lambda: release(fifo), timeout=30)
            assert box.wait(timeout=30) == 0
            wait_for(f"container {i}'s /tmp let go",
                     lambda: inotify_watches(rec.pid) == base, timeout=30)
    finally:
        rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=60)
    assert rec.returncode == 0
