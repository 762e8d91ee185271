# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Rebuilt maps against what the workloads themselves report."""
import os
import platform
import re

import jt
from jt import (WL, Skip, assert_tiles, hx, maps, proc_maps, record, script,
                unkeep, workload_lines)

PAGE = 4096
BUSY, REREAD = 1 << 1, 1 << 4  # JT_MF_VMA_BUSY, JT_MF_VMA_REREAD


def test_jit_pages_stay_separate_and_samples_land_in_them():
    n = 8
    p, data = record([os.path.join(WL, "jitpages"), str(n), "1.5"], ["-F", "999"])
    pages = sorted(int(a[0], 16) for a in workload_lines(p.stdout, "page"))
    vs, ve = (int(x, 16) for x in workload_lines(p.stdout, "vma")[0])
    assert len(pages) == n and vs == pages[0] and ve == pages[-1] + PAGE
    pid = int(script(data)[-1]["pid"])
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec")
    rows = [r for r in maps(data, pid) if pages[0] <= r["start"] < ve]
    # N requested regions, all in one kernel VMA, all marked coalesced.
    assert [(r["start"], r["end"]) for r in rows] == [(a, a + PAGE) for a in pages]
    for r in rows:
        assert r["prot"] == "r-xp" and r["path"] is None
        assert r["kernel_vma"] == (vs, ve), r
        assert r["coalesced"] and r["vma_regions"] == n
    # perf's own MMAP2 records claim the growing merged range each time.
    rx = [e for e in events if e["type"] == "perf_mmap2" and e["pid"] == pid
          and e["prot"] == 5 and vs <= hx(e["start"]) < ve]
    assert [hx(e["end"]) - hx(e["start"]) for e in rx] == \
        [PAGE * k for k in range(1, n + 1)], rx
    # Every sample in the pages resolves to the page that held it.
    samples = [e for e in events if e["type"] == "sample" and not e["kernel"]
               and vs <= hx(e["ip"]) < ve]
    assert len(samples) > 100, len(samples)
    hit = set()
    for s in samples:
        page = hx(s["ip"]) & ~(PAGE - 1)
        assert (hx(s["region_start"]), hx(s["region_end"])) == (page, page + PAGE), s
        hit.add(page)
    assert hit == set(pages), f"pages without samples: {set(pages) - hit}"


def test_mapops_matches_proc_maps():
    p, data = record([os.path.join(WL, "mapops")])
    pid = int(workload_lines(p.stdout, "start")[0][0])
    rows = maps(data, pid)
    got = {(r["start"], r["end"], r["prot"]) for r in rows}
    for s, e, prot in workload_lines(p.stdout, "want"):
        assert (int(s, 16), int(e, 16), prot) in got, f"missing region {s}-{e} {prot}"
    heap_lo, heap_hi = (int(x, 16) for x in workload_lines(p.stdout, "heap")[0])
    heap = [r for r in rows if r["name"] == "[heap]"]
    assert len(heap) == 1 and heap[0]["end"] == (heap_hi + PAGE - 1) & ~(PAGE - 1)
    assert heap[0]["start"] <= heap_lo
    # /proc names [heap] any VMA that touches [start_brk, brk]: with address
    # randomization off (the VM suite) the .bss right below it too. The
    # heap is the one holding what malloc returned. 5.10 merges the .bss's
    # anon VMA with the heap's: there the requested heap lies, coalesced,
    # in the kernel VMA /proc shows; later kernels keep the two apart.
    proc_heap = [(v["start"], v["end"]) for v in proc_maps(p.stdout, pid)
                 if v["path"] == "[heap]" and v["start"] <= heap_lo < v["end"]]
    assert proc_heap == [heap[0]["kernel_vma"]], (proc_heap, heap[0])
    assert heap[0]["coalesced"] == (heap[0]["kernel_vma"] != (heap[0]["start"], heap[0]["end"]))
    exe = os.path.realpath(os.path.join(WL, "mapops"))
    moved = [r for r in rows if r["origin"] == "mremap" and r["path"] == exe]
    want_moved = workload_lines(p.stdout, "want")[6]
    assert [(r["start"], r["end"], r["offset"]) for r in moved] == \
        [(int(want_moved[0], 16), int(want_moved[1], 16), "0x0")]
    assert_tiles(rows, proc_maps(p.stdout, pid))
    # mprotect's pieces merged back into one VMA: each region it made
    # holds the VMA the kernel ended with, as the last call left it.
    lo, hi = (int(x, 16) for x in workload_lines(p.stdout, "merged")[0])
    pieces = [r for r in rows if lo <= r["start"] < hi]
    assert len(pieces) == 5, pieces
    for r in pieces:
        vma = r["kernel_vma"]
        assert vma[0] <= lo and vma[1] >= hi and r["coalesced"], r
    assert any(v["start"] == vma[0] and v["end"] == vma[1]
               for v in proc_maps(p.stdout, pid)), vma


def looks_up_after_the_call():
    """These tests are about the lookups a call's exit makes once
    mmap_lock is free: the kprobe tier reads the VMAs under it. The VM
    suite runs them on the tracepoint tier only, so they keep nothing to
    compare."""
    if jt.TIER == "kprobe":
        raise Skip("the kprobe tier reads a call's VMAs under mmap_lock")


def walks_the_tree(stderr):
    """Where the lookups after a call (the tracepoint tier's, the fentry
    tier's) walk the VMA tree: the maple tree on x86-64 (loads stay in
    order) from 6.14 (mm_lock_seq a seqcount), the legacy object's
    rb-tree (before 5.17) everywhere."""
    if not re.search(r"^jittrace: probes: mmap=(tracepoint|fentry) ", stderr, re.M):
        return False
    if re.search(r" programs=legacy\b", stderr):
        return True
    rel = tuple(int(x) for x in re.findall(r"\d+", platform.release())[:2])
    return platform.machine() == "x86_64" and rel >= (6, 14)


def test_call_lookups_walk_the_tree_no_writer_overlapped():
    """Each lookup at a mapping call's exit, counted by how it was made:
    by the walk, exactly one per VMA the events hold, none left to
    bpf_find_vma (mapops has one thread; no writer overlaps its walks);
    where the walk cannot be checked, none by it. The regions are those
    of test_mapops_matches_proc_maps, which the walk's VMAs make."""
    looks_up_after_the_call()
    p, data = record([os.path.join(WL, "mapops")], ["-v"])
    unkeep()  # not run on the kprobe tier: nothing to compare with
    pid = int(workload_lines(p.stdout, "start")[0][0])
    m = re.search(r"^jittrace: mapping calls' VMAs: (\d+) by a walk of the VMA "
                  r"tree that no writer overlapped, (\d+) by bpf_find_vma$",
                  p.stderr, re.M)
    assert m, p.stderr
    walk, find = int(m.group(1)), int(m.group(2))
    looked = 0
    for e in script(data):
        if e["pid"] == pid and e["type"] != "vma" and e.get("vma"):
            looked += 1 + (e["vma_last"]["start"] != e["vma"]["start"])
    assert looked >= 20, looked
    if walks_the_tree(p.stderr):
        assert (walk, find) == (looked, 0), (walk, find, looked)
    else:
        assert walk == 0, p.stderr
    assert_tiles(maps(data, pid), proc_maps(p.stdout, pid))


def kprobe_tier_mprotects(n):
    """mmloop's n mprotects recorded with -v, and the lookups counted."""
    p, data = record([os.path.join(WL, "mmloop"), "calls", str(n)], ["-v"])
    unkeep()  # the tiers' lookups differ by design: nothing to compare
    assert re.search(r"^jittrace: probes: .*\bmprotect=kprobe\b", p.stderr, re.M), p.stderr
    m = re.search(r"^jittrace: mapping calls' VMAs: (\d+) by a walk of the VMA "
                  r"tree that no writer overlapped, (\d+) by bpf_find_vma$",
                  p.stderr, re.M)
    assert m, p.stderr
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec")
    anon = {e["result"] for e in events if e["type"] == "mmap" and e["pid"] == pid and
            hx(e["args"][3]) & 0x23 == 0x22}  # MAP_PRIVATE | MAP_ANONYMOUS
    mp = [e for e in events if e["type"] == "mprotect" and e["pid"] == pid and
          hx(e["args"][0]) in anon and hx(e["args"][2]) == 1]  # PROT_READ
    assert len(mp) == n, len(mp)
    return int(m.group(1)) + int(m.group(2)), mp


def test_the_kprobe_tier_reads_mprotects_pieces_under_the_lock():
    """The kprobe tier keeps its entry programs, and mprotect_fixup's
    pprev gives the VMA each piece ended in, read under mmap_lock: n more
    mprotects look nothing more up (others do: brk's exit, the loader's).
    pprev moves among the arguments (second of five to 6.0, then third,
    then fourth from 6.2); read from the wrong one, each of 5.10's
    mprotects fell back to two lookups."""
    if jt.TIER != "kprobe":
        raise Skip("only the kprobe tier reads mprotect's pieces")
    n = 100
    few, _ = kprobe_tier_mprotects(n)
    more, mp = kprobe_tier_mprotects(3 * n)
    assert more == few, (few, more)
    for e in mp:
        a = hx(e["args"][0])
        assert not e["flags"] & BUSY, e
        for v in (e["vma"], e["vma_last"]):
            assert hx(v["start"]) <= a and a + PAGE <= hx(v["end"]), e


MERGE_BACK = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
for i in range(int(sys.argv[1])):
    a = libc.mmap(None, 3 * 4096, 3, 0x22, -1, 0)  # RW, private, anonymous
    assert libc.mprotect(a + 4096, 4096, 1) == 0   # R: three VMAs
    assert libc.mprotect(a + 4096, 4096, 3) == 0   # RW: one again
    print("merged", hex(a), flush=True)
"""


def test_an_mprotect_that_merges_holds_the_merged_vma():
    """Each mprotect that gives a page back its neighbours' protection
    merges the three VMAs into one, and its event holds that VMA: the
    one the kernel found at the call's start is unlinked. (A lookup that
    trusted 5.10's per-task VMA cache past that unlink reported the
    middle page alone.)"""
    n = 50
    p, data = record(["python3", "-c", MERGE_BACK, str(n)])
    starts = [int(a, 16) for a, in workload_lines(p.stdout, "merged")]
    assert len(starts) == n, p.stdout
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec")
    back = {hx(e["args"][0]) - PAGE: e for e in events
            if e["type"] == "mprotect" and e["pid"] == pid and hx(e["args"][2]) == 3}
    for a in starts:
        e = back[a]
        for v in (e["vma"], e["vma_last"]):
            assert hx(v["start"]) <= a and a + 3 * PAGE <= hx(v["end"]), (hex(a), e)


DEEP_TREE = """
import mmap, sys
n = int(sys.argv[1])
# Shared anonymous mappings are each a file of their own: none merge.
ms = [mmap.mmap(-1, 4096 * (1 + i % 3)) for i in range(n)]
print("mapped", len(ms), flush=True)
"""


def record_shared_maps(script_text, n):
    """Record a Python script that makes n shared anonymous mappings: each
    mmap's event must hold exactly its own mapping as the kernel VMA.
    Those events, and how many lookups the walk answered."""
    looks_up_after_the_call()
    p, data = record(["python3", "-c", script_text, str(n)], ["-v"])
    unkeep()  # not run on the kprobe tier: nothing to compare with
    assert workload_lines(p.stdout, "mapped") == [[str(n)]]
    m = re.search(r"^jittrace: mapping calls' VMAs: (\d+) by a walk", p.stderr, re.M)
    assert m, p.stderr
    events = script(data)
    pid = next(e["pid"] for e in events if e["type"] == "exec")
    shared = [e for e in events if e["type"] == "mmap" and e["pid"] == pid and
              int(e["args"][3], 16) == 0x21]  # MAP_SHARED | MAP_ANONYMOUS
    assert len(shared) == n, len(shared)
    for e in shared:
        size = int(e["args"][1], 16)
        assert e.get("vma"), f"no kernel VMA (busy: {bool(e['flags'] & BUSY)}): {e}"
        vma = (int(e["vma"]["start"], 16), int(e["vma"]["end"], 16))
        assert vma == (e["result"], e["result"] + size), e
    if walks_the_tree(p.stderr):
        assert int(m.group(1)) >= n, p.stderr
    return shared


def test_call_lookups_in_a_deep_tree_find_each_mapping():
    """3,000 mappings that cannot merge make a maple tree of several
    levels: each mmap's event holds exactly its own mapping as the kernel
    VMA, found by the walk wherever the walk can be checked."""
    record_shared_maps(DEEP_TREE, 3000)


IDLE_SIBLING = """
import mmap, sys, threading
n = int(sys.argv[1])
# A thread that only waits: the mm has two users, and no writer but main.
done = threading.Event()
threading.Thread(target=done.wait).start()
ms = [mmap.mmap(-1, 4096 * (1 + i % 3)) for i in range(n)]
print("mapped", len(ms), flush=True)
done.set()
"""


def test_call_lookups_beside_an_idle_thread_are_not_busy():
    """A mm shared with a sibling thread is where a lookup without
    mmap_lock may meet a writer; one that only waits writes nothing, so
    every mmap's event holds its own mapping, none is busy, and where
    the tier walks the tree, the walk answered each (the legacy object's
    walk checks the lock and the unlinks around itself then)."""
    shared = record_shared_maps(IDLE_SIBLING, 300)
    assert len({e["tid"] for e in shared}) == 1, "main maps them all"
    assert not [e for e in shared if e["flags"] & BUSY], "busy lookups"


def test_fork_exec_tree():
    p, data = record([os.path.join(WL, "forktree")])
    regions = {}
    for pid, s, e in workload_lines(p.stdout, "region"):
        regions.setdefault(int(pid), []).append((int(s, 16), int(e, 16)))
    parent, child, execd = list(regions)
    for pid in regions:
        rows = maps(data, pid)
        spans = {(r["start"], r["end"]) for r in rows}
        assert_tiles(rows, proc_maps(p.stdout, pid))
        for own in regions[pid]:
            assert own in spans, f"pid {pid} lacks its region {own}"
    # The forked child inherited the parent's region; the exec'd one did not.
    assert regions[parent][0] in {(r["start"], r["end"]) for r in maps(data, child)}
    assert regions[parent][0] not in {(r["start"], r["end"]) for r in maps(data, execd)}
    assert regions[child][0] not in {(r["start"], r["end"]) for r in maps(data, parent)}
    exe = os.path.realpath(os.path.join(WL, "forktree"))
    assert any(r["path"] == exe and r["origin"] == "exec" for r in maps(data, execd))


def test_threads_map_concurrently():
    p, data = record([os.path.join(WL, "threads")])
    unkeep()  # which regions merge differs run to run: no tier compares
    pid = int(workload_lines(p.stdout, "start")[0][0])
    rows = maps(data, pid)
    got = {(r["start"], r["end"], r["prot"]) for r in rows}
    wants = workload_lines(p.stdout, "want")
    assert len(wants) == 12
    for s, e, prot in wants:
        assert (int(s, 16), int(e, 16), prot) in got, f"missing {s}-{e} {prot}"
    assert_tiles(rows, proc_maps(p.stdout, pid))
    threads = {e["tid"] for e in script(data) if e["type"] == "mmap" and e["pid"] == pid}
    assert len(threads) >= 5, threads  # the main thread and the four workers


def test_busy_vma_lookups_are_read_again_at_exit():
    """A lookup that finds mmap_lock busy is a race: the fault injection
    makes every worker thread's lookup busy and keeps the recorder from
    reading /proc, so the kernel VMAs must come from exit_group's."""
    looks_up_after_the_call()
    os.environ["JT_TEST_VMA_BUSY"] = "1"
    try:
        p, data = record([os.path.join(WL, "threads")])
    finally:
        del os.environ["JT_TEST_VMA_BUSY"]
    unkeep()  # which regions merge differs run to run: no tier compares
    pid = int(workload_lines(p.stdout, "start")[0][0])
    events = [e for e in script(data) if e["pid"] == pid]
    busy = [e for e in events if e["type"] == "mmap" and e["flags"] & BUSY]
    assert len(busy) == 12 and all(e["tid"] != pid for e in busy), busy
    reread = [e for e in events if e["type"] == "vma" and e["flags"] & REREAD]
    assert reread and all(e["tid"] == pid for e in reread), reread
    assert_tiles(maps(data, pid), proc_maps(p.stdout, pid))


def test_maps_at_time_shows_the_past():
    p, data = record([os.path.join(WL, "mapops")])
    pid = int(workload_lines(p.stdout, "start")[0][0])
    events = script(data)
    mid = next(e for e in events if e["type"] == "mremap" and e["pid"] == pid)
    before = {(r["start"], r["end"]) for r in maps(data, pid, at=mid["time"] - 1)}
    after = {(r["start"], r["end"]) for r in maps(data, pid, at=mid["time"])}
    old = int(mid["args"][0], 16)
    assert any(s == old for s, _ in before)
    assert before != after


# Per tier, the programs of the mmap, mprotect and munmap hooks
# (user/record/probes.c). The fentry tier has exit programs only. Where
# the VMAs are a maple tree, vm_mmap_pgoff's and do_mprotect_pkey's
# exits look their VMAs up; on an rb-tree mmap_region's exit takes the
# VMA perf_event_mmap's entry saw, and mprotect_fixup gets one too.
# kretprobes cannot read arguments, so the kprobe tier keeps its entry
# programs. pkey_mprotect's tracepoint is jt_exit_call's, with mremap's,
# brk's and shmat's (test_the_calls_a_loop_rarely_makes_share_one_program).
HOOK_PROGRAMS = {
    "tracepoint": {"mmap": ["jt_exit_mmap"],
                   "mprotect": ["jt_exit_mprotect"],
                   "munmap": ["jt_exit_munmap"]},
    "fentry": {"mmap": ["jt_fx_vm_mmap_pgoff"],
               "mprotect": ["jt_fx_do_mprotect_pkey"],
               "munmap": ["jt_fx___vm_munmap"]},
    "kprobe": {"mmap": ["jt_kp_mmap_region", "jt_kr_mmap_region",
                        "jt_kp_perf_event_mmap"],
               "mprotect": ["jt_kp_do_mprotect_pkey", "jt_kr_do_mprotect_pkey",
                            "jt_kp_mprotect_fixup", "jt_kr_mprotect_fixup"],
               "munmap": ["jt_kp___vm_munmap", "jt_kr___vm_munmap"]},
}
HOOK_NAME = re.compile(r"jt_(exit_(mmap|mprotect|munmap)|"
                       r"(fe|fx|kp|kr)_(mmap_region|perf_event_mmap|do_mprotect_pkey|"
                       r"mprotect_fixup|__vm_munmap|vm_mmap_pgoff))")


def vmas_in_maple_tree():
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return b"\0maple_type\0" in f.read()


def test_mapops_hooks_load_only_their_tiers_programs():
    """The mapping hooks' programs the recorder loaded are exactly its
    tier's: a program fewer is an event lost, one more is a trampoline or
    tracepoint every task on the machine pays for. The recorder lists its
    programs in the recording's kallsyms, as the kernel names them."""
    from test_record import recorded_kallsyms
    p, data = record(["true"])
    progs = [f[2] for f in map(str.split, recorded_kallsyms(data).splitlines())
             if len(f) == 5 and f[3] == "[bpf]"]
    loaded = sorted(n.split("_", 3)[3] for n in progs
                    if HOOK_NAME.fullmatch(n.split("_", 3)[3]))
    m = re.search(r"^jittrace: probes: (.*)$", p.stderr, re.M)
    assert m, p.stderr
    said = dict(w.split("=", 1) for w in m.group(1).split())
    want = []
    for hook in ("mmap", "mprotect", "munmap"):
        names = HOOK_PROGRAMS[said[hook]][hook]
        if said[hook] == "fentry" and not vmas_in_maple_tree() and \
                said["programs"] != "legacy":
            # The legacy object's exits build their events alone, as a
            # maple tree's do; 5.17 to 6.0 keep the programs between.
            names = {"mmap": ["jt_fx_mmap_region", "jt_fe_perf_event_mmap"],
                     "mprotect": names + ["jt_fx_mprotect_fixup"]}.get(hook, names)
        if said[hook] == "kprobe" and said["programs"] == "legacy" and \
                "jt_kp_perf_event_mmap" not in loaded:
            # 5.10 refuses a kprobe on perf_event_mmap: mmap_region's
            # return reads the VMA from the tree it holds locked.
            names = [n for n in names if n != "jt_kp_perf_event_mmap"]
        want += names
    print(f"    {' '.join(f'{h}={said[h]}' for h in ('mmap', 'mprotect', 'munmap'))}: "
          f"{' '.join(loaded)}")
    assert loaded == sorted(want), (loaded, sorted(want))


def stalls_after_lookup(stderr):
    """Where JT_TEST_STALL_LEN holds a mapping call up after a lookup made
    once mmap_lock is free: the current programs' tracepoint tier and
    fentry tier (the legacy object has no bpf_loop to stall with)."""
    return bool(re.search(r"^jittrace: probes: mmap=(tracepoint|fentry) ", stderr, re.M)) \
        and not re.search(r" programs=legacy\b", stderr)


def test_a_merge_between_a_lookup_and_its_record():
    """JT_TEST_STALL_LEN holds a thread's 5-page mmap up in BPF after its
    VMA lookup and signals the process, whose main thread then maps the
    page after it, and the kernel merges the two. The lookup came first,
    so the thread's event holds the unmerged VMA, and it must still come
    first, so the model ends with the merged VMA the main thread's event
    carries: an event's time is taken before its lookup. The stall lasts
    until the process maps more, so a merge that began while the call
    was held comes before its record; the workload counts those rounds
    and goes on until three did."""
    races = 3
    os.environ["JT_TEST_STALL_LEN"] = str(5 * 4096)
    try:
        p, data = record([os.path.join(WL, "mergerace"), str(races)])
    finally:
        del os.environ["JT_TEST_STALL_LEN"]
    pid = int(workload_lines(p.stdout, "start")[0][0])
    rounds = [tuple(int(x, 16) for x in r[:2]) + (int(r[2]), int(r[3]))
              for r in workload_lines(p.stdout, "round")]
    if stalls_after_lookup(p.stderr):
        # Every round's lookup signalled; the rounds went on until three
        # merges began while a call was held up.
        assert all(sig for _, _, sig, _ in rounds), rounds
        assert sum(held for _, _, _, held in rounds) == races, rounds
    else:
        # The kprobe tier reads the VMA under mmap_lock, before the
        # mapping shows in /proc: no merge can come between.
        assert [(sig, held) for _, _, sig, held in rounds] == [(0, 0)] * races, rounds
    mmaps = [e for e in script(data) if e["type"] == "mmap" and e["pid"] == pid]
    for start, end, _, held in rounds:
        first = [e for e in mmaps if e["result"] == start and e["tid"] != pid]
        second = [e for e in mmaps if e["result"] == end - 4096 and e["tid"] == pid]
        assert len(first) == 1 and len(second) == 1, (first, second)
        a, b = first[0], second[0]
        assert (int(a["vma"]["start"], 16), int(a["vma"]["end"], 16)) == (start, end - 4096), a
        assert (int(b["vma"]["start"], 16), int(b["vma"]["end"], 16)) == (start, end), b
        assert a["time"] < b["time"], (held, a, b)
    rows = maps(data, pid)
    for start, end, _, _ in rounds:
        assert {r["kernel_vma"] for r in rows if start <= r["start"] < end} == {(start, end)}, rows
    assert_tiles(rows, proc_maps(p.stdout, pid))
