# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A filesystem that stops answering (a dead network mount, a FUSE daemon
mounted with allow_other that hangs: hangfs.py) must not stop the
recorder. Whatever it does on a process's files that could reach such a
filesystem (the walk to a container's /tmp and its stat, the reads of a
perf-map on it) runs on the opener's worker, under its bound.

The worker left behind stays in the kernel until the daemon answers or
dies (a FUSE request already read by the daemon waits out even SIGKILL),
and so does the recorder's exit: each test checks that the recording was
finished while the daemon still hung, then kills the daemon."""
import os
import re
import signal
import subprocess
import sys

from jt import AS_USER, JT, TMP, Skip, kill_left, script, wait_for

HANGFS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hangfs.py")


def need_fuse():
    if not os.path.exists("/dev/fuse"):
        raise Skip("no /dev/fuse: cannot mount a FUSE filesystem that hangs")
    p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, "
                        "'/usr/lib/python3/dist-packages'); import fusepy"],
                       capture_output=True)
    if p.returncode:
        raise Skip("python3-fusepy is not installed (scripts/install-deps.sh --test)")


def hung_tmp(name, mode, *args):
    """nobody's sleep, in a mount namespace of its own whose /tmp is
    hangfs in mode; returns (the namespace's Popen, the sleep's pid, the
    daemon's pid, the daemon's log of requests it hangs)."""
    log = os.path.join(TMP, f"{name}.hangfs.log")
    open(log, "w").close()
    sh = (f"{sys.executable} {HANGFS} {mode} /tmp {' '.join(args)} >{log}.out 2>&1 & "
          "until grep -q ' /tmp fuse' /proc/self/mounts; do "
          "kill -0 $! || exit 1; sleep 0.05; done; "
          f"echo ready $$ $!; exec {' '.join(AS_USER)} sleep 600")
    ns = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", sh],
                          stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "HANGFS_LOG": log})
    line = ns.stdout.readline().split()
    assert line[:1] == ["ready"], f"hangfs did not mount: {line}"
    return ns, int(line[1]), int(line[2]), log


def hung(log):
    with open(log) as f:
        return f.read().splitlines()


def said(errs):
    with open(errs) as f:
        return f.read()


def start(args, errs):
    """jittrace record, its stderr to the file errs (read while it runs,
    never waited on: a recorder that hangs must fail the test, not hang it)."""
    with open(errs, "w") as err:
        return subprocess.Popen([JT, "record", *args], stderr=err)


def end(ns, pid, daemon):
    """The daemon killed first: that frees the worker the recorder left.
    Safe to call again, on the way out of a failed test."""
    for p in (daemon, pid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    ns.wait(timeout=60)
    ns.stdout.close()


def test_a_perf_map_whose_read_hangs_does_not_stop_record():
    """record -p of a process whose /tmp is a FUSE mount: its perf-map
    opens, and a read of it never returns. The read is left after 250 ms,
    said, and counted; the recording ends on time."""
    need_fuse()
    data = os.path.join(TMP, "hung-read.data")
    errs = os.path.join(TMP, "hung-read.err")
    ns, pid, daemon, log = hung_tmp("read", "read", "perf-$$.map", "65534")
    rec = None
    try:
        rec = start(["-p", str(pid), "--duration", "2", "-o", data], errs)
        wait_for("the recording, finished while the read still hangs",
                 lambda: "jittrace: wrote " in said(errs))
        assert hung(log) == [f"read /perf-{pid}.map"], said(errs)
        end(ns, pid, daemon)
        rec.wait(timeout=60)
    finally:
        end(ns, pid, daemon)
        if rec:
            kill_left(rec)
    err = said(errs)
    assert rec.returncode == 0, err
    assert (f"jittrace: stopped reading the perf-map file of pid {pid} after 0 bytes: "
            "a read of it, or a file of its user's before, did not finish in 250 ms") in err, err
    assert re.search(r"jittrace: 1 file opens or reads hung past 250 ms .*; "
                     r"0 more of the same users were not tried", err), err
    assert any(e["pid"] == pid for e in script(data))


def test_a_tmp_that_hangs_does_not_stop_record_all():
    """record -a while a process starts in a mount namespace whose /tmp
    is a FUSE mount that never answers the recorder: the walk to that /tmp
    and its stat are left after 250 ms, and the recording goes on (the
    process's exec is in it) and ends when asked."""
    need_fuse()
    data = os.path.join(TMP, "hung-tmp.data")
    errs = os.path.join(TMP, "hung-tmp.err")
    rec = start(["-a", "--duration", "120", "-o", data], errs)
    ns = None
    try:
        wait_for("the recorder to start", lambda: "jittrace: recording " in said(errs))
        ns, pid, daemon, log = hung_tmp("tmp", "tracer")
        stop = (ns, pid, daemon)
        wait_for("the recorder to reach the /tmp that hangs", lambda: hung(log))
        rec.send_signal(signal.SIGINT)
        wait_for("the recording, finished while the daemon still hangs",
                 lambda: "jittrace: wrote " in said(errs))
        assert set(hung(log)) == {"getattr /"}, hung(log)
        end(ns, pid, daemon)
        rec.wait(timeout=60)
    finally:
        if ns:
            end(*stop)
        kill_left(rec)
    err = said(errs)
    assert rec.returncode == 0, err
    n = re.search(r"jittrace: (\d+) file opens or reads hung past 250 ms", err)
    assert n and int(n.group(1)) == len(hung(log)), err
    assert any(e["type"] == "exec" and e["pid"] == pid for e in script(data))
