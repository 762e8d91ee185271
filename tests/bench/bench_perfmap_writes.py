#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The recorder's CPU per perf-map write(2) while N other processes hold
perf-maps open, under `record -a`: a write event's work must not grow
with the processes the recorder follows. N is 30, 300 and 3,000; one
process writes L lines (500,000), a write(2) each. The recorder's CPU
over the writes, less its CPU over as long a time with none (its sweep
of every file each tick), is divided by L. The quiet column is that
CPU with none, as a share of a core: what holding N perf-maps open
costs the recorder while nobody writes.
usage: bench_perfmap_writes.py BUILD_DIR [L]"""
import os
import signal
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
LINES = int(sys.argv[2]) if len(sys.argv) > 2 else 500000
JT = os.path.join(BUILD, "jittrace")
AS_USER = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]
WRITER = """
import os
path = '/tmp/perf-%d.map' % os.getpid()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(int(os.environ['LINES'])):
    os.write(fd, b'%x 10 fn_%d\\n' % (0x10000 + i * 16, i))
os.close(fd)
os.unlink(path)
"""


def cpu(pid):
    """Seconds of CPU of every thread of pid."""
    t = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
        t += int(st[11]) + int(st[12])
    return t / os.sysconf("SC_CLK_TCK")


def open_maps(pid):
    """The perf-maps pid holds open, by their path."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if os.path.basename(link).startswith("perf-"):
            out.add(link)
    return out


def wait(what, cond, secs=120):
    end = time.monotonic() + secs
    while not cond():
        if time.monotonic() > end:
            raise SystemExit(f"bench_perfmap_writes: timed out waiting for {what}")
        time.sleep(0.05)


def one(n):
    data = os.path.join(tempfile.mkdtemp(prefix="jt-bench-"), "w.data")
    rec = subprocess.Popen([JT, "record", "-a", "-o", data],
                           stderr=subprocess.PIPE, text=True)
    for line in rec.stderr:
        if line.startswith("jittrace: recording "):
            break
    holders = [subprocess.Popen([*AS_USER, "sh", "-c",
                                 'printf "1000 10 f\\n" > /tmp/perf-$$.map; exec sleep 600'])
               for _ in range(n)]
    try:
        wait("the recorder to open every map", lambda: len(open_maps(rec.pid)) >= n)
        c0, t0 = cpu(rec.pid), time.monotonic()
        w = subprocess.Popen([*AS_USER, "python3", "-c", WRITER],
                             env={**os.environ, "LINES": str(LINES)})
        w.wait()
        # Its exit reads its map out and closes it.
        mine = f"/tmp/perf-{w.pid}.map"
        wait("the writer's map closed",
             lambda: not any(m.startswith(mine) for m in open_maps(rec.pid)))
        c1, t1 = cpu(rec.pid), time.monotonic()
        # Long enough for the quiet share to count in clock ticks.
        time.sleep(max(t1 - t0, 5.0))
        c2, t2 = cpu(rec.pid), time.monotonic()
    finally:
        for h in holders:
            h.kill()
            h.wait()
            try:
                os.unlink(f"/tmp/perf-{h.pid}.map")
            except FileNotFoundError:
                pass
        rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=300)
    idle = (c2 - c1) * (t1 - t0) / (t2 - t1)
    per = max(0.0, (c1 - c0) - idle) / LINES * 1e9
    quiet = 100 * (c2 - c1) / (t2 - t1)
    print(f"  {n:5d} maps open: recorder {c1 - c0:6.2f} s over the writes, "
          f"{idle:5.2f} s with none: {per:7.0f} ns a write; "
          f"quiet {quiet:5.2f}% of a core")
    os.unlink(data)


print(f"perf-map writes under record -a: {LINES} lines, a write(2) each")
for n in (30, 300, 3000):
    one(n)
