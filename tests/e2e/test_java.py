# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Java named by jittrace's JVMTI agent (--jvmti), at start and attached
to a running JVM, on a workload that makes HotSpot free compiled code and
reuse its addresses (tests/workloads/java/Churn.java). Truth comes from
the workload itself: which generation's code ran when (System.nanoTime,
CLOCK_MONOTONIC), so a sample named after the code that was at its
address before, or after, is caught. And the copy-on-write view of real
JVMs, checked page by page against /proc/PID/pagemap."""
import bisect
import collections
import json
import os
import pwd
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time

import jt
from jt import JT, ROOT, TMP, USER, AS_USER, Skip, run, script

JDK = "/usr/lib/jvm/java-17-openjdk-amd64/bin"
SRC = os.path.join(ROOT, "tests/workloads/java")
GEN = re.compile(r"^(Gen\d{5})\.run\(long\)$")
# A small code cache: freed code's addresses come back soon.
FLAGS = ["-XX:ReservedCodeCacheSize=3m"]
WANT = 0.99


def classes():
    if not os.path.exists(os.path.join(JDK, "javac")):
        raise Skip(f"OpenJDK 17 is not installed here ({JDK})")
    wd = os.path.join(TMP, "java-churn")
    os.makedirs(wd, exist_ok=True)
    run([os.path.join(JDK, "javac"), "-d", wd, os.path.join(SRC, "Gen00000.java"),
         os.path.join(SRC, "Churn.java"), os.path.join(SRC, "Hold.java")])
    for f in os.listdir(wd):
        os.chmod(os.path.join(wd, f), 0o644)
    os.chmod(wd, 0o755)
    return wd


def runs(stdout):
    out = sorted((int(f[2]), int(f[3]), f[1]) for f in
                 (ln.split() for ln in stdout.splitlines()) if f and f[0] == "run")
    return out


def judge(data, stretches):
    """Samples in a generation's compiled code: named right, wrong; and
    how many addresses held the code of more than one generation."""
    starts = [s[0] for s in stretches]
    events = script(data)
    owners = collections.defaultdict(set)
    for e in events:
        m = e["type"] == "jit_load" and GEN.match(e.get("name") or "")
        if m:
            owners[e["addr"]].add(m.group(1))
    right = wrong = 0
    bad = []
    for e in events:
        m = e["type"] == "sample" and GEN.match(e.get("sym") or "")
        if not m:
            continue
        i = bisect.bisect_right(starts, e["time"]) - 1
        if i < 0 or e["time"] > stretches[i][1]:
            continue
        if m.group(1) == stretches[i][2]:
            right += 1
        else:
            wrong += 1
            bad.append((e["time"], m.group(1), stretches[i][2]))
    return right, wrong, sum(1 for s in owners.values() if len(s) > 1), bad[:5]


def test_jvmti_at_start_names_reused_code():
    wd = classes()
    data = os.path.join(TMP, "java-start.data")
    p = run([JT, "record", "-o", data, "--jvmti", "-F", "999", "--user", USER, "--",
             os.path.join(JDK, "java"), *FLAGS, "-cp", wd, "Churn", "2"], timeout=300)
    # The JVM's own line: it read JAVA_TOOL_OPTIONS.
    assert "Picked up JAVA_TOOL_OPTIONS: -agentpath:" in p.stderr
    right, wrong, reused, bad = judge(data, runs(p.stdout))
    print(f"    --jvmti at start: {right}/{right + wrong} JIT samples named right, "
          f"{reused} addresses reused")
    assert reused >= 10 and right >= 200, (right, reused)
    assert right >= WANT * (right + wrong), bad


def test_jvmti_writes_its_own_directory_where_it_cannot_write():
    # A jit-PID.dump left by another user's process with the same pid, or
    # a directory the JVM cannot write: the agent makes a directory of
    # its own under /tmp, and the names are as good.
    wd = classes()
    blocked = tempfile.mkdtemp(prefix="jt-jitdir-")
    os.chmod(blocked, 0o755)  # root's: nobody cannot write in it
    data = os.path.join(TMP, "java-blocked.data")
    p = run([JT, "record", "-o", data, "--jvmti", "-F", "999", "--user", USER, "--",
             os.path.join(JDK, "java"), *FLAGS, "-cp", wd, "Churn", "2"],
            env=dict(os.environ, JITDUMPDIR=blocked), timeout=300)
    m = re.search(r"jittrace-jvmti: " + re.escape(blocked) +
                  r"/jit-(\d+)\.dump: Permission denied; writing (/tmp/jittrace-jit-\w+)/jit-\1\.dump",
                  p.stderr)
    assert m, p.stderr
    assert not os.listdir(blocked)
    assert os.stat(m.group(2)).st_uid == pwd.getpwnam(USER).pw_uid
    right, wrong, reused, bad = judge(data, runs(p.stdout))
    print(f"    --jvmti, jitdump in {m.group(2)}: {right}/{right + wrong} named right")
    shutil.rmtree(m.group(2), ignore_errors=True)
    os.rmdir(blocked)
    assert right >= 200 and right >= WANT * (right + wrong), (right, wrong, bad)


def start_jvm(wd, secs, extra=()):
    p = subprocess.Popen([*AS_USER, os.path.join(JDK, "java"), *FLAGS, *extra, "-cp", wd,
                          "Churn", str(secs)], stdout=subprocess.PIPE, text=True)
    # Attach once it has compiled and freed code: its first generations.
    for line in p.stdout:
        if line.startswith("run Gen00020 "):
            break
    return p


def test_jvmti_attached_to_running_jvm():
    wd = classes()
    jvm = start_jvm(wd, 6)
    data = os.path.join(TMP, "java-attach.data")
    try:
        p = run([JT, "record", "-o", data, "-p", str(jvm.pid), "--jvmti", "-F", "999",
                 "--duration", "2"], timeout=120)
    finally:
        out = jvm.stdout.read()
        jvm.wait(timeout=120)
    assert f"--jvmti: agent loaded into JVM {jvm.pid}" in p.stderr, p.stderr
    right, wrong, reused, bad = judge(data, runs(out))
    print(f"    --jvmti attached: {right}/{right + wrong} JIT samples named right, "
          f"{reused} addresses reused")
    assert right >= 200 and right >= WANT * (right + wrong), (right, wrong, bad)
    # What was compiled before the attach was replayed (GenerateEvents).
    names = {e["name"] for e in script(data) if e["type"] == "jit_load"}
    assert "Interpreter" in names


def test_jvmti_refused_by_jvm_without_attach():
    wd = classes()
    jvm = start_jvm(wd, 3, ["-XX:+DisableAttachMechanism"])
    data = os.path.join(TMP, "java-noattach.data")
    t0 = time.monotonic()
    try:
        p = run([JT, "record", "-o", data, "-p", str(jvm.pid), "--jvmti", "-F", "499",
                 "--duration", "1"], timeout=120)
    finally:
        jvm.stdout.read()
        jvm.wait(timeout=120)
    lines = [ln for ln in p.stderr.splitlines() if "--jvmti" in ln]
    assert len(lines) == 1 and f"JVM {jvm.pid} not attached, recorded without it" in lines[0] \
        and "DisableAttachMechanism" in lines[0], p.stderr
    assert time.monotonic() - t0 < 60
    # The recording is whole: samples, and the FINISH record's clean end.
    assert any(e["type"] == "sample" for e in script(data))


def test_jvmti_agent_must_be_root_owned():
    agent = os.path.join(os.path.dirname(JT), "lib/jittrace/libjittrace-jvmti.so")
    st = os.stat(agent)
    os.chown(agent, 65534, -1)
    try:
        p = run([JT, "record", "--jvmti", "--user", USER, "--", "true"], check=False)
    finally:
        os.chown(agent, st.st_uid, st.st_gid)
    assert p.returncode != 0 and "must be a regular file owned by root" in p.stderr, p.stderr


def test_jvmti_at_start_temurin25():
    if not os.path.exists("/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"):
        raise Skip("Temurin 25 is not installed here")
    wd = classes()
    data = os.path.join(TMP, "java-t25.data")
    p = run([JT, "record", "-o", data, "--jvmti", "-F", "999", "--user", USER, "--",
             "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java", *FLAGS, "-cp", wd, "Churn", "2"],
            timeout=300)
    right, wrong, reused, bad = judge(data, runs(p.stdout))
    print(f"    Temurin 25, --jvmti at start: {right}/{right + wrong} named right, "
          f"{reused} addresses reused")
    assert reused >= 10 and right >= 200 and right >= WANT * (right + wrong), bad


def test_jvmti_attached_in_container():
    """A JVM in its own PID and mount namespaces (and user namespace), its
    /tmp its own: attached as its user, through /proc/PID/root, by the pid
    it knows itself by."""
    wd = classes()
    box = os.path.join(TMP, "java-box")
    os.makedirs(box, exist_ok=True)
    os.chmod(box, 0o777)
    # The classes, in what becomes its /tmp (the host's is hidden there).
    for f in os.listdir(wd):
        shutil.copy(os.path.join(wd, f), box)
        os.chmod(os.path.join(box, f), 0o644)
    # Nor does it see the agent where jittrace keeps it, as in a container
    # with an image of its own: jittrace copies it into the JVM's /tmp.
    hide = os.path.join(TMP, "java-empty")
    os.makedirs(hide, exist_ok=True)
    agent_dir = os.path.join(os.path.dirname(JT), "lib/jittrace")
    inner = (f"mount --bind {hide} {agent_dir} && mount --bind {box} /tmp && "
             f"exec {JDK}/java {' '.join(FLAGS)} -cp /tmp Churn 6")
    jvm = subprocess.Popen([*AS_USER, "unshare", "-Urpmf", "sh", "-c", inner],
                           stdout=subprocess.PIPE, text=True)
    for line in jvm.stdout:
        if line.startswith("run Gen00020 "):
            break
    pid = next(int(p) for p in os.listdir("/proc") if p.isdigit()
               and b"Churn" in open(f"/proc/{p}/cmdline", "rb").read()
               and b"unshare" not in open(f"/proc/{p}/cmdline", "rb").read())
    status = open(f"/proc/{pid}/status").read()
    assert "NSpid:\t%d\t1" % pid in status, status
    data = os.path.join(TMP, "java-box.data")
    try:
        p = run([JT, "record", "-o", data, "-p", str(pid), "--jvmti", "-F", "999",
                 "--duration", "2"], timeout=120)
    finally:
        out = jvm.stdout.read()
        jvm.wait(timeout=120)
    assert f"--jvmti: agent loaded into JVM {pid}" in p.stderr, p.stderr
    # It wrote /tmp/jit-1.dump in its own /tmp; the agent's copy is gone.
    assert os.path.exists(os.path.join(box, "jit-1.dump"))
    assert not [f for f in os.listdir(box) if f.startswith(".jittrace-jvmti")]
    right, wrong, reused, bad = judge(data, runs(out))
    print(f"    --jvmti in a container: {right}/{right + wrong} named right")
    assert right >= 200 and right >= WANT * (right + wrong), (right, wrong, bad)


def test_jvmti_all_cpus_attaches_running_jvms():
    wd = classes()
    jvm = start_jvm(wd, 6)
    data = os.path.join(TMP, "java-all.data")
    try:
        p = run([JT, "record", "-o", data, "-a", "--jvmti", "-F", "999",
                 "--duration", "2"], timeout=120)
    finally:
        out = jvm.stdout.read()
        jvm.wait(timeout=120)
    assert f"--jvmti: agent loaded into JVM {jvm.pid}" in p.stderr, p.stderr
    right, wrong, reused, bad = judge(data, runs(out))
    assert right >= 200 and right >= WANT * (right + wrong), (right, wrong, bad)


def test_agent_jvmti_names_running_jvms():
    from agentlib import agent, pprof_raw
    wd = classes()
    jvm = start_jvm(wd, 8)
    prof = os.path.join(TMP, "java-agent.pb.gz")
    try:
        with agent("-F", "99", "--jvmti") as a:
            deadline = time.monotonic() + 30
            while "agent loaded into JVM" not in a.said():
                assert time.monotonic() < deadline, a.said()
                time.sleep(0.2)
            assert f"--jvmti: agent loaded into JVM {jvm.pid}" in a.said(), a.said()
            code, body = a.get("/debug/pprof/profile?seconds=2")
            assert code == 200
            open(prof, "wb").write(body)
    finally:
        jvm.stdout.read()
        jvm.wait(timeout=120)
    _, samples = pprof_raw(prof)
    named = sum(n for n, _, fr, _ in samples if fr and GEN.match(fr[0]))
    assert named >= 20, samples[:5]


def private_file_pages(pid):
    """{(file, offset)}: present pages of pid's private file mappings that
    are no longer the file's (pagemap bit 61 clear), as the kernel sees
    them: independent of anything jittrace recorded."""
    out = set()
    with open(f"/proc/{pid}/pagemap", "rb") as pm, open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            f = line.split()
            if len(f) < 6 or f[1][3] != "p" or f[4] == "0" or not f[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in f[0].split("-"))
            n = (end - start) // 4096
            pm.seek(start // 4096 * 8)
            raw = pm.read(n * 8)
            for i in range(n):
                e = struct.unpack_from("<Q", raw, i * 8)[0]
                if e >> 63 & 1 and not e >> 61 & 1:
                    out.add((f[5], int(f[2], 16) + i * 4096))
    return out


def zeroed_by_execve(path):
    """The page of each PT_LOAD that ends inside a page and has .bss after
    it: the ELF loader zeroes its tail in execve (padzero). From readelf,
    not from jittrace's ELF reader."""
    out = set()
    for line in run(["readelf", "-lW", path]).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, filesz, memsz = int(f[1], 16), int(f[4], 16), int(f[5], 16)
            if memsz > filesz and (off + filesz) % 4096:
                out.add((os.path.realpath(path), (off + filesz) & ~4095))
    return out


def interpreter(path):
    for line in run(["readelf", "-lW", path]).stdout.splitlines():
        if "program interpreter:" in line:
            return os.path.realpath(line.split(":", 1)[1].strip(" ]"))
    raise AssertionError(f"{path} has no interpreter")


def stopped(pid):
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/stat") as f:
            st = f.read()
        if st[st.rindex(")") + 2] not in "tT":
            return False
    return True


def test_cow_pages_of_two_jvms_match_pagemap():
    """Two JVMs from one libjvm.so under --cow: the private pages audit
    lists for each are exactly those its pagemap shows, taken while both
    were frozen and killed with nothing written in between. That includes
    the partial .bss pages execve zeroes in java and ld-linux before the
    new image runs, attributed to the new image."""
    wd = classes()
    java = os.path.join(JDK, "java")
    data = os.path.join(TMP, "java-cow.data")
    err = open(os.path.join(TMP, "java-cow.err"), "w+")
    rec = subprocess.Popen([JT, "record", "--cow", "-o", data, "--user", USER, "--",
                            "sh", "-c", f"{java} -cp {wd} Hold & {java} -cp {wd} Hold & wait"],
                           stdout=subprocess.PIPE, stderr=err, text=True)
    pids, truth = [], {}
    try:
        for line in rec.stdout:
            f = line.split()
            if f and f[0] == "ready":
                pids.append(int(f[1]))
            if len(pids) == 2:
                break
        assert len(pids) == 2, "the JVMs never said ready"
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        for pid in pids:
            jt.wait_for(f"JVM {pid} to stop", lambda: stopped(pid))
        truth = {pid: private_file_pages(pid) for pid in pids}
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        rec.wait(timeout=120)
    err.seek(0)
    assert rec.returncode is not None and "0 events lost" in err.read()
    rows = json.loads(run([JT, "audit", "-i", data, "--json", "--kind", "cow"]).stdout)
    got, why = collections.defaultdict(set), collections.defaultdict(set)
    for r in rows:
        b = r["detail"]["backing"]
        if r["kind"] != "cow" or not b.startswith("/"):
            continue
        for pg in r["detail"]["pages"]:
            key = (b, int(pg["file_offset"], 16))
            got[r["pid"]].add(key)
            if pg["why"] == "execve-zeroed":
                why[r["pid"]].add(key)
    zeroed = zeroed_by_execve(java) | zeroed_by_execve(interpreter(java))
    assert len(zeroed) == 2, zeroed
    for pid in pids:
        t, g = truth[pid], got[pid]
        jvm = {k for k in t if k[0].endswith("/libjvm.so")}
        print(f"    JVM {pid}: {len(t & g)}/{len(t)} private file pages, "
              f"{len(g - t)} more; libjvm.so {len({k for k in g if k in jvm})}"
              f"/{len(jvm)}; execve-zeroed {sorted((os.path.basename(f), hex(o)) for f, o in why[pid])}")
        assert len(jvm) > 100
        assert t == g, (sorted(t - g)[:5], sorted(g - t)[:5])
        assert why[pid] == zeroed, (why[pid], zeroed)
