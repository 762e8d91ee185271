# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What the verifier of every kernel we support checks, checked on the
objects as built: no program's chain of BPF-to-BPF calls (and bpf_loop
callbacks) may take more than 512 bytes of stack, each frame rounded up
to 32 as the verifier rounds it. The legacy object only loads on 5.10,
which only the VM suite boots; this is the same check, made here in
milliseconds, from llvm-objdump's disassembly."""
import os
import re
import subprocess
import tempfile

from jt import BUILD

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
