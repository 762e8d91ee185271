# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""JIT attribution against what really ran: jitgen logs every stretch of
time a function ran at an address; each sample in such a stretch must
carry exactly that name."""
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import time

from jt import (AS_USER, JT, TMP, USER, WL, holds_open, hx, inotify_watches, kill_left, open_paths,
                record, run, script, start_attached, unkeep, wait_for)

CODE = 16


def jitgen(mode, n, secs, jitdump=True, perfmap=False, opts=()):
    jd = os.path.join(TMP, "jitdumps")
    os.makedirs(jd, exist_ok=True)
    os.chmod(jd, 0o777)
    args = [os.path.join(WL, "jitgen"), mode, str(n), str(secs)]
    if jitdump:
        args += ["-j", jd]
    if perfmap:
        args += ["-m"]
    p, data = record(args, opts)
    return p.stdout, data


def runs(stdout):
    out = []
    for line in stdout.splitlines():
        f = line.split()
        if f[0] == "run":
            out.append((f[1], int(f[2], 16), int(f[3]), int(f[4])))
    return out


def loads(stdout):
    return {f[1]: int(f[4]) for f in (l.split() for l in stdout.splitlines())
            if f[0] == "load"}


def truth(sample, stretches):
    ip, t = hx(sample["ip"]), sample["time"]
    for name, addr, t0, t1 in stretches:
        if addr <= ip < addr + CODE and t0 <= t <= t1:
            return name
    return None


def check(stdout, data, source, min_each=5, retro_before=None):
    """Every sample in a function's stretch named as that function, and,
    unless min_each is None, min_each samples or more in each."""
    stretches = runs(stdout)
    per_name = {}
    for s in script(data):
        if s["type"] != "sample" or s["kernel"]:
            continue
        want = truth(s, stretches)
        if want is None:
            continue
        assert s["sym"] == want, f"sample at {s['time']} named {s['sym']}, ran {want}"
        assert s["source"] == source, s
        if retro_before is not None:
            assert s["retro"] == (s["time"] < retro_before[want]), s
        else:
            assert not s["retro"], s
        per_name[want] = per_name.get(want, 0) + 1
    if min_each is not None:
        assert enough(stdout, per_name, min_each), per_name
    return per_name


def enough(stdout, per_name, min_each):
    return set(per_name) == {r[0] for r in runs(stdout)} and \
        min(per_name.values()) >= min_each


def jitgen_check(mode, n, secs, source, min_each=5, retro=False, **kw):
    """jitgen, then check; run again two and four times as long while a
    function has fewer than min_each samples: an arm64 guest under TCG
    gave 4 from a fifth of a CPU second at 1 kHz."""
    for scale in (1, 2, 4):
        if scale > 1:
            unkeep()
        out, data = jitgen(mode, n, secs * scale, **kw)
        per_name = check(out, data, source, None, loads(out) if retro else None)
        if enough(out, per_name, min_each):
            break
    assert enough(out, per_name, min_each), per_name
    return out, data, per_name


def test_adjacent_pages_jitdump_only():
    jitgen_check("adjacent", 6, 1.2, "jitdump")


def test_adjacent_pages_perfmap_only():
    jitgen_check("adjacent", 6, 1.2, "perfmap", jitdump=False, perfmap=True)


def test_adjacent_pages_jitdump_wins_over_perfmap():
    jitgen_check("adjacent", 6, 1.2, "jitdump", perfmap=True)


def test_address_reuse_perfmap_only():
    jitgen_check("reuse", 6, 1.2, "perfmap", jitdump=False, perfmap=True)


def test_perfmap_rewritten_in_place():
    # As jcmd Compiler.perfmap does: the file written again from its start,
    # truncated first or written over at the same size. Each version is
    # read again, and its lines name the samples of their own time.
    _, _, per_name = jitgen_check("rewrite", 6, 1.2, "perfmap", jitdump=False,
                                  perfmap=True)
    assert sorted(per_name) == [f"rewrite_{i:02d}" for i in range(6)]


REWRITER = """
import os, sys
path = f"/tmp/perf-{os.getpid()}.map"
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
print(os.getpid(), flush=True)
os.write(fd, b"".join(b"%x 10 first_version_%d\\n" % (0x1000 + 16 * i, i)
                     for i in range(40)))
sys.stdin.readline()
os.ftruncate(fd, 0)
os.pwrite(fd, b"1000 10 second_" + b"version\\n", 0)
sys.stdin.readline()
os.unlink(path)
"""


def test_perfmap_written_over_with_no_write_event():
    # ftruncate(2) and pwrite(2) make no write event: the recorder's sweep
    # finds the file shorter than what it read, and reads it again. (The
    # script builds its names, so its command line holds neither.)
    data = os.path.join(TMP, "pwrite-over.data")
    rec = subprocess.Popen([JT, "record", "--user", USER, "-o", data, "--",
                            "python3", "-c", REWRITER], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        pid = int(rec.stdout.readline())

        def recorded(marker):
            with open(data, "rb") as f:
                return marker in f.read()
        wait_for("the first version in the recording",
                 lambda: recorded(b"first_version_39"))
        rec.stdin.write("\n")
        rec.stdin.flush()
        wait_for("the second version in the recording",
                 lambda: recorded(b"second_version"), timeout=20)
        _, err = rec.communicate("\n", timeout=60)
        assert rec.returncode == 0, err
    finally:
        kill_left(rec)
    names = [e["name"] for e in script(data)
             if e["type"] == "jit_load" and e["pid"] == pid]
    assert names == [f"first_version_{i}" for i in range(40)] + ["second_version"], names


HOLDERS = """
import os, sys
kids = []
for i in range(int(sys.argv[1])):
    r, w = os.pipe()
    pid = os.fork()
    if not pid:
        os.close(r)
        path = f"/tmp/perf-{os.getpid()}.map"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"%x 10 held_%d\\n" % (0x1000 + 16 * i, i))
        os.close(w)
        sys.stdin.read()
        os.unlink(path)
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
for pid, r in kids:
    os.read(r, 1)
print("ready", flush=True)
sys.stdin.read()
for pid, r in kids:
    os.waitpid(pid, 0)
"""


def read_calls(pid):
    with open(f"/proc/{pid}/io") as f:
        return int(next(ln for ln in f if ln.startswith("syscr:")).split()[1])


def test_perfmaps_nobody_writes_are_not_read_each_tick():
    # 200 processes hold perf-maps no one writes. Each is watched for
    # changes, so a tick reads none of them: the recorder's read calls stay
    # under one per file every two seconds (a read of each at every tick
    # was ten a second). Each file's line is still in the recording.
    n = 200
    data = os.path.join(TMP, "held-maps.data")
    rec = subprocess.Popen([JT, "record", "--user", USER, "-o", data, "--",
                            "python3", "-c", HOLDERS, str(n)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert rec.stdout.readline().split() == ["ready"]
        wait_for("the recorder to open every perf-map",
                 lambda: sum("/perf-" in p for p in open_paths(rec.pid)) >= n)
        wait_for("a watch on every perf-map", lambda: inotify_watches(rec.pid) > n)
        r0, t0 = read_calls(rec.pid), time.monotonic()
        time.sleep(3)
        r1, t1 = read_calls(rec.pid), time.monotonic()
        _, err = rec.communicate("", timeout=120)
        assert rec.returncode == 0, err
    finally:
        kill_left(rec)
    per_sec = (r1 - r0) / (t1 - t0)
    assert per_sec < n / 2, f"{per_sec:.0f} read calls a second with {n} perf-maps open"
    names = sorted(e["name"] for e in script(data) if e["type"] == "jit_load")
    assert names == sorted(f"held_{i}" for i in range(n)), names[:10]


PWRITERS = """
import os, sys
kids = []
done_r, done_w = os.pipe()
for i in range(3):
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if not pid:
        os.close(r)
        os.close(go_w)
        path = f"/tmp/perf-{os.getpid()}.map"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        first = b"%x 10 first_%d\\n" % (0x1000 + 16 * i, i)
        os.write(fd, first)
        os.close(w)
        os.read(go_r, 1)
        os.pwrite(fd, b"%x 10 second_%d\\n" % (0x2000 + 16 * i, i), len(first))
        os.write(done_w, b"d")
        sys.stdin.read()
        os.unlink(path)
        os._exit(0)
    os.close(w)
    os.close(go_r)
    kids.append((pid, r, go_w))
for pid, r, go in kids:
    os.read(r, 1)
print("ready", flush=True)
sys.stdin.readline()
for pid, r, go in kids:
    os.write(go, b"g")
    os.read(done_r, 1)
print("written", flush=True)
sys.stdin.read()
for pid, r, go in kids:
    os.waitpid(pid, 0)
"""


def record_on_a_one_event_queue(script_text, data, errs):
    # The recorder makes its inotify instances while the queue bound
    # (max_queued_events, read when an instance is made) is one event;
    # the bound is put back once the command says it runs.
    knob = "/proc/sys/fs/inotify/max_queued_events"
    with open(knob) as f:
        was = f.read()
    with open(knob, "w") as f:
        f.write("1")
    try:
        with open(errs, "w") as err:
            rec = subprocess.Popen([JT, "record", "--user", USER, "-o", data, "--",
                                    "python3", "-c", script_text], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=err, text=True)
        ready = rec.stdout.readline().split()
    finally:
        with open(knob, "w") as f:
            f.write(was)
    if ready != ["ready"]:
        kill_left(rec)
        raise AssertionError(open(errs).read())
    return rec


def write_while_stopped(rec):
    # The command writes while the recorder cannot read its queue.
    os.kill(rec.pid, signal.SIGSTOP)
    try:
        rec.stdin.write("\n")
        rec.stdin.flush()
        assert rec.stdout.readline().split() == ["written"]
    finally:
        os.kill(rec.pid, signal.SIGCONT)


def in_recording(data, *markers):
    with open(data, "rb") as f:
        got = f.read()
    return all(m in got for m in markers)


def ended_saying(rec, errs, said, data):
    """The command let go: the recorder exits 0 having said `said`. The
    recording's JIT names, sorted."""
    rec.communicate("", timeout=60)
    assert rec.returncode == 0, open(errs).read()
    err = open(errs).read()
    assert re.search(said, err), err
    return sorted(e["name"] for e in script(data) if e["type"] == "jit_load")


def test_changes_a_full_watch_queue_dropped_are_read():
    # The watches' queue bounded at one event (the sysctl's value when the
    # recorder made it): three perf-maps each get a line by pwrite(2),
    # which has no write event, while the recorder is stopped, so the
    # queue overflows whatever the machine's speed. The overflow has every
    # file read on the next pass, said at the end: each line is in the
    # recording before the command ends, not only at its exit.
    data = os.path.join(TMP, "watch-overflow.data")
    errs = os.path.join(TMP, "watch-overflow.err")
    rec = record_on_a_one_event_queue(PWRITERS, data, errs)
    try:
        wait_for("each first line in the recording",
                 lambda: in_recording(data, *(b"first_%d" % i for i in range(3))))
        write_while_stopped(rec)
        wait_for("each second line in the recording while the command runs",
                 lambda: in_recording(data, *(b"second_%d" % i for i in range(3))),
                 timeout=20)
        names = ended_saying(rec, errs, r"jittrace: the JIT files' change watches overflowed "
                             r"\d+ times; each time every file was read", data)
    finally:
        kill_left(rec)
    assert names == sorted([f"first_{i}" for i in range(3)] +
                           [f"second_{i}" for i in range(3)]), names


RENAMERS = """
import os, sys
kids = []
done_r, done_w = os.pipe()
for i in range(3):
    go_r, go_w = os.pipe()
    pid = os.fork()
    if not pid:
        os.close(go_w)
        os.read(go_r, 1)
        # Written under a name no write event follows, then renamed in.
        tmp = f"/tmp/jt-renamed-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(b"%x 10 renamed_%d\\n" % (0x1000 + 16 * i, i))
        os.rename(tmp, f"/tmp/perf-{os.getpid()}.map")
        os.write(done_w, b"d")
        sys.stdin.read()
        os.unlink(f"/tmp/perf-{os.getpid()}.map")
        os._exit(0)
    os.close(go_r)
    kids.append((pid, go_w))
print("ready", flush=True)
sys.stdin.readline()
for pid, go in kids:
    os.write(go, b"g")
    os.read(done_r, 1)
print("written", flush=True)
sys.stdin.read()
for pid, go in kids:
    os.waitpid(pid, 0)
"""


def test_perfmaps_renamed_in_while_tmp_watch_overflowed_are_found():
    # The /tmp watch's queue bounded at one event: three perf-maps are
    # renamed into place (no write event names them) while the recorder
    # is stopped, so at most one rename is told. The overflow has every
    # tracked process's perf-map looked for again: each is read while
    # the command runs, not only at its exit, and the overflow is said.
    data = os.path.join(TMP, "tmp-overflow.data")
    errs = os.path.join(TMP, "tmp-overflow.err")
    rec = record_on_a_one_event_queue(RENAMERS, data, errs)
    try:
        write_while_stopped(rec)
        wait_for("each renamed perf-map in the recording while the command runs",
                 lambda: in_recording(data, *(b"renamed_%d" % i for i in range(3))),
                 timeout=20)
        names = ended_saying(rec, errs, r"jittrace: the /tmp watches overflowed \d+ times; "
                             r"each time every process's perf-map was looked for again",
                             data)
    finally:
        kill_left(rec)
    assert names == [f"renamed_{i}" for i in range(3)], names


def test_report_prints_only_the_sorted_columns():
    # As perf report --sort sym: no Command, Pid or Shared Object column.
    out, data = jitgen("reuse", 3, 0.6, jitdump=False, perfmap=True)
    lines = run([JT, "report", "-i", data, "--sort", "sym"]).stdout.splitlines()
    head = next(ln for ln in lines if ln.startswith("# Overhead"))
    assert head.split() == ["#", "Overhead", "Samples", "Source", "Symbol"], head
    rows = [ln.split() for ln in lines if "reused_" in ln and not ln.startswith("#")]
    assert sorted(r[3] for r in rows) == ["reused_0", "reused_1", "reused_2"], rows
    assert all(len(r) == 4 and r[2] == "perfmap" for r in rows), rows
    full = run([JT, "report", "-i", data]).stdout
    assert "# Overhead   Samples  Command              Pid  Shared Object" in full


def test_address_reuse_jitdump():
    jitgen_check("reuse", 6, 1.2, "jitdump")


def test_memfd_double_mapped_code():
    jitgen_check("memfd", 4, 1.0, "jitdump")


def test_shared_anon_code():
    jitgen_check("shanon", 4, 1.0, "jitdump")
    jitgen_check("shanon", 4, 1.0, "perfmap", jitdump=False, perfmap=True)


def test_late_code_load_records_are_retro():
    _, data, counts = jitgen_check("late", 4, 1.2, "jitdump", retro=True)
    rep = json.loads(run([JT, "report", "-i", data, "--json"]).stdout)
    retro = sum(r["retro"] for r in rep)
    assert retro > 0
    footer = run([JT, "report", "-i", data]).stdout
    assert f"{retro} retro" in footer
    assert sum(r["samples"] for r in rep if r["sym"].startswith("late_")) == \
        sum(counts.values())


def test_jit_code_move():
    jitgen_check("move", 3, 1.2, "jitdump")


def test_report_counts_match_script():
    out, data = jitgen("reuse", 4, 0.8, jitdump=False, perfmap=True)
    counts = {}
    for s in script(data):
        if s["type"] == "sample":
            counts[s["sym"]] = counts.get(s["sym"], 0) + 1
    rep = json.loads(run([JT, "report", "-i", data, "--json", "--sort", "sym"]).stdout)
    for r in rep:
        if r["sym"].startswith("reused_"):
            assert r["samples"] == counts[r["sym"]], r
            assert r["source"] == "perfmap"
    total = sum(r["samples"] for r in rep)
    assert abs(sum(r["percent"] for r in rep) - 100) < 0.1 and total == sum(counts.values())


def _table(text, graph):
    """The rows of report's text table, split into its columns."""
    return [ln.split(None, 7 if graph else 6) for ln in text.splitlines()
            if ln.strip() and not ln.startswith("#") and not ln.lstrip().startswith("|")]


def test_report_text_rows_say_what_json_says():
    # Each count's columns are formatted once for a run of rows with that
    # count, and each place's (command, pid, object, source) for a run of
    # rows there: every row must still print its own, with and without -g.
    out, data = jitgen("reuse", 6, 1.0, perfmap=True, opts=("-g",))
    for graph in ([], ["-g"]):
        text = run([JT, "report", "-i", data] + graph).stdout
        rep = json.loads(run([JT, "report", "-i", data, "--json"] + graph).stdout)
        total = int(text.split("# Samples: ")[1].split()[0])
        assert total == sum(r["samples"] for r in rep) and len(rep) >= 2
        assert len({(r["samples"], r.get("children")) for r in rep}) >= 2, rep
        want = []
        for r in rep:
            pid = f"{r['pid']}:{r['nspid']}" if "nspid" in r else str(r["pid"])
            row = [f"{100.0 * r['children'] / total:.2f}%"] if graph else []
            row += [f"{100.0 * r['samples'] / total:.2f}%", str(r["samples"]),
                    r["comm"], pid, r["dso"], r["source"],
                    r["sym"] + (" (retro)" if r["retro"] else "")]
            assert abs(r["percent"] - 100.0 * r["samples"] / total) < 0.006, r
            want.append(row)
        assert _table(text, bool(graph)) == want


def test_recording_is_self_contained():
    out, data = jitgen("reuse", 3, 0.6, perfmap=True)
    pid = int(out.split()[1])
    os.unlink(f"/tmp/perf-{pid}.map")
    os.unlink(os.path.join(TMP, "jitdumps", f"jit-{pid}.dump"))
    check(out, data, "jitdump")


def _plant(pid, how):
    path = f"/tmp/perf-{pid}.map"
    if how == "symlink":
        os.symlink("/etc/hostname", path)
    else:
        # Made whole under another name, then renamed in: the recorder
        # must never see it half made (still root's, or empty).
        tmp = f"/tmp/.plant-{pid}"
        with open(tmp, "w") as f:
            f.write("0 ffffffffffff planted_by_another_user\n")
        daemon = pwd.getpwnam("daemon")
        os.chown(tmp, daemon.pw_uid, daemon.pw_gid)
        os.rename(tmp, path)
    return path


def test_planted_perfmap_is_refused():
    """Refused whichever way it opened: another user's file opens in /tmp
    on the recorder's own thread (a local disk's, where no open hangs) and
    its owner refuses it; a symlink does not open there, and the opener's
    worker refuses it as before."""
    for how, direct in (("other-user", 1), ("symlink", 0)):
        data = os.path.join(TMP, f"planted-{how}.data")
        # -v's libbpf lines fill a pipe before jitgen's first line comes.
        log = open(os.path.join(TMP, f"planted-{how}.err"), "w+")
        rec = subprocess.Popen([JT, "record", "-v", "-o", data, "--user", USER, "--",
                                os.path.join(WL, "jitgen"), "late", "2", "1.5"],
                               stdout=subprocess.PIPE, stderr=log, text=True)
        pid = int(rec.stdout.readline().split()[1])
        path = _plant(pid, how)
        try:
            rec.communicate(timeout=30)
        finally:
            os.unlink(path)
        log.seek(0)
        err = log.read()
        log.close()
        assert f"not reading {path} of pid {pid}" in err, err
        assert f"file opens: {direct} in a /tmp on a local disk" in err, err
        rep = run([JT, "report", "-i", data]).stdout
        assert f"# {path} (pid {pid}, found while recording): refused" in rep, rep
        assert "planted_by_another_user" not in rep
        assert not any(s.get("source") == "perfmap" for s in script(data))


def test_elf_symbols_and_build_id_check():
    copy = os.path.join(TMP, "spin-copy")
    shutil.copy(os.path.join(WL, "spin"), copy)
    os.chmod(copy, 0o755)
    _, data = record([copy, "0.6"])
    rep = json.loads(run([JT, "report", "-i", data, "--json"]).stdout)
    spin = [r for r in rep if r["sym"] == "spin_here"]
    assert len(spin) == 1 and spin[0]["source"] == "elf" and spin[0]["dso"] == "spin-copy"
    assert spin[0]["percent"] > 50, rep
    # The file changes after recording: its symbols must not be used.
    shutil.copy(os.path.join(WL, "mapops"), copy)
    text = run([JT, "report", "-i", data]).stdout
    assert f"# {copy}: build-id differs from the recorded one" in text, text
    rep = json.loads(run([JT, "report", "-i", data, "--json"]).stdout)
    assert not any(r["sym"] == "spin_here" for r in rep)
    assert any(r["dso"] == "spin-copy" and r["sym"].startswith("[spin-copy+0x")
               for r in rep), rep


WRITER = r'''
import os, sys
print(os.getpid(), flush=True)
sys.stdin.readline()
fd = os.open(f"/tmp/perf-{os.getpid()}.map", os.O_WRONLY | os.O_APPEND)
for _ in range(2000):
    os.write(fd, b"x")
'''


def test_refused_perfmap_is_recorded_and_said_once():
    # A perf-map another user planted, written a byte at a time: refused
    # once, not once per write, and the report counts what it ignored.
    w = subprocess.Popen([*AS_USER, "python3", "-c", WRITER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline())
    path = _plant(pid, "other-user")
    os.chmod(path, 0o666)
    try:
        data = os.path.join(TMP, "refused-once.data")
        rec = start_attached(["-p", str(pid), "-o", data, "--duration", "60"])
        w.communicate("go\n", timeout=60)
        _, err = rec.communicate(timeout=60)
    finally:
        os.unlink(path)
    err = rec.said_first + err
    assert err.count(f"not reading {path}") == 1, err
    rep = run([JT, "report", "-i", data]).stdout
    rows = [l for l in rep.splitlines() if l.startswith(f"# {path} ")]
    assert rows == [f"# {path} (pid {pid}, there before attach): refused: "
                    "Operation not permitted; 2000 writes to it ignored"], rows


UNREAD = r'''
import os, sys
pid = os.getpid()
print(pid, flush=True)
# One map where perf reads it, and one elsewhere the recorder cannot find
for path, n in ((f"/tmp/perf-{pid}.map", 3), (f"{sys.argv[1]}/perf-{pid}.map", 5)):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(n):
        os.write(fd, b"%x 10 unread_fn_%d\n" % (0x1000 + 16 * i, i))
    os.close(fd)
'''


def test_perfmap_written_but_never_read_is_counted_as_lost():
    # Writes to a perf-map no source ever read (here one not in /tmp; in
    # the wild, one its runtime removed before the recorder opened it):
    # the names are lost, and every view's footer says how many writes.
    d = os.path.join(TMP, "unread-maps")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    p, data = record(["python3", "-c", UNREAD, d])
    pid = int(p.stdout.split()[0])
    names = [e["name"] for e in script(data)
             if e["type"] == "jit_load" and e["pid"] == pid]
    assert names == [f"unread_fn_{i}" for i in range(3)], names
    want = ("# perf-maps written but never read (gone before the recorder "
            f"opened them, or not in the /tmp perf reads): 1 file, 5 writes, pid {pid} "
            "(5 writes), their names are lost")
    for view in (["report"], ["maps"]):
        out = run([JT, *view, "-i", data]).stdout
        lines = [l for l in out.splitlines() if l.startswith("# perf-maps written")]
        assert lines == [want], (view, lines)


BIGMAP = r'''
import os, sys
path = f"/tmp/perf-{os.getpid()}.map"
with open(path, "w") as f:
    for i in range(int(sys.argv[1])):
        f.write(f"{0x7f0000000000 + i * 16:x} 10 fn_{i:06d}\n")
print(os.getpid(), os.path.getsize(path), flush=True)
'''


def test_max_jit_bytes_cuts_and_counts():
    # 100000 lines of 26 bytes: 2.6 MB against a 16 KiB cap.
    p, data = record(["python3", "-c", BIGMAP, "100000"], ["--max-jit-bytes", "16K"])
    pid, size = map(int, p.stdout.split())
    os.unlink(f"/tmp/perf-{pid}.map")
    assert size == 100000 * 26
    assert p.stderr.count("copied its first 16384 bytes (--max-jit-bytes)") == 1, p.stderr
    # The recording holds the cap, not the file.
    assert os.path.getsize(data) < size
    loads = [s for s in script(data) if s["type"] == "jit_load"]
    assert len(loads) == 16384 // 26
    assert loads[-1]["name"] == f"fn_{16384 // 26 - 1:06d}"
    rep = run([JT, "report", "-i", data]).stdout
    assert (f"# /tmp/perf-{pid}.map (pid {pid}, found while recording): "
            f"{16384 // 26} records, 0 malformed skipped; cut at its copy "
            f"budget (--max-jit-bytes, --max-process-jit-bytes), "
            f"{size - 16384} bytes not read") in rep, rep
    bad = run([JT, "record", "--max-jit-bytes", "12X", "--", "true"], check=False)
    assert bad.returncode == 2 and "--max-jit-bytes wants a size" in bad.stderr


def test_process_budgets_cut_and_count():
    """One process writes its perf-map a byte per write(2): past its
    budgets, the write events and the copied bytes are counted, not
    recorded, and report says so for that process."""
    p, data = record([os.path.join(WL, "modelload"), "perfmap", "20000", "0"],
                     ["--max-process-writes", "5000", "--max-process-jit-bytes", "4K"])
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec" and e["comm"] == "modelload")
    os.unlink(f"/tmp/perf-{pid}.map")
    writes = [e for e in events if e["type"] == "perfmap_write" and e["pid"] == pid]
    assert len(writes) == 5000, len(writes)
    assert "pid %d: past 5000 perf-map write events (--max-process-writes)" % pid in p.stderr
    assert p.stderr.count(f"of pid {pid}: copied its first 4096 bytes "
                          "(--max-process-jit-bytes)") == 1, p.stderr
    rep = run([JT, "report", "-i", data]).stdout
    assert (f"# pid {pid}: 15000 perf-map write events past its 5000 "
            "(--max-process-writes) not recorded") in rep, rep
    assert f"{20000 - 4096} bytes not read" in rep, rep
    bad = run([JT, "record", "--max-process-writes", "-3", "--", "true"], check=False)
    assert bad.returncode == 2 and "--max-process-writes wants a whole number" in bad.stderr


def _last_go_then_stop(rec, sh, path, wait):
    """wait() for the recorder, tell the perf-map writer sh its last go,
    stop the recorder; both must end well, and sh's perf-map be gone."""
    try:
        wait()
        sh.communicate("go\n", timeout=60)
        rec.send_signal(2)
        _, err = rec.communicate(timeout=60)
    finally:
        kill_left(sh, rec)
        if os.path.exists(path):
            os.unlink(path)
    assert rec.returncode == 0, err
    assert sh.returncode == 0


def test_perfmap_renamed_into_place_is_read_before_it_goes():
    """A perf-map written under another name and renamed into place gets
    no write event; the /tmp watch sees the rename, and the recorder
    opens the file at once. The process removes it before it exits, so
    only that open can have kept its lines."""
    mark = "renamed_into_place_fn"
    data = os.path.join(TMP, "renamed.data")
    rec = start_attached(["-a", "--duration", "120", "-o", data])
    sh = subprocess.Popen(
        [*AS_USER, "sh", "-c",
         f"printf '1000 10 {mark}\\n' > /tmp/perf-$$.map.tmp && "
         "mv /tmp/perf-$$.map.tmp /tmp/perf-$$.map && read go; "
         "rm /tmp/perf-$$.map"], stdin=subprocess.PIPE, text=True)
    path = f"/tmp/perf-{sh.pid}.map"
    _last_go_then_stop(rec, sh, path, lambda: wait_for(
        "the recorder to open the renamed perf-map", lambda: holds_open(rec.pid, path)))
    assert not os.path.exists(path)
    assert mark.encode() in open(data, "rb").read()
    # Read when the rename came, not at the 100 ms sweep or at the exit.
    ev = script(data)
    load = [e for e in ev if e["type"] == "jit_load" and e["pid"] == sh.pid]
    gone = [e for e in ev if e["type"] == "exit" and e["pid"] == sh.pid]
    assert [e["name"] for e in load] == [mark] and len(gone) == 1, (load, gone)
    assert load[0]["time"] < gone[0]["time"], (load, gone)
    # html kept copies of the process's tables past the pipeline's names,
    # and crashed freeing them (a line read after its process's exit).
    run([JT, "html", "-i", data, "-o", data + ".html"])


def test_perfmap_replaced_by_rename_is_read_again():
    """A runtime that writes its whole perf-map anew and renames it over
    the old one: each version is another file under the same name, and no
    write event leads to it. The recorder reads the old one out and opens
    the new one, so both versions' lines are recorded, in order."""
    first, second = "replaced_map_v1_fn", "replaced_map_v2_fn"
    data = os.path.join(TMP, "replaced.data")
    rec = start_attached(["-a", "--duration", "120", "-o", data])
    put = "printf '1000 10 {}\\n' > /tmp/perf-$$.map.tmp && " \
        "mv /tmp/perf-$$.map.tmp /tmp/perf-$$.map && read go"
    sh = subprocess.Popen(
        [*AS_USER, "sh", "-c",
         f"{put.format(first)} && {put.format(second)}; rm /tmp/perf-$$.map"],
        stdin=subprocess.PIPE, text=True)
    path = f"/tmp/perf-{sh.pid}.map"

    def replaced():
        try:
            return os.stat(path).st_ino != ino
        except FileNotFoundError:
            return False

    def both_versions():
        nonlocal ino
        wait_for("the recorder to open the first version",
                 lambda: holds_open(rec.pid, path))
        ino = os.stat(path).st_ino
        sh.stdin.write("go\n")
        sh.stdin.flush()
        wait_for("the second version to be renamed into place", replaced)
        # The first one's descriptor now reads "... (deleted)".
        wait_for("the recorder to open the second version",
                 lambda: holds_open(rec.pid, path))
    ino = None
    _last_go_then_stop(rec, sh, path, both_versions)
    loads = [e for e in script(data)
             if e["type"] == "jit_load" and e["pid"] == sh.pid]
    assert [(e["name"], e["addr"], e["size"]) for e in loads] == \
        [(first, "0x1000", "0x10"), (second, "0x1000", "0x10")], loads
    assert loads[0]["time"] < loads[1]["time"], loads


def test_perfmaps_of_exited_processes_are_read_once_and_closed():
    """Under process churn, a perf-map's creation can reach the recorder
    after its process's exit, which already read the file out. Opened
    again then, it was never closed (no exit would come), and its lines
    were recorded a second time, after the exit. The maps stay in /tmp
    (churn's keep) so that each is there when a slow recorder reads it;
    the runner removes them once their processes are gone."""
    lines = 200
    data = os.path.join(TMP, "churn.data")
    rec = start_attached(["-a", "--duration", "120", "-o", data])
    try:
        out = run([*AS_USER, os.path.join(WL, "churn"), "100", "1", str(lines),
                   "keep"]).stdout
        made = int(out.split()[1])
        # Every child is reaped: the recorder holds none of their maps
        # once it has seen their exits.
        wait_for("the recorder to close the children's perf-maps",
                 lambda: not [p for p in open_paths(rec.pid)
                              if p.startswith("/tmp/perf-")], timeout=30)
        rec.send_signal(2)
        _, err = rec.communicate(timeout=60)
    finally:
        kill_left(rec)
    assert rec.returncode == 0, err
    per_pid, exits = {}, {}
    for e in script(data):
        if e["type"] == "jit_load" and e["name"].startswith("churn_fn_"):
            per_pid.setdefault(e["pid"], []).append(e)
        elif e["type"] == "exit" and e["group"]:
            exits[e["pid"]] = e["time"]
    assert len(per_pid) == made, (len(per_pid), made)
    want = sorted(f"churn_fn_{i}" for i in range(lines))
    for pid, loads in per_pid.items():
        assert sorted(e["name"] for e in loads) == want, (pid, len(loads))
        assert max(e["time"] for e in loads) < exits[pid], pid
