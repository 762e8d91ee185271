# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The recorder's contract: exit statuses, signals, privileges, errors,
attach modes, sampling options."""
import json
import platform
import pwd
import re
import os
import signal
import struct
import itertools
import shutil
import subprocess
import time

from jt import (AS_USER, BUILD, JT, ROOT, TIER, TMP, USER, WL, Skip, assert_tiles, has_pmu, hx,
                kill_left, maps, proc_maps, record, run, script, start_attached, wait_for, workload_lines)

PAGE = 4096


def test_exit_status_passes_through():
    p, data = record(["sh", "-c", "exit 3"], check=False)
    assert p.returncode == 3, p.stderr
    assert "0 events lost" in p.stderr
    p, _ = record(["/bin/false"], check=False)
    assert p.returncode == 1


def test_command_not_found_is_127():
    p, data = record(["/no/such/command"], check=False)
    assert p.returncode == 127
    assert "/no/such/command: command not found" in p.stderr
    # The recording is still complete and readable.
    run([JT, "maps", "-i", data])


def test_command_runs_as_the_invoking_user():
    p, _ = record(["id", "-u"])
    assert p.stdout.split()[0] == run(["id", "-u", USER]).stdout.strip()
    env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534")
    data = os.path.join(TMP, "sudo.data")
    p = run([JT, "record", "-o", data, "--", "id", "-u"], env=env)
    assert p.stdout.strip() == "65534"
    assert os.stat(data).st_uid == 65534  # the file goes to the sudo user


def test_refuses_root_command_without_user():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    p = run([JT, "record", "-o", os.path.join(TMP, "x.data"), "--", "true"],
            check=False, env=env)
    assert p.returncode == 1 and "refusing to run the command as root" in p.stderr
    p = run([JT, "record", "-o", os.path.join(TMP, "x.data"), "--run-as-root",
             "--", "id", "-u"], env=env)
    assert p.stdout.strip() == "0"


def test_not_root_is_refused_clearly():
    p = run([*AS_USER, JT, "record", "-o", "/tmp/none.data", "--", "true"], check=False)
    assert p.returncode == 1
    assert "record needs root" in p.stderr and "sudo jittrace record" in p.stderr


def test_usage_errors_exit_2():
    for args in (["record", "--bogus"], ["record"], ["record", "-p", "1", "-a"],
                 ["maps", "--nope"], ["script", "extra"], ["frobnicate"]):
        p = run([JT, *args], check=False)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert "usage:" in p.stderr, args


def test_bad_event_is_a_clear_error():
    p, _ = record(["true"], ["-e", "no-such-event"], check=False)
    assert p.returncode == 1 and "unknown event 'no-such-event'" in p.stderr


def test_target_exits_at_once():
    p, data = record(["true"])
    events = script(data)
    execs = [e for e in events if e["type"] == "exec"]
    exits = [e for e in events if e["type"] == "exit" and e["group"]]
    assert len(execs) == 1 and len(exits) == 1
    assert execs[0]["pid"] == exits[0]["pid"]


def test_sigkill_leaves_a_readable_file():
    data = os.path.join(TMP, "killed.data")
    rec = subprocess.Popen([JT, "record", "-o", data, "--user", USER, "--",
                            os.path.join(WL, "jitpages"), "6", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The "vma" line follows the 6 pages; then samples reach the file.
        while not rec.stdout.readline().startswith("vma "):
            pass
        wait_for("samples in the file", lambda: any(
            e["type"] == "sample" for e in script(data)))
    finally:
        rec.kill()
        rec.wait()
        subprocess.run(["pkill", "-f", "jitpages 6 30"])
    p = run([JT, "maps", "-i", data, "--json"])
    assert "not finished" in p.stderr, p.stderr
    rows = json.loads(p.stdout)
    jit = [r for r in rows if r["origin"] == "mmap" and r["prot"] == "r-xp"
           and r["path"] is None]
    assert len(jit) == 6 and all(r["coalesced"] for r in jit)


def record_starts(buf):
    """Offsets of the records in a recording, after its preamble."""
    off = struct.unpack_from("<I", buf, 12)[0]
    starts = []
    while off + 8 <= len(buf):
        starts.append(off)
        off += (struct.unpack_from("<I", buf, off + 4)[0] + 7) & ~7
    return starts


def test_truncated_file_says_where_it_stops():
    _, data = record([os.path.join(WL, "jitpages"), "3", "0.3"])
    cut = os.path.join(TMP, "cut.data")
    with open(data, "rb") as f:
        buf = f.read()
    # Inside the record before the end record (JT_REC_FINISH), in its
    # header and past it: what a killed recorder leaves.
    starts = record_starts(buf)
    at = next(starts[i - 1] for i, o in enumerate(starts)
              if struct.unpack_from("<I", buf, o)[0] == 5)
    assert struct.unpack_from("<I", buf, at + 4)[0] > 12
    with open(cut, "wb") as g:
        g.write(buf[:at + 4])
    p = run([JT, "script", "-i", cut])
    assert f"not finished (recorder killed, or the file cut?): partial " \
        f"record header at byte {at} of {at + 4}" in p.stderr, p.stderr
    with open(cut, "wb") as g:
        g.write(buf[:at + 12])
    p = run([JT, "script", "-i", cut, "--json"])
    # It lost its end record too: a killed recorder leaves the same.
    assert "not finished" in p.stderr and \
        f"record cut short at byte {at} of {at + 12}" in p.stderr and \
        "showing the" in p.stderr, p.stderr
    assert len(p.stdout.splitlines()) > 10
    with open(cut, "wb") as g:
        g.write(b"garbage, not a recording\n")
    p = run([JT, "maps", "-i", cut], check=False)
    assert p.returncode == 1 and "not a jittrace recording" in p.stderr
    p = run([JT, "maps", "-i", os.path.join(TMP, "absent.data")], check=False)
    assert p.returncode == 1 and "No such file" in p.stderr


def child_comm(pid):
    """comm of pid's first child, or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        with open(f"/proc/{kids[0]}/comm") as f:
            return f.read().strip()
    except (OSError, IndexError):
        return None


def test_sigterm_stops_cleanly():
    data = os.path.join(TMP, "term.data")
    rec = subprocess.Popen([JT, "record", "-o", data, "--user", USER, "--",
                            "sleep", "30"], stderr=subprocess.PIPE, text=True)
    wait_for("the command to start", lambda: child_comm(rec.pid) == "sleep")
    rec.terminate()
    _, err = rec.communicate(timeout=10)
    assert rec.returncode == 128 + signal.SIGTERM, (rec.returncode, err)
    p = run([JT, "maps", "-i", data])
    assert "not finished" not in p.stderr and "at byte" not in p.stderr
    assert "sleep" in p.stdout


def gated(cmd):
    """A process of USER that runs cmd only once it reads a line."""
    return subprocess.Popen([*AS_USER, "sh", "-c", f"read go; exec {cmd}"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def test_attach_to_pid():
    target = gated(f"{WL}/jitpages 4 0.3")
    data = os.path.join(TMP, "attach.data")
    rec = start_attached(["-p", str(target.pid), "-o", data,
                          "--duration", "60"])
    out, _ = target.communicate("go\n", timeout=30)
    # -p stops by itself when the process is gone.
    rec.communicate(timeout=30)
    assert rec.returncode == 0
    pages = sorted(int(a[0], 16) for a in workload_lines(out, "page"))
    rows = maps(data, target.pid)
    attach = [e for e in script(data) if e["type"] == "exec" and e["attach"]]
    assert [e["pid"] for e in attach] == [target.pid]
    got = [(r["start"], r["end"]) for r in rows if r["origin"] == "mmap"
           and r["prot"] == "r-xp" and r["path"] is None]
    assert sorted(got) == [(a, a + PAGE) for a in pages]


def test_duration_ends_the_recording():
    target = gated("sleep 30")
    try:
        rec = start_attached(["-p", str(target.pid), "--duration", "0.5",
                              "-o", os.path.join(TMP, "duration.data")])
        rec.communicate(timeout=30)
        assert rec.returncode == 0 and target.poll() is None
    finally:
        target.kill()
        target.wait()


def test_system_wide_records_new_and_running():
    before = gated("sleep 30")
    data = os.path.join(TMP, "all.data")
    rec = start_attached(["-a", "--duration", "60", "-o", data])
    w = subprocess.run([*AS_USER, f"{WL}/jitpages", "3", "0.2"],
                       capture_output=True, text=True)
    rec.send_signal(signal.SIGINT)
    rec.communicate(timeout=30)
    assert rec.returncode == 0
    pages = sorted(int(a[0], 16) for a in workload_lines(w.stdout, "page"))
    pid = next(e["pid"] for e in script(data) if e["type"] == "exec"
               and not e["attach"] and e["comm"] == "jitpages")
    got = sorted((r["start"], r["end"]) for r in maps(data, pid)
                 if r["prot"] == "r-xp" and r["path"] is None and r["origin"] == "mmap")
    assert got == [(a, a + PAGE) for a in pages]
    # The recorder itself: BPF never traces it, but it is snapshotted at
    # attach, so perf's samples of it land in its own regions, named, not
    # [unknown] under "?".
    own = [e for e in script(data) if e["pid"] == rec.pid]
    assert any(e["type"] == "exec" and e["attach"] and e["comm"] == "jittrace"
               for e in own), own[:3]
    user = [e for e in own if e["type"] == "sample" and not e["kernel"]]
    assert all(e["region_start"] is not None for e in user), \
        [e for e in user if e["region_start"] is None][:3]
    # The idle task is "swapper", as perf calls it, in every view.
    idle = sum(1 for e in script(data) if e["type"] == "sample" and e["pid"] == 0)
    rows = json.loads(run([JT, "report", "-i", data, "--sort", "comm", "--json"]).stdout)
    assert sum(r["samples"] for r in rows if r["comm"] == "swapper") == idle, rows
    # A process already running (the gated shell) was snapshotted at attach.
    before.kill()
    before.wait()
    snap = maps(data, before.pid)
    assert any(r["path"] == os.path.realpath("/bin/sh") and r["prot"] == "r-xp" for r in snap), snap
    assert all(r["origin"] in ("exec", "mmap", "brk") for r in snap)


def test_page_fault_data_addresses():
    p, data = record([os.path.join(WL, "jitpages"), "5", "0.2"],
                     ["-e", "page-faults", "-c", "1", "-d"])
    pages = sorted(int(a[0], 16) for a in workload_lines(p.stdout, "page"))
    pid = next(e["pid"] for e in script(data) if e["type"] == "exec")
    faults = [hx(e["data_addr"]) for e in script(data)
              if e["type"] == "sample" and e["pid"] == pid]
    # The first write into each fresh JIT page faults exactly there.
    for a in pages:
        assert any(a <= f < a + PAGE for f in faults), hex(a)


def test_callchains():
    # --call-graph fp: the chain the kernel walks, as perf record -g.
    p, data = record([os.path.join(WL, "jitpages"), "2", "0.5"], ["--call-graph", "fp"])
    samples = [e for e in script(data) if e["type"] == "sample"]
    assert samples and all("callchain" in s for s in samples)
    user = [s for s in samples if not s["kernel"]]
    # A user-mode chain starts with the context marker, then the sampled ip.
    PERF_CONTEXT_USER = 2**64 - 512
    assert user
    for s in user:
        chain = [hx(a) for a in s["callchain"]]
        assert chain[0] == PERF_CONTEXT_USER and chain[1] == hx(s["ip"]), s
        # Named frames, leaf first: the sample's own, then by call sites.
        real = [f for f in s["frames"] if not f.get("inlined")]
        assert real[0]["ip"] == s["ip"] and len(real) == len(chain) - 1


def test_call_graph_options():
    for arg, msg in (("lbr", "--call-graph wants fp, dwarf or dwarf,SIZE"),
                     ("dwarf,0", "--call-graph dwarf,SIZE wants 8 to 65528 bytes"),
                     ("dwarf,70000", "--call-graph dwarf,SIZE wants 8 to 65528 bytes"),
                     ("dwarfy", "--call-graph wants fp, dwarf or dwarf,SIZE")):
        p = run([JT, "record", "--call-graph", arg, "--", "true"], check=False)
        assert p.returncode == 2 and msg in p.stderr, (arg, p.stderr)
    # dwarf,SIZE: each sample carries at most SIZE bytes of stack, as the
    # kernel copied them, and the recording says which registers it kept.
    p, data = record([os.path.join(WL, "spin"), "0.3"], ["--call-graph", "dwarf,1024"])
    with open(data, "rb") as f:
        raw = f.read()
    assert b"perf.sample_regs_user=0x" in raw and b"vdso.build_id=" in raw
    # The loader's start-up too, which a cold disk makes long enough to be
    # sampled: its stacks end at ld.so's _start, which no FDE covers.
    samples = [e for e in script(data) if e["type"] == "sample" and not e["kernel"]]
    assert samples and all(e["unwind"] in ("complete", "truncated") for e in samples), \
        [e for e in samples if e["unwind"] not in ("complete", "truncated")][:2]
    assert any(e["unwind"] == "complete" for e in samples)


def test_default_event_and_pmu_fallback():
    p, data = record(["true"])
    meta_event = "cycles" if has_pmu() else "cpu-clock"
    with open(data, "rb") as f:
        assert f"perf.event={meta_event}".encode() in f.read()
    if not has_pmu():
        assert "no hardware PMU here" in p.stderr
        assert p.stderr.count("no hardware PMU") == 1


def test_hardware_event_instructions():
    if not has_pmu():
        raise Skip("no hardware PMU on this machine: -e instructions cannot be tested")
    p, data = record([os.path.join(WL, "jitpages"), "2", "0.5"], ["-e", "instructions"])
    assert any(e["type"] == "sample" for e in script(data))


HOOKS = ("mmap", "mprotect", "munmap", "mremap", "brk", "fork", "exec", "exit", "cow")


def probes_line(stderr):
    m = re.search(r"^jittrace: probes: (.*)$", stderr, re.M)
    assert m, stderr
    return dict(kv.split("=") for kv in m.group(1).split())


def test_doctor_reports_every_hook():
    p = run([JT, "doctor"])
    tiers = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] in HOOKS:
            tiers[f[0]] = f[1]
    assert set(tiers) == set(HOOKS), p.stdout
    assert set(tiers.values()) <= {"fentry", "kprobe", "tracepoint"}, tiers
    for hook in ("fork", "exec", "exit"):
        assert tiers[hook] == "tracepoint"
    # What doctor says record would use is what record uses, and says.
    rec, data = record(["true"], ["--cow"])
    got = probes_line(rec.stderr)
    assert {h: got[h] for h in HOOKS} == tiers, (got, tiers)
    # With mmap on fentry, no syscall tracepoint is left: write(2) and shm
    # are taken at vfs_write's and do_shmat's exits.
    assert got["write+shm"] == ("fexit" if tiers["mmap"] == "fentry" and
                                got["programs"] == "current" else "tracepoint"), got
    assert got["exec-snapshot"] in ("iterator", "anchors", "list")
    # Which build of the programs loaded, as doctor says (kernels before
    # 5.17 take the legacy one): in the recording's header too.
    want = re.search(r"^  programs +(current|legacy) ", p.stdout, re.M).group(1)
    assert got["programs"] == want, got
    report = run([JT, "report", "-i", data]).stdout
    assert report.startswith("# probes (kernel " + os.uname().release + "): " +
                             " ".join(f"{h}={tiers[h]}" for h in HOOKS))
    assert "BTF" in p.stdout and "perf_event_paranoid" in p.stdout
    # Each BPF feature's verdict agrees with the first release that has
    # it: this kernel loads record's programs, so it lacks none of them.
    kernel = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    feats = re.findall(r"^  (.+?)\s+(ok|MISSING)\s+Linux (\d+)\.(\d+) and later$",
                       p.stdout, re.M)
    assert [f[0] for f in feats] == ["BPF ring buffer", "task storage maps",
                                     "bpf_get_current_task_btf", "bpf_task_pt_regs",
                                     "bpf_find_vma", "bpf_loop", "bpf_get_func_arg"], p.stdout
    assert re.search(r"^  programs +current ", p.stdout, re.M), p.stdout
    for name, verdict, major, minor in feats:
        assert verdict == "ok" and (int(major), int(minor)) <= kernel, (name, verdict)


def test_tier_choice_is_forced_or_refused_clearly():
    p, _ = record(["true"], ["--tier", "tracepoint"])
    got = probes_line(p.stderr)
    assert all(got[h] == "tracepoint" for h in HOOKS if h != "cow"), got
    assert got["write+shm"] == "tracepoint", got
    assert got["cow"] == "none"  # COW capture stays opt-in
    kernel = run([JT, "doctor"]).stdout
    refused = "kernel tier refused" in kernel
    for tier in ("kernel", "fentry", "kprobe"):
        p, _ = record(["true"], ["--tier", tier], check=False)
        if refused and (tier != "kprobe" or "kprobe/" in kernel):
            # This machine refuses fentry and has no kprobes: each mm hook
            # says why, and nothing runs.
            assert p.returncode == 1, p.stderr
            what = {"kernel": "the kernel tier", "fentry": "fentry",
                    "kprobe": "kprobes"}[tier]
            for hook in ("mmap", "mprotect", "munmap", "mremap", "brk"):
                assert f"--tier: hook {hook} cannot use {what} here" in p.stderr
            assert "jittrace: probes:" not in p.stderr
    p = run([JT, "record", "--tier", "bogus", "--", "true"], check=False)
    assert p.returncode == 2 and "--tier wants auto, kernel, fentry, kprobe or tracepoint" in p.stderr


def hx_str(v):
    return "0x" + v.lstrip("0")


def test_exec_snapshot_without_the_vma_iterator():
    # Kernels before 6.7 have no open-coded task_vma iterator: exec walks
    # the runs of VMAs around the binary, interpreter, vdso and stack.
    data = os.path.join(TMP, "anchors.data")
    p = run([JT, "record", "-o", data, "--user", USER, "--", os.path.join(WL, "mapops")],
            env=dict(os.environ, JT_EXEC_ANCHORS="1"))
    assert probes_line(p.stderr)["exec-snapshot"] == "anchors"
    pid = int(workload_lines(p.stdout, "start")[0][0])
    exe = os.path.realpath(os.path.join(WL, "mapops"))
    snap = [e for e in script(data) if e["type"] == "vma" and e["pid"] == pid]
    names = [e["path"] for e in snap]
    assert exe in names and os.path.realpath("/lib64/ld-linux-x86-64.so.2") in names, names
    stack = workload_lines(p.stdout, "maps")
    assert any(e["vma"]["start"] == hx_str(v[1].split("-")[0]) for e in snap
               for v in stack if v[-1] == "[stack]"), "no [stack] in the snapshot"
    assert len({e["vma"]["start"] for e in snap}) == len(snap)  # no run twice
    assert_tiles(maps(data, pid), proc_maps(p.stdout, pid))


def record_with_reader_stopped(opts, loop):
    """Record `mmloop gated LOOP` with the recorder stopped (SIGSTOP) for
    exactly the loop, so its rings fill whatever the machine's speed."""
    data = os.path.join(TMP, f"stopped{next(_stopped)}.data")
    args = [JT, "record", "-o", data, *opts]
    if TIER:
        args += ["--tier", TIER]
    args += ["--user", USER, "--", os.path.join(WL, "mmloop"), "gated", *loop]
    # stderr to a file: -v's libbpf log would fill a pipe nobody reads
    # until the loop is done, and the recorder would block on it.
    errf = open(data + ".err", "w+")
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=errf, text=True)
    try:
        # "ready" comes from the command, so the probes are attached.
        assert p.stdout.readline() == "ready\n"
        os.kill(p.pid, signal.SIGSTOP)
        p.stdin.write("go\n")
        p.stdin.flush()
        # What the loop printed, up to its last line.
        lines = []
        while not lines or not lines[-1].startswith("ns_per_op "):
            lines.append(p.stdout.readline())
            assert lines[-1], "the loop ended without its result"
        os.kill(p.pid, signal.SIGCONT)
        p.stdin.write("exit\n")
        p.stdin.flush()
        out, _ = p.communicate(timeout=120)
        out = "".join(lines) + out
        errf.seek(0)
        err = errf.read()
    except BaseException:
        p.send_signal(signal.SIGCONT)
        p.kill()
        raise
    finally:
        errf.close()
    assert p.returncode == 0, err
    return out, err, data


_stopped = itertools.count()


def test_full_rings_are_counted_and_reported():
    # A 4 KiB BPF ring and one-page perf rings, not read during N loops.
    # Each loop makes three map events and one page fault, a sample of
    # at least 48 bytes with -e page-faults -c 1, so 3N events and N
    # samples must pass through the rings whatever the machine's speed.
    loops = 20000
    out, err, data = record_with_reader_stopped(
        ["--bpf-ring", "4", "-m", "1", "-e", "page-faults", "-c", "1", "-d"],
        ["faults", str(loops)])
    m = re.search(r"jittrace: (\d+) events lost \((\d+) BPF ring full, "
                  r"(\d+) perf ring, (\d+) write\)", err)
    assert m, err
    total, bpf, perf, write = map(int, m.groups())
    assert bpf > 0 and perf > 0 and write == 0 and total == bpf + perf
    # Every mmap, mprotect and munmap was either taken or counted lost.
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec"
               and e["comm"] == "mmloop")
    taken = [e for e in events if e["type"] in ("mmap", "mprotect", "munmap")
             and e["pid"] == pid and e["args"][1] == "0x1000"]
    assert len(taken) < 3 * loops and len(taken) + bpf >= 3 * loops, \
        (len(taken), bpf)
    # Likewise each loop's page fault, in the pages the loop used.
    pages = {int(a, 16) for a in workload_lines(out, "pages")[0]}
    faults = [e for e in events if e["type"] == "sample" and e["pid"] == pid
              and hx(e["data_addr"]) & ~0xfff in pages]
    assert len(faults) < loops and len(faults) + perf >= loops, \
        (len(faults), perf)
    # The same counts are in the file, and every view says so.
    out = run([JT, "maps", "-i", data]).stdout
    assert f"# lost: {total} events ({bpf} BPF ring full, {perf} perf, 0 write)" in out
    out = run([JT, "script", "-i", data]).stdout
    assert f"# lost: {total} events" in out
    # perf's LOST records, where the kernel got to write them, stay in
    # the stream and never count more than the kernel's own total.
    records = [e for e in events if e["type"] == "perf_lost"]
    assert sum(e["lost"] for e in records) <= perf, records


def test_a_small_bpf_ring_wakes_the_recorder():
    # The recorder sleeps on a 100 ms tick unless BPF wakes it, and BPF
    # woke it once 1 MiB waited: a ring of 1 MiB never reached that, and
    # filled between ticks (23,285 of 30,000 events lost here). A quarter
    # of the ring wakes it now. 10,000 loops write 30,000 events, 5 MB,
    # twenty times that quarter: however fast or slow the machine, the
    # ring holds a quarter of its size while the loop runs, and the wake
    # is counted whenever the recorder next looks (epoll keeps it).
    data = os.path.join(TMP, "smallring.data")
    p = run([JT, "record", "-v", "--bpf-ring", "1024", "-o", data,
             "--user", USER, "--", os.path.join(WL, "mmloop"), "calls",
             "10000"])
    m = re.search(r"the BPF ring woke the recorder (\d+) times", p.stderr)
    assert m and int(m.group(1)) > 0, p.stderr[-3000:]
    # What the ring could not hold is counted, never dropped unsaid.
    lost = re.search(r"jittrace: (\d+) events lost", p.stderr)
    assert lost, p.stderr[-3000:]
    taken = [e for e in script(data) if e["type"] == "munmap"
             and e["args"][1] == "0x1000"]
    assert len(taken) <= 10000 <= len(taken) + int(lost.group(1)), \
        (len(taken), lost.group(1))


def test_the_recorder_sleeps_until_the_ring_fills():
    # BPF wakes the recorder once 1 MiB waits (the default ring's mark).
    # The ring's epoll was level-triggered: once woken, the recorder found
    # a record waiting after every pass and never slept again, 6,000
    # passes a second on the mmap loop, all of them counted as the ring's
    # wakes. Edge-triggered, a pass needs a wake from BPF, and BPF wakes
    # only with a mark's worth waiting: two passes after a wake may find
    # the same bytes (the wake came during the first), so the ring wakes
    # the recorder at most twice per mark written, and once at the end.
    data = os.path.join(TMP, "ringwakes.data")
    p = run([JT, "record", "-v", "-o", data, "--user", USER, "--",
             os.path.join(WL, "mmloop"), "calls", "20000"])
    wakes = re.search(r"the BPF ring woke the recorder (\d+) times", p.stderr)
    events = re.search(r"\((\d+) BPF events", p.stderr)
    assert wakes and events, p.stderr[-3000:]
    # 20,000 loops write 60,000 records of 176 bytes: ten marks. Where
    # CPUs' lanes carry them (lanes.bpf.h), a lane wakes the recorder
    # once half full: its records count in its own marks.
    assert int(events.group(1)) >= 60000, p.stderr[-3000:]
    in_ring, marks = int(events.group(1)), 0
    lanes = re.search(r"BPF lanes, for the [^:]+: \d+ records per CPU, woken at "
                      r"(\d+); they carried (\d+) of", p.stderr)
    if lanes:
        mark, by_lane = map(int, lanes.groups())
        in_ring -= by_lane
        marks = -(-by_lane // mark)
    marks += -(-in_ring * 176 // (1 << 20))
    assert 1 <= int(wakes.group(1)) <= 2 * marks + 2, (wakes.group(1), marks)


def possible_cpus():
    """The CPUs the kernel may run (and BPF gives a lane each)."""
    with open("/sys/devices/system/cpu/possible") as f:
        return max(int(r.split("-")[-1]) for r in f.read().split(",")) + 1


def test_a_full_lane_hands_its_calls_to_the_ring():
    # Each CPU writes its anonymous mapping calls to its own lane, and
    # all the lanes together hold at most half the ring's bytes. With the
    # recorder stopped for 20,000 loops (60,000 calls, 10 MB), whatever
    # CPUs the loop ran on, a lane fills and the ring (16 MiB, room for
    # 95,000 records) takes the rest: every call is recorded, in order,
    # and none is lost. On the tracepoint tier and on the kernel tier's
    # exits alike.
    loops = 20000
    out, err, data = record_with_reader_stopped(
        ["-v", "--bpf-ring", "16384"], ["calls", str(loops)])
    if platform.machine() != "x86_64" or \
            not all(f"{h}=tracepoint" in err or f"{h}=fentry" in err
                    for h in ("mmap", "mprotect", "munmap")):
        assert "BPF lanes: none; every event came by the ring" in err, \
            err[-3000:]
        raise Skip("lanes are x86-64's, for the syscall tracepoints' "
                   "programs and the fentry tier's exits")
    m = re.search(r"BPF lanes, for the [^:]+: (\d+) records per CPU, woken at "
                  r"(\d+); they carried (\d+) of the (\d+) BPF events", err)
    assert m, err[-3000:]
    slots, mark, by_lane, total = map(int, m.groups())
    cpus = possible_cpus()
    assert slots & (slots - 1) == 0 and mark == slots // 2
    assert cpus * slots * 168 <= (16 << 20) // 2, (cpus, slots)
    assert "jittrace: 0 events lost" in err, err[-3000:]
    # A lane passes calls to the ring only once full, and is read whole.
    assert slots <= by_lane <= cpus * slots, (by_lane, slots)
    assert total - by_lane >= 3 * loops - cpus * slots, (total, by_lane)
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec"
               and e["comm"] == "mmloop")
    # The kernel tier sees execve's own mappings as well (flagged
    # JT_MF_EXEC_LOAD, 8): mmloop's one-page segments.
    calls = [e for e in events if e["pid"] == pid
             and e["type"] in ("mmap", "mprotect", "munmap")
             and e["args"][1] == "0x1000" and not e["flags"] & 8]
    # The loader's RELRO mprotect comes first.
    calls = calls[next(i for i, e in enumerate(calls) if e["type"] == "mmap"):]
    assert len(calls) == 3 * loops, len(calls)
    # Lanes and ring merge by time: each loop's three calls, in turn,
    # on the page its mmap returned.
    for i in range(0, len(calls), 3):
        mm, mp, mu = calls[i:i + 3]
        assert (mm["type"], mp["type"], mu["type"]) == \
            ("mmap", "mprotect", "munmap"), calls[i:i + 3]
        assert hx(mp["args"][0]) == hx(mu["args"][0]) == mm["result"]
        for v in (mm["vma"], mp["vma"]):
            assert hx(v["start"]) <= mm["result"] < hx(v["end"]), (mm, mp)
        assert mm["time"] < mp["time"] < mu["time"]


def test_the_kernel_tiers_exits_share_the_lanes():
    """On the kernel tier the exits of vm_mmap_pgoff, do_mprotect_pkey and
    __vm_munmap build their events in the CPUs' lanes, as the syscall
    tracepoints' programs do: the ring's reservation made that tier's
    mmap loop dearer than the tracepoint tier's (tests/vm/bench.sh). An
    exit can be preempted part way through a record, so each counts
    itself in first, and one that finds another in flight gives its
    record to the ring. With every lane marked as taken
    (JT_TEST_LANE_TAKEN), every call goes by the ring, and the recording
    is the same."""
    mapops = os.path.join(WL, "mapops")
    p, data = record([mapops], ["-v"])
    m = re.search(r"BPF lanes, for the (kernel tier's exits|syscall tracepoints): "
                  r".* they carried (\d+) of the (\d+) BPF events", p.stderr)
    if not m or m.group(1) != "kernel tier's exits":
        raise Skip("no lanes for the kernel tier's exits here: they are "
                   "x86-64's, for the fentry tier's exit-only mapping "
                   "calls (this run: "
                   f"{m.group(1) if m else 'none'})")
    calls = [int(m.group(2))]
    os.environ["JT_TEST_LANE_TAKEN"] = "1"
    try:
        taken, taken_data = record([mapops], ["-v"])
    finally:
        del os.environ["JT_TEST_LANE_TAKEN"]
    m = re.search(r"they carried (\d+) of the (\d+) BPF events", taken.stderr)
    calls.append(int(m.group(1)))
    # mapops itself makes 11 mmap, mprotect and munmap calls on anonymous
    # memory (no path: a lane's), its loader some more.
    assert calls[0] >= 11 and calls[1] == 0, calls
    for proc, recording in ((p, data), (taken, taken_data)):
        assert "jittrace: 0 events lost" in proc.stderr, proc.stderr[-2000:]
        pid = int(workload_lines(proc.stdout, "start")[0][0])
        got = {(r["start"], r["end"], r["prot"]) for r in maps(recording, pid)}
        for s, e, prot in workload_lines(proc.stdout, "want"):
            assert (int(s, 16), int(e, 16), prot) in got, (s, e, prot)


def test_ring_size_options_are_checked():
    for opt in (["--bpf-ring", "3"], ["--bpf-ring", "8x"], ["-m", "3"]):
        p = run([JT, "record", *opt, "--", "true"], check=False)
        assert p.returncode == 2 and "usage:" in p.stderr, opt


def test_make_install_honours_prefix_and_destdir():
    dest = os.path.join(TMP, "dest")
    run(["make", "-s", "-C", ROOT, f"OUT={BUILD}", "install", f"DESTDIR={dest}",
         "PREFIX=/opt/jt"])
    binary = os.path.join(dest, "opt/jt/bin/jittrace")
    assert os.access(binary, os.X_OK)
    assert "usage: jittrace" in run([binary, "--help"]).stdout


def test_the_command_has_its_users_home():
    """sudo sets HOME to root's. A command run as the invoking user with
    it cannot write its own files there: go build failed with "failed to
    initialize build cache at /root/.cache/go-build: permission denied".
    As su and sudo -u do, the command gets its user's HOME, USER and
    LOGNAME; under --run-as-root its environment is left alone."""
    pw = pwd.getpwnam(USER)
    data = os.path.join(TMP, "home.data")
    show = ["--", "sh", "-c", 'echo "$HOME|$USER|$LOGNAME|$(id -un)"']
    want = f"{pw.pw_dir}|{pw.pw_name}|{pw.pw_name}|{pw.pw_name}"
    root_env = {**os.environ, "HOME": "/root", "USER": "root", "LOGNAME": "root"}
    sudo_env = {**root_env, "SUDO_UID": str(pw.pw_uid), "SUDO_GID": str(pw.pw_gid),
                "SUDO_USER": pw.pw_name}
    for opts, env in ((["--user", USER], root_env), ([], sudo_env)):
        p = run([JT, "record", "-o", data, *opts, *show], env=env)
        assert p.stdout.strip() == want, (opts, p.stdout)
    p = run([JT, "record", "-o", data, "--run-as-root", *show],
            env={**root_env, "HOME": "/somewhere", "USER": "someone"})
    assert p.stdout.strip() == "/somewhere|someone|root|root", p.stdout


def test_make_cflags_add_to_the_projects_flags():
    # make CFLAGS=... is the user's: it must not drop -Iinclude and the rest.
    out = os.path.join(TMP, "cflags")
    obj = os.path.join(out, "user/lib/procfile.o")
    p = run(["make", "-C", ROOT, f"OUT={out}", "CFLAGS=-O0 -DJT_USER_FLAG", obj])
    line = next(l for l in p.stdout.splitlines() if "procfile.c" in l)
    assert "-Iinclude" in line and "-O0 -DJT_USER_FLAG" in line, line
    assert os.path.getsize(obj) > 0


def test_make_sees_a_header_change_however_out_is_spelt():
    """A .d file names its targets as the build that wrote it spelt OUT:
    make ARCH=arm64 after the VM suite's OUT=$PWD/build-arm64 matched none
    of them and linked BPF objects older than jt_abi.h. make -W says what
    a newer header would rebuild, without touching the tree."""
    rel = os.path.relpath(BUILD, ROOT)
    spellings = [BUILD, BUILD + "/"] + ([] if rel.startswith("..") else [rel])
    for out in spellings:
        obj = os.path.join(out, "bpf/maps.bpf.o")
        base = ["make", "-C", ROOT, "-n", f"OUT={out}"]
        assert "bpf/maps.bpf.c" not in run(base + [obj]).stdout, out
        p = run(base + ["-W", "include/jt_abi.h", obj])
        assert "bpf/maps.bpf.c" in p.stdout, (out, p.stdout[-500:])


def test_attach_ends_when_the_process_exits_unreaped():
    # The process exits but its parent (this test) has not reaped it: a
    # zombie still answers kill(pid, 0). record -p must end all the same.
    target = gated("true")
    rec = start_attached(["-p", str(target.pid), "-o",
                          os.path.join(TMP, "zombie.data"), "--duration", "60"])
    target.stdin.write("go\n")
    target.stdin.flush()
    try:
        rec.communicate(timeout=30)
    finally:
        target.wait()
    assert rec.returncode == 0


def _exit_rec(pid, time_ns):
    # JT_REC_BPF holding struct jt_exit_event (type 9), group_dead = 1.
    ev = struct.pack("<HHIIIQIi", 9, 32, 0, pid, pid, time_ns, 1, 0)
    return struct.pack("<II", 2, 8 + len(ev)) + ev


def test_event_later_than_the_window_is_counted():
    # No ROUND marks: pid 4 comes 3 s after later events were let out.
    body = b"".join(_exit_rec(pid, t * 10**9) for pid, t in
                    ((1, 10), (2, 11), (3, 12), (4, 9)))
    path = os.path.join(TMP, "late.data")
    with open(path, "wb") as f:
        f.write(b"JITTRACE" + struct.pack("<II", 3, 16) + body)
    out = run([JT, "script", "-i", path]).stdout
    pids = [int(l.split()[1].split("/")[0]) for l in out.splitlines()
            if " exit " in l]
    assert pids == [1, 2, 4, 3], out
    assert ("# events later than the reorder window (500 ms) allows: 1, "
            "applied when they came") in out, out


def _record_types(path):
    """The type of each record of a recording, in file order."""
    with open(path, "rb") as f:
        data = f.read()
    pos = struct.unpack_from("<I", data, 12)[0]  # the preamble's size
    while pos + 8 <= len(data):
        rtype, size = struct.unpack_from("<II", data, pos)
        if size < 8:
            break
        yield rtype
        pos += (size + 7) & ~7


def test_writes_in_tmp_do_not_wake_the_recorder():
    # A logger appending 10,000 lines a second to a file in /tmp, and the
    # recording itself written to /tmp (which once woke the recorder with
    # its own writes, without end). Neither may wake it: it drains its
    # sources on its tick, ten passes a second, each closed by a ROUND
    # mark, plus the last one.
    ROUND = 10
    out = f"/tmp/jt-e2e-rounds-{os.getpid()}.data"
    log = subprocess.Popen([*AS_USER, os.path.join(WL, "mmloop"), "tmplog", "4", "10000"],
                           stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        run([JT, "record", "-o", out, "--user", "nobody", "--", "sleep", "2"])
        lines = int(log.communicate(timeout=30)[0].split()[1])
        rounds = sum(1 for t in _record_types(out) if t == ROUND)
    finally:
        log.kill()
        for f in (out, out + ".old"):
            if os.path.exists(f):
                os.unlink(f)
    assert lines > 20000, lines
    # 2 s of ticks is 20; a pass per write would be thousands.
    assert 2 <= rounds <= 40, rounds


def test_version():
    # git's description of the tree it was built from, as perf prints its own.
    out = [run([JT, flag]).stdout for flag in ("--version", "-V")]
    assert out[0] == out[1] and re.match(r"^jittrace version \S+\n$", out[0]), out
    if os.path.isdir(os.path.join(ROOT, ".git")):
        want = run(["git", "-C", ROOT, "describe", "--tags", "--always", "--dirty"]).stdout
        assert out[0] == f"jittrace version {want}", (out[0], want)
    assert "--version" in run([JT, "--help"]).stdout


def our_programs():
    """Loaded programs of ours (jt_*), with the pids holding each."""
    out = json.loads(run(["bpftool", "-j", "prog", "list"]).stdout)
    return [p for p in out if p.get("name", "").startswith("jt_")]


def test_record_returns_and_the_kernel_detaches_after():
    """record returns once the recording is complete; a keeper it forks
    holds the links (not the caller's pipes) until record has exited, and
    then every program of ours is gone."""
    def gone(within):
        deadline = time.time() + within
        while our_programs() and time.time() < deadline:
            time.sleep(0.1)
        return our_programs()

    gone(60)  # an earlier test's keeper
    p, data = record(["true"])
    assert p.returncode == 0, p.stderr
    assert "0 events lost" in p.stderr
    left = gone(60)
    assert not left, [(x["name"], x.get("pids")) for x in left]
    # What it recorded is whole: the reader sees the FINISH record.
    assert "truncated" not in run([JT, "report", "-i", data]).stderr


def _records(path, want):
    """The payloads of the records of type want, in file order."""
    with open(path, "rb") as f:
        data = f.read()
    pos = struct.unpack_from("<I", data, 12)[0]
    while pos + 8 <= len(data):
        rtype, size = struct.unpack_from("<II", data, pos)
        if size < 8:
            break
        if rtype == want:
            yield data[pos + 8:pos + size]
        pos += (size + 7) & ~7


def recorded_kallsyms(path):
    """The text of the recording's copy of /proc/kallsyms."""
    import zlib
    KALLSYMS = 8
    return zlib.decompress(next(_records(path, KALLSYMS))[8:]).decode()


def test_kernel_symbols_of_our_programs_are_the_kernels():
    """/proc/kallsyms is read while the programs load, so the recorder
    adds its own programs' symbols from what the kernel says of each: the
    same addresses and names /proc/kallsyms lists while they run, and the
    lengths it does not list, as many bytes as the kernel JITed."""
    stop = os.path.join(TMP, "kallsyms-stop")
    data = os.path.join(TMP, "kallsyms.data")
    deadline = time.time() + 60
    while our_programs() and time.time() < deadline:
        time.sleep(0.1)  # an earlier test's keeper
    p = subprocess.Popen([JT, "record", "-o", data, "--user", "nobody", "--", "sh", "-c",
                          f"while [ ! -e {stop} ]; do sleep 0.05; done"],
                         stderr=subprocess.PIPE, text=True)
    try:
        # The probes line comes once everything is loaded and attached.
        line = p.stderr.readline()
        while line and not line.startswith("jittrace: probes:"):
            line = p.stderr.readline()
        live = set()
        with open("/proc/kallsyms") as f:
            for l in f:
                if l.rstrip().endswith("[bpf]") and "_jt_" in l:
                    a, _, name = l.split()[:3]
                    live.add((int(a, 16), name))
        jited = sum(x["bytes_jited"] for x in our_programs())
    finally:
        open(stop, "w").close()
        p.communicate(timeout=60)
    assert p.returncode == 0
    sized = [l.split() for l in recorded_kallsyms(data).splitlines()
             if len(l.split()) == 5]
    assert all(f[3] == "[bpf]" and int(f[4]) > 0 for f in sized), sized[:5]
    ours = {(int(f[0], 16), f[2]) for f in sized}
    assert len(live) >= 8, live
    assert live <= ours, sorted(live - ours)[:5]
    assert sum(int(f[4]) for f in sized) == jited, (len(sized), jited)
    print(f"    {len(live)} symbols of our programs, as /proc/kallsyms lists them, "
          f"{jited} bytes")


def test_an_exec_on_our_root_costs_no_stat_of_its_tmp():
    """BPF marks an exec that keeps the recorder's mount namespace and
    root, so the recorder takes that process's /tmp for its own, with no
    stat through /proc/PID/root (one per exec was a twentieth of the
    agent's time under churn). A chroot's exec still gets one: the
    chroot test checks that its perf-map is still found there."""
    if not shutil.which("strace"):
        raise Skip("strace is not installed")
    log = os.path.join(TMP, "exec-stat.strace")
    data = os.path.join(TMP, "exec-stat.data")
    run(["strace", "-f", "-qq", "-e", "trace=%%stat", "-e", "signal=none", "-o", log,
         JT, "record", "-o", data, "--user", USER, "--", "sh", "-c",
         f"{WL}/spin 0.05; {WL}/spin 0.05"])
    execs = [e["pid"] for e in script(data) if e["type"] == "exec"]
    assert len(execs) == 3, execs
    said = open(log).read()
    # The recorder's own look at its namespace and root: strace saw it.
    assert '"/proc/self/ns/mnt"' in said, said[:2000]
    for pid in execs:
        assert f"/proc/{pid}/root/tmp" not in said, pid


TRACEFS = "/sys/kernel/tracing"


def _in_own_mounts(setup, args):
    """args, run in a private mount namespace once the shell's setup ran:
    the host's mounts stay as they are."""
    return run(["unshare", "-m", "--propagation", "private", "sh", "-ec",
                setup + '; exec "$@"', "sh", *args], check=False)


def test_record_mounts_tracefs_before_it_picks_tracepoints():
    """Where tracefs is not mounted yet (a fresh boot), the recorder mounts
    it before it asks which syscall tracepoints exist. Asked before, every
    one looked missing, and the mmap calls went unrecorded with no word."""
    data = os.path.join(TMP, "no-tracefs.data")
    p = _in_own_mounts(
        f"umount {TRACEFS} 2>/dev/null || true; ! mountpoint -q {TRACEFS}",
        [JT, "record", "-o", data, "--tier", TIER or "auto", "--user", USER, "--",
         os.path.join(WL, "mapops")])
    assert p.returncode == 0, p.stderr
    assert "0 events lost" in p.stderr
    pid = int(workload_lines(p.stdout, "start")[0][0])
    rows = maps(data, pid)
    got = {(r["start"], r["end"], r["prot"]) for r in rows}
    for s, e, prot in workload_lines(p.stdout, "want"):
        assert (int(s, 16), int(e, 16), prot) in got, f"missing region {s}-{e} {prot}"
    calls = {e["type"] for e in script(data) if e["pid"] == pid}
    assert {"mmap", "mprotect", "munmap", "mremap", "brk"} <= calls, calls


def test_a_missing_syscall_tracepoint_is_an_error():
    """A kernel without the tracepoint a hook needs (no
    CONFIG_FTRACE_SYSCALLS) gets a clear error, not a recording with no
    mmap calls in it. An empty tmpfs over events/syscalls stands in."""
    data = os.path.join(TMP, "no-syscall-tps.data")
    p = _in_own_mounts(
        f"mountpoint -q {TRACEFS} || mount -t tracefs nodev {TRACEFS}; "
        f"mount -t tmpfs none {TRACEFS}/events/syscalls",
        [JT, "record", "-o", data, "--tier", "tracepoint", "--user", USER, "--",
         "true"])
    assert p.returncode == 1, p.stderr
    assert "the mmap hook needs the tracepoint syscalls/sys_exit_mmap, and this " \
        "kernel has none" in p.stderr, p.stderr
    assert not os.path.exists(data)


# A traced process (pinned to CPU 0) that forks on each line it reads:
# the child moves to CPU 1 and maps 19 pages there, its first traced call.
_FORKER = """
import mmap, os, sys
print("ready", flush=True)
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {1})
        mmap.mmap(-1, 19 * 4096, flags=mmap.MAP_PRIVATE)
        os._exit(0)
    os.waitpid(pid, 0)
    print("child", pid, flush=True)
"""


def test_a_reused_pid_is_traced_from_its_first_call():
    # Each CPU keeps its last scope answer (a tgid, traced or not). An
    # untraced process on CPU 1 leaves "not traced" for its pid there; a
    # traced fork then takes that pid (ns_last_pid), and the child's first
    # call is on CPU 1. The fork made every kept answer stale: the call
    # must be recorded.
    if not {0, 1} <= os.sched_getaffinity(0):
        raise Skip("needs CPUs 0 and 1: the kept answer is per CPU")
    data = os.path.join(TMP, "pidreuse.data")
    tier = ["--tier", TIER] if TIER else []
    rec = subprocess.Popen(
        [JT, "record", "-o", data, *tier, "--user", USER, "--", "taskset",
         "-c", "0", "python3", "-c", _FORKER],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    was = os.sched_getaffinity(0)
    reused = []
    try:
        assert rec.stdout.readline() == "ready\n"
        # Our own calls leave their answers on CPU 0, not on CPU 1.
        os.sched_setaffinity(0, {0})
        # Three times, since another task on CPU 1 can replace the kept
        # answer first; another fork can take the pid first, so up to 30.
        for _ in range(30):
            u = subprocess.Popen(["taskset", "-c", "1", "/bin/true"])
            u.wait()
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(u.pid - 1))
            rec.stdin.write("go\n")
            rec.stdin.flush()
            child = int(rec.stdout.readline().split()[1])
            if child == u.pid:
                reused.append(child)
            if len(reused) == 3:
                break
        rec.stdin.close()
        rec.wait(timeout=60)
    finally:
        os.sched_setaffinity(0, was)
        kill_left(rec)
    assert rec.returncode == 0
    if not reused:
        raise Skip("another process took the pid each of 30 times")
    maps19 = [(e["pid"], e["cpu"]) for e in script(data)
              if e["type"] == "mmap" and hx(e["args"][1]) == 19 * PAGE]
    missing = [r for r in reused if (r, 1) not in maps19]
    assert not missing, (reused, maps19)
