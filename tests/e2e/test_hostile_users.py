# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Another local user against the recorder, which runs as root: FIFOs,
symlinked directories, a container's symlinked /tmp and root's own files
planted where the recorder looks for JIT files. It must neither wait on
them nor read what that user could not."""
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys

from jt import AS_USER, JT, ROOT, TMP, holds_open, kill_left, run, script, start_attached, wait_for
from test_safety import nobody_dir

MARKER = "root_only_marker_7f3a"


def planter_path():
    return os.path.join(ROOT, "tests/workloads/planter.py")


def root_only_dir(name):
    """A directory only root may enter."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o700)
    return d


def plant_while_stopped(mode, top, target=None, files=None):
    """record -a; the planter maps its jitdump and plants `mode` while the
    recorder is stopped, so the recorder meets the plant on its path
    fallback whatever the machine's speed. Returns (stderr, data, pid)."""
    data = os.path.join(TMP, f"plant-{mode}.data")
    rec = start_attached(["-a", "--duration", "3", "-o", data])
    p = subprocess.Popen([*AS_USER, sys.executable, planter_path(), mode, top,
                          *([target] if target else [])],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(p.stdout.readline().split()[1])
        for fname, text in (files or {}).items():
            path = os.path.join(target, fname.format(pid=pid))
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)
        os.kill(rec.pid, signal.SIGSTOP)
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline() == "planted\n"
        os.kill(rec.pid, signal.SIGCONT)
        # The planter exits while the recorder runs: its exit must be
        # recorded, and the recorder end on time (--duration 3, with room
        # for a loaded machine).
        p.stdin.write("\n")
        p.stdin.flush()
        p.wait(timeout=30)
        _, err = rec.communicate(timeout=60)
    finally:
        rec.send_signal(signal.SIGCONT)
        kill_left(rec, p)
    assert rec.returncode == 0, err
    return rec.said_first + err, data, pid


def test_a_fifo_in_a_jitdumps_place_does_not_freeze_record_all():
    top = nobody_dir("plant-fifo")
    err, data, pid = plant_while_stopped("fifo", top)
    path = os.path.join(top, "a", f"jit-{pid}.dump")
    assert f"not reading {path} of pid {pid}: Invalid argument" in err, err
    # Its events are there: the exit of the planter, after the plant.
    assert any(e["type"] == "exit" and e["pid"] == pid for e in script(data))


def test_a_symlinked_directory_does_not_lead_to_root_files():
    top = nobody_dir("plant-dirlink")
    secret = root_only_dir("plant-secret")
    err, data, pid = plant_while_stopped(
        "dirlink", top, secret, {"jit-{pid}.dump": MARKER * 100})
    path = os.path.join(top, "a", f"jit-{pid}.dump")
    assert f"not reading {path} of pid {pid}" in err, err
    assert MARKER.encode() not in open(data, "rb").read()


NOBODY = pwd.getpwnam("nobody").pw_uid


def euid_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[2])
    return None


def test_a_root_owned_perf_map_is_refused_for_another_users_process():
    # Root wrote /tmp/perf-PID.map for nobody's process: perf accepts a
    # root-owned file for anyone; jittrace, for a root process only.
    target = subprocess.Popen([*AS_USER, "sleep", "30"])
    path = f"/tmp/perf-{target.pid}.map"
    # setpriv is root until it execs sleep: attach to nobody's process.
    wait_for("the target to run as nobody", lambda: euid_of(target.pid) == NOBODY)
    try:
        with open(path, "w") as f:
            f.write(f"1000 10 {MARKER}\n")
        p = run([JT, "record", "-p", str(target.pid), "--duration", "0.3",
                 "-o", os.path.join(TMP, "rootmap.data")])
    finally:
        target.kill()
        target.wait()
        os.unlink(path)
    assert f"not reading {path} of pid {target.pid}: Operation not permitted" in p.stderr, \
        p.stderr
    assert MARKER.encode() not in open(os.path.join(TMP, "rootmap.data"), "rb").read()


def chroot_with_tmp_link(name, tmp_target):
    """A root of nobody's whose /tmp is an absolute symlink: inside, it is
    the container's own path; from the host, it names a host directory."""
    r = nobody_dir(name)
    for sub in ("usr",):
        os.makedirs(os.path.join(r, sub), exist_ok=True)
    for link, to in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"),
                     ("tmp", tmp_target)):
        if not os.path.lexists(os.path.join(r, link)):
            os.symlink(to, os.path.join(r, link))
    return r


def test_a_containers_symlinked_tmp_stays_in_the_container():
    secret = root_only_dir("ct-secret")
    root = chroot_with_tmp_link("ct-linkroot", secret)
    proc = subprocess.Popen([*AS_USER, "unshare", "-Urm", "sh", "-c",
                             f"mount --rbind /usr {root}/usr && "
                             f"exec chroot {root} /usr/bin/sleep 30"])
    try:
        # The perf-map the container's sleep would have, at the host path
        # its /tmp link names: root's, and only root's to read.
        wait_for("sleep in its root",
                 lambda: open(f"/proc/{proc.pid}/comm").read() == "sleep\n")
        path = os.path.join(secret, f"perf-{proc.pid}.map")
        with open(path, "w") as f:
            f.write(f"1000 10 {MARKER}\n")
        os.chmod(path, 0o600)
        data = os.path.join(TMP, "ct-link.data")
        run([JT, "record", "-p", str(proc.pid), "--duration", "0.3", "-o", data])
        for view in ("script", "report"):
            assert MARKER not in run([JT, view, "-i", data]).stdout
        assert MARKER.encode() not in open(data, "rb").read()
    finally:
        proc.kill()
        proc.wait()


def chroot_with(name, binary):
    """A root holding binary at /, the libraries it loads, and a /tmp
    anyone may write: a chroot in the host's own mount namespace."""
    r = nobody_dir(name)
    libs = re.findall(r"(/\S+) \(0x", run(["ldd", binary]).stdout)
    for path in (binary, *libs):
        dst = r + (path if path in libs else "/" + os.path.basename(path))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(path, dst)
    os.makedirs(os.path.join(r, "tmp"), exist_ok=True)
    os.chmod(os.path.join(r, "tmp"), 0o1777)
    return r


def test_a_chroot_in_our_mount_namespace_has_its_own_tmp():
    """A process chrooted in the recorder's own mount namespace writes its
    perf-map in the chroot's /tmp. The recorder tells it from the host's
    processes by root as well as by namespace, so it reads that file and
    never the one nobody plants at the same name in the host's /tmp."""
    from jt import WL, hx
    root = chroot_with("chroot-tmp", os.path.join(WL, "jitgen"))
    data = os.path.join(TMP, "chroot-tmp.data")
    rec = start_attached(["-a", "--duration", "120", "-o", data])
    gen = subprocess.Popen(["chroot", "--userspec=nobody:nogroup", root, "/jitgen",
                            "adjacent", "4", "0.4", "-m", "-w", "1"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    decoy = f"/tmp/perf-{gen.pid}.map"
    try:
        head = []
        while not head or head[-1] not in ("waiting\n", ""):
            head.append(gen.stdout.readline())
        run([*AS_USER, "sh", "-c", f"echo '0 ffffffffffff {MARKER}' > {decoy}"])
        out, _ = gen.communicate("go\n", timeout=60)
        out = "".join(head[:-1]) + out
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=60)
    finally:
        kill_left(gen, rec)
        os.unlink(decoy)
    assert rec.returncode == 0, err
    truth = [line.split() for line in out.splitlines() if line.startswith("load ")]
    assert len(truth) == 4, out
    funcs = {(int(a, 16), int(a, 16) + int(n, 16)): name for _, name, a, n, _ in truth}
    samples = [e for e in script(data) if e["type"] == "sample" and e["pid"] == gen.pid
               and any(lo <= hx(e["ip"]) < hi for lo, hi in funcs)]
    assert samples, "no sample of the JIT functions"
    for e in samples:
        want = [n for (lo, hi), n in funcs.items() if lo <= hx(e["ip"]) < hi]
        assert (e["source"], e["sym"]) == ("perfmap", want[0]), e
    assert MARKER.encode() not in open(data, "rb").read()
    print(f"    chroot: {len(samples)} JIT samples, each named from the chroot's /tmp")


def test_audit_does_not_wait_on_a_fifo_perf_map():
    target = subprocess.Popen([*AS_USER, "sleep", "30"])
    path = f"/tmp/perf-{target.pid}.map"
    # setpriv is root until it execs sleep: attach to nobody's process.
    wait_for("the target to run as nobody", lambda: euid_of(target.pid) == NOBODY)
    try:
        run([*AS_USER, "mkfifo", path])
        p = run([JT, "audit", "-p", str(target.pid), "--json"], timeout=30)
    finally:
        target.kill()
        target.wait()
        os.unlink(path)
    assert f"not reading {path} of pid {target.pid}: Invalid argument" in p.stderr, p.stderr



def test_an_open_that_hangs_does_not_stall_the_recorder():
    """An open of one user's file hangs (as on a dead FUSE mount; injected
    here): the recorder leaves it, keeps recording, tries none of that
    user's files again, and still reads another user's."""
    import pwd
    from jt import AS_USER as NOBODY, WL, hx
    daemon = pwd.getpwnam("daemon")
    as_daemon = ["setpriv", "--reuid", str(daemon.pw_uid), "--regid", str(daemon.pw_gid),
                 "--clear-groups"]
    stall, calm = nobody_dir("stall-here"), nobody_dir("calm-dir")
    other = os.path.join(TMP, "daemon-dir")
    os.makedirs(other, exist_ok=True)
    os.chown(other, daemon.pw_uid, daemon.pw_gid)
    data = os.path.join(TMP, "stall.data")
    rec = start_attached(["-a", "--duration", "120", "-o", data],
                         env={**os.environ, "JT_TEST_OPEN_STALL": "stall-here"})
    pids = []
    try:
        for who, d in ((NOBODY, stall), (NOBODY, calm), (as_daemon, other)):
            p = run([*who, os.path.join(WL, "jitgen"), "adjacent", "2", "0.3", "-j", d])
            pids.append(int(p.stdout.split()[1]))
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=60)
    finally:
        kill_left(rec)
    assert rec.returncode == 0, err
    for pid, d in zip(pids[:2], (stall, calm)):
        assert f"not reading {d}/jit-{pid}.dump of pid {pid}: Connection timed out" in err, err
    assert re.search(r"jittrace: 1 file opens or reads hung past 250 ms \(reads of root's files "
                     r"on a local disk: 5000 ms\) and were left; "
                     r"[1-9]\d* more of the same users were not tried", err), err
    events = script(data)
    assert any(e["type"] == "exit" and e["pid"] == pids[0] for e in events)
    named = [e for e in events if e["type"] == "sample" and e["pid"] == pids[2]
             and e["source"] == "jitdump"]
    assert named and all(e["sym"].startswith("adjacent_") for e in named), named[:3]


def test_a_slow_read_of_a_root_library_cuts_no_user_off():
    """A library of root's on a local disk, read cold while the disk is
    busy (a fresh machine's first CPython under -g, just after apt), may
    pass the 250 ms an open gets: such a read waits up to 5 s, and one
    that overruns even that cuts no user off, so the perf-map its process
    writes after is still read. (The slow read is injected:
    JT_TEST_READ_SLOW=TEXT:SECS makes it last SECS.)"""
    from jt import USER, WL
    lib_dir = os.path.join(TMP, "slow-read-lib")
    os.makedirs(lib_dir, exist_ok=True)
    lib = os.path.join(lib_dir, "libjtdata.so")
    shutil.copy(os.path.join(WL, "libjtdata.so"), lib)
    mark = "after_a_slow_read_fn"
    for secs, hung in ((2, 0), (7, 1)):
        data = os.path.join(TMP, f"slow-read-{secs}.data")
        p = run([JT, "record", "-o", data, "--user", USER, "--", "env", f"LD_PRELOAD={lib}",
                 "sh", "-c", f"echo $$; printf '1000 10 {mark}\\n' > /tmp/perf-$$.map"],
                env={**os.environ, "JT_TEST_READ_SLOW": f"slow-read-lib:{secs}"},
                check=False)
        pid = int(p.stdout.split()[0])
        if os.path.exists(f"/tmp/perf-{pid}.map"):
            os.unlink(f"/tmp/perf-{pid}.map")
        assert p.returncode == 0, p.stderr
        said = re.findall(r"jittrace: (\d+) file opens or reads hung past .* and were left; "
                          r"(\d+) more of the same users were not tried", p.stderr)
        assert said == ([] if not hung else [(str(hung), "0")]), (secs, p.stderr)
        loads = [e["name"] for e in script(data)
                 if e["type"] == "jit_load" and e["pid"] == pid]
        assert loads == [mark], (secs, loads, p.stderr)


def test_a_pid_namespace_does_not_take_the_hosts_perf_map():
    """pid 1 of a new PID namespace that shares the host's /tmp, run as
    root: /tmp/perf-1.map is host pid 1's name, not its, unless it writes
    the file itself."""
    from jt import WL, record
    path = "/tmp/perf-1.map"
    if os.path.exists(path):
        from jt import Skip
        raise Skip(f"{path} exists here: host pid 1 writes a perf-map")
    with open(path, "w") as f:
        f.write(f"0 ffffffffffff {MARKER}\n")
    try:
        _, data = record(["unshare", "-pf", os.path.join(WL, "spin"), "0.3"],
                         ["--run-as-root"])
    finally:
        os.unlink(path)
    assert MARKER.encode() not in open(data, "rb").read()
    assert MARKER not in run([JT, "report", "-i", data]).stdout


def test_fork_and_exec_records_carry_the_euid_the_kernel_gave():
    # The recorder vets a process's perf-map against the euid its FORK
    # and EXEC records carry, read by BPF from the task: a setuid binary's
    # exec must say root, nobody's plain ones nobody.
    d = os.path.join(TMP, "suid")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    suid = os.path.join(d, "true-suid")
    subprocess.run(["cp", "/usr/bin/true", suid], check=True)
    os.chmod(suid, 0o4755)
    data = os.path.join(TMP, "euid.data")
    run([JT, "record", "--user", "nobody", "-o", data, "--",
         "sh", "-c", f"/usr/bin/true; {suid}; exit 0"])
    ev = script(data)
    execs = {e["path"]: e for e in ev if e["type"] == "exec"}
    assert execs["/usr/bin/true"]["euid"] == NOBODY, execs
    assert execs[suid]["euid"] == 0, execs
    assert execs["/usr/bin/dash"]["euid"] == NOBODY, execs
    shell = execs["/usr/bin/dash"]["pid"]
    forks = [e for e in ev if e["type"] == "fork" and e["pid"] == shell]
    assert len(forks) == 2, forks
    assert all(f["euid"] == NOBODY for f in forks), forks


def euid_switch(mode, marker):
    """Record euidswitch.py `mode` as root; release it once the recorder
    has vetted its perf-map: holds it open, or said why not. Returns
    (stderr, data, pid)."""
    import threading
    data = os.path.join(TMP, f"euid-{mode}.data")
    cmd = [sys.executable, os.path.join(ROOT, "tests/workloads/euidswitch.py"),
           mode, marker[::-1]]
    if mode == "gain":
        cmd = ["setpriv", "--euid", str(NOBODY), *cmd]
    rec = subprocess.Popen([JT, "record", "--run-as-root", "-o", data, "--",
                            *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    err = []
    reader = threading.Thread(target=lambda: err.extend(rec.stderr))
    reader.start()
    try:
        said = rec.stdout.readline().split()
        assert said and said[0] == "wrote", (said, err)
        pid = int(said[1])
        path = f"/tmp/perf-{pid}.map"
        wait_for("the recorder to vet the perf-map",
                 lambda: holds_open(rec.pid, path) or
                 any(f"not reading {path}" in line for line in err))
        rec.stdin.write("\n")
        rec.stdin.close()
        assert rec.wait(timeout=60) == 0, "".join(err)
    finally:
        kill_left(rec)
        reader.join()
    return "".join(err), data, pid


def test_a_process_that_drops_root_keeps_its_perf_map():
    # Exec'd as root, then nobody by setresuid(2), which no event shows:
    # the recorder's vet must see nobody, not the root its EXEC said.
    err, data, pid = euid_switch("drop", MARKER)
    assert "not reading" not in err, err
    assert MARKER.encode() in open(data, "rb").read()


def test_a_process_that_takes_root_back_is_refused_nobodys_perf_map():
    # Exec'd with euid nobody (real uid root), then root by seteuid(2):
    # its perf-map, nobody's file, is one nobody could have planted.
    err, data, pid = euid_switch("gain", MARKER)
    assert f"not reading /tmp/perf-{pid}.map of pid {pid}: Operation not permitted" \
        in err, err
    assert MARKER.encode() not in open(data, "rb").read()
