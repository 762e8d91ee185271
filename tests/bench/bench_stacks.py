#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Whole stacks, against perf on the same workloads (tests/e2e/test_stacks.py's):
jittrace record -g against perf record --call-graph dwarf (and perf inject
--jit where the runtime writes a jitdump), each at 999 Hz for SECS seconds
of the workload's CPU. For each: the share of hot samples whose stack is
complete and right, the bytes recorded per second of CPU, and the time
`jittrace script --folded` and `perf script` take to read them.
usage: bench_stacks.py BUILD_DIR [SECS]"""
import os
import re
import shutil
import subprocess
import sys
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
SECS = sys.argv[2] if len(sys.argv) > 2 else "2"
os.environ["JT_BUILD"] = BUILD
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import jt  # noqa: E402
import test_stacks as ts  # noqa: E402

def timed(args, **kw):
    t = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, errors="replace", **kw)
    if p.returncode:
        raise RuntimeError(f"{args[:4]} exited {p.returncode}: {p.stderr[-500:]}")
    return time.monotonic() - t, p.stdout


ALIASES = {"__libc_start_main": "__libc_start_main_impl"}


def perf_name(sym):
    """perf's name as jittrace gives it: no offset, no symbol version,
    no __GI_ alias prefix (perf reads libc's debug file as jittrace does)."""
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    sym = re.sub(r"@.*$", "", sym)
    sym = re.sub(r"^__GI___", "", sym)
    return ALIASES.get(sym, sym)


def perf_stacks(text):
    """perf script's samples: (user names innermost first, all names).
    Where perf shows inlined functions at an address (DWARF), the frame is
    the function that holds them, the last line for that address."""
    out = []
    for block in text.split("\n\n"):
        frames = []
        for ln in block.strip("\n").splitlines():
            m = re.match(r"\s*([0-9a-f]+) (.*) \((.*)\)$", ln)
            if not m:
                continue
            f = (m.group(1), perf_name(m.group(2)), m.group(3) == "[kernel.kallsyms]")
            if frames and frames[-1][0] == f[0]:
                frames[-1] = f
            else:
                frames.append(f)
        if frames:
            out.append(([n for _, n, k in frames if not k], [n for _, n, _ in frames]))
    return out


def judge(rows, check, complete):
    hot, right = ts.CHECKS[check]
    hot_rows = [r for r in rows if any(hot(n) for n in r[1])]
    good = sum(1 for r in hot_rows if complete(r) and right(r[0]))
    return good, len(hot_rows)


def run_jittrace(name, cmd, cwd, root):
    data = os.path.join(jt.TMP, f"b-{name}.data")
    who = ["--run-as-root"] if root else ["--user", "nobody"]
    rec, _ = timed([jt.JT, "record", "-o", data, "-g", "-F", "999", *who, "--", *cmd],
                   cwd=cwd)
    view, _ = timed([jt.JT, "script", "-i", data, "--folded"])
    rows = [(u, a, end) for u, a, end in ts.stacks(data)]
    return os.path.getsize(data), rec, view, rows


def run_perf(name, cmd, cwd, root, inject):
    # As root: perf reads a perf-map only when its owner is perf's user.
    data = os.path.join(jt.TMP, f"p-{name}.data")
    rec, _ = timed(["perf", "record", "-q", "-o", data, "-k", "1", "--call-graph", "dwarf",
                    "-F", "999", "--", *cmd], cwd=cwd)
    size = os.path.getsize(data)
    view = 0
    if inject:
        view, _ = timed(["perf", "inject", "--jit", "-i", data, "-o", data + ".jit"], cwd=cwd)
        data += ".jit"
    t, text = timed(["perf", "script", "-i", data, "-F", "ip,sym,dso"], cwd=cwd)
    return size, rec, view + t, perf_stacks(text)


def workloads():
    wl = os.path.join(BUILD, "workloads", "nofp")
    yield "c-nofp", "c", [wl, "chain", SECS], None, False, False
    yield "c-qsort", "qsort", [wl, "qsort", SECS], None, False, False
    for v, flag in (("3.12.1", "-Xperf"), ("3.13.0", "-Xperf_jit")):
        py = f"/root/.pyenv/versions/{v}/bin/python3"
        if os.path.exists(py):
            yield (f"python{v[:4]}{flag[2:].replace('_', '-')}", "python",
                   [py, flag, os.path.join(ts.SRC, "hot.py"), SECS], None, True, flag == "-Xperf_jit")
    if shutil.which("node"):
        wd = ts.workdir("bench-node")
        js = os.path.join(wd, "hot.js")
        shutil.copyfile(os.path.join(ts.SRC, "hot.js"), js)
        os.chmod(js, 0o644)
        for flags, inject in ((["--perf-basic-prof"], False),
                              (["--perf-prof", "--perf-prof-unwinding-info"], True)):
            yield (f"node{flags[0]}", "node",
                   ["node", *flags, "--interpreted-frames-native-stack", js, SECS],
                   wd, False, inject)
    if os.path.exists(os.path.join(ts.JDK17, "javac")):
        wd = ts.java_classes()
        yield ("java17-fp", "java", [os.path.join(ts.JDK17, "java"), *ts.JAVA_FLAGS, "-cp", wd, "Hot", SECS],
               None, False, False)


def main():
    print(f"{'workload':24} {'jittrace ok':>12} {'perf ok':>12} {'MB jt/perf':>13} "
          f"{'view s jt/perf':>16}")
    for name, check, cmd, cwd, root, inject in workloads():
        jb, _, jv, jrows = run_jittrace(name, cmd, cwd, root)
        pb, _, pv, prows = run_perf(name, cmd, cwd, root, inject)
        jg, jn = judge(jrows, check, lambda r: r[2] == "complete")
        pg, pn = judge(prows, check, lambda r: True)
        print(f"{name:24} {100 * jg / max(jn, 1):6.2f}% {jn:4} {100 * pg / max(pn, 1):6.2f}% {pn:4} "
              f"{jb / 1e6:6.2f}/{pb / 1e6:6.2f} {jv:7.2f}/{pv:7.2f}", flush=True)


if __name__ == "__main__":
    main()
