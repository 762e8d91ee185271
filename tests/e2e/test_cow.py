# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Copy-on-write: exactly which pages became private, in which process,
and the sharing class of data addresses."""
import os
import re

import jt
from jt import TMP, WL, hx, record, script, workload_lines

PAGE = 4096
LIB = os.path.join(WL, "libjtcow.so")


def cows(events, pid, start, end):
    return sorted(hx(e["page"]) for e in events
                  if e["type"] == "cow" and e["pid"] == pid and start <= hx(e["page"]) < end)


def test_library_global_written_by_two_processes():
    cmd = os.path.join(WL, "cowuser")
    p, data = record(["sh", "-c", f"{cmd} {LIB}; {cmd} {LIB}"],
                     ["-e", "page-faults", "-c", "1", "-d"])
    events = script(data)
    pids = [e["pid"] for e in events if e["type"] == "exec" and e["path"].endswith("/cowuser")]
    globals_ = [int(a[0], 16) for a in workload_lines(p.stdout, "global")]
    wrote = [int(a[0], 16) for a in workload_lines(p.stdout, "wrote")]
    assert len(pids) == 2 and len(globals_) == 2
    for pid, g, w in zip(pids, globals_, wrote):
        # Exactly the written page of the library's data became private.
        assert cows(events, pid, g, g + 3 * PAGE) == [w]
        kinds = {e["kind"] for e in events if e["type"] == "cow" and e["pid"] == pid
                 and hx(e["page"]) == w}
        assert kinds <= {"file-first-write", "file-write-protect"}, kinds
        faults = [e for e in events if e["type"] == "sample" and e["pid"] == pid]
        # (Reads of the other pages need not fault at all: the kernel maps
        # cached neighbours of a read fault ahead of time.)
        written = [e for e in faults if w <= hx(e["data_addr"]) < w + PAGE]
        assert written
        if jt.TIER in ("fentry", "kprobe", "kernel"):
            # The kernel tier sees the copy inside the fault handler, after
            # perf sampled the fault on entry: the faulting write's sample
            # comes first and sees the page shared, the copy follows it
            # within the same fault.
            cow = [e for e in events if e["type"] == "cow" and e["pid"] == pid
                   and hx(e["page"]) == w]
            first = written[0]
            assert first["sharing"] == "shared-file" and cow, (first, cow)
            between = [e for e in events if e["tid"] == first["tid"]
                       and first["time"] < e["time"] < cow[0]["time"]]
            # Order, not elapsed time: a loaded host may preempt the fault.
            assert not between, between
            written = written[1:]
        assert all(e["sharing"] == "private" for e in written), written


def test_shared_file_and_shm_are_not_copied():
    target = os.path.join(TMP, "cowshared.map")
    os.chmod(TMP, 0o777)
    p, data = record([os.path.join(WL, "cowshared"), target],
                     ["-e", "page-faults", "-c", "1", "-d"])
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec")
    f = int(workload_lines(p.stdout, "file")[0][0], 16)
    shm = int(workload_lines(p.stdout, "shm")[0][0], 16)
    assert cows(events, pid, f, f + PAGE) == [] and cows(events, pid, shm, shm + PAGE) == []
    sharing = {hx(e["data_addr"]) & ~(PAGE - 1): e["sharing"] for e in events
               if e["type"] == "sample" and e["pid"] == pid}
    assert sharing[f] == "shared-file" and sharing[shm] == "shared-anon", sharing


def test_cow_is_opt_in():
    _, data = record([os.path.join(WL, "cowfork")])
    assert not any(e["type"] == "cow" for e in script(data))
    with open(data, "rb") as f:
        assert b"cow=off" in f.read(4096)


def test_fork_copy_on_write_pages():
    p, data = record([os.path.join(WL, "cowfork")], ["--cow"])
    events = script(data)
    parent = next(e["pid"] for e in events if e["type"] == "exec")
    child = int(workload_lines(p.stdout, "child")[0][0])
    base = int(workload_lines(p.stdout, "pages")[0][0], 16)
    fork_time = next(e["time"] for e in events if e["type"] == "fork"
                     and e["child_pid"] == child)
    # The parent's first writes made its pages; no copy before the fork.
    assert cows(events, parent, base, base + 3 * PAGE) == [base + 2 * PAGE]
    assert all(e["time"] > fork_time for e in events if e["type"] == "cow"
               and e["pid"] == parent and base <= hx(e["page"]) < base + 3 * PAGE)
    assert cows(events, child, base, base + 3 * PAGE) == [base + PAGE]
    assert {e["kind"] for e in events if e["type"] == "cow" and e["pid"] in (parent, child)
            and base <= hx(e["page"]) < base + 3 * PAGE} == {"anon-write-protect"}


MANY_VMAS = r"""
import ctypes, mmap, os, sys
path, n, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open(path, os.O_RDWR)
# One page each, all at offset 0, so no two merge into one VMA, private
# and shared in turn: a lookup that found a neighbour would see a shared
# mapping, written in place, and record no copy. By libc's mmap: Python's
# holds a descriptor for each.
maps = [libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE,
                  mmap.MAP_SHARED if i % 2 else mmap.MAP_PRIVATE, fd, 0)
        for i in range(2 * n)]
assert all(a and a != ctypes.c_void_p(-1).value for a in maps), ctypes.get_errno()
for a in maps[0::2][::step]:
    ctypes.memset(a, 1, 1)
    print("wrote %x" % a)
"""


def test_fault_vmas_found_by_walking_a_deep_tree():
    # 3000 one-page file mappings make the mm's maple tree four levels
    # deep; a first write to every seventh private one copies exactly that
    # page, each classified from the VMA the tracepoint tier's walk of
    # the tree found, none left to bpf_find_vma (a self-IPI per fault).
    path = os.path.join(TMP, "many-vmas.bin")
    with open(path, "wb") as f:
        f.write(b"x" * PAGE)
    os.chmod(TMP, 0o777)
    os.chmod(path, 0o666)
    n, step = 1500, 7
    p, data = record(["python3", "-c", MANY_VMAS, path, str(n), str(step)], ["--cow"])
    wrote = sorted(int(a[0], 16) for a in workload_lines(p.stdout, "wrote"))
    assert len(wrote) == len(range(0, n, step))
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec")
    got = {hx(e["page"]): e["kind"] for e in events
           if e["type"] == "cow" and e["pid"] == pid and hx(e["page"]) in set(wrote)}
    assert sorted(got) == wrote and set(got.values()) == {"file-first-write"}, \
        (len(got), len(wrote), set(got.values()))
    m = re.search(r"COW faults' VMAs: (\d+) by a walk of the VMA tree, (\d+) by "
                  r"bpf_find_vma", p.stderr)
    if "cow=tracepoint" not in p.stderr:
        assert not m, p.stderr  # the kernel tier gets its VMA from the fault
    else:
        assert m and int(m.group(1)) >= len(wrote) and int(m.group(2)) == 0, p.stderr
