# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What the verifier of every kernel we support checks, checked on the
objects as built: no program's chain of BPF-to-BPF calls (and bpf_loop
callbacks) may take more than 512 bytes of stack, each frame rounded up
to 32 as the verifier rounds it; and the legacy object's loops must
pass 5.10's check of the control flow. The legacy object only loads on
5.10, which only the VM suite boots; these are the same checks, made
here in milliseconds, from llvm-objdump's disassembly. And how much the
verifier checks when record loads them, which start-up waits for."""
import ctypes
import os
import re
import struct
import subprocess
import tempfile

from jt import BUILD, JT, TMP, USER, Skip, hx, kill_left, maps, script

MAX_STACK = 512
OBJECTS = ["jittrace.bpf.o", "jittrace_legacy.bpf.o"]
FUNC_SYM = re.compile(r"^([0-9a-f]+) [lg]\s+F (\S+)\s+([0-9a-f]+) (\S+)$")
LABEL = re.compile(r"^[0-9a-f]+ <(\S+)>:$")
INSN = re.compile(r"^\s*(\d+):\t(.*)$")
RELOC = re.compile(r"^\s+[0-9a-f]+:\s+(R_BPF_64_\d+)\s+(\S+)$")
STACK_REF = re.compile(r"\(r10 - (\d+)\)")
FROM_R10 = re.compile(r"^(r\d+) = r10$")
ADD_NEG = re.compile(r"^(r\d+) \+= -(\d+)$")


def objdump(*args):
    return subprocess.run(["llvm-objdump", *args], capture_output=True,
                          text=True, check=True).stdout


def functions(obj):
    """{(section, byte offset): name} of the object's functions."""
    funcs = {}
    for line in objdump("-t", obj).splitlines():
        m = FUNC_SYM.match(line)
        if m:
            funcs[(m.group(2), int(m.group(1), 16))] = m.group(4)
    return funcs


def frames(obj):
    """Each function's stack depth and the functions it calls."""
    funcs = functions(obj)
    names = set(funcs.values())
    depth, calls = {}, {}
    cur = last_call = None
    last_insn = ""
    from_r10 = set()
    for line in objdump("-dr", "--no-show-raw-insn", obj).splitlines():
        m = LABEL.match(line)
        if m and m.group(1) in names:
            cur = m.group(1)
            depth.setdefault(cur, 0)
            calls.setdefault(cur, set())
            from_r10 = set()
            continue
        m = INSN.match(line)
        if m and cur:
            insn = last_insn = m.group(2).strip()
            last_call = insn if insn.startswith("call ") else None
            for off in STACK_REF.findall(insn):
                depth[cur] = max(depth[cur], int(off))
            r = FROM_R10.match(insn)
            if r:
                from_r10.add(r.group(1))
                continue
            a = ADD_NEG.match(insn)
            if a and a.group(1) in from_r10:
                depth[cur] = max(depth[cur], int(a.group(2)))
            from_r10.discard(insn.split(" ")[0])
            continue
        m = RELOC.match(line)
        if not (m and cur):
            continue
        kind, sym = m.groups()
        if sym in names:
            calls[cur].add(sym)  # a call, or a callback's address
        elif sym == ".text" and last_insn.endswith(" ll"):
            # a static callback's address, for bpf_loop or bpf_find_vma
            off = int(last_insn.split()[-2])
            if (".text", off) in funcs:
                calls[cur].add(funcs[(".text", off)])
        elif sym == ".text" and last_call:
            # a static function: the call's immediate is its offset - 1
            imm = int(last_call.split()[1])
            target = funcs.get((".text", (imm + 1) * 8))
            assert target, f"{obj}: {cur} calls .text+{(imm + 1) * 8}"
            calls[cur].add(target)
    return depth, calls


def deepest(fn, depth, calls, seen=()):
    """The largest stack the verifier adds up below fn, and the chain."""
    own = -(-max(depth[fn], 1) // 32) * 32
    best, chain = 0, []
    for callee in calls[fn]:
        if callee in seen:
            continue
        d, c = deepest(callee, depth, calls, seen + (fn,))
        if d > best:
            best, chain = d, c
    return own + best, [f"{fn} ({own})"] + chain


def test_no_program_needs_more_than_512_bytes_of_stack():
    checked = 0
    for name in OBJECTS:
        obj = os.path.join(BUILD, name)
        depth, calls = frames(obj)
        programs = [f for f in depth if f not in
                    {c for cs in calls.values() for c in cs}]
        assert programs, f"{obj}: no programs found"
        for prog in programs:
            total, chain = deepest(prog, depth, calls)
            assert total <= MAX_STACK, \
                f"{name}: {prog} needs {total} bytes: {' -> '.join(chain)}"
            checked += 1
    print(f"{checked} programs within {MAX_STACK} bytes")


SUBPROG_C = r"""
typedef unsigned long long u64;
static __attribute__((noinline)) u64 deep(volatile u64 *p)
{
	volatile u64 buf[40];
	buf[p[0] & 31] = p[1];
	return buf[p[2] & 31];
}
static long cb(u64 i, void *ctx)
{
	volatile u64 buf[30];
	buf[i & 15] = i;
	return buf[(i + 1) & 15];
}
static long (*bpf_loop)(unsigned int, void *, void *, u64) = (void *)181;
__attribute__((section("raw_tp/x"), used)) int prog(volatile u64 *ctx)
{
	volatile u64 buf[20];
	buf[ctx[0] & 15] = ctx[1];
	bpf_loop(4, cb, 0, 0);
	return deep(ctx) + buf[ctx[2] & 15];
}
char _license[] __attribute__((section("license"), used)) = "GPL";
"""


def test_the_stack_check_counts_subprograms_and_callbacks():
    """The checker itself, on an object made here: a program (160 bytes)
    calling a subprogram (320) through .text and handing bpf_loop a
    callback (240): its deepest chain is 160 + 320 rounded up to 32s."""
    d = tempfile.mkdtemp(prefix="jt-stack-")
    src, obj = os.path.join(d, "s.bpf.c"), os.path.join(d, "s.bpf.o")
    with open(src, "w") as f:
        f.write(SUBPROG_C)
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-c", src, "-o", obj],
                   check=True)
    depth, calls = frames(obj)
    assert calls["prog"] == {"deep", "cb"}, calls
    assert depth["deep"] >= 320 and depth["cb"] >= 240, depth
    total, chain = deepest("prog", depth, calls)
    assert total == 160 + 320, chain



GOTO = re.compile(r"goto ([+-]\d+)")
DISCOVERED, EXPLORED, FALLTHROUGH, BRANCH = 0x10, 0x20, 1, 2


def bodies(obj):
    """Each function's instructions: [(index, text)], as objdump gives them."""
    names = set(functions(obj).values())
    out, cur = {}, None
    for line in objdump("-d", "--no-show-raw-insn", obj).splitlines():
        m = LABEL.match(line)
        if m and m.group(1) in names:
            cur = m.group(1)
            out[cur] = []
            continue
        m = INSN.match(line)
        if m and cur:
            out[cur].append((int(m.group(1)), m.group(2).strip()))
    return out


def cfg_5_10(insns):
    """5.10's check_cfg (kernel/bpf/verifier.c), its depth-first walk
    step for step: a back-edge is allowed from a jump only; one that is a
    call's or any other instruction's fall-through fails the load
    ("back-edge from insn T to W"). Later kernels allow them all. None,
    or that message."""
    text = dict(insns)
    idx = [i for i, _ in insns]
    nxt = dict(zip(idx, idx[1:] + [None]))  # ld_imm64 takes two slots
    state, stack = {idx[0]: DISCOVERED}, [idx[0]]

    def push(t, w, e, loop_ok):
        if state.get(t, 0) >= DISCOVERED | e:
            return 0
        if w not in text:
            raise ValueError(f"jump out of range from insn {t} to {w}")
        if not state.get(w):
            state[t], state[w] = DISCOVERED | e, DISCOVERED
            stack.append(w)
            return 1
        if state[w] & 0xF0 == DISCOVERED and not loop_ok:
            raise ValueError(f"back-edge from insn {t} to {w} ({text[t]})")
        if state[w] == EXPLORED:
            state[t] = DISCOVERED | e
        return 0

    try:
        while stack:
            t = stack[-1]
            s = text[t]
            if s.startswith("goto "):
                pushed = push(t, t + int(GOTO.search(s).group(1)) + 1,
                              FALLTHROUGH, True)
            elif s.startswith("if ") and "goto " in s:
                pushed = push(t, nxt[t], FALLTHROUGH, True) or \
                    push(t, t + int(GOTO.search(s).group(1)) + 1, BRANCH, True)
            elif s != "exit":
                pushed = push(t, nxt[t], FALLTHROUGH, False)
            else:
                pushed = 0
            if not pushed:
                state[t] = EXPLORED
                stack.pop()
    except ValueError as e:
        return str(e)
    return None


def test_legacy_loops_pass_the_5_10_verifiers_cfg_check():
    """The legacy object's bounded loops (the rb-tree walk, the path walk)
    as 5.10 checks them: clang may enter a loop at its head and send the
    back-edge to a block that falls through into it, which later kernels
    take and 5.10 refused (\"back-edge from insn 1944 to 1945\")."""
    funcs = bodies(os.path.join(BUILD, "jittrace_legacy.bpf.o"))
    assert len(funcs) > 20, list(funcs)
    bad = {f: err for f, ins in funcs.items() if (err := cfg_5_10(ins))}
    assert not bad, bad
    print(f"{len(funcs)} functions pass 5.10's control-flow check")


DATASEC = re.compile(r"^\[\d+\] DATASEC '(\S+)' size=\d+ vlen=\d+$")
DATAVAR = re.compile(r"^\s+type_id=\d+ offset=(\d+) size=(\d+) \(VAR '(\S+)'\)$")


def global_vars(obj):
    """{(section, variable): (offset, size)} from the object's BTF."""
    out = subprocess.run(["bpftool", "btf", "dump", "file", obj], capture_output=True,
                         text=True, check=True).stdout
    found, sec = {}, None
    for line in out.splitlines():
        m = DATASEC.match(line)
        if m or line.startswith("["):
            sec = m.group(1) if m else None
            continue
        m = DATAVAR.match(line)
        if m and sec and sec.startswith((".rodata", ".data", ".bss")):
            found[(sec, m.group(3))] = (int(m.group(1)), int(m.group(2)))
    return found


def test_both_objects_lay_out_the_loaders_variables_alike():
    """The loader writes the legacy object's rodata through the current
    object's skeleton (probes.c, open_object), so every variable must sit
    at the same offset in both. jt_kshape in .rodata did not: the
    constants clang put before it differ, and 5.10 read each shape as 0
    and refused the fentry tier's programs. Its own section holds it."""
    cur, old = (global_vars(os.path.join(BUILD, o)) for o in OBJECTS)
    assert (".rodata.kshape", "jt_kshape") in cur, sorted(cur)
    assert cur == old, sorted(set(cur.items()) ^ set(old.items()))


def test_the_cfg_check_finds_a_back_edge_by_fall_through():
    """The checker itself: a loop closed by a jump to its head passes;
    the same loop entered at its head (2) and closed by a jump to a block
    (1) that falls through into the head, by a store or a call, is
    refused."""
    head = [(0, "r1 = 0"), (1, "r1 += 1"), (2, "if r1 > 9 goto +1 <x>"),
            (3, "goto -3 <x>"), (4, "exit")]
    assert cfg_5_10(head) is None, cfg_5_10(head)
    fall = [(0, "goto +1 <x>"), (1, "*(u64 *)(r10 - 8) = r1"),
            (2, "r1 += 1"), (3, "if r1 > 9 goto +1 <x>"),
            (4, "goto -4 <x>"), (5, "exit")]
    assert cfg_5_10(fall) == \
        "back-edge from insn 1 to 2 (*(u64 *)(r10 - 8) = r1)", cfg_5_10(fall)
    call = [(0, "goto +1 <x>"), (1, "call 113"), (2, "r1 += 1"),
            (3, "if r1 > 9 goto +1 <x>"), (4, "goto -4 <x>"), (5, "exit")]
    assert cfg_5_10(call) == "back-edge from insn 1 to 2 (call 113)", cfg_5_10(call)

# struct bpf_prog_info (uapi/linux/bpf.h), which only grows at its end.
PROG_INFO_LEN, PROG_INFO_NAME, PROG_INFO_VERIFIED = 232, 64, 216
BPF_PROG_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 13, 15
# The verifier's work for every program record loads: the instructions
# it checked (verified_insns), summed. A walk inlined at each of a
# mapping call's lookups made it 307,000 and doubled record's start-up;
# 90,000 with the walk a global function, each mapping call a program
# that checked it again; 50,000 with the rare calls one program
# (jt_exit_call); 34,000 before the walk.
MAX_VERIFIED = 70000


def bpf(cmd, attr):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(321, cmd, buf, len(buf.raw))  # __NR_bpf, x86-64
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def prog_info(prog_id):
    """(name, verified_insns) of a loaded program."""
    fd = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("<III", prog_id, 0, 0))
    info = ctypes.create_string_buffer(PROG_INFO_LEN)
    try:
        bpf(BPF_OBJ_GET_INFO_BY_FD,
            struct.pack("<IIQ", fd, PROG_INFO_LEN, ctypes.addressof(info)))
    finally:
        os.close(fd)
    name = info.raw[PROG_INFO_NAME:PROG_INFO_NAME + 16].split(b"\0")[0].decode()
    return name, struct.unpack_from("<I", info.raw, PROG_INFO_VERIFIED)[0]


def held_programs(pid):
    """The ids of the programs pid holds, by its descriptors or links."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids |= {int(ln.split()[1]) for ln in f if ln.startswith("prog_id:")}
        except FileNotFoundError:
            pass
    return ids


def test_the_verifier_checks_record_in_bounded_work():
    if os.uname().machine != "x86_64":
        raise Skip("the bpf syscall's number here is x86-64's")
    rec = subprocess.Popen([JT, "record", "--user", USER, "-o", os.path.join(TMP, "verified.data"),
                            "--", "python3", "-c",
                            "import sys; print('ready', flush=True); sys.stdin.read()"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert rec.stdout.readline().split() == ["ready"], rec.stderr.read()
        progs = dict(prog_info(i) for i in held_programs(rec.pid))
        rec.communicate("", timeout=60)
        assert rec.returncode == 0, rec.stderr
    finally:
        kill_left(rec)
    assert {"jt_exit_mmap", "jt_exit_mprotec", "jt_exit_munmap",
            "jt_exit_call"} <= progs.keys(), progs
    if not any(progs.values()):
        raise Skip("the kernel does not count verified instructions (5.16+)")
    total = sum(progs.values())
    top = sorted(progs.items(), key=lambda p: -p[1])[:4]
    print(f"{len(progs)} programs, {total} instructions verified; most: {top}")
    assert total <= MAX_VERIFIED, f"{total} instructions verified; most: {top}"


BPF_TASK_FD_QUERY, BPF_FD_TYPE_TRACEPOINT = 20, 1


def attached_tracepoints(pid):
    """{tracepoint: program id} of the tracepoints pid's descriptors attach."""
    tps = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        buf = ctypes.create_string_buffer(64)
        attr = ctypes.create_string_buffer(
            struct.pack("<IIIIQIIQQ", pid, int(fd), 0, len(buf.raw),
                        ctypes.addressof(buf), 0, 0, 0, 0), 128)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(321, BPF_TASK_FD_QUERY, attr, 128) < 0:
            continue  # not a BPF attachment
        prog_id, fd_type = struct.unpack_from("<II", attr.raw, 24)
        if fd_type == BPF_FD_TYPE_TRACEPOINT:
            tps[buf.value.decode()] = prog_id
    return tps


def test_the_calls_a_loop_rarely_makes_share_one_program():
    """pkey_mprotect's, mremap's, brk's and shmat's exits are one program,
    jt_exit_call, attached at each (maps.bpf.c): four programs of their
    own made the verifier check the maple walk four times more, 55,000
    instructions of start-up. Each call is still recorded as itself, its
    arguments and result exact, and the model follows it."""
    if os.uname().machine != "x86_64":
        raise Skip("the bpf syscall's number here is x86-64's")
    rec = subprocess.Popen([JT, "record", "--tier", "tracepoint", "--user", USER, "-o",
                            os.path.join(TMP, "rarecalls.data"), "--",
                            os.path.join(BUILD, "workloads", "rarecalls"), "gated"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not lines or lines[-1] != "ready":
            line = rec.stdout.readline()
            assert line, rec.stderr.read()
            lines.append(line.strip())
        tps = attached_tracepoints(rec.pid)
        out, err = rec.communicate("\n", timeout=60)
        assert rec.returncode == 0, err
    finally:
        kill_left(rec)
    lines += out.splitlines()
    shared = {tp for tp, prog in tps.items() if prog == tps["sys_exit_brk"]}
    want = {"sys_exit_mremap", "sys_exit_brk", "sys_exit_shmat"}
    if os.path.exists("/sys/kernel/tracing/events/syscalls/sys_exit_pkey_mprotect"):
        want.add("sys_exit_pkey_mprotect")
    assert shared == want, tps
    assert prog_info(tps["sys_exit_brk"])[0] == "jt_exit_call", tps
    assert len({tps["sys_exit_mmap"], tps["sys_exit_mprotect"], tps["sys_exit_brk"]}) == 3
    said = {f[0]: f[1:] for f in map(str.split, lines) if f[0] != "want"}
    data = os.path.join(TMP, "rarecalls.data")
    pid = int(said["start"][0])
    calls = [e for e in script(data) if e["pid"] == pid]
    if "pkey" in said:
        a = int(said["pkey"][0], 16)
        pk = [e for e in calls if e["type"] == "mprotect" and hx(e["args"][0]) == a]
        assert len(pk) == 1 and pk[0]["result"] == 0, pk
        assert hx(pk[0]["args"][1]) == 4096 and hx(pk[0]["args"][2]) == 1, pk
        assert hx(pk[0]["args"][3]) & 0xffffffff == 0xffffffff, pk  # the key: -1
    old, new = (int(x, 16) for x in said["mremap"])
    assert [e["result"] for e in calls if e["type"] == "mremap"] == [new], calls
    assert [e["result"] for e in calls if e["type"] == "shmat"] == \
        [int(said["shm"][0], 16)], calls
    brk0, brk1 = (int(x, 16) for x in said["brk"])
    assert brk1 in [e["result"] for e in calls if e["type"] == "brk"], calls
    rows = {(r["start"], r["end"], r["prot"]) for r in maps(data, pid)}
    for s, e, prot in (f[1:] for f in map(str.split, lines) if f[0] == "want"):
        assert (int(s, 16), int(e, 16), prot) in rows, (s, e, prot, sorted(rows))
