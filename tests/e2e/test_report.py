# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""jittrace report's text table: each row says what its JSON row says.
The text is formatted by hand, with columns cached across rows (counts,
pids), so a cache that outlives its row would show another row's value."""
import json
import os

from jt import JT, WL, record, run


def text_rows(out):
    """(samples, comm, pid, dso, source, sym) of each table row."""
    rows = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split(None, 6)
        rows.append((int(f[1]), f[2], f[3], f[4], f[5], f[6]))
    return rows


def json_rows(out):
    return [(r["samples"], r["comm"],
             f"{r['pid']}:{r['nspid']}" if r.get("nspid") else str(r["pid"]),
             r["dso"], r["source"], r["sym"] + (" (retro)" if r["retro"] else ""))
            for r in json.loads(out)]


def test_text_rows_are_the_json_rows():
    # Two processes, each running its own code for 0.3 s of CPU time:
    # rows of both pids, interleaved by count.
    pages = os.path.join(WL, "jitpages")
    _, data = record(["sh", "-c", f"{pages} 2 0.3 & {pages} 3 0.3; wait"])
    text = text_rows(run([JT, "report", "-i", data]).stdout)
    rows = json_rows(run([JT, "report", "-i", data, "--json"]).stdout)
    assert text == rows, (text[:10], rows[:10])
    # Two pids: the pid column changes at least once down the table.
    pids = {r[2] for r in rows if r[1] == "jitpages"}
    changes = sum(1 for a, b in zip(rows, rows[1:]) if a[2] != b[2])
    print(f"    {len(rows)} rows, pid column changes {changes} times")
    assert len(pids) == 2 and changes >= 1, rows
