# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Helpers for the end-to-end tests: run jittrace, parse what it prints."""
import itertools
import json
import os
import re
import platform
import pwd
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("JT_BUILD", os.path.join(ROOT, "build"))
JT = os.path.join(BUILD, "jittrace")
WL = os.path.join(BUILD, "workloads")
USER = "nobody"
_pw = pwd.getpwnam(USER)
# Run a command as USER, as the traced command would be (setpriv wants ids:
# Debian's nobody is in group nogroup).
AS_USER = ["setpriv", "--reuid", str(_pw.pw_uid), "--regid", str(_pw.pw_gid),
           "--clear-groups"]
TMP = tempfile.mkdtemp(prefix="jt-e2e-")
os.chmod(TMP, 0o755)


class Skip(Exception):
    """A test that cannot run here: counted as skipped, never as passed."""


def run(args, check=True, timeout=120, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}:\n{p.stderr}")
    return p


_seq = itertools.count()
# The VM suite runs these tests once per probe tier (JT_TIER) and keeps
# each recording and its command's output (JT_KEEP) to compare the tiers.
TIER = os.environ.get("JT_TIER")
KEEP = os.environ.get("JT_KEEP")
CURRENT = "test"  # the running test's name, set by run.py
_kept = {}  # recordings kept per test, for the VM to pair up


def _keep(p, data):
    if not KEEP or not os.path.exists(data):
        return
    n = _kept[CURRENT] = _kept.get(CURRENT, -1) + 1
    base = os.path.join(KEEP, f"{CURRENT}-{n}")
    shutil.copyfile(data, base + ".data")
    with open(base + ".out", "w") as f:
        f.write(p.stdout)


def unkeep():
    """Drop the recording last kept for this test: a run made again, longer,
    replaces it, so every tier keeps the same number to compare."""
    n = _kept.get(CURRENT)
    if not KEEP or n is None:
        return
    for ext in (".data", ".out"):
        path = os.path.join(KEEP, f"{CURRENT}-{n}{ext}")
        if os.path.exists(path):
            os.unlink(path)
    if n:
        _kept[CURRENT] = n - 1
    else:
        del _kept[CURRENT]


def record(cmd, opts=(), check=True, timeout=120):
    """jittrace record the command as an unprivileged user; returns (proc, data)."""
    data = os.path.join(TMP, f"rec{next(_seq)}.data")
    args = [JT, "record", "-o", data, *opts]
    if TIER and "--tier" not in opts:
        # arm64 has no page fault tracepoints: there the tracepoint tier's
        # run of a COW test is the kernel tier's, which its own run tests.
        if TIER == "tracepoint" and platform.machine() == "aarch64" and \
                ("-d" in opts or "--cow" in opts):
            raise Skip("no page fault tracepoints on arm64: COW is "
                       "recorded by the kernel tier, tested in its runs")
        args += ["--tier", TIER]
    if cmd:
        args += ["--user", USER, "--", *cmd]
    p = run(args, check=check, timeout=timeout)
    if TIER == "fentry" and p.returncode == 0:
        # No syscall tracepoint is left on the fentry tier (current
        # programs): write(2) and shm go by vfs_write's and do_shmat's exits.
        m = re.search(r"^jittrace: probes: .*write\+shm=(\S+) .*programs=(\S+)",
                      p.stderr, re.M)
        assert m and m.group(1) == ("fexit" if m.group(2) == "current" else "tracepoint"), \
            p.stderr
    _keep(p, data)
    return p, data


def maps(data, pid=None, at=None):
    args = [JT, "maps", "-i", data, "--json"]
    if pid:
        args += ["--pid", str(pid)]
    if at:
        args += ["--at", str(at)]
    rows = json.loads(run(args).stdout)
    for r in rows:
        r["start"] = int(r["start"], 16)
        r["end"] = int(r["end"], 16)
        if r["kernel_vma"]:
            r["kernel_vma"] = (int(r["kernel_vma"]["start"], 16),
                               int(r["kernel_vma"]["end"], 16))
    return rows


def script(data):
    out = run([JT, "script", "-i", data, "--json"]).stdout
    return [json.loads(line) for line in out.splitlines()]


def hx(v):
    return int(v, 16)


def workload_lines(stdout, tag):
    return [line.split()[1:] for line in stdout.splitlines() if line.startswith(tag + " ")]


def proc_maps(stdout, pid=None):
    """The "maps PID line" lines a workload printed, parsed."""
    out = []
    for line in stdout.splitlines():
        f = line.split()
        if f[0] != "maps" or (pid and int(f[1]) != pid):
            continue
        s, e = (int(x, 16) for x in f[2].split("-"))
        out.append({"pid": int(f[1]), "start": s, "end": e, "prot": f[3],
                    "path": f[7] if len(f) > 7 else None})
    return out


def assert_tiles(rows, proc_lines):
    """Every /proc/self/maps VMA is covered exactly by requested regions
    with the same protection, file and kernel VMA."""
    for v in proc_lines:
        if v["path"] == "[vsyscall]":
            continue
        inside = [r for r in rows if r["start"] < v["end"] and r["end"] > v["start"]]
        assert inside, f"no region for VMA {v}"
        assert inside[0]["start"] == v["start"] and inside[-1]["end"] == v["end"], \
            f"regions {[(hex(r['start']), hex(r['end'])) for r in inside]} do not tile {v}"
        for a, b in zip(inside, inside[1:]):
            assert a["end"] == b["start"], f"gap in {v}"
        for r in inside:
            assert r["prot"] == v["prot"], f"prot {r} vs {v}"
            if v["path"] and v["path"].startswith("/"):
                assert r["path"] == v["path"], f"path {r['path']} vs {v['path']}"
            assert r["kernel_vma"] == (v["start"], v["end"]), \
                f"kernel VMA {r['kernel_vma']} vs {v}"
            assert r["coalesced"] == (len(inside) > 1)


def has_pmu():
    p = run([JT, "doctor"], check=False)
    return "hardware PMU (cycles)      ok" in p.stdout


def kill_left(*procs):
    """On the way out of a test: end whichever of procs still runs."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def open_paths(pid):
    """The paths process pid has open, as /proc names them."""
    paths = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return paths


def inotify_watches(pid):
    """The inotify watches a process holds, over all its inotify descriptors."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                n += sum(1 for line in f if line.startswith("inotify wd:"))
        except FileNotFoundError:
            pass  # closed meanwhile
    return n


def holds_open(pid, path):
    """Whether process pid has path open."""
    return path in open_paths(pid)


def wait_for(what, cond, timeout=60):
    """Poll cond() until true: synchronise on an event, never on a sleep."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_attached(args, env=None):
    """Start jittrace record with -p or -a; return once it says it records.
    What it said until then is in the returned object's said_first."""
    rec = subprocess.Popen([JT, "record", *args], stderr=subprocess.PIPE,
                           text=True, env=env)
    seen = []
    for line in rec.stderr:
        seen.append(line)
        if line.startswith("jittrace: recording "):
            rec.said_first = "".join(seen)
            return rec
    raise AssertionError("record never started:\n" + "".join(seen))
