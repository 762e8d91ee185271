# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""jittrace audit: findings with exact counts on workloads whose truth
is known."""
import json
import os

from jt import JT, TMP, WL, hx, maps, record, run, script, workload_lines

PAGE = 4096


def audit(data):
    rows = json.loads(run([JT, "audit", "-i", data, "--json"]).stdout)
    for r in rows:
        r["start"], r["end"] = hx(r["start"]), hx(r["end"])
    return rows


def jitgen(*args):
    d = os.path.join(TMP, "audit-jd")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    return record([os.path.join(WL, "jitgen"), *args, "-j", d])


def test_coalesced_and_mmap2_overlap_on_llvm_style_jit():
    n = 5
    p, data = jitgen("adjacent", str(n), "1.0")
    pid = int(workload_lines(p.stdout, "pid")[0][0])
    pages = sorted(int(a[1], 16) for a in workload_lines(p.stdout, "load"))
    rows = [r for r in audit(data) if r["pid"] == pid]
    co = [r for r in rows if r["kind"] == "coalesced"]
    assert [(r["start"], r["end"], r["detail"]["regions"]) for r in co] == \
        [(pages[0], pages[-1] + PAGE, n)]
    assert co[0]["detail"]["pieces"] == [[hex(a), hex(a + PAGE)] for a in pages]
    # Each page's r-x MMAP2 claims the merged range: the k-th covers the
    # k-1 functions loaded before it.
    ov = sorted((r for r in rows if r["kind"] == "mmap2-overlap"),
                key=lambda r: r["detail"]["symbols"])
    assert [r["detail"]["symbols"] for r in ov] == list(range(1, n))
    # The samples a tool trusting the record names wrong: from it on.
    samples = [s for s in script(data) if s["type"] == "sample" and s["source"] == "jitdump"]
    for r in ov:
        assert r["detail"]["samples"] == sum(
            1 for s in samples if r["start"] <= hx(s["ip"]) < r["end"]
            and s["time"] >= r["detail"]["time"]), r
    assert sum(r["detail"]["samples"] for r in ov) > 0


def test_perfmap_reuse():
    p, data = record([os.path.join(WL, "jitgen"), "reuse", "4", "0.4", "-m"])
    rows = [r for r in audit(data) if r["kind"] == "perfmap-reuse"]
    assert [(r["detail"]["old"], r["detail"]["new"]) for r in rows] == \
        [(f"reused_{i}", f"reused_{i + 1}") for i in range(3)]


def test_jit_orphan_regions_without_symbols():
    p, data = record([os.path.join(WL, "jitpages"), "3", "0.9"])
    pages = sorted(int(a[0], 16) for a in workload_lines(p.stdout, "page"))
    rows = [r for r in audit(data) if r["kind"] == "jit-orphan"]
    assert sorted((r["start"], r["end"]) for r in rows) == [(a, a + PAGE) for a in pages]
    in_pages = sum(1 for s in script(data) if s["type"] == "sample" and
                   any(a <= hx(s["ip"]) < a + PAGE for a in pages))
    assert sum(r["detail"]["samples"] for r in rows) == in_pages


def test_cow_and_false_sharing_suspect():
    lib, cmd = os.path.join(WL, "libjtcow.so"), os.path.join(WL, "cowuser")
    # The c2c scenario in small: three processes at once on one global.
    p, data = record(["sh", "-c", f"{cmd} {lib} & {cmd} {lib} & {cmd} {lib}; wait"],
                     ["-e", "page-faults", "-c", "1", "-d"])
    pids = [e["pid"] for e in script(data) if e["type"] == "exec"
            and e["path"].endswith("/cowuser")]
    wrote = [int(a[0], 16) for a in workload_lines(p.stdout, "wrote")]
    assert len(pids) == 3 and len(wrote) == 3
    # Output interleaves: pair each process with its address by its maps.
    wrote = [next(w for w in wrote if any(r["start"] <= w < r["end"] and
                                          r["path"] and r["path"].endswith("libjtcow.so")
                                          for r in maps(data, pid))) for pid in pids]
    rows = audit(data)
    offsets = set()
    for pid, w in zip(pids, wrote):
        cow = [r for r in rows if r["kind"] == "cow" and r["pid"] == pid
               and r["start"] <= w < r["end"]]
        assert len(cow) == 1 and cow[0]["detail"]["backing"].endswith("/libjtcow.so")
        assert w in [hx(pg["addr"]) for pg in cow[0]["detail"]["pages"]]
        assert cow[0]["detail"]["count"] == len(cow[0]["detail"]["pages"])
        region = next(r for r in maps(data, pid) if r["start"] <= w < r["end"])
        offsets.add(hx(region["offset"]) + w - region["start"])
    # Both wrote the same page of the same file: a tool keyed on the file
    # sees sharing; each process wrote its own private copy.
    # (ld.so's relocations write another page of the library in both: a
    # finding too, for the same reason.)
    assert len(offsets) == 1
    # cowuser writes byte 100 of the page: the line at 64.
    line = (offsets.pop() & ~(PAGE - 1)) + 64
    sus = [r for r in rows if r["kind"] == "false-sharing-suspect"
           and r["detail"]["path"].endswith("/libjtcow.so")
           and hx(r["detail"]["offset"]) == line]
    assert len(sus) == 1, rows
    assert sorted(sus[0]["detail"]["pids"]) == sorted(pids)
    assert sus[0]["detail"]["sharing"] == "private-copies"
    assert sus[0]["detail"]["data_sym"] == "jt_cow_global+0x1040"
    # report --data: each process's writes hit its own private copy.
    rep = json.loads(run([JT, "report", "-i", data, "--data", "--json"]).stdout)
    for pid in pids:
        mine = [r for r in rep if r["pid"] == pid and r["backing"].endswith("/libjtcow.so")
                and r["sharing"] == "private"]
        assert mine and sum(r["samples"] for r in mine) >= 1, rep


def test_live_audit_of_a_running_process():
    import subprocess
    from jt import AS_USER
    f = os.path.join(TMP, "cowhold.shared")
    os.chmod(TMP, 0o777)
    proc = subprocess.Popen([*AS_USER, os.path.join(WL, "cowhold"),
                             os.path.join(WL, "libjtcow.so"), f, TMP],
                            stdout=subprocess.PIPE, text=True)
    addr = {}
    try:
        for line in proc.stdout:
            name, value = line.split()
            if name == "ready":
                break
            addr[name] = value
        args = [JT, "audit", "-p", str(proc.pid), "--json"]
        for name in ("lib_written", "lib_read", "shared_file", "shm",
                     "fork_shared", "fork_copied"):
            args += ["--addr", addr[name]]
        rows = json.loads(run(args).stdout)
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "cowhold"])
        proc.wait()
        os.unlink(f"/tmp/perf-{proc.pid}.map")
    answers = {hx(r["start"]): r["detail"]["sharing"] for r in rows if r["kind"] == "addr"}
    want = {"lib_written": "private", "lib_read": "shared-file",
            "shared_file": "shared-file", "shm": "shared-anon",
            "fork_shared": "shared-anon", "fork_copied": "private"}
    assert answers == {int(addr[k], 16): v for k, v in want.items()}, rows
    w = int(addr["lib_written"], 16)
    cow = [r for r in rows if r["kind"] == "cow" and hx(r["start"]) <= w < hx(r["end"])]
    assert len(cow) == 1 and cow[0]["detail"]["backing"].endswith("/libjtcow.so")
    assert [pg["sharing"] for pg in cow[0]["detail"]["pages"]
            if hx(pg["addr"]) == w] == ["private"]
    reuse = [r for r in rows if r["kind"] == "perfmap-reuse"]
    assert [(r["detail"]["old"], r["detail"]["new"]) for r in reuse] == [("first", "second")]
    orphan = [r for r in rows if r["kind"] == "jit-orphan"]
    assert sorted(r["detail"]["name"] for r in orphan) == ["dump_nowhere", "nowhere"]
