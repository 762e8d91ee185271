# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Java named by jittrace's JVMTI agent (--jvmti), at start and attached
to a running JVM, on a workload that makes HotSpot free compiled code and
reuse its addresses (tests/workloads/java/Churn.java). Truth comes from
the workload itself: which generation's code ran when (System.nanoTime,
CLOCK_MONOTONIC), so a sample named after the code that was at its
address before, or after, is caught."""
import bisect
import collections
import os
import re
import shutil
import subprocess
import time

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
         os.path.join(SRC, "Churn.java")])
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
