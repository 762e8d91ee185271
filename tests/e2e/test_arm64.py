# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The arm64 build: `make ARCH=arm64` cross-builds an aarch64 jittrace, its
JVMTI agent and its BPF objects, and that binary, run under qemu's user
mode, reads an x86-64 recording exactly as the native build does. The
recording format is the same on both architectures; what an arm64
kernel records is the VM suite's part (issue 28)."""
import os
import re
import shutil
import subprocess

from jt import JT, ROOT, TMP, WL, Skip, record, run
from test_bpf_objects import bodies, cfg_5_10


def cross_build():
    if not shutil.which("aarch64-linux-gnu-gcc") or not shutil.which("qemu-aarch64"):
        raise Skip("no cross compiler or qemu-aarch64: scripts/install-deps.sh --arm64 "
                   "and qemu-user install them")
    # The VM suite's arm64 guest runs the same build: make it once.
    out = os.environ.get("JT_BUILD_ARM64", os.path.join(ROOT, "build-arm64"))
    p = subprocess.run(["make", "-C", ROOT, "ARCH=arm64", f"OUT={out}", "-j2",
                        f"{out}/jittrace", f"{out}/lib/jittrace/libjittrace-jvmti.so"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return out


def test_arm64_build_reads_recordings_as_x86_does():
    out = cross_build()
    for f in ("jittrace", "lib/jittrace/libjittrace-jvmti.so"):
        kind = run(["file", "-b", os.path.join(out, f)]).stdout
        assert "ELF 64-bit" in kind and "ARM aarch64" in kind, (f, kind)
    # The BPF programs were built for arm64's registers and syscalls.
    head = open(os.path.join(out, "jittrace.skel.h"), errors="replace").read()
    assert "jittrace_bpf" in head
    arm = os.path.join(out, "jittrace")
    native = run([JT, "--version"]).stdout
    assert run(["qemu-aarch64", arm, "--version"]).stdout == native
    # A recording with regions, JIT names, samples and private pages.
    _, data = record([os.path.join(WL, "cowdata"), os.path.join(WL, "libjtdata.so"), "2"],
                     ["-e", "page-faults", "-c", "1", "-d"])
    views = [["maps", "--json"], ["audit", "--json"], ["report", "--json"],
             ["report", "--sort", "dso,sym"], ["script", "--json"]]
    for v in views:
        want = run([JT, v[0], "-i", data, *v[1:]]).stdout
        got = run(["qemu-aarch64", arm, v[0], "-i", data, *v[1:]]).stdout
        assert got == want, (v, got[:300], want[:300])
        assert len(want) > 200, v
    print(f"    arm64 build: {len(views)} views of one recording, byte for byte "
          "the native build's")


def test_arm64_build_says_it_cannot_unwind_x86_stacks():
    """A recording carries its machine; a build for another one names the
    leaves as the native build does, and says each stack was not unwound
    and why, rather than unwinding x86-64 registers as arm64's."""
    out = cross_build()
    arm = os.path.join(out, "jittrace")
    data = os.path.join(TMP, "arm64-foreign.data")
    run([JT, "record", "-o", data, "-g", "-F", "499", "--user", "nobody", "--",
         os.path.join(WL, "nofp"), "chain", "0.3"], timeout=120)
    native = run([JT, "report", "-i", data, "--sort", "sym"]).stdout
    foreign = run(["qemu-aarch64", arm, "report", "-i", data, "--sort", "sym"]).stdout
    got = re.search(r"^# stacks: (\d+) unwound, (\d+) other-architecture "
                    r"\(recorded on x86_64: unwind with a build for it\)$", foreign, re.M)
    assert got and got[1] == got[2] and int(got[1]) > 0, foreign[-600:]
    n = re.search(r"^# stacks: (\d+) unwound, (\d+) complete", native, re.M)
    assert n and n[1] == got[1], native[-600:]
    # The leaves, by name and count, are the native build's.
    rows = [ln for ln in native.splitlines() if ln and not ln.startswith("#")]
    assert rows == [ln for ln in foreign.splitlines() if ln and not ln.startswith("#")]
    print(f"    arm64 build on an x86-64 -g recording: {got[1]} stacks not "
          f"unwound, each said so; the native build unwound {n[2]} complete")


def test_arm64_legacy_loops_pass_the_5_10_verifiers_cfg_check():
    """Debian 11's arm64 kernel is 5.10 too: the legacy object built for
    arm64 gets the check its x86 twin does (test_bpf_objects.py)."""
    out = cross_build()
    funcs = bodies(os.path.join(out, "jittrace_legacy.bpf.o"))
    assert len(funcs) > 20, list(funcs)
    bad = {f: err for f, ins in funcs.items() if (err := cfg_5_10(ins))}
    assert not bad, bad
