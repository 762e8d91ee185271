# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Copy-on-write down to the page and the variable: which pages of a
library's data each process made its own, who wrote them, what lives on
them, and which cache lines several processes really share."""
import json
import os
import re
import subprocess

import jt
from jt import AS_USER, JT, TMP, WL, hx, record, run, script

PAGE = 4096
LIB = os.path.join(WL, "libjtdata.so")
ARRAYS = ("jt_config", "jt_table", "jt_counters")


def file_offsets():
    """Each array's file offset, from the library's own symbols and
    segments: independent of jittrace's ELF reader."""
    syms = {}
    for line in run(["nm", LIB]).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] in ARRAYS:
            syms[f[2]] = int(f[0], 16)
    for line in run(["readelf", "-lW", LIB]).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "RW" in line:
            off, vaddr = int(f[1], 16), int(f[2], 16)
            return {k: v - vaddr + off for k, v in syms.items()}
    raise AssertionError("no RW segment")


def workers(stdout):
    """pid -> (writer tid, {array: address})"""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if f and f[0] == "worker":
            out[int(f[1])] = (int(f[2]), {"jt_counters": int(f[3], 16),
                                          "jt_table": int(f[4], 16),
                                          "jt_config": int(f[5], 16)})
    return out


def audit(data, *extra):
    return json.loads(run([JT, "audit", "-i", data, "--json", *extra]).stdout)


def lib_pages(rows, pid):
    """The private pages of the library's data in pid's cow findings."""
    return {hx(pg["file_offset"]): pg for r in rows
            if r["kind"] == "cow" and r["pid"] == pid
            and r["detail"]["backing"] == LIB for pg in r["detail"]["pages"]}


def recording(n=3):
    p, data = record([os.path.join(WL, "cowdata"), LIB, str(n)],
                     ["-e", "page-faults", "-c", "1", "-d"])
    w = workers(p.stdout)
    assert len(w) == n, p.stdout
    parent = next(e["pid"] for e in script(data) if e["type"] == "exec"
                  and e["path"].endswith("/cowdata"))
    return data, parent, w


def test_cow_pages_name_writer_and_data():
    data, parent, w = recording()
    off = file_offsets()
    rows = audit(data, "--kind", "cow")
    assert {r["kind"] for r in rows} == {"cow"}
    text = run([JT, "audit", "-i", data, "--kind", "cow"]).stdout
    # What was lost or could not be placed, for a failure's message.
    notes = [ln for ln in text.splitlines() if ln.startswith("#")]
    arrays = {off[a] for a in ARRAYS}
    for pid, (tid, addr) in w.items():
        pages = {o: pg for o, pg in lib_pages(rows, pid).items() if o in arrays}
        # Exactly the two written arrays; the table was only read.
        assert sorted(pages) == sorted([off["jt_config"], off["jt_counters"]]), (pages, notes)
        c = pages[off["jt_counters"]]
        assert (hx(c["addr"]), c["why"], c["sharing"], c["tid"], c["sym"], c["dso"],
                c["source"]) == (addr["jt_counters"], "file-page-written", "private",
                                 tid, "jt_fill", "libjtdata.so", "elf"), (c, notes)
        assert c["kind"] in ("file-first-write", "file-write-protect"), c
        assert c["data_syms"] == [{"name": "jt_counters", "offset": 0, "size": PAGE}]
        g = pages[off["jt_config"]]
        # The parent wrote it before the fork: this copy was shared, then written.
        assert (hx(g["addr"]), g["why"], g["sharing"], g["tid"], g["sym"], g["dso"]) == \
            (addr["jt_config"], "fork-shared-written", "private", pid, "set_config",
             "cowdata"), (g, notes)
        assert g["data_syms"] == [{"name": "jt_config", "offset": 0, "size": PAGE}]
        assert tid != pid  # the counters were written by the worker's thread
    mine = {o: pg for o, pg in lib_pages(rows, parent).items() if o in arrays}
    assert sorted(mine) == [off["jt_config"]], (mine, notes)
    g = mine[off["jt_config"]]
    # Its own write; shared with the workers since the fork.
    assert (g["why"], g["sharing"], g["tid"], g["sym"]) == \
        ("file-page-written", "shared-anon", parent, "set_config"), (g, notes)
    # The count stays, and matches the list.
    for r in rows:
        assert r["detail"]["count"] == len(r["detail"]["pages"])

    # For people: by file, then page, then process.
    block = text[text.index("  " + LIB + "\n"):]
    block = block[:re.search(r"\n  \S", block[3:]).start() + 3] if re.search(
        r"\n  \S", block[3:]) else block
    assert "jt_table" not in text
    lines = block.splitlines()
    head = lines.index(f"    +{off['jt_counters']:#x}  data: jt_counters (+0x0, 4096 bytes)")
    rows_text = lines[head + 1:head + 1 + len(w)]
    assert sorted(int(r.split()[1]) for r in rows_text) == sorted(w), block
    for r in rows_text:
        pid = int(r.split()[1])
        assert r.split()[2] == f"{w[pid][1]['jt_counters']:012x}", r
        assert "file-page-written" in r and "own copy" in r
        assert r.endswith(f"tid {w[pid][0]:<7} jt_fill (libjtdata.so)"), r


def test_false_sharing_suspect_lines():
    data, parent, w = recording()
    off = file_offsets()
    rows = audit(data, "--kind", "false-sharing-suspect")
    assert rows and {r["kind"] for r in rows} == {"false-sharing-suspect"}
    lines = {hx(r["detail"]["offset"]): r["detail"] for r in rows
             if r["detail"]["path"] == LIB}
    table = lines[off["jt_table"]]
    # Read only: every worker on the file's one page, true sharing possible.
    assert (table["data_sym"], table["sharing"], sorted(table["pids"])) == \
        ("jt_table", "shared-file", sorted(w)), table
    counters = lines[off["jt_counters"]]
    assert counters["data_sym"] == "jt_counters" and sorted(counters["pids"]) == sorted(w)
    if jt.TIER in ("fentry", "kprobe"):
        # The kernel tier copies after perf sampled the fault: each write's
        # one sample sees the file's page.
        assert counters["sharing"] in ("shared-file", "mixed"), counters
    else:
        # Each worker on a private copy of its own: not shared at all.
        assert counters["sharing"] == "private-copies", counters
        for p in counters["processes"]:
            assert p["sharing"] == ["private"], counters
    text = run([JT, "audit", "-i", data, "--kind", "false-sharing-suspect"]).stdout
    assert f"{LIB}+{off['jt_table']:#x} (jt_table): 3 processes, one physical page: " \
        "can be true sharing" in text, text


def test_report_data_names_the_array():
    data, parent, w = recording()
    rep = json.loads(run([JT, "report", "-i", data, "--data", "--json"]).stdout)
    for pid in w:
        mine = [r for r in rep if r["pid"] == pid and r["backing"] == LIB]
        named = {r["dsym"] for r in mine}
        assert {"jt_counters", "jt_table"} <= named, mine
        table = [r for r in mine if r["dsym"] == "jt_table"]
        assert {r["sharing"] for r in table} == {"shared-file"}, table
        if jt.TIER not in ("fentry", "kprobe"):
            counters = [r for r in mine if r["dsym"] == "jt_counters"]
            assert {r["sharing"] for r in counters} == {"private"}, counters
    by_dsym = json.loads(run([JT, "report", "-i", data, "--data", "--sort", "dsym",
                              "--json"]).stdout)
    assert sum(r["samples"] for r in by_dsym if r["dsym"] == "jt_table") == \
        sum(r["samples"] for r in rep if r["dsym"] == "jt_table")
    assert run([JT, "report", "-i", data, "--sort", "dsym"], check=False).returncode == 2
    assert run([JT, "audit", "-i", data, "--kind", "nonsense"], check=False).returncode == 2


def test_live_audit_lists_private_pages_and_data():
    off = file_offsets()
    proc = subprocess.Popen([*AS_USER, os.path.join(WL, "cowdata"), LIB, "2", "hold"],
                            stdout=subprocess.PIPE, text=True)
    out = []
    try:
        for line in proc.stdout:
            out.append(line)
            if line.startswith("ready"):
                break
        # The workers print before they pause; wait for both.
        while len(workers("".join(out))) < 2:
            out.append(proc.stdout.readline())
        w = workers("".join(out))
        pid = min(w)
        rows = json.loads(run([JT, "audit", "-p", str(pid), "--json"]).stdout)
        text = run([JT, "audit", "-p", str(pid)]).stdout
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "cowdata .* hold"])
        proc.wait()
    pages = {hx(pg["file_offset"]): pg for r in rows if r["kind"] == "cow"
             and r["detail"]["backing"] == LIB for pg in r["detail"]["pages"]}
    arrays = {off[a]: a for a in ARRAYS}
    got = {arrays[o]: (hx(pg["addr"]), pg["sharing"], pg["data_syms"])
           for o, pg in pages.items() if o in arrays}
    want = {a: (w[pid][1][a], "private", [{"name": a, "offset": 0, "size": PAGE}])
            for a in ("jt_config", "jt_counters")}
    assert got == want, rows
    assert f"+{off['jt_counters']:#x}" in text and \
        "data: jt_counters (+0x0, 4096 bytes)" in text, text
    assert "jt_table" not in text
