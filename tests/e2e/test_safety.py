# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""jittrace runs as root on machines shared with other users: the output
file cannot be planted or redirected, a failed start loses nothing, the
traced command behaves as it would without jittrace, and every --json
output parses whatever names the traced processes chose."""
import ast
import json
import os
import pwd
import resource
import signal
import stat
import subprocess
import time

from jt import AS_USER, JT, ROOT, TMP, USER, WL, record, run, script

NOBODY = pwd.getpwnam(USER)


def nobody_dir(name, sticky=False):
    """A directory nobody owns and may fill with whatever it likes."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    os.chown(d, NOBODY.pw_uid, NOBODY.pw_gid)
    os.chmod(d, 0o1777 if sticky else 0o755)
    return d


def as_nobody(*cmd):
    run([*AS_USER, *cmd])


def secret():
    path = os.path.join(TMP, "victim.txt")
    with open(path, "w") as f:
        f.write("root's secret\n")
    os.chmod(path, 0o600)
    return path


def rec(out, cmd=("true",), env=None, extra=(), **kw):
    return run([JT, "record", "-o", out, *extra, "--user", USER, "--", *cmd],
               check=False, env=env, **kw)


def test_output_symlink_is_never_followed():
    victim = secret()
    for d in (nobody_dir("plain"), nobody_dir("sticky", sticky=True)):
        out = os.path.join(d, "jt.data")
        as_nobody("ln", "-sf", victim, out)
        p = rec(out)
        assert p.returncode == 1 and "is a symbolic link" in p.stderr, p.stderr
        assert os.readlink(out) == victim
        with open(victim) as f:
            assert f.read() == "root's secret\n"
        assert os.stat(victim).st_uid == 0
        assert sorted(os.listdir(d)) == ["jt.data"], "no temporary left behind"


def test_planted_file_is_not_reused():
    d = nobody_dir("planted")
    out = os.path.join(d, "jt.data")
    as_nobody("sh", "-c", f"echo planted > {out}; chmod 666 {out}")
    p = rec(out)
    assert p.returncode == 0, p.stderr
    st = os.lstat(out)
    # A new file of root's, 0600, not nobody's world-writable one.
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    assert stat.S_IMODE(st.st_mode) == 0o600
    with open(out + ".old") as f:
        assert f.read() == "planted\n"
    run([JT, "maps", "-i", out])


def test_sudo_handover_goes_through_the_descriptor():
    env = dict(os.environ, SUDO_UID=str(NOBODY.pw_uid), SUDO_GID=str(NOBODY.pw_gid))
    out = os.path.join(TMP, "sudo.data")
    p = rec(out, env=env)
    assert p.returncode == 0, p.stderr
    assert os.stat(out).st_uid == NOBODY.pw_uid
    # A symlink to root's file: refused, so nothing is chowned through it.
    victim = secret()
    link = os.path.join(TMP, "sudo-link.data")
    os.symlink(victim, link)
    p = rec(link, env=env)
    assert p.returncode == 1 and "is a symbolic link" in p.stderr
    assert os.stat(victim).st_uid == 0 and stat.S_IMODE(os.stat(victim).st_mode) == 0o600
    # A device node: not a regular file, its owner stays.
    node = os.path.join(TMP, "null-node")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    p = rec(node, env=env)
    assert p.returncode == 1 and "is not a regular file" in p.stderr, p.stderr
    assert os.stat(node).st_uid == 0


def test_failed_start_leaves_the_old_file():
    _, good = record(["true"])
    keep = os.path.join(TMP, "keep")
    os.makedirs(keep, exist_ok=True)
    out = os.path.join(keep, "keep.data")
    with open(good, "rb") as f:
        before = f.read()
    cases = [
        (["record", "-p", "999999"], "no process 999999"),
        (["record", "-p", "2"], "pid 2 has no memory map"),
        (["record", "-m", "1073741824", "--user", USER, "--", "true"], "setting up failed"),
        (["record", "-F", "1000000", "--user", USER, "--", "true"], "maximum sampling rate"),
    ]
    for args, said in cases:
        with open(out, "wb") as f:
            f.write(before)
        p = run([JT, *args[:1], "-o", out, *args[1:]], check=False)
        assert p.returncode != 0 and said in p.stderr, (args, p.stderr)
        with open(out, "rb") as f:
            assert f.read() == before, args
        assert os.listdir(keep) == ["keep.data"], (args, os.listdir(keep))
    # Out of descriptors: said as such, without libbpf's verifier log.
    for n in (32, 48):
        p = run(["sh", "-c", f"ulimit -n {n}; exec {JT} record -o {out} --user {USER} -- true"],
                check=False)
        assert p.returncode == 1, p.stderr
        assert f"out of file descriptors (ulimit -n is {n})" in p.stderr, p.stderr
        assert "PROG LOAD LOG" not in p.stderr and len(p.stderr.splitlines()) <= 3, p.stderr
        with open(out, "rb") as f:
            assert f.read() == before
        assert os.listdir(keep) == ["keep.data"]
    # A recording that starts keeps the previous one as .old, as perf does.
    p = rec(out)
    assert p.returncode == 0
    with open(out + ".old", "rb") as f:
        assert f.read() == before
    run([JT, "maps", "-i", out])


def test_full_disk_counts_what_is_lost():
    _, small = record(["true"])
    mnt = os.path.join(TMP, "full")
    os.makedirs(mnt, exist_ok=True)
    # Room for the start of a recording (its kallsyms copy), not the run.
    size = os.path.getsize(small) + 256 * 1024
    run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt])
    try:
        out = os.path.join(mnt, "full.data")
        p = rec(out, [os.path.join(WL, "mmloop"), "calls", "50000"])
        assert p.returncode == 0, p.stderr
        assert "No space left on device" in p.stderr, p.stderr
        line = next(l for l in p.stderr.splitlines() if "events lost" in l)
        total, bpf, perf, write = (int(w.strip("(,")) for w in line.split()
                                   if w.strip("(,").isdigit())
        assert write > 0 and total == bpf + perf + write, line
        # What reached the disk ends at a whole record and reads.
        p = run([JT, "script", "-i", out])
        assert "at byte" not in p.stderr and "not finished" in p.stderr, p.stderr
    finally:
        run(["umount", mnt])


def selfstate(cmd, preexec):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       preexec_fn=preexec, close_fds=True)
    assert p.returncode == 0, p.stderr
    return sorted(l for l in p.stdout.splitlines()
                  if l.split()[0] in ("status", "rlimit", "fd", "umask", "env"))


def odd_start():
    """What a shell may hand down: an ignored signal, a blocked one, a
    lowered limit. The command must see these, not jittrace's own."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, 4096))
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (65536, 65536))


def test_command_inherits_what_it_would_without_jittrace():
    wl = os.path.join(WL, "selfstate")
    # Run directly, the command would have its user's login variables, as
    # su gives them, not the ones sudo set for root.
    direct = ["setpriv", "--reuid", str(NOBODY.pw_uid), "--regid", str(NOBODY.pw_gid),
              "--init-groups", "env", f"HOME={NOBODY.pw_dir}", f"USER={NOBODY.pw_name}",
              f"LOGNAME={NOBODY.pw_name}", wl]
    traced = [JT, "record", "-o", os.path.join(TMP, "self.data"), "--user", USER, "--", wl]
    want, got = selfstate(direct, odd_start), selfstate(traced, odd_start)
    assert any(l.startswith("rlimit 7 512 4096") for l in want)
    assert got == want, "\n".join(sorted(set(got) ^ set(want)))
    # As root too (--run-as-root), against the command run directly.
    want = selfstate([wl], odd_start)
    got = selfstate([JT, "record", "-o", os.path.join(TMP, "self-root.data"),
                     "--run-as-root", "--", wl], odd_start)
    assert got == want, "\n".join(sorted(set(got) ^ set(want)))
    # The classic symptom of an inherited ignored SIGPIPE.
    p = run([JT, "record", "-o", os.path.join(TMP, "pipe.data"), "--run-as-root", "--",
             "sh", "-c", "yes | head -1"])
    assert p.stdout == "y\n" and "Broken pipe" not in p.stderr, p.stderr


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def in_read(pid):
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()[0] == "0"
    except (OSError, IndexError):
        return False


def gone(pid, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1][0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


def test_command_dies_with_a_killed_recorder():
    r = subprocess.Popen([JT, "record", "-o", os.path.join(TMP, "orphan.data"),
                          "--user", USER, "--", "sleep", "300"],
                         stderr=subprocess.DEVNULL)
    end = time.monotonic() + 60
    while not any(comm(c) == "sleep" for c in children(r.pid)):
        assert time.monotonic() < end and r.poll() is None
        time.sleep(0.02)
    child = children(r.pid)[0]
    r.kill()
    r.wait()
    assert gone(child), "the command outlived its recorder"


def test_command_never_runs_unless_the_gate_opens():
    marker = os.path.join(nobody_dir("gate"), "ran")
    for attempt in range(5):
        r = subprocess.Popen([JT, "record", "-o", os.path.join(TMP, "gate.data"),
                              "--user", USER, "--", "touch", marker],
                             stderr=subprocess.DEVNULL)
        end = time.monotonic() + 60
        while not children(r.pid):
            assert time.monotonic() < end and r.poll() is None
            time.sleep(0.005)
        child = children(r.pid)[0]
        # Freeze the recorder. A child still blocked in read(2) on the
        # gate well after that will wait forever: the gate was not opened.
        r.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        waiting = comm(child) == "jittrace" and in_read(child)
        r.kill()
        r.wait()
        assert gone(child)
        if waiting:
            assert not os.path.exists(marker), "ran without the gate"
            return
        os.unlink(marker)
    raise AssertionError("never caught the recorder before its gate")


def test_sampling_options_are_checked():
    bad = {("-F", "-5"): "-F wants a positive", ("-c", "-1"): "-c wants a positive",
           ("-F", "0"): "-F wants a positive", ("-F", "100", "-c", "10"): "not both"}
    for args, said in bad.items():
        p = run([JT, "record", *args, "--", "true"], check=False)
        assert p.returncode == 2 and said in p.stderr, (args, p.stderr)
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        top = int(f.read())
    p = run([JT, "record", "-F", str(top + 1), "--", "true"], check=False)
    assert p.returncode == 2 and f"maximum sampling rate, {top} Hz" in p.stderr, p.stderr
    assert "PMU" not in p.stderr


def test_the_default_rate_comes_down_to_the_kernels_maximum():
    """The kernel lowers perf_event_max_sample_rate itself where its sample
    interrupts run long (an emulated guest on a busy host). As perf does,
    the default -F 999 comes down to it, said once; an -F asked for above
    it is refused (test_sampling_options_are_checked)."""
    path = "/proc/sys/kernel/perf_event_max_sample_rate"
    # 0 or 100 turns the kernel's throttling off and refuses writes to the
    # maximum (the VM guests run so): turn it on for the test's length
    budget = "/proc/sys/kernel/perf_cpu_time_max_percent"
    with open(path) as f:
        top = f.read()
    with open(budget) as f:
        was = f.read()
    data = os.path.join(TMP, "lowered.data")
    try:
        if int(was) in (0, 100):
            with open(budget, "w") as f:
                f.write("25")
        with open(path, "w") as f:
            f.write("500")
        p = run([JT, "record", "-o", data, "--user", USER, "--", "true"])
    finally:
        with open(path, "w") as f:
            f.write(top)
        with open(budget, "w") as f:
            f.write(was)
    said = "lowering the default sampling rate from 999 to 500 Hz"
    assert p.stderr.count(said) == 1, p.stderr
    with open(data, "rb") as f:
        assert b"\nperf.freq=500\n" in f.read()


def test_input_that_is_not_a_file():
    _, data = record(["true"])
    want = run([JT, "maps", "-i", data, "--json"]).stdout
    with open(data, "rb") as f:
        piped = f.read()
    for path in ("-", "/dev/stdin"):
        p = subprocess.run([JT, "maps", "-i", path, "--json"], input=piped,
                           capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stdout.decode() == want, p.stderr
    fifo = os.path.join(TMP, "fifo")
    os.mkfifo(fifo)
    p = run([JT, "maps", "-i", fifo], check=False, timeout=30)
    assert p.returncode == 1 and "empty: no recording in it" in p.stderr
    p = run([JT, "maps", "-i", TMP], check=False)
    assert p.returncode == 1 and "Is a directory" in p.stderr
    p = run([JT, "maps", "-i", "/dev/zero"], check=False)
    assert p.returncode == 1 and "not a regular file or a pipe" in p.stderr


def hostile_run(opts=()):
    d = nobody_dir("hostile")
    return record(["python3", os.path.join(ROOT, "tests/workloads/hostile.py"), d], opts)


NAME0 = 'q"uote back\\slash'
NAME1 = "tab\there ctl\x01\x1f\x7f \ufffd\ufffdbad \u00fcn\u00efc"
NAME2 = 'new"\\name\x02'
LONG_NAME = "long_" + "x" * 4091
ORPHAN = 'orphan"\x03\x1b[2J\u009b'


def strict(text):
    return json.loads(text, strict=True)


def test_json_survives_hostile_names():
    p, data = hostile_run()
    path = ast.literal_eval(next(l for l in p.stdout.splitlines()
                                 if l.startswith("file "))[5:])
    shown_path = path.decode("utf-8", "replace")
    rep = strict(run([JT, "report", "-i", data, "--json", "--sort", "sym"]).stdout)
    syms = {r["sym"] for r in rep}
    assert {NAME0, NAME1, NAME2} <= syms, syms
    maps = strict(run([JT, "maps", "-i", data, "--json"]).stdout)
    assert shown_path in {r["path"] for r in maps}
    lines = run([JT, "script", "-i", data, "--json"]).stdout.splitlines()
    events = [strict(l) for l in lines]
    assert {NAME0, NAME1, NAME2} <= {e.get("sym") for e in events if e["type"] == "sample"}
    assert shown_path in {e.get("path") for e in events}
    audit = strict(run([JT, "audit", "-i", data, "--json"]).stdout)
    reuse = [f["detail"] for f in audit if f["kind"] == "perfmap-reuse"]
    assert {"old": NAME0, "new": NAME2} in [{k: r[k] for k in ("old", "new")} for r in reuse]
    assert ORPHAN in {f["detail"].get("name") for f in audit if f["kind"] == "jit-orphan"}
    # jq agrees, where it is installed.
    if subprocess.run(["sh", "-c", "command -v jq"], capture_output=True).returncode == 0:
        for args in (["report"], ["maps"], ["audit"]):
            out = run([JT, *args, "-i", data, "--json"]).stdout
            run(["jq", "-e", "length > 0"], input=out)


def terminal_safe(out):
    """Bytes a terminal may be given: valid UTF-8, no control byte but the
    newline, no C1 control (U+0080..U+009F), no DEL."""
    text = out.decode("utf-8")  # strict: raises on invalid UTF-8
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    assert not bad, bad[:10]


def test_text_views_escape_what_processes_name():
    _, data = hostile_run()
    outs = {v: subprocess.run([JT, *v.split(), "-i", data], capture_output=True,
                              timeout=120, check=True).stdout
            for v in ("report", "report --sort sym", "script", "maps", "audit")}
    for view, out in outs.items():
        terminal_safe(out)
    # The names themselves, each byte accounted for: the tab keeps the
    # columns, and the screen is not cleared.
    assert "tab\\x09here ctl\\x01\\x1f\\x7f \\xff\\xfebad \u00fcn\u00efc".encode() \
        in outs["report --sort sym"], outs["report --sort sym"][-2000:]
    assert b'q"uote back\\\\slash' in outs["report --sort sym"]
    assert b'orphan"\\x03\\x1b[2J\\xc2\\x9b' in outs["audit"], outs["audit"][-2000:]
    # The mapped file's path holds a newline: one line in maps all the same.
    assert b"we\"ird\\\\na\\x0ame\\x01\\xff.bin" in outs["maps"], outs["maps"][-2000:]


def test_live_audit_json_survives_hostile_names():
    d = nobody_dir("hostile")
    w = subprocess.Popen([*AS_USER, "python3", os.path.join(ROOT, "tests/workloads/hostile.py"),
                          d, "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(w.stdout.readline().split()[1])
        while w.stdout.readline() != "ready\n":
            pass
        out = run([JT, "audit", "-p", str(pid), "--json", "--addr", "10"]).stdout
        found = strict(out)
        reuse = [f["detail"] for f in found if f["kind"] == "perfmap-reuse"]
        assert {"old": NAME0, "new": NAME2} in reuse, found
        assert ORPHAN in {f["detail"].get("name") for f in found
                          if f["kind"] == "jit-orphan"}
        assert [f["detail"]["sharing"] for f in found if f["kind"] == "addr"] == ["unmapped"]
    finally:
        w.communicate("done\n", timeout=30)


BAD_JITDUMP = r'''
import mmap, os, struct, sys
path = os.path.join(sys.argv[1], f"jit-{os.getpid()}.dump")
with open(path, "wb") as f:
    f.write(struct.pack("<IIIIIIQQ", 0x4A695444, 0xFFFFFFFF, 40, 62, 0,
                        os.getpid(), 0, 0))
    name = b"from_the_future\0"
    f.write(struct.pack("<IIQIIQQQQ", 0, 16 + 40 + len(name) + 16, 1,
                        os.getpid(), os.getpid(), 0x1000, 0x1000, 16, 1))
    f.write(name + b"\xc3" * 16)
    f.truncate(4096)
fd = os.open(path, os.O_RDONLY)
marker = mmap.mmap(fd, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)
print("pid", os.getpid(), flush=True)
'''


def test_jitdump_of_an_unknown_version_is_refused():
    d = nobody_dir("future")
    p, data = record(["python3", "-c", BAD_JITDUMP, d])
    pid = int(p.stdout.split()[1])
    text = run([JT, "report", "-i", data]).stdout
    line = next((l for l in text.splitlines() if f"jit-{pid}.dump" in l), None)
    assert line and "unsupported jitdump version 4294967295" in line, text
    assert "from_the_future" not in text
    events = [e for e in script(data) if e["type"].startswith("jit_")]
    assert events == []
