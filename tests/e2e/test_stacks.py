# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""-g (--call-graph dwarf) on real code with a known call chain: C built
without frame pointers, the same through Debian libc's qsort, CPython 3.12
-X perf and 3.13 -X perf_jit, Node --perf-basic-prof and --perf-prof, and
Java 17 with -XX:+PreserveFramePointer. Every workload runs until it has
used a fixed amount of CPU, so the sample count does not depend on the
machine; each test asserts the share of its hot samples whose stack is
complete (down to _start or the thread's start) and named frame by frame
as the chain really is. tests/bench/bench_stacks.py runs the same
workloads and checks against perf."""
import collections
import json
import os
import re
import shutil

from jt import JT, ROOT, TMP, WL, Skip, run, script

SRC = os.path.join(ROOT, "tests/workloads/stacks")
JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64/bin"
LIBC_START = ["main", "__libc_start_call_main", "__libc_start_main_impl",
              "_start"]
MIN_HOT = 150  # of about 500 at 499 Hz for a second of CPU
WANT = 0.99


def in_order(names, pats):
    """pats match names in this order (each a regex), others between."""
    i = 0
    for n in names:
        if i < len(pats) and re.search(pats[i], n):
            i += 1
    return i == len(pats)


def c_right(u):
    chain = ["a", "b", "c"] + LIBC_START
    # The leaf is a most of the time, b, c or main when the timer fires there.
    return any(u == chain[k:] for k in range(4))


# gcc clones sort_many for its constant n: sort_many.constprop.0.
QSORT_TAIL = ["qsort_r", "sort_many"] + LIBC_START


FREE_INNER = ("_int_free", "free_perturb", "unlink_chunk", "malloc_consolidate",
              "munmap_chunk", "systrim", "__memset", "__munmap")


def qsort_right(u):
    # sort_many's own work between sorts: the chain below qsort_r.
    if [re.sub(r"\.constprop\.\d+$", "", n) for n in u] == QSORT_TAIL[1:]:
        return True
    # cmp, called by libc's merge sort as deep as it recursed, or memcpy,
    # which msort calls through libc's own PLT (an IRELATIVE slot).
    inner = u[:-len(QSORT_TAIL)]
    outer = [re.sub(r"\.constprop\.\d+$", "", n) for n in u[-len(QSORT_TAIL):]]
    if outer != QSORT_TAIL:
        return False
    # qsort_r frees the buffer it sorted through as it returns: free and
    # malloc's own work under it (an arm64 guest sampled 5 of 457 there).
    if inner and inner[-1] == "__libc_free":
        return all(n.startswith(FREE_INNER) for n in inner[:-1])
    # arm64's libc calls its memcpy directly, by the internal alias.
    return all(
        n in ("cmp", "memcpy@plt", "__GI_memcpy") or
        n.startswith(("msort_with_tmp", "__memcpy", "__memmove"))
        for n in inner)


PY_CHAIN = [r"^py::foo:", r"^py::bar:", r"^py::baz:", r"^py::<module>:",
            r"^Py_BytesMain$", r"^_start$"]
JS_CHAIN = [r"^JS:\S?f1 ", r"^JS:\S?f2 ", r"^JS:\S?f3 ", r"^_start$"]
JAVA_CHAIN = [r"Hot\.f1\(long\)", r"^JavaMain$", r"^start_thread$"]


def java_right(u):
    # f1's callers: f3 (f2 inlined) when compiled, else the interpreter.
    i = next(k for k, n in enumerate(u) if "Hot.f1(long)" in n)
    return (in_order(u, JAVA_CHAIN) and u[-1].endswith("clone3") and i + 1 < len(u)
            and u[i + 1] in ("Interpreter", "long Hot.f2(long)", "long Hot.f3(long)"))


# workload -> (is a frame of the hot loop, is this user stack right)
CHECKS = {
    "c": (lambda n: n == "c", c_right),
    "qsort": (lambda n: n.startswith("sort_many"), qsort_right),
    "python": (lambda n: n.startswith("py::foo:"),
               lambda u: u[-1] == "_start" and in_order(u, PY_CHAIN)),
    "node": (lambda n: re.match(r"^JS:\S?f1 ", n) is not None,
             lambda u: u[-1] == "_start" and in_order(u, JS_CHAIN)),
    "java": (lambda n: "Hot.f1(long)" in n, java_right),
}


def need_file(path, what):
    if not os.path.exists(path):
        raise Skip(f"{what} is not installed here ({path})")


def record_g(cmd, opts=("--user", "nobody"), cwd=None):
    data = os.path.join(TMP, f"stacks-{os.path.basename(cmd[0])}-{len(os.listdir(TMP))}.data")
    run([JT, "record", "-o", data, "-g", "-F", "499", *opts, "--", *cmd],
        timeout=300, cwd=cwd)
    return data


def stacks(data):
    """(user frame names innermost first, all names, how it ended)."""
    out = []
    for e in script(data):
        if e["type"] != "sample" or "frames" not in e:
            continue
        user = [f["name"] for f in e["frames"] if f["source"] != "kallsyms"]
        out.append((user, [f["name"] for f in e["frames"]], e.get("unwind")))
    return out


def hot_count(data, check):
    hot = CHECKS[check][0]
    return sum(1 for s in stacks(data) if any(hot(n) for n in s[1]))


def record_enough(cmd, check, **kw):
    """record_g of cmd, whose last argument is how long it runs, longer
    each time until it gives MIN_HOT stacks of its hot loop: a slow guest
    (arm64 under TCG) gave fewer samples a CPU second than the rate says."""
    for secs in (1, 2, 4):
        data = record_g([*cmd, str(secs)], **kw)
        if hot_count(data, check) >= MIN_HOT:
            break
    return data


def share(data, check):
    """Of the samples whose stack has a frame of the hot loop, the share
    that unwound completely and whose user frames are right."""
    hot, right = CHECKS[check]
    hot_stacks = [s for s in stacks(data) if any(hot(n) for n in s[1])]
    assert len(hot_stacks) >= MIN_HOT, len(hot_stacks)
    bad = [s for s in hot_stacks if s[2] != "complete" or not right(s[0])]
    good = 1 - len(bad) / len(hot_stacks)
    print(f"    {check}: {len(hot_stacks) - len(bad)}/{len(hot_stacks)} "
          f"hot stacks complete and right")
    assert good >= WANT, (good, len(hot_stacks), bad[:3],
                          collections.Counter(s[0][0] for s in bad if s[0]))
    # report -g joins each leaf's callers into one line: C++ and V8 names
    # made that line longer than its buffer, and report wrote past it.
    out = run([JT, "report", "-g", "-i", data]).stdout
    assert " <- " in out, out[:2000]


def workdir(name):
    wd = os.path.join(TMP, name)
    os.makedirs(wd, exist_ok=True)
    os.chmod(wd, 0o777)
    return wd


def test_c_without_frame_pointers():
    share(record_enough([os.path.join(WL, "nofp"), "chain"], "c"), "c")


def test_c_through_libc_qsort():
    data = record_enough([os.path.join(WL, "nofp"), "qsort"], "qsort")
    share(data, "qsort")
    # libc's DWARF (libc6-dbg) says qsort_r inlined msort_with_tmp at the
    # call: a frame of its own at the same address, as perf shows it. A
    # stack still sorting has msort below it; one in the free() qsort_r
    # calls at its end has not, and no inlined frame either.
    seen = 0
    for e in script(data):
        fr = e.get("frames", [])
        i = next((k for k, f in enumerate(fr) if f["name"] == "qsort_r"), None)
        if i and any(f["name"].startswith("msort_with_tmp.part") for f in fr[:i]):
            assert fr[i - 1]["name"] == "msort_with_tmp" and fr[i - 1].get("inlined"), fr[i - 1]
            assert fr[i - 1]["ip"] == fr[i]["ip"] and not fr[i].get("inlined")
            seen += 1
    assert seen >= MIN_HOT, seen


def python_stacks(version, flag):
    py = f"/root/.pyenv/versions/{version}/bin/python3"
    need_file(py, f"CPython {version} (pyenv)")
    # pyenv lives under /root: only root can run it.
    share(record_enough([py, flag, os.path.join(SRC, "hot.py")], "python",
                        opts=("--run-as-root",)), "python")


def test_cpython312_perf_trampolines():
    # No FDE covers the trampolines: the template's own bytes give the rule.
    python_stacks("3.12.1", "-Xperf")


def test_cpython313_perf_jit_unwinding_info():
    # The jitdump's UNWINDING_INFO records give the rule.
    python_stacks("3.13.0", "-Xperf_jit")


def node_stacks(flags):
    if not shutil.which("node"):
        raise Skip("node is not installed")
    wd = workdir("stacks-node")
    js = os.path.join(wd, "hot.js")
    shutil.copyfile(os.path.join(SRC, "hot.js"), js)
    os.chmod(js, 0o644)
    # --perf-prof writes its jitdump into the working directory.
    share(record_enough(["node", *flags, js], "node", cwd=wd), "node")


def test_node_perf_basic_prof():
    # Frame-pointer steps through JIT code that has no CFI.
    node_stacks(["--perf-basic-prof", "--interpreted-frames-native-stack"])


def test_node_perf_prof_jitdump():
    # V8's own CFI for its code, in the jitdump's UNWINDING_INFO records.
    node_stacks(["--perf-prof", "--perf-prof-unwinding-info",
                 "--interpreted-frames-native-stack"])


def java_classes():
    need_file(os.path.join(JDK17, "javac"), "OpenJDK 17")
    wd = workdir("stacks-java")
    run([os.path.join(JDK17, "javac"), "-d", wd, os.path.join(SRC, "Hot.java")])
    for f in os.listdir(wd):
        os.chmod(os.path.join(wd, f), 0o644)
    os.chmod(wd, 0o755)
    return wd


JAVA_FLAGS = ["-XX:+PreserveFramePointer", "-XX:+UnlockDiagnosticVMOptions",
              "-XX:+DumpPerfMapAtExit"]


def test_java_preserve_frame_pointer():
    wd = java_classes()
    # The perf-map comes at exit: every JIT frame is named by a late record.
    share(record_enough([os.path.join(JDK17, "java"), *JAVA_FLAGS, "-cp", wd, "Hot"],
                        "java"), "java")


def test_exports_and_report_keep_whole_stacks():
    """What the views unwound, the exports carry: stock perf reads the
    chains from `export --format perf -g`, go tool pprof from `--format
    pprof -g`, and `report -g` counts each function's Children."""
    from agentlib import pprof_raw
    data = record_enough([os.path.join(WL, "nofp"), "chain"], "c")
    chain = ["a", "b", "c"] + LIBC_START
    hot = sum(1 for s in stacks(data) if "c" in s[0])
    assert hot >= MIN_HOT, hot

    out = data + ".perf"
    run([JT, "export", "-i", data, "--format", "perf", "-g", "-o", out])
    text = run(["perf", "script", "-i", out, "-F", "ip,sym"], errors="replace").stdout
    perf_chains = [[re.sub(r"\+0x[0-9a-f]+$", "", ln.split(None, 1)[1]) for ln in b.splitlines()
                    if len(ln.split(None, 1)) == 2]
                   for b in text.split("\n\n")]
    perf_hot = [c for c in perf_chains if "c" in c]
    # perf names libc's functions from libc itself: the one alias differs.
    right = [c for c in perf_hot
             if [n.replace("__libc_start_main@@GLIBC_2.34", "__libc_start_main_impl")
                 for n in c] in (chain[k:] for k in range(4))]
    assert len(perf_hot) == hot and len(right) >= WANT * hot, (hot, perf_hot[:3])

    pb = data + ".pb.gz"
    run([JT, "export", "-i", data, "--format", "pprof", "-g", "-o", pb])
    _, samples = pprof_raw(pb)
    pp_hot = [(n, fr) for n, _, fr, _ in samples if "c" in fr]
    assert sum(n for n, _ in pp_hot) == hot
    assert sum(n for n, fr in pp_hot if fr in (chain[k:] for k in range(4))) >= WANT * hot

    # The footer counts each sample's unwinding once, by how it ended.
    ends = collections.Counter(e["unwind"] for e in script(data) if "unwind" in e)
    line = next(ln for ln in run([JT, "report", "-i", data]).stdout.splitlines()
                if ln.startswith("# stacks: "))
    assert line.startswith(f"# stacks: {sum(ends.values())} unwound, "
                           f"{ends['complete']} complete"), (line, ends)

    rows = {r["sym"]: r for r in json.loads(
        run([JT, "report", "-i", data, "-g", "--sort", "sym", "--json"]).stdout)}
    assert rows["c"]["children"] == hot and rows["main"]["children"] >= hot
    assert rows["a"]["callers"][0]["path"].startswith(
        "b <- c <- main <- __libc_start_call_main <- __libc_start_main_impl <- _start")
    assert rows["a"]["callers"][0]["samples"] >= WANT * rows["a"]["samples"]
    # perf's caller order, by each of its spellings: the same paths, each
    # from its outermost caller in; callee order is the default.
    for order in (["-g", "caller"], ["-G"], ["--call-graph", "caller"]):
        inv = {r["sym"]: r for r in json.loads(
            run([JT, "report", "-i", data, *order, "--sort", "sym", "--json"]).stdout)}
        assert [(p["path"].split(" -> ")[::-1], p["samples"]) for p in inv["a"]["callers"]] == \
            [(p["path"].split(" <- "), p["samples"]) for p in rows["a"]["callers"]], order
    assert run([JT, "report", "-i", data, "-g", "callee", "--sort", "sym", "--json"]).stdout == \
        run([JT, "report", "-i", data, "-g", "--sort", "sym", "--json"]).stdout
    text = run([JT, "report", "-i", data, "-g", "caller", "--sort", "sym"]).stdout
    assert "_start -> __libc_start_main_impl -> __libc_start_call_main -> main -> c -> b\n" in text
    bad = run([JT, "report", "-i", data, "--call-graph", "fractal"], check=False)
    assert bad.returncode == 2 and "caller or callee" in bad.stderr, bad.stderr


def test_java_jvmti_names_inlined_frames():
    """With jittrace's JVMTI agent the stack is whole in Java's own terms:
    HotSpot inlines f2 into f3 when it compiles f3, and the agent's
    inlining record names f2 where f3's code calls f1."""
    wd = java_classes()
    data = os.path.join(TMP, "stacks-jvmti.data")
    # f3 must be compiled, not interpreted, for its code to call f1: with
    # f1 looping 2M times, f3 ran a few hundred times in the second and
    # stayed interpreted on a loaded machine. f1 is kept out of line, so
    # the return address is in f3's code, inside the inlined f2.
    run([JT, "record", "-o", data, "-g", "-F", "499", "--jvmti", "--user", "nobody", "--",
         os.path.join(JDK17, "java"), "-XX:+PreserveFramePointer",
         "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Hot::f1",
         "-cp", wd, "Hot", "1", "20000"], timeout=300)
    through_f3 = right = 0
    for e in script(data):
        fr = [f for f in e.get("frames", []) if f["source"] != "kallsyms"]
        names = [f["name"] for f in fr]
        if "Hot.f3(long)" not in names or names[0] != "Hot.f1(long)":
            continue
        through_f3 += 1
        i = names.index("Hot.f3(long)")
        f2 = fr[i - 1]
        if (i == 2 and f2["name"] == "Hot.f2(long)" and f2.get("inlined")
                and f2["ip"] == fr[i]["ip"] and e["unwind"] == "complete"):
            right += 1
    print(f"    f1 <- f2 (inlined) <- f3: {right}/{through_f3}")
    assert through_f3 >= 50 and right >= WANT * through_f3, (right, through_f3)
