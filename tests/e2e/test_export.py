# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""jittrace export, read by the real readers: stock perf 6.1 (perf
script, perf report) on the perf.data, go tool pprof on the pprof. perf
must name the samples as jittrace does, sample by sample; pprof's
per-function counts must equal jittrace report's."""
import glob
import json
import os
import re
import shutil
import stat
import subprocess

from jt import AS_USER, JT, ROOT, TMP, WL, Skip, record, run, script, wait_for
from test_jit import runs, truth
from agentlib import pprofcheck
from test_safety import LONG_NAME, NAME0, NAME1, NAME2, hostile_run

JS = os.path.join(ROOT, "tests/workloads/compile-loop.js")
SCENARIOS = [  # jitgen mode, jitdump, perf-map
    ("adjacent", True, False), ("reuse", False, True), ("reuse", True, False),
    ("memfd", True, False), ("shanon", True, False), ("late", True, False),
    ("move", True, False),
]


def need(tool):
    if not shutil.which(tool):
        raise Skip(f"{tool} is not installed")


def jitdir(name):
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    return d


def jitgen_args(mode, jd, pm, d):
    args = [os.path.join(WL, "jitgen"), mode, "4", "1.0"]
    return args + (["-j", d] if jd else []) + (["-m"] if pm else [])


def export(data, fmt, *opts):
    out = data + (".pb.gz" if fmt == "pprof" else ".perf")
    run([JT, "export", "-i", data, "--format", fmt, "-o", out, *opts])
    return out


def perf_samples(perf_data):
    """(tid, time ns) -> (ip, symbol), as stock perf script names them."""
    out = run(["perf", "script", "-i", perf_data, "-F", "tid,time,ip,sym",
               "--ns"], errors="replace").stdout
    named = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+(\d+)\.(\d+):\s+([0-9a-f]+)\s*(.*)$", line)
        if m:
            t = int(m.group(2)) * 10**9 + int(m.group(3))
            named[(int(m.group(1)), t)] = (int(m.group(4), 16),
                                           m.group(5).strip() or "[unknown]")
    return named


# ELF files are the same files to both tools, and where a library has
# aliases at one address (__clock_gettime, clock_gettime@@GLIBC_2.17)
# each picks its own: what is compared is the JIT code and the kernel.
NAMED_BY_EXPORT = ("jitdump", "perfmap", "kallsyms")


def compare(data, perf_data):
    """Samples jittrace names, how many perf names the same, a few misses."""
    theirs = {k: v[1] for k, v in perf_samples(perf_data).items()}
    mine = [s for s in script(data) if s["type"] == "sample"
            and s["source"] in NAMED_BY_EXPORT and s["sym"]]
    bad = [(s["sym"], theirs.get((s["tid"], s["time"]))) for s in mine
           if theirs.get((s["tid"], s["time"])) != s["sym"]]
    return len(mine) - len(bad), len(mine), bad[:5]


CODE = 16  # jitgen's functions are this long


def perf_route_share(mode, jd, pm):
    """What perf record -k 1 (+ perf inject --jit) names right, by jitgen's
    own log of which function ran where and when."""
    d = jitdir(f"perfjit-{mode}-{jd}-{pm}")
    pdata = os.path.join(TMP, f"perf-{mode}-{jd}-{pm}.data")
    p = run(["perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-o", pdata,
             "--", *AS_USER, *jitgen_args(mode, jd, pm, d)])
    stretches = runs(p.stdout)
    if jd:
        run(["perf", "inject", "--jit", "-i", pdata, "-o", pdata + ".jit"])
        pdata += ".jit"
    ok = total = 0
    for (tid, t), (ip, sym) in perf_samples(pdata).items():
        want = next((name for name, addr, t0, t1 in stretches
                     if addr <= ip < addr + CODE and t0 <= t <= t1), None)
        if want is not None:
            total += 1
            ok += sym == want
    return ok, total


def test_perf_export_names_jit_code_as_jittrace_does():
    need("perf")
    report = []
    for mode, jd, pm in SCENARIOS:
        d = jitdir(f"export-{mode}-{jd}")
        p, data = record(jitgen_args(mode, jd, pm, d))
        out = export(data, "perf")
        same, total, bad = compare(data, out)
        assert total > 100, (mode, total)
        assert same >= 0.999 * total, (mode, jd, pm, same, total, bad)
        # Every stretch a function ran is named by perf, as jitgen says.
        stretches = runs(p.stdout)
        theirs = perf_samples(out)
        for s in script(data):
            if s["type"] != "sample" or s["kernel"]:
                continue
            want = truth(s, stretches)
            if want is not None:
                assert theirs[(s["tid"], s["time"])][1] == want, (mode, s)
        report.append(f"{mode}{' jitdump' if jd else ''}{' perf-map' if pm else ''}: "
                      f"jittrace export {same}/{total}")
    for line in report:
        print("   ", line)


def test_perf_inject_on_the_same_scenarios_for_comparison():
    """Not a check of jittrace: what perf's own route gets, printed."""
    need("perf")
    for mode, jd, pm in SCENARIOS:
        ok, total = perf_route_share(mode, jd, pm)
        print(f"    perf {'inject --jit' if jd else 'with perf-map'} {mode}: "
              f"{ok}/{total} = {100.0 * ok / max(total, 1):.1f}% named right")


def test_perf_export_of_real_runtimes():
    need("perf")
    for name, cmd in (
            ("node", lambda d: ["sh", "-c", f"cd {d} && exec node --perf-prof {JS} 2"]),
            ("lli", lambda d: ["env", f"JITDUMPDIR={d}", "lli-14", "-jit-kind=mcjit",
                               os.path.join(ROOT, "tests/workloads/hot.ll")])):
        need("node" if name == "node" else "lli-14")
        d = jitdir(f"export-{name}")
        _, data = record(cmd(d))
        out = export(data, "perf")
        same, total, bad = compare(data, out)
        assert total > 50, (name, total)
        assert same >= 0.999 * total, (name, same, total, bad)
        print(f"    {name}: perf names {same}/{total} samples as jittrace does")


def pprof_raw(path):
    """(per-function leaf counts, labels seen) from go tool pprof -raw."""
    pprofcheck(path)
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], check=True,
                         capture_output=True).stdout.decode("utf-8", "replace")
    samples, locs, labels = [], {}, set()
    section = None
    for line in out.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = re.match(r"\s+(\d+)\s+\d+: (\d+)", line)
            if m:
                samples.append((int(m.group(1)), int(m.group(2))))
            elif "pid:[" in line:
                labels.add(tuple(sorted(re.findall(r"(\w+):\[", line))))
        elif section == "Locations":
            m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) \S+:\d+ s=\d+$", line)
            if m:
                locs[int(m.group(1))] = m.group(2)
    counts = {}
    for n, leaf in samples:
        counts[locs[leaf]] = counts.get(locs[leaf], 0) + n
    return counts, labels


def test_pprof_counts_equal_report():
    need("go")
    # Address reuse with a perf-map only: each tenant keeps its samples.
    d = jitdir("pprof-reuse")
    p, data = record(jitgen_args("reuse", False, True, d))
    out = export(data, "pprof")
    counts, labels = pprof_raw(out)
    rep = json.loads(run([JT, "report", "-i", data, "--json", "--sort", "sym"]).stdout)
    want = {r["sym"]: r["samples"] for r in rep}
    assert counts == want
    assert sum(v for k, v in counts.items() if k.startswith("reused_")) > 100
    assert labels == {("comm", "pid", "source")}
    top = run(["go", "tool", "pprof", "-top", out]).stdout
    assert "Type: cpu" in top and "reused_0" in top


def test_pprof_call_chains():
    need("go")
    _, data = record([os.path.join(WL, "spin"), "0.5"], ["-g"])
    out = export(data, "pprof", "-g")
    tree = run(["go", "tool", "pprof", "-traces", out]).stdout
    # spin_here is called from main: the chain has both, leaf first.
    stacks = [b for b in tree.split("-----------+-------------------------------------------------------")
              if "spin_here" in b]
    assert stacks and any(re.search(r"spin_here\s*\n\s*main", b) for b in stacks), tree[:2000]


def test_exports_survive_hostile_names():
    need("perf")
    need("go")
    _, data = hostile_run()
    counts, _ = pprof_raw(export(data, "pprof"))
    names = set(counts)
    for n in (NAME0, NAME2, LONG_NAME):
        assert n in names, (n[:40], sorted(x[:40] for x in names))
    # Invalid UTF-8 went through as bytes; the reader shows U+FFFD.
    assert NAME1 in names
    out = export(data, "perf")
    syms = {v[1] for v in perf_samples(out).values()}
    assert {NAME0, NAME2, LONG_NAME} <= syms, sorted(s[:40] for s in syms)
    run(["perf", "report", "-i", out, "--stdio"], errors="replace")


def test_export_usage_errors():
    for args, msg in ((["--format", "svg", "-o", "x"], "--format wants pprof or perf"),
                      (["--format", "pprof"], "give -o OUT"),
                      (["-o", "x"], "give --format")):
        p = run([JT, "export", *args], check=False)
        assert p.returncode == 2 and msg in p.stderr, p.stderr


def test_perf_export_names_kernel_and_bpf_samples():
    """The kernel as it was when recorded: BPF programs (ours among them,
    gone once the recorder is) reach perf as KSYMBOL records, the kernel
    map ends at its text, weak functions are named."""
    need("perf")
    # One CPU second of mmap calls: at 4000 Hz, thousands of kernel samples
    # on any machine, where a count of calls gives fewer on a faster one.
    _, data = record([os.path.join(WL, "mmloop"), "callsfor", "1"], ["-F", "4000"])
    out = export(data, "perf")
    theirs = {k: v[1] for k, v in perf_samples(out).items()}
    mine = [s for s in script(data) if s["type"] == "sample" and s["source"] == "kallsyms"]
    bad = [(s["sym"], theirs.get((s["tid"], s["time"]))) for s in mine
           if theirs.get((s["tid"], s["time"])) != s["sym"]]
    assert len(mine) > 1000 and not bad, (len(mine), bad[:5])
    assert sum(1 for s in mine if s["sym"].startswith("bpf_prog_")) > 10
    # Our programs as long as the kernel said when they ran, the last of
    # a pack too, where the next symbol is far; kernel functions named
    # bpf_prog_* are no programs.
    theirs = perf_ksymbols(out)
    assert all(re.fullmatch(r"bpf_prog_[0-9a-f]{16}(_\w+)?", n) for n, _, _ in theirs), theirs
    ours = recorded_program_lengths(data)
    assert len(ours) >= 8 and ours <= set(theirs), sorted(ours - set(theirs))[:5]


def perf_ksymbols(path):
    """(name, addr, len) of each KSYMBOL record perf reads in path."""
    out = run(["perf", "report", "-D", "-i", path]).stdout
    return [(m[3], int(m[1], 16), int(m[2])) for m in re.finditer(
        r"PERF_RECORD_KSYMBOL addr ([0-9a-f]+) len (\d+) type 1 flags \S+ name (\S+)", out)]


def recorded_program_lengths(data):
    """(name, addr, len) of each program the recorder gave a length."""
    from test_record import recorded_kallsyms
    return {(f[2], int(f[0], 16), int(f[4]))
            for f in map(str.split, recorded_kallsyms(data).splitlines()) if len(f) == 5}


def test_perf_export_size_follows_the_bytes_it_has():
    """A perf-map that declares 16 TiB per function: the code's bytes are
    not in the recording, so the export stays small, and perf still names
    every sample as jittrace does."""
    need("perf")
    _, data = record([os.path.join(WL, "jitgen"), "reuse", "2", "0.4", "-m",
                      "-s", "0x100000000000"])
    out = export(data, "perf")
    jit = os.path.join(out + ".jit")
    size = os.path.getsize(out) + sum(os.path.getsize(os.path.join(jit, f))
                                      for f in os.listdir(jit))
    assert size < 4 << 20, size
    same, total, bad = compare(data, out)
    assert total > 50 and same == total, (same, total, bad)


def test_perf_export_never_writes_through_a_planted_side_directory():
    import pwd
    from test_safety import nobody_dir
    nobody = pwd.getpwnam("nobody")
    _, data = record([os.path.join(WL, "jitgen"), "reuse", "2", "0.2", "-m"])
    d = nobody_dir("export-planted", sticky=True)
    victim = nobody_dir("export-victim")
    out = os.path.join(d, "x.perf")
    side = out + ".jit"
    # Another user's link, then another user's directory with a file in it.
    os.symlink(victim, side)
    os.lchown(side, nobody.pw_uid, nobody.pw_gid)
    for planted in ("link", "dir"):
        p = run([JT, "export", "-i", data, "--format", "perf", "-o", out], check=False)
        assert p.returncode == 1, p.stderr
        assert f"{side} exists and is not an earlier export's" in p.stderr, p.stderr
        assert os.listdir(victim) == [] and not os.path.exists(out)
        if planted == "link":
            os.unlink(side)
            os.mkdir(side, 0o755)
            os.chown(side, nobody.pw_uid, nobody.pw_gid)
            open(os.path.join(side, "jitted-1-1.so"), "w").write("planted")
    # Our own earlier export's directory is replaced, with none of its files.
    shutil.rmtree(side)
    for _ in range(2):
        run([JT, "export", "-i", data, "--format", "perf", "-o", out])
    st = os.stat(side)
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700
    assert all(f.startswith("jitted-") for f in os.listdir(side))


def test_export_on_a_full_disk_says_so_and_leaves_nothing():
    _, data = record([os.path.join(WL, "jitgen"), "reuse", "2", "0.2", "-m"])
    mnt = os.path.join(TMP, "export-full")
    os.makedirs(mnt, exist_ok=True)
    run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt])
    try:
        with open(os.path.join(mnt, "filler"), "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        for fmt in ("perf", "pprof"):
            out = os.path.join(mnt, f"full.{fmt}")
            p = run([JT, "export", "-i", data, "--format", fmt, "-o", out], check=False)
            assert p.returncode == 1 and "No space left on device" in p.stderr, p.stderr
            assert sorted(os.listdir(mnt)) == ["filler"], os.listdir(mnt)
    finally:
        run(["umount", mnt])


def test_pprof_period_is_what_a_sample_stands_for():
    """A clock event at 99 Hz: the profile's period is 1/99 s, as each
    sample's CPU time is, not a fixed millisecond."""
    need("go")
    from agentlib import pprof_raw as raw
    _, data = record([os.path.join(WL, "spin"), "0.5"], ["-e", "cpu-clock", "-F", "99"])
    head, samples = raw(export(data, "pprof"))
    assert head["Period"] == str(10**9 // 99), head
    count = sum(n for n, _, _, _ in samples)
    nanos = sum(ns for _, ns, _, _ in samples)
    assert count > 20 and abs(nanos / count - 10**9 / 99) < 0.25 * 10**9 / 99, (count, nanos)


PERFPARSER = "/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser"


def test_hotspot_names_an_exports_jit_functions():
    """hotspot, the perf.data GUI: its parser names every JIT function of
    an export, and the GUI loads it without falling over (it once crashed
    on our ELF layout and showed no costs without the event's name)."""
    if not os.access(PERFPARSER, os.X_OK):
        raise Skip("hotspot is not installed (apt-get install hotspot)")
    _, data = record([os.path.join(WL, "jitgen"), "adjacent", "4", "1.0", "-m"])
    out = export(data, "perf")
    p = run([PERFPARSER, "--input", out, "--output", out + ".b2qt"])
    assert "failed to report elf" not in p.stderr, p.stderr[-2000:]
    parsed = open(out + ".b2qt", "rb").read()
    for i in range(4):
        assert f"adjacent_{i}".encode() in parsed, i
    assert b"cpu-clock" in parsed  # the event's name, hotspot's cost column
    if not (shutil.which("Xvfb") and shutil.which("import")):
        raise Skip("no Xvfb or ImageMagick: the GUI was not opened")
    hotspot_window(out, os.path.join(TMP, "hotspot.png"))


def hotspot_window(perf_data, png):
    """hotspot under Xvfb: it must outlive loading the export (it crashed
    on a JIT ELF's layout, and on samples of CPUs the header did not
    count); a screenshot of its window is kept with the test's files."""
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", "1", "-screen", "0", "1400x900x24"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    env = {**os.environ, "DISPLAY": ":" + xvfb.stdout.readline().strip(),
           "QT_QPA_PLATFORM": "xcb"}
    gui = subprocess.Popen(["hotspot", perf_data], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    last = [b""]

    def drawn():
        # Drawn (a blank screen compresses to a few hundred bytes) and
        # settled: the loading bar gone, two screenshots alike.
        run(["import", "-window", "root", png], env=env)
        now = open(png, "rb").read()
        same, last[0] = now == last[0], now
        return gui.poll() is not None or (len(now) > 8192 and same)

    try:
        wait_for("hotspot's window", drawn)
        assert gui.poll() is None, f"hotspot exited {gui.returncode} on the export"
        print(f"    hotspot's window: {png}")
    finally:
        gui.kill()
        xvfb.kill()
        gui.wait()
        xvfb.wait()
