# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The kernel matrix: boot each kernel of kernels.txt under qemu, run the
foundation, attribution and COW end-to-end tests there once per probe
tier, then compare the tiers' recordings of the same workloads. Prints
one line per test and 'vm: N passed, N failed, N skipped'."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("JT_BUILD", os.path.join(ROOT, "build"))
JT = os.path.join(BUILD, "jittrace")
# An arm64 guest runs the arm64 build; the host reads its recordings with
# its own. The guest sees only the project, so the build lies inside it.
ARM64_BUILD = os.environ.get("JT_BUILD_ARM64", os.path.join(ROOT, "build-arm64"))
TIERS = ["tracepoint", "fentry", "kprobe"]
# "kernel": fentry where a hook can have it, else kprobes (arm64 6.1
# keeps only a clone of do_mprotect_pkey, which fentry cannot attach to).
KERNEL_TIERS = ["fentry", "kernel", "kprobe"]
# One test or more of each end-to-end suite: foundation, attribution, COW.
TESTS = ["test_mapops", "test_fork_exec_tree", "test_jit_pages_stay",
         "test_adjacent_pages_jitdump_only", "test_address_reuse_perfmap_only",
         "test_late_code_load", "test_library_global",
         "test_fork_copy_on_write", "test_shared_file_and_shm",
         "test_cow_pages_name_writer_and_data", "test_fault_vmas_found_by_walking"]
# kernels.txt's "quick": one test of each suite.
QUICK = ["test_mapops", "test_adjacent_pages_jitdump_only", "test_library_global"]
PF_USER = 4
EXEC_LOAD = 8  # JT_MF_EXEC_LOAD: the kernel tier saw execve map this

results = {"passed": 0, "failed": 0, "skipped": 0}


def report(status, name, detail=""):
    key = {"ok": "passed", "FAIL": "failed", "SKIP": "skipped"}[status]
    results[key] += 1
    print(f"{status:4} vm:{name}{': ' + detail if detail else ''}", flush=True)


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def have_qemu():
    need = ["qemu-system-x86_64", "busybox"]
    if any(k[5] == "arm64" for k in kernels()):
        need += ["qemu-system-aarch64", "mmdebstrap"]
    if all(shutil.which(c) for c in need):
        return True
    if os.geteuid() != 0:
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sh(["apt-get", "update", "-qq"], env=env)
    sh(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
        "qemu-system-x86", "qemu-system-arm", "mmdebstrap", "busybox-static",
        "xz-utils"], env=env)
    return all(shutil.which(c) for c in need)


def kernels():
    with open(os.path.join(HERE, "kernels.txt")) as f:
        for line in f:
            f = line.split("#")[0].split()
            if len(f) >= 2:
                opt = dict(x.split("=", 1) for x in f[2:] if "=" in x)
                tests = [] if "doctor-only" in f[2:] else \
                    QUICK if "quick" in f[2:] else TESTS
                tiers = opt["tiers"].split(",") if "tiers" in opt else TIERS
                if tests and "extra" in opt:
                    tests = tests + opt["extra"].split(",")
                yield f[0], f[1], tests, opt.get("suite", ""), tiers, \
                    opt.get("arch", "x86")


def jt_json(*args):
    p = sh([JT, *args, "--json"])
    if p.returncode:
        raise AssertionError(f"jittrace {' '.join(args)}: {p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines()] \
        if args[0] == "script" else json.loads(p.stdout)


def procs_in_order(events):
    """pids in the order they first appear: the same workload run under
    two tiers gets other pids but the same order."""
    seen = []
    for e in events:
        if e.get("pid") and e["pid"] not in seen:
            seen.append(e["pid"])
    return seen


def same_path(p):
    """Each tier's run has its own temporary directory and pids."""
    if not p:
        return p
    p = re.sub(r"/tmp/jt-e2e-[^/]+", "/tmp/jt-e2e-*", p)
    return re.sub(r"(jit|perf)-\d+\.(dump|map)", r"\1-PID.\2", p)


def region_key(r):
    return (r["comm"], r["start"], r["end"], r["prot"], same_path(r["path"]),
            same_path(r["name"]), r["offset"], str(r["kernel_vma"]))


def compare_maps(base, other):
    a = sorted(region_key(r) for r in jt_json("maps", "-i", base))
    b = sorted(region_key(r) for r in jt_json("maps", "-i", other))
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    assert not only_a and not only_b, \
        f"regions only under tracepoint: {only_a[:5]}; only here: {only_b[:5]}"
    return len(a)


def user_cows(events):
    order = procs_in_order(events)
    return sorted((order.index(e["pid"]), e["page"]) for e in events
                  if e["type"] == "cow" and int(e["error_code"]) & PF_USER)


def exec_zeroed(events):
    order = procs_in_order(events)
    return sorted((order.index(e["pid"]), e["page"]) for e in events
                  if e["type"] == "cow" and e.get("flags", 0) & EXEC_LOAD)


def compare_cows(base_ev, other_ev):
    """The same pages made private by the process's own writes, and the
    same partial .bss pages the ELF loader zeroed in execve. The kernel
    tier also sees the faults get_user_pages takes for the process:
    counted, not compared."""
    a, b = user_cows(base_ev), user_cows(other_ev)
    assert a == b, f"COW pages differ: {sorted(set(a) ^ set(b))[:8]}"
    za, zb = exec_zeroed(base_ev), exec_zeroed(other_ev)
    assert za == zb, f"execve-zeroed pages differ: {za[:4]} {zb[:4]}"
    kernel_mode = sum(1 for e in other_ev if e["type"] == "cow"
                      and not int(e["error_code"]) & PF_USER)
    return len(a), len(za), kernel_mode


def jit_loads(events):
    return sorted((e["addr"], e["size"], e["name"]) for e in events
                  if e["type"] == "jit_load")


def exec_loads_are_in_snapshots(events):
    """The kernel tier sees execve map the ELF segments; each must lie in
    a VMA of the same file in the exec snapshot that follows."""
    n = 0
    for i, e in enumerate(events):
        if e["type"] != "mmap" or not e.get("flags", 0) & EXEC_LOAD:
            continue
        n += 1
        start = int(e["result"]) & (2**64 - 1)
        snap = [v for v in events[i:] if v["type"] == "vma" and v["pid"] == e["pid"]
                and int(v["vma"]["start"], 16) <= start < int(v["vma"]["end"], 16)]
        assert snap and snap[0]["path"] == e["path"], (e, snap[:1])
    return n


def compare_tiers(name, res, tiers):
    base = os.path.join(res, "tracepoint")
    kept = sorted(f for f in os.listdir(base) if f.endswith(".data"))
    if not kept:
        report("FAIL", f"{name}:equivalence", "no recordings kept")
        return
    for f in kept:
        base_ev = jt_json("script", "-i", os.path.join(base, f))
        assert not any(e["type"] == "mmap" and e.get("flags", 0) & EXEC_LOAD
                       for e in base_ev), "tracepoint tier saw execve's mappings"
        for tier in [t for t in KERNEL_TIERS if t in tiers]:
            other = os.path.join(res, tier, f)
            label = f"{name}:{tier}=tracepoint:{f[:-5]}"
            if not os.path.exists(other):
                report("FAIL", label, "the test kept no recording under this tier")
                continue
            try:
                ev = jt_json("script", "-i", other)
                nreg = compare_maps(os.path.join(base, f), other)
                ncow, nzero, nkcow = compare_cows(base_ev, ev)
                assert jit_loads(base_ev) == jit_loads(ev), "JIT loads differ"
                nexec = exec_loads_are_in_snapshots(ev)
                assert nexec > 0, "the kernel tier saw no execve mapping"
                report("ok", label, f"{nreg} regions, {ncow} user COW pages, "
                       f"{nzero} execve-zeroed pages, "
                       f"{len(jit_loads(ev))} JIT loads equal; only here: "
                       f"{nexec} execve mappings, all in the exec snapshot, "
                       f"{nkcow} kernel-mode COW faults")
            except AssertionError as e:
                report("FAIL", label, str(e))


def guest_results(name, res, tiers):
    for tier in tiers:
        log = os.path.join(res, tier, "e2e.log")
        if not os.path.exists(log):
            out = os.path.join(res, "out.log")
            report("FAIL", f"{name}:{tier}", "the suite did not run: " +
                   (open(out).read()[-500:] if os.path.exists(out) else "no output"))
            continue
        text = open(log).read()
        for line in text.splitlines():
            f = line.split()
            if f and f[0] in ("ok", "FAIL", "SKIP"):
                report(f[0], f"{name}:{tier}:{f[1].rstrip(':')}", " ".join(f[2:]))
        if "FAIL" in text:
            print(text, flush=True)
        if "e2e (--tier" not in text:
            report("FAIL", f"{name}:{tier}", "the suite did not finish")


def version(s):
    return tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", s).groups())


def check_doctor(name, res, tests):
    """doctor's feature table against the kernel's version: a feature
    marked missing must be newer than the kernel, one marked ok older or
    as old. doctor exits non-zero exactly when record cannot load, and
    then each hook names what it lacks."""
    try:
        kernel = version(open(os.path.join(res, "uname-r")).read())
        rc = int(open(os.path.join(res, "doctor.rc")).read())
        text = open(os.path.join(res, "doctor.txt")).read()
        feats = re.findall(r"^  (.+?)\s+(ok|MISSING)\s+Linux (\d+\.\d+) and later$",
                           text, re.M)
        assert len(feats) >= 6, text
        for feat, verdict, since in feats:
            assert (verdict == "MISSING") == (version(since) > kernel), \
                f"{feat}: {verdict}, since {since}, on {kernel}"
        missing = [f for f, v, _ in feats if v == "MISSING"]
        hooks = re.findall(r"^  (mmap|mprotect|munmap|mremap|brk|fork|exec|exit|cow)"
                           r"\s+(\S+)\s+(.*)$", text, re.M)
        assert len(hooks) == 9, text
        if tests:
            assert rc == 0, text
            assert all(tier != "NONE" for _, tier, _ in hooks), text
        else:
            assert rc == 1 and missing, text
            assert "lacks what jittrace's BPF programs use" in text, text
            for hook, tier, why in hooks:
                assert tier == "NONE" and any(m in why for m in missing), (hook, why)
        # The functions a hook is "on" are those its tier probes: the
        # fentry tier of a maple-tree kernel (6.1+) leaves these two out,
        # and so does the legacy object's (before 5.17).
        legacy = re.search(r"^  programs\s+legacy\b", text, re.M) is not None
        for hook, tier, why in hooks:
            fn = {"mmap": "perf_event_mmap", "mprotect": "mprotect_fixup"}.get(hook)
            on = why.split(";")[0].split()
            if fn and tier == "fentry":
                assert (fn in on) == (kernel < version("6.1") and not legacy), (hook, why)
                # Nor is it probed there: 5.10 cannot trace perf_event_mmap,
                # and doctor said so for a function nothing attaches to.
                assert fn in on or fn not in why, (hook, why)
                # There mmap is vm_mmap_pgoff's exit alone, and nothing
                # else of the hook is probed.
                if hook == "mmap" and (kernel >= version("6.1") or legacy):
                    assert on == ["on", "vm_mmap_pgoff"], (hook, why)
            elif fn and tier == "kprobe":
                assert fn in on, (hook, why)
        # auto passes a mapping call's working kprobes over for its
        # syscall tracepoint, on the legacy object too (probes.c, choose()).
        kprobes = any(tier == "kprobe" for _, tier, _ in hooks)
        for hook, tier, why in hooks:
            if hook in ("fork", "exec", "exit", "cow"):
                continue
            passed = "kprobes passed over" in why
            assert tier != "kprobe", (hook, why)
            assert passed == (tier == "tracepoint" and kprobes), (hook, why)
        report("ok", f"{name}:doctor", f"exit {rc}; missing: {', '.join(missing) or 'none'}")
    except (AssertionError, OSError, ValueError, AttributeError) as e:
        report("FAIL", f"{name}:doctor", str(e)[-600:] + verifier_said(res))


def verifier_said(res):
    """The end of the last program load log doctor -v kept: why the
    kernel refused, in the CI log itself."""
    try:
        text = open(os.path.join(res, "doctor-v.txt"), errors="replace").read()
    except OSError:
        return ""
    logs = re.findall(r"^(libbpf: prog '[^']+'): -- BEGIN PROG LOAD LOG --\n(.*?)"
                      r"^-- END PROG LOAD LOG --", text, re.M | re.S)
    if not logs:
        return ""
    prog, log = logs[-1]
    return f"\n{prog}, the verifier's last words:\n" + "\n".join(log.splitlines()[-8:])


def cross_build(name):
    """The arm64 build, with its workloads, where the guest can see it."""
    if not os.path.realpath(ARM64_BUILD).startswith(os.path.realpath(ROOT) + "/"):
        report("FAIL", name, f"{ARM64_BUILD} is outside the project the guest mounts")
        return None
    if not shutil.which("aarch64-linux-gnu-gcc"):
        report("SKIP", name, "SKIPPED LOUDLY: no aarch64-linux-gnu-gcc "
               "(scripts/install-deps.sh --arm64): the arm64 guest was not run")
        return None
    p = sh(["make", "-C", ROOT, "ARCH=arm64", f"OUT={ARM64_BUILD}", "-j2", "all"],
           timeout=1800)
    if p.returncode:
        report("FAIL", name, "make ARCH=arm64: " + (p.stdout + p.stderr)[-1500:])
        return None
    return ARM64_BUILD


def run_kernel(name, pkg, tests, suite, tiers, arch):
    d = os.path.join(BUILD, "vm", name)
    t0 = time.time()
    guest_build = BUILD if arch == "x86" else cross_build(name)
    if not guest_build:
        return
    p = sh(["sh", os.path.join(HERE, "vm.sh"), "prepare", pkg, d, suite, arch])
    if p.returncode:
        report("SKIP", name, f"SKIPPED: cannot fetch kernel {pkg}: {p.stderr.strip()}")
        return
    t1 = time.time()
    res = os.path.join(d, "results")
    # JT_VM_REUSE=1: compare the last run's recordings again, no boot.
    if os.environ.get("JT_VM_REUSE") and os.path.exists(os.path.join(res, "rc")):
        p = subprocess.CompletedProcess([], 0, "", "")
    else:
        shutil.rmtree(res, ignore_errors=True)
        os.makedirs(res)
        with open(os.path.join(res, "cmd.sh"), "w") as f:
            f.write(f'JT_VM_TESTS="{" ".join(tests)}" sh {HERE}/guest.sh {res} '
                    f'{guest_build} {" ".join(tiers if tests else [])}\n')
        p = sh(["sh", os.path.join(HERE, "vm.sh"), "run", d, res, "1200"])
    t2 = time.time()
    kernel = open(os.path.join(res, "uname-r")).read().strip() \
        if os.path.exists(os.path.join(res, "uname-r")) else "?"
    print(f"# {name}: kernel {kernel}, prepare {t1 - t0:.0f} s, "
          f"boot and suites {t2 - t1:.0f} s", flush=True)
    if p.returncode and not os.path.exists(os.path.join(res, "rc")):
        report("FAIL", name, f"the VM did not finish: {p.stderr.strip()}")
        return
    check_doctor(name, res, tests)
    if not tests:
        return  # record cannot load there yet: doctor's verdict is the test
    guest_results(name, res, tiers)
    compare_tiers(name, res, tiers)


def main():
    if not os.path.exists(JT):
        print(f"vm: {JT} missing: build first", file=sys.stderr)
        return 2
    if not have_qemu():
        report("SKIP", "all", "SKIPPED LOUDLY: qemu-system-x86_64, qemu-system-aarch64, "
               "mmdebstrap or busybox "
               "could not be installed: the kernel tier was not tested")
    else:
        # JT_VM_ONLY=NAME: boot only that kernel of kernels.txt.
        only = os.environ.get("JT_VM_ONLY")
        for name, pkg, tests, suite, tiers, arch in kernels():
            if not only or name == only:
                run_kernel(name, pkg, tests, suite, tiers, arch)
    print(f"vm: {results['passed']} passed, {results['failed']} failed, "
          f"{results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
