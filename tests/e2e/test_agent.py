# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""jittrace agent, read by real clients: go tool pprof over HTTP and on
the spool, a Pyroscope-style sink that decodes every push with go tool
pprof, and hostile HTTP clients."""
import datetime
import glob
import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.parse

from agentlib import (agent, fetch_in_background, in_window, leaf_counts, need,
                      pprof_raw, pprofcheck, window_mono)
from jt import AS_USER, JT, TMP, WL, record, run, script, wait_for
from test_jit import UNREAD, runs

# Within sampling noise: the agent and record sample the same run with
# timers of their own, so a share p of n samples varies by sqrt(p(1-p)/n),
# at most 0.5/sqrt(n). With at least 400 samples a side, two standard
# deviations of one side are 0.05: the tolerance per function. A whole
# process's named share (Node, lli; at least 200 samples) gets twice it.
SHARE_TOLERANCE = 0.05


def shares(counts, prefix):
    mine = {k: v for k, v in counts.items() if k.startswith(prefix)}
    total = sum(mine.values())
    return {k: v / total for k, v in mine.items()}, total


def scrape_beside_record(a, wl, prof):
    """The agent's profile of a 7 s window, scraped while record runs wl
    beside it at the same frequency: (head, samples, recording, wl's pid)."""
    t, res = fetch_in_background(f"{a.url}/debug/pprof/profile?seconds=7", prof)
    time.sleep(0.5)
    p, data = record(wl, ["-F", "199"])
    t.join()
    assert res["p"].returncode == 0, res["p"].stderr
    head, samples = pprof_raw(prof)
    pid = next(e["pid"] for e in script(data) if e["type"] == "exec")
    return head, samples, data, pid


def agent_and_report_shares(head, samples, data, pid, prefix):
    """Each prefix* leaf function's share of pid's samples, and their
    count, in the agent's profile and in the recording over its window:
    on a loaded machine the run may outlast the window, and then both
    sides miss the same tail."""
    got, n_agent = shares(leaf_counts(samples, pid=pid), prefix)
    counts = {}
    for e in in_window(script(data), window_mono(head, 7)):
        if e["pid"] == pid and e["sym"]:
            counts[e["sym"]] = counts.get(e["sym"], 0) + 1
    want, n_report = shares(counts, prefix)
    return got, n_agent, want, n_report


def test_agent_profile_names_jit_code_as_report_does():
    """Parca's and Alloy's scrape, while jitgen reuses one address for four
    functions (perf-map only): the shares match record + report."""
    need("go")
    prof = os.path.join(TMP, "agent-scrape.pb.gz")
    with agent("-F", "199") as a:
        head, samples, data, pid = scrape_beside_record(
            a, [os.path.join(WL, "jitgen"), "reuse", "4", "4.0", "-m"], prof)
        # -top straight from the URL, as a person would.
        top = run(["go", "tool", "pprof", "-top",
                   f"{a.url}/debug/pprof/profile?seconds=1"]).stdout
        assert "Type: cpu" in top and "Duration: 1s" in top, top
    assert head["PeriodType"] == "cpu nanoseconds", head
    assert {tuple(sorted(lab)) for *_, lab in samples} == {("comm", "pid", "source")}
    got, n_agent, want, n_report = agent_and_report_shares(
        head, samples, data, pid, "reused_")
    assert n_agent >= 400 and n_report >= 400, (n_agent, n_report)
    assert set(got) == set(want) == {f"reused_{i}" for i in range(4)}, (got, want)
    for k in want:
        assert abs(got[k] - want[k]) <= SHARE_TOLERANCE, (k, got, want)
    # Every JIT sample is named from the perf-map, none left anonymous.
    srcs = {lab["source"] for n, _, fr, lab in samples
            if lab.get("pid") == str(pid) and fr[0].startswith("reused_")}
    assert srcs == {"perfmap"}, srcs
    top = run(["go", "tool", "pprof", "-top", prof]).stdout
    assert "Type: cpu" in top and "reused_0" in top


def test_agent_names_code_run_before_its_perf_map_line():
    """jitgen runs each function before it writes its perf-map line: the
    agent reads the lines unparsed, and parses them only because samples
    of that process wait for a name. It names them as record + report do."""
    need("go")
    prof = os.path.join(TMP, "agent-late.pb.gz")
    with agent("-F", "199") as a:
        head, samples, data, pid = scrape_beside_record(
            a, [os.path.join(WL, "jitgen"), "late", "4", "4.0", "-m"], prof)
    got, n_agent, want, n_report = agent_and_report_shares(
        head, samples, data, pid, "late_")
    rep = json.loads(run([JT, "report", "-i", data, "--json"]).stdout)
    assert sum(r["retro"] for r in rep if r["sym"].startswith("late_")) > 0, rep
    assert n_report >= 50, n_report
    assert set(got) == set(want) == {f"late_{i}" for i in range(4)}, (got, want)
    # Half of each function's samples came before its line: named late,
    # or not at all.
    assert n_agent >= 0.9 * n_report, (n_agent, n_report)
    for k in want:
        assert abs(got[k] - want[k]) <= SHARE_TOLERANCE, (k, got, want)


def pprof_time(head):
    """A profile's [start, end) in CLOCK_MONOTONIC ns."""
    m = re.match(r"(\S+ \S+?)(?:\.(\d+))? \+0000 UTC", head["Time"])
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
    ns = int(t.replace(tzinfo=datetime.timezone.utc).timestamp()) * 10**9
    ns += int((m.group(2) or "0").ljust(9, "0"))
    # pprof prints "%.4v" of a Go duration: "1s", "3.58" (s), "999." (ms)
    d = head["Duration"]
    units = {"ms": 10**6, "µs": 10**3, "us": 10**3, "ns": 1, "s": 10**9, "": 10**9}
    num, unit = re.fullmatch(r"([\d.]+)(ms|µs|us|ns|s|)", d).groups()
    dur = int(float(num) * units[unit])
    off = time.time_ns() - time.monotonic_ns()
    return ns - off, ns - off + dur


def spool_files(d):
    return sorted(glob.glob(os.path.join(d, "jittrace-*.pb.gz")))


def spool_time(path):
    """When a spooled window began: its seconds, then its restart suffix."""
    m = re.search(r"-(\d{10})(?:\.(\d+))?\.pb\.gz$", path)
    return int(m.group(1)), int(m.group(2) or 0)


def test_agent_windows_name_each_tenant_of_a_reused_address():
    """Address reuse over time with only a perf-map: each 1 s window's
    profile names the function that was at the address in that window,
    never a later tenant."""
    need("go")
    spool = os.path.join(TMP, "agent-reuse-spool")
    with agent("-F", "299", "--window", "1", "--spool", spool):
        p = run([*AS_USER, os.path.join(WL, "jitgen"), "reuse", "4", "4.0", "-m"])
        time.sleep(3.5)  # the last window is cut once its stragglers are in
    stretches = {name: (t0, t1) for name, _, t0, t1 in runs(p.stdout)}
    assert len(stretches) == 4
    seen = set()
    slack = 20 * 10**6  # clock conversion between wall and monotonic
    for f in spool_files(spool):
        head, samples = pprof_raw(f)
        w0, w1 = pprof_time(head)
        for name, n in leaf_counts(samples, comm="jitgen").items():
            if not name.startswith("reused_"):
                continue
            t0, t1 = stretches[name]
            assert t0 - slack < w1 and w0 < t1 + slack, \
                (f, name, n, (w0, w1), (t0, t1))
            seen.add(name)
    assert seen == set(stretches), seen


def test_agent_spool_rotates_and_is_never_partial():
    need("go")
    spool = os.path.join(TMP, "agent-spool")
    os.makedirs(spool, exist_ok=True)
    stale = os.path.join(spool, ".jittrace-vm-1.pb.gz.tmp")
    open(stale, "w").write("half a profile from a killed agent")
    limit = 2048
    listings = []
    with agent("-F", "99", "--window", "1", "--spool", spool,
               "--spool-max", "2K") as a:
        assert not os.path.exists(stale)
        end = time.monotonic() + 8
        while time.monotonic() < end:
            listings.append(os.listdir(spool))
            time.sleep(0.01)
        m = a.metrics()
    # Nothing but whole profiles, under the name the issue gives.
    # What a reader globs: the temporary name is hidden (a dot file).
    names = {n for lst in listings for n in lst if not n.startswith(".")}
    tmps = {n for lst in listings for n in lst if n.startswith(".")}
    assert all(re.fullmatch(r"\.jittrace-.*\.pb\.gz\.tmp", n) for n in tmps), tmps
    host = socket.gethostname()
    assert all(re.fullmatch(rf"jittrace-{re.escape(host)}-\d{{10}}(\.\d+)?\.pb\.gz", n)
               for n in names), names
    files = spool_files(spool)
    # Rotated: windows were deleted. (Files on disk are counted after the
    # agent stopped and wrote its last window, the metrics before: the two
    # cannot be compared, and once a window landed between them.)
    assert m['jittrace_spool_files_total{event="deleted"}'] >= 1, m
    assert sum(os.path.getsize(f) for f in files) <= limit or len(files) == 1
    for f in files:
        head, _ = pprof_raw(f)
        assert head["PeriodType"] == "cpu nanoseconds"
    # A restart with a full spool keeps to the limit from its first window.
    # The spool is made full whatever size the windows came to: an older
    # window of the limit's size, which the first new window must push out.
    full = os.path.join(spool, f"jittrace-{host}-1000000000.pb.gz")
    with open(full, "wb") as f:
        f.write(b"\0" * limit)
    sizes = {f: os.path.getsize(f) for f in spool_files(spool)}
    with agent("-F", "99", "--window", "1", "--spool", spool,
               "--spool-max", "2K"):
        wait_for("a window", lambda: set(spool_files(spool)) - set(sizes), 30)
    files = spool_files(spool)
    assert full not in files, files
    # Oldest first go: what is left is the newest windows that fit, or
    # the newest alone.
    for f in files:
        sizes.setdefault(f, os.path.getsize(f))
    order = sorted(sizes, key=spool_time)
    keep = [order[-1]]
    for f in reversed(order[:-1]):
        if sum(sizes[k] for k in keep) + sizes[f] > limit:
            break
        keep.insert(0, f)
    assert files == sorted(keep), (files, keep, sizes)


class Sink(http.server.BaseHTTPRequestHandler):
    """Pyroscope's /ingest, as far as a push needs: refuses the first
    request with 503, keeps the rest."""
    got = []
    refused = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if not Sink.refused:
            Sink.refused += 1
            self.send_response(503)
            self.end_headers()
            return
        Sink.got.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_agent_spool_makes_room_on_a_full_disk():
    """A full disk: the agent deletes its own oldest windows to write the
    new ones, rather than write nothing until someone else frees space."""
    mnt = os.path.join(TMP, "spool-full")
    os.makedirs(mnt, exist_ok=True)
    run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt])
    try:
        # Four pages left: a few windows fill them.
        with open(os.path.join(mnt, "filler"), "wb") as f:
            f.write(b"\0" * (240 << 10))
        spool = os.path.join(mnt, "spool")
        with agent("-F", "99", "--window", "1", "--spool", spool) as a:
            deleted = 'jittrace_spool_files_total{event="deleted"}'
            written = 'jittrace_spool_files_total{event="written"}'
            wait_for("a window deleted for room", lambda: a.metrics()[deleted] >= 1, 60)
            w0 = a.metrics()[written]
            wait_for("three more windows", lambda: a.metrics()[written] >= w0 + 3, 60)
            m = a.metrics()
        assert m['jittrace_spool_files_total{event="error"}'] == 0, m
        files = spool_files(spool)
        assert files and len(files) < m[written], (files, m)
    finally:
        run(["umount", mnt])


def test_agent_refuses_a_spool_others_may_write():
    import pwd
    nobody = pwd.getpwnam("nobody")
    for name, mode, owner in (("spool-world", 0o777, 0), ("spool-theirs", 0o700, nobody.pw_uid)):
        d = os.path.join(TMP, name)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, mode)
        os.chown(d, owner, owner and nobody.pw_gid)
        p = run([JT, "agent", "--spool", d], check=False, timeout=60)
        assert p.returncode != 0, p.stderr
        assert ("may be written by other users" if mode == 0o777
                else f"belongs to uid {owner}") in p.stderr, p.stderr
    # A planted link is no spool either.
    link = os.path.join(TMP, "spool-link")
    if not os.path.lexists(link):
        os.symlink(os.path.join(TMP, "spool-theirs"), link)
    p = run([JT, "agent", "--spool", link], check=False, timeout=60)
    assert p.returncode != 0 and f"--spool {link}: Not a directory" in p.stderr, p.stderr


class AuthSink(http.server.BaseHTTPRequestHandler):
    """An /ingest that keeps each push's Authorization header."""
    auth = []

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        AuthSink.auth.append(self.headers.get("Authorization"))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_agent_push_credentials_come_from_a_file_or_the_environment():
    """Never only in argv, where ps shows them: a bearer token from
    --push-auth-file, user:password from $JITTRACE_PUSH_AUTH."""
    import base64
    token = os.path.join(TMP, "push-token")
    with open(token, "w") as f:
        f.write("Bearer s3cret-token\n")
    os.chmod(token, 0o600)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AuthSink)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    basic = "Basic " + base64.b64encode(b"tenant:pa55").decode()
    try:
        for opts, env, want in ((["--push-auth-file", token], {}, "Bearer s3cret-token"),
                                ([], {"JITTRACE_PUSH_AUTH": "tenant:pa55"}, basic)):
            AuthSink.auth = []
            with agent("-F", "99", "--window", "1", "--push", url, *opts,
                       env={**os.environ, **env}) as a:
                wait_for("two pushes", lambda: len(AuthSink.auth) >= 2, 30)
                argv = open(f"/proc/{a.p.pid}/cmdline", "rb").read()
            assert set(AuthSink.auth) == {want}, AuthSink.auth
            assert b"s3cret" not in argv and b"pa55" not in argv
    finally:
        srv.shutdown()
    # A file other users may write is refused, before anything is pushed.
    os.chmod(token, 0o622)
    p = run([JT, "agent", "--push", url, "--push-auth-file", token], check=False,
            timeout=60)
    assert p.returncode != 0 and "may be written by other users" in p.stderr, p.stderr


class PolicySink(http.server.BaseHTTPRequestHandler):
    """An /ingest that refuses the first window (400), turns the next
    away for now (503), then takes all."""
    got = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        q = dict(x.split("=", 1) for x in self.path.split("?", 1)[1].split("&"))
        code = (400, 503)[len(PolicySink.got)] if len(PolicySink.got) < 2 else 200
        PolicySink.got.append((q["from"], code, body))
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args):
        pass


def serve(handler):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


def test_agent_push_retries_only_what_may_pass_later():
    """A 4xx is the backend refusing this window: sent again it would be
    refused again. Only 429 and 5xx are retried, as Pyroscope's agents do."""
    PolicySink.got = []
    srv, url = serve(PolicySink)
    try:
        with agent("-F", "99", "--window", "1", "--push", url) as a:
            wait_for("three windows taken",
                     lambda: sum(1 for _, c, _ in PolicySink.got if c == 200) >= 3, 30)
            m = a.metrics()
    finally:
        srv.shutdown()
    froms = [f for f, _, _ in PolicySink.got]
    refused, retried = froms[0], froms[1]
    assert froms.count(refused) == 1, froms
    assert froms.count(retried) == 2, froms
    assert m['jittrace_push_total{result="rejected"}'] == 1, m
    assert m['jittrace_push_total{result="failed"}'] == 2, m
    assert m['jittrace_push_total{result="dropped"}'] == 0, m


def test_agent_pushes_invalid_utf8_names_as_valid_profiles_once():
    """A JIT names its code with bytes that are not UTF-8: every pushed
    window is still a profile Pyroscope takes, each pushed once."""
    from test_safety import NAME1, nobody_dir
    AuthSink.auth, bodies, froms = [], [], []

    class Keep(AuthSink):
        def do_POST(self):
            froms.append(re.search(r"[?&]from=(\d+)", self.path).group(1))
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.end_headers()

    srv, url = serve(Keep)
    try:
        with agent("-F", "199", "--window", "1", "--push", url) as a:
            run([*AS_USER, "python3", os.path.join(os.path.dirname(__file__),
                 "../workloads/hostile.py"), nobody_dir("push-hostile")])
            n = len(bodies)
            wait_for("the windows after it", lambda: len(bodies) >= n + 3, 30)
            m = a.metrics()
    finally:
        srv.shutdown()
    paths = []
    for i, b in enumerate(bodies):
        paths.append(os.path.join(TMP, f"pushed-utf8-{i}.pb.gz"))
        open(paths[-1], "wb").write(b)
    pprofcheck(*paths)
    names = set()
    for f in paths:
        for _, _, frames, _ in pprof_raw(f)[1]:
            names.update(frames)
    assert NAME1 in names, sorted(x for x in names if "bad" in x)
    assert m['jittrace_push_total{result="failed"}'] == 0, m
    assert len(froms) == len(set(froms)), froms  # each window once


def test_agent_pushes_every_window_and_retries():
    need("go")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    srv.timeout = 5
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Sink.got, Sink.refused = [], 0
    try:
        with agent("-F", "99", "--window", "1", "--push",
                   f"http://127.0.0.1:{srv.server_address[1]}/") as a:
            wait_for("three pushes", lambda: len(Sink.got) >= 3, 30)
            m = a.metrics()
    finally:
        srv.shutdown()
    assert m['jittrace_push_total{result="failed"}'] >= 1, m
    assert m['jittrace_push_total{result="dropped"}'] == 0, m
    host = re.escape(socket.gethostname())
    for i, (path, ctype, body) in enumerate(Sink.got):
        q = dict(x.split("=", 1) for x in path.split("?", 1)[1].split("&"))
        assert path.startswith("/ingest?"), path
        assert re.fullmatch(rf"jittrace%7Bhost%3D{host}%7D", q["name"]), q
        # Pyroscope's service_name for pprof: the name before its labels,
        # the one the README's Alloy scrape config gives.
        assert urllib.parse.unquote(q["name"]).split("{")[0] == readme_service_name()
        assert q["format"] == "pprof" and ctype == "application/octet-stream"
        assert int(q["until"]) - int(q["from"]) == 1, q
        f = os.path.join(TMP, f"pushed-{i}.pb.gz")
        open(f, "wb").write(body)
        head, samples = pprof_raw(f)
        assert head["PeriodType"] == "cpu nanoseconds" and samples


def test_agent_sigterm_mid_window_writes_what_it_has():
    need("go")
    spool = os.path.join(TMP, "agent-sigterm")
    prof = os.path.join(TMP, "agent-sigterm-request.pb.gz")
    with agent("-F", "99", "-g", "--window", "30", "--spool", spool) as a:
        # A scrape of 60 s is under way: it gets what there is.
        t, res = fetch_in_background(f"{a.url}/debug/pprof/profile?seconds=60", prof)
        time.sleep(3)
        t0 = time.monotonic()
    t.join()
    assert time.monotonic() - t0 < 15
    assert res["p"].returncode == 0, res["p"].stderr
    r0, r1 = pprof_time(pprof_raw(prof)[0])
    assert 1e9 < r1 - r0 < 10e9, (r0, r1)
    files = spool_files(spool)
    assert len(files) == 1 and os.listdir(spool) == [os.path.basename(files[0])]
    head, samples = pprof_raw(files[0])
    w0, w1 = pprof_time(head)
    assert 2.5e9 < w1 - w0 < 10e9, (w0, w1)
    # -g: call chains, leaf first, down to the syscall entry.
    assert any(len(frames) > 2 for _, _, frames, _ in samples), samples[:5]


def raw_http(port, data, timeout=5):
    """Send bytes, return what came back (b"" when the server hung up)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def status_of(reply):
    m = re.match(rb"HTTP/1\.[01] (\d+)", reply)
    return int(m.group(1)) if m else None


def test_agent_refuses_hostile_http_clients():
    with agent("-F", "19") as a:
        for path, want in (("/debug/pprof/profile?seconds=abc", 400),
                           ("/debug/pprof/profile?seconds=0", 400),
                           ("/debug/pprof/profile?seconds=99999", 400),
                           ("/debug/pprof/profile?seconds=-1", 400),
                           ("/debug/pprof/profile?seconds=1&pid=x", 400),
                           ("/audit?pid=0", 400), ("/nope", 404),
                           ("/healthz", 200)):
            status, _ = a.get(path)
            assert status == want, (path, status)
        reply = raw_http(a.port, b"POST /metrics HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 4\r\n\r\nabcd")
        assert status_of(reply) == 405, reply[:80]
        big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n"
        assert status_of(raw_http(a.port, big)) in (None, 413, 414, 431)
        # Bodies where none belongs, and malformed requests: an exact 4xx.
        for req, want in ((b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd", 413),
                          (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                           b"\r\n4\r\nabcd\r\n0\r\n\r\n", 413),
                          (b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Length: 99999999999999999999\r\n\r\n", 413),
                          (b"\x01\x02GARBAGE blah\r\n\r\n", 400),
                          (b"GET /metrics HTTP/1.1\r\n\r\n", 400)):
            assert status_of(raw_http(a.port, req)) == want, (req[:40], want)
        # Slowloris: half-sent requests held open leave room for probes.
        socks = []
        for _ in range(16):
            s = socket.create_connection(("127.0.0.1", a.port), timeout=2)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        try:
            assert [_try_ok(a) for _ in range(10)] == [True] * 10
        finally:
            for s in socks:
                s.close()
        # More profile requests at once than it cuts: the rest get 503.
        got = []
        ts = [threading.Thread(target=lambda: got.append(
            a.get("/debug/pprof/profile?seconds=2")[0])) for _ in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sorted(got).count(200) == 4 and sorted(got).count(503) == 2, got
        m = a.metrics()
        assert m["jittrace_http_rejected_total"] >= 10, m
    assert a.p.returncode == 0


def _try_ok(a):
    try:
        return a.get("/healthz", timeout=3)[0] == 200
    except OSError:
        return False


def test_agent_memory_stays_under_its_cap_with_a_huge_perfmap():
    """A process writes a 1 GB perf-map: the agent copies its share of
    --max-memory, counts the rest, and keeps its RSS under the cap."""
    cap_mb = 96
    with agent("-F", "19", "--window", "1", "--max-memory", str(cap_mb)) as a:
        # A second runtime's table makes two: past the budget, one goes.
        big = [subprocess.Popen([*AS_USER, os.path.join(WL, "bigmap"), str(n), "3"],
                                stdout=subprocess.DEVNULL) for n in (1 << 30, 64 << 20)]
        assert [b.wait(timeout=300) for b in big] == [0, 0]
        # The copy stops at 1/32 of the cap; the rest is counted.
        want_cut = (1 << 30) + (64 << 20) - 2 * (cap_mb << 20) // 32
        wait_for("the cut to be counted", lambda: a.metrics()[
            'jittrace_lost_bytes_total{cause="jit_bytes_cut"}'] >= want_cut, 60)
        m = a.metrics()
    # What was copied is more than the budget holds: the tables went.
    assert m["jittrace_jit_evicted_processes_total"] >= 1, m
    assert m['jittrace_lost_total{cause="jit_evicted"}'] > 0, m
    assert m["jittrace_agent_peak_rss_bytes"] < cap_mb << 20, m
    cut_mb = m['jittrace_lost_bytes_total{cause="jit_bytes_cut"}'] / 2**20
    gone = m['jittrace_lost_total{cause="jit_evicted"}']
    peak = m["jittrace_agent_peak_rss_bytes"] / 2**20
    print(f"    peak RSS {peak:.0f} MB under --max-memory {cap_mb}; "
          f"{cut_mb:.0f} MB of perf-map not read, {gone:.0f} JIT records evicted")


def test_agent_counts_writes_to_perfmaps_it_never_read():
    """A process writes one perf-map in /tmp and one elsewhere: the
    writes to the one the agent could not read are counted as lost, a
    grace after the process exits; the other's are not."""
    d = os.path.join(TMP, "agent-unread")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    key = 'jittrace_lost_total{cause="perfmap_unread"}'
    with agent("-F", "19", "--window", "1") as a:
        before = a.metrics()[key]
        subprocess.run([*AS_USER, "python3", "-c", UNREAD, d],
                       capture_output=True, timeout=60, check=True)
        wait_for("the unread writes to be counted",
                 lambda: a.metrics()[key] - before >= 5, 30)
        # Rounds after the grace: nothing more is counted for it.
        n = a.metrics()["jittrace_windows_total"]
        wait_for("two more windows", lambda: a.metrics()["jittrace_windows_total"] >= n + 2, 30)
        got = a.metrics()[key] - before
    assert got == 5, got


def scrape_while(cmd, seconds, freq="199"):
    """The agent's profile of `seconds` while cmd runs under jittrace
    record: (pprof samples, the recording, the window on its clock)."""
    prof = os.path.join(TMP, f"agent-{next(_n)}.pb.gz")
    with agent("-F", freq) as a:
        t, res = fetch_in_background(
            f"{a.url}/debug/pprof/profile?seconds={seconds}", prof)
        time.sleep(0.5)
        _, data = record(cmd, ["-F", freq])
        t.join()
    assert res["p"].returncode == 0, res["p"].stderr
    head, samples = pprof_raw(prof)
    return samples, data, window_mono(head, seconds)


_n = iter(range(10**6))


def jit_share(samples, pid, source):
    """Of pid's user samples, how many are named from source, and the
    names they got."""
    mine = [(n, fr[0], lab["source"]) for n, _, fr, lab in samples
            if lab.get("pid") == str(pid) and lab.get("source") != "kallsyms"]
    total = sum(n for n, _, _ in mine)
    named = sum(n for n, _, src in mine if src == source)
    return named / max(total, 1), total, {f for _, f, src in mine if src == source}


def recorded_share(data, pid, source, window):
    """The share of pid's user samples that the recording names from
    source, over the agent's window."""
    mine = [e for e in in_window(script(data), window)
            if e["pid"] == pid and not e["kernel"]]
    return sum(1 for e in mine if e["source"] == source) / max(len(mine), 1)


def test_agent_names_node_and_lli_jit_code_as_report_does():
    """Real runtimes: Node with --perf-prof and lli's MCJIT write jitdumps;
    the agent names their samples from them, as report does, with the
    same share of named samples within sampling noise."""
    need("go")
    need("node")
    need("lli")
    import jitdump
    from test_runtimes import JS, workdir
    d = workdir("agent-node")
    samples, data, window = scrape_while(
        ["sh", "-c", f"cd {d} && exec node --perf-prof {JS} 2"], 5)
    pid = int(os.path.basename(glob.glob(os.path.join(d, "jit-*.dump"))[0])[4:-5])
    names = {r[4] for r in jitdump.read(os.path.join(d, f"jit-{pid}.dump"))
             if r[1] == "load"}
    got, n, named = jit_share(samples, pid, "jitdump")
    want = recorded_share(data, pid, "jitdump", window)
    assert n >= 200 and abs(got - want) <= 2 * SHARE_TOLERANCE, (got, want, n)
    assert named and named <= names, named - names
    assert any(f.startswith("JS:*made_") for f in named), named
    print(f"    node: {got:.1%} of {n} samples named from the jitdump (report: {want:.1%})")
    d = workdir("agent-lli")
    ll = os.path.join(os.path.dirname(JS), "hot.ll")
    samples, data, window = scrape_while(
        ["env", f"JITDUMPDIR={d}", "lli", "-jit-kind=mcjit", ll], 4, freq="999")
    dump = glob.glob(os.path.join(d, ".debug/jit/*/jit-*.dump"))[0]
    pid = int(os.path.basename(dump)[4:-5])
    got, n, named = jit_share(samples, pid, "jitdump")
    want = recorded_share(data, pid, "jitdump", window)
    assert n >= 200 and abs(got - want) <= 2 * SHARE_TOLERANCE, (got, want, n)
    assert "spin" in named, named
    print(f"    lli: {got:.1%} of {n} samples named from the jitdump (report: {want:.1%})")


def test_agent_names_a_containers_perf_map():
    """Node in its own PID and mount namespaces writes /tmp/perf-1.map in
    a /tmp only it sees; the agent reads it through /proc/PID/root."""
    need("go")
    need("node")
    need("unshare")
    from test_containers import BOX_JS, box_dir, container, perfmap_truth
    tmp = box_dir("agent-ct")
    prof = os.path.join(TMP, "agent-ct.pb.gz")
    with agent("-F", "199") as a:
        t, res = fetch_in_background(f"{a.url}/debug/pprof/profile?seconds=5", prof)
        time.sleep(0.5)
        run([*AS_USER, *container(tmp, f"exec node --perf-basic-prof {BOX_JS} 2")])
        t.join()
    assert res["p"].returncode == 0, res["p"].stderr
    truth = {n for _, _, n in perfmap_truth(f"{tmp}/perf-1.map")}
    _, samples = pprof_raw(prof)
    node = [(n, fr[0], lab["source"]) for n, _, fr, lab in samples
            if lab.get("comm") == "node" and lab.get("source") != "kallsyms"]
    named = [(n, f) for n, f, src in node if src == "perfmap"]
    assert sum(n for n, _ in named) > 50, node[:10]
    assert {f for _, f in named} <= truth, {f for _, f in named} - truth
    print(f"    {sum(n for n, _ in named)}/{sum(n for n, _, _ in node)} of node's "
          "user samples named from the container's perf-1.map")


UNIT = os.path.join(os.path.dirname(__file__), "../../packaging/systemd/jittrace-agent.service")


def unit_caps():
    """The unit's AmbientCapabilities, as setpriv names them; those this
    machine's bounding set lacks are left out, loudly."""
    line = next(l for l in open(UNIT) if l.startswith("AmbientCapabilities="))
    caps = [c[len("CAP_"):].lower() for c in line.split("=", 1)[1].split()]
    have = []
    for c in caps:
        ok = subprocess.run(["setpriv", f"--inh-caps=+{c}", f"--ambient-caps=+{c}",
                             "true"], capture_output=True).returncode == 0
        if ok:
            have.append(c)
        else:
            print(f"    NOTE: CAP_{c.upper()} is not in this machine's bounding set: "
                  "run without it")
    return have


def as_nobody_with(caps):
    import pwd
    pw = pwd.getpwnam("nobody")
    spec = ",".join("+" + c for c in caps)
    return ["setpriv", "--reuid", str(pw.pw_uid), "--regid", str(pw.pw_gid),
            "--clear-groups", f"--inh-caps={spec}", f"--ambient-caps={spec}"]


def test_agent_runs_as_nobody_with_the_units_capabilities():
    """Not root: a uid of its own and the unit's capabilities. A JIT run
    by another user is named from its perf-map, the kernel from kallsyms."""
    need("go")
    import pwd
    caps = unit_caps()
    daemon = pwd.getpwnam("daemon")
    prof = os.path.join(TMP, "agent-caps.pb.gz")
    with agent("-F", "199", prefix=as_nobody_with(caps)) as a:
        assert a.get("/healthz")[0] == 200
        t, res = fetch_in_background(f"{a.url}/debug/pprof/profile?seconds=4", prof)
        time.sleep(0.5)
        run(["setpriv", "--reuid", str(daemon.pw_uid), "--regid", str(daemon.pw_gid),
             "--clear-groups", os.path.join(WL, "jitgen"), "reuse", "4", "2.0", "-m"])
        t.join()
        status = open(f"/proc/{a.p.pid}/status").read()
        assert re.search(r"^Uid:\s+65534\b", status, re.M), status
    assert res["p"].returncode == 0, res["p"].stderr
    _, samples = pprof_raw(prof)
    jit = leaf_counts(samples, comm="jitgen", source="perfmap")
    assert {k for k in jit if k.startswith("reused_")} == {f"reused_{i}" for i in range(4)}, jit
    if "syslog" in caps:
        assert sum(n for n, _, _, lab in samples if lab.get("source") == "kallsyms") > 0


def test_only_the_agent_loads_libcurl_and_libmicrohttpd():
    """They and the 33 libraries they pull in cost every command 7 ms
    before main: the agent opens them itself, and says so when one is
    not there to open."""
    needed = run(["readelf", "-d", JT]).stdout
    for lib in ("libcurl", "libmicrohttpd"):
        assert f"[{lib}." not in needed, needed
    bad = os.path.join(TMP, "badlibs")
    os.makedirs(bad, exist_ok=True)
    for lib in ("libcurl.so.4", "libmicrohttpd.so.12"):
        with open(os.path.join(bad, lib), "w") as f:
            f.write("not an ELF file\n")
    p = run([JT, "agent", "--listen", "127.0.0.1:0"], check=False, timeout=60,
            env=dict(os.environ, LD_LIBRARY_PATH=bad))
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.fullmatch(r"jittrace: agent: \S*/badlibs/libcurl\.so\.4: .*"
                        r" \(its HTTP server and push need libmicrohttpd and libcurl\)\n",
                        p.stderr), p.stderr


def test_doctor_names_the_missing_capability():
    caps = [c for c in unit_caps() if c != "perfmon"]
    p = run([*as_nobody_with(caps), JT, "doctor"], check=False)
    assert p.returncode == 1, p.stdout
    assert re.search(r"^  privileges +no +.*missing: CAP_PERFMON$", p.stdout, re.M), p.stdout
    assert re.search(r"^  CAP_PERFMON +missing +needed: ", p.stdout, re.M), p.stdout
    for c in caps:
        assert re.search(rf"^  CAP_{c.upper()} +ok ", p.stdout, re.M), (c, p.stdout)


def test_agent_audit_is_audit_p():
    """/audit answers what `audit -p PID --json` says of a live process,
    and /audit alone covers every live process with JIT code."""
    from jt import hx  # noqa: F401
    f = os.path.join(TMP, "agent-cowhold.shared")
    os.chmod(TMP, 0o777)
    with agent("-F", "49", "--window", "1", token="audit-t0ken") as a:
        proc = subprocess.Popen([*AS_USER, os.path.join(WL, "cowhold"),
                                 os.path.join(WL, "libjtcow.so"), f, TMP],
                                stdout=subprocess.PIPE, text=True)
        try:
            for line in proc.stdout:
                if line.startswith("ready"):
                    break
            want = json.loads(run([JT, "audit", "-p", str(proc.pid), "--json"]).stdout)
            status, body = a.get(f"/audit?pid={proc.pid}")
            assert status == 200
            assert json.loads(body) == want
            assert {r["kind"] for r in want} >= {"cow", "perfmap-reuse", "jit-orphan"}
            wait_for("the agent to know its JIT code", lambda: any(
                r["pid"] == proc.pid for r in json.loads(a.get("/audit")[1])), 30)
            mine = [r for r in json.loads(a.get("/audit")[1]) if r["pid"] == proc.pid]
            assert mine == want
        finally:
            subprocess.run(["pkill", "-KILL", "-f", "cowhold"])
            proc.wait()
            os.unlink(f"/tmp/perf-{proc.pid}.map")


def test_agent_metrics_count_what_it_saw():
    """/metrics while jitpages holds 8 code pages in one kernel VMA: one
    more coalesced finding, its JIT samples counted by source, and the
    counters never go down."""
    with agent("-F", "199", "--window", "1") as a:
        before = a.metrics()
        p = subprocess.Popen([*AS_USER, os.path.join(WL, "jitpages"), "8", "3"],
                             stdout=subprocess.PIPE, text=True)
        try:
            wait_for("the coalesced VMA", lambda: a.metrics()[
                'jittrace_audit_findings{kind="coalesced"}']
                >= before['jittrace_audit_findings{kind="coalesced"}'] + 1, 20)
        finally:
            p.wait()
        wait_for("two windows cut", lambda: a.metrics()["jittrace_windows_total"]
                 >= before["jittrace_windows_total"] + 2, 20)
        after = a.metrics()
    for k, v in before.items():
        if k.endswith("_total") or "_total{" in k:
            assert after[k] >= v, (k, v, after[k])
    assert after['jittrace_events_total{kind="bpf"}'] > before['jittrace_events_total{kind="bpf"}']
    assert after["jittrace_processes"] >= 1 and after["jittrace_regions"] >= 10
    assert after["jittrace_agent_rss_bytes"] > 0


def test_agent_frees_jit_names_once_their_process_is_gone():
    """Two JITs one after the other, each naming 3,000 functions in its
    perf-map: the agent holds their names while their code is sampled,
    and none of them once each has exited, so names that come and go for
    days do not pile up."""
    n = 3000
    with agent("-F", "199", "--window", "1") as a:
        base = a.metrics()["jittrace_jit_names"]
        for _ in range(2):
            p = subprocess.Popen([*AS_USER, os.path.join(WL, "jitgen"), "many",
                                  str(n), "120", "-m"],
                                 stdout=subprocess.DEVNULL)
            try:
                # A sample in its code builds its table, and interns them.
                wait_for("its names held", lambda: a.metrics()[
                    "jittrace_jit_names"] >= base + n, 60)
            finally:
                p.kill()
                p.wait()
                try:
                    os.unlink(f"/tmp/perf-{p.pid}.map")
                except FileNotFoundError:
                    pass
            wait_for("its names freed", lambda: a.metrics()[
                "jittrace_jit_names"] <= base, 60)
        m = a.metrics()
    assert m["jittrace_jit_names"] <= base


def test_agent_listens_on_a_name_and_on_ipv6():
    from agentlib import free_port
    for host, url_host in (("localhost", "localhost"), ("[::1]", "[::1]")):
        port = free_port()
        p = subprocess.Popen([JT, "agent", "--listen", f"{host}:{port}"],
                             stderr=subprocess.PIPE, text=True)
        try:
            for line in p.stderr:
                if "agent: serving" in line:
                    break
            assert f"http://{url_host}:{port}/" in line, line
            import urllib.request
            with urllib.request.urlopen(f"http://{url_host}:{port}/healthz", timeout=10) as r:
                assert r.status == 200 and r.read() == b"ok\n"
        finally:
            p.terminate()
            assert p.wait(timeout=30) == 0
    bad = run([JT, "agent", "--listen", "nosuchhost.invalid:1"], check=False)
    assert bad.returncode == 1 and "nosuchhost.invalid" in bad.stderr, bad.stderr
    bad = run([JT, "agent", "--listen", "6060"], check=False)
    assert bad.returncode == 2 and "--listen wants ADDR:PORT" in bad.stderr
    bad = run([JT, "agent", "--tier", "bogus"], check=False)
    assert bad.returncode == 2 and "--tier wants auto, kernel, fentry" in bad.stderr


def kernel_addresses(raw):
    """The addresses go tool pprof -raw lists for kernel locations."""
    return [int(m.group(1), 16) for m in
            re.finditer(r"^\s+\d+: 0x([0-9a-f]+) M=\d+ .*\[kernel\.kallsyms\]", raw, re.M)]


GET_AS = ("import sys, urllib.request as u, urllib.error as e\n"
          "try:\n"
          "    r = u.urlopen(sys.argv[1], timeout=120); b = r.read(); c = r.status\n"
          "except e.HTTPError as x:\n"
          "    b = x.read(); c = x.code\n"
          "sys.stdout.buffer.write(b'%03d' % c + b)\n")


def get_as_nobody(url):
    """(status, body) of a GET by another user of this machine."""
    out = subprocess.run([*AS_USER, "python3", "-c", GET_AS, url],
                         capture_output=True, timeout=180, check=True).stdout
    return int(out[:3]), out[3:]


def raw_of(body, name):
    path = os.path.join(TMP, name)
    open(path, "wb").write(body)
    return subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True,
                          text=True, errors="replace", check=True).stdout


def test_agent_answers_only_callers_with_its_token():
    """With --auth-token-file, every endpoint but /healthz wants the
    token. Without one, a caller on this machine is known by its socket:
    root sees every process, another user only its own, and kernel
    addresses only as kptr_restrict lets it."""
    need("go")
    with open("/proc/sys/kernel/kptr_restrict") as f:
        kptr = f.read()
    run(["sh", "-c", "echo 1 > /proc/sys/kernel/kptr_restrict"])
    try:
        with agent("-F", "199", token="s3cret-tok") as a:
            assert a.get("/healthz", token="")[0] == 200
            for path in ("/metrics", "/audit", "/debug/pprof/profile?seconds=1"):
                assert a.get(path, token="")[0] == 401, path
            assert a.get("/metrics", token="wrong-tok!")[0] == 401
            assert a.get("/audit")[0] == 200
        with agent("-F", "199", "--window", "1") as a:
            res = {}
            url = f"{a.url}/debug/pprof/profile?seconds=4"
            ts = [threading.Thread(target=lambda: res.update(root=a.get(url.replace(a.url, ""), timeout=120))),
                  threading.Thread(target=lambda: res.update(nobody=get_as_nobody(url)))]
            for t in ts:
                t.start()
            time.sleep(0.5)
            mine = subprocess.Popen([*AS_USER, os.path.join(WL, "mmloop"), "callsfor", "1"],
                                    stdout=subprocess.PIPE)
            theirs = subprocess.Popen([os.path.join(WL, "mmloop"), "callsfor", "1"],
                                      stdout=subprocess.PIPE)
            mine.communicate(timeout=120)
            theirs.communicate(timeout=120)
            for t in ts:
                t.join()
            # A root JIT: root's /audit lists it, nobody's must not.
            jit = subprocess.Popen([os.path.join(WL, "jitgen"), "reuse", "2", "60", "-m"],
                                   stdout=subprocess.PIPE)
            try:
                wait_for("root's JIT in /audit", lambda: any(
                    r["pid"] == jit.pid for r in json.loads(a.get("/audit")[1])), 60)
                audit = get_as_nobody(f"{a.url}/audit")
                other = get_as_nobody(f"{a.url}/audit?pid={jit.pid}")
            finally:
                jit.kill()
                jit.wait()
                os.unlink(f"/tmp/perf-{jit.pid}.map")
            assert get_as_nobody(f"{a.url}/metrics")[0] == 200
    finally:
        run(["sh", "-c", f"echo {kptr.strip()} > /proc/sys/kernel/kptr_restrict"])
    assert res["root"][0] == 200 and res["nobody"][0] == 200, res
    root_raw = raw_of(res["root"][1], "agent-auth-root.pb.gz")
    nobody_raw = raw_of(res["nobody"][1], "agent-auth-nobody.pb.gz")
    root_pids = set(re.findall(r"pid:\[(\d+)\]", root_raw))
    nobody_pids = set(re.findall(r"pid:\[(\d+)\]", nobody_raw))
    assert {str(mine.pid), str(theirs.pid)} <= root_pids, root_pids
    assert str(mine.pid) in nobody_pids and str(theirs.pid) not in nobody_pids, nobody_pids
    import pwd
    nobody_uid = pwd.getpwnam("nobody").pw_uid
    for pid in nobody_pids:
        try:
            assert os.stat(f"/proc/{pid}").st_uid == nobody_uid, pid
        except FileNotFoundError:
            pass  # gone since; mmloop was nobody's
    shown, hidden = kernel_addresses(root_raw), kernel_addresses(nobody_raw)
    assert shown and all(x >> 63 for x in shown), shown[:5]
    assert hidden and not any(hidden), hidden[:5]
    assert audit[0] == 200 and json.loads(audit[1]) == [], audit
    assert other[0] == 403, other


def test_agent_frees_the_slot_of_a_client_that_left():
    """Profile requests whose clients went away give their slot back at
    once, not when their 300 seconds are up."""
    def ask():
        s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
        s.sendall(b"GET /debug/pprof/profile?seconds=300 HTTP/1.1\r\nHost: x\r\n\r\n")
        return s

    with agent("-F", "19") as a:
        # Ours take the slots until one is refused: then all are ours.
        holders = []
        for _ in range(6):
            s = ask()
            s.settimeout(2)
            try:
                reply = s.recv(64)
            except socket.timeout:
                holders.append(s)  # no answer: it holds a slot
                continue
            s.close()
            assert status_of(reply) == 503, reply
            break
        else:
            raise AssertionError("no request was refused")
        assert len(holders) >= 4, len(holders)
        for s in holders:
            s.close()
        wait_for("a free slot", lambda: a.get("/debug/pprof/profile?seconds=1",
                                              timeout=60)[0] == 200, 30)


MAPPER = """
import mmap, sys
lib = sys.argv[1]
keep = []
with open(lib, "rb") as f:
    for _ in range(300):
        m = mmap.mmap(f.fileno(), 4096, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE)
        m[0] = m[0]  # a private copy of the page: a cow finding each
        keep.append(m)
print("ready", flush=True)
sys.stdin.readline()
"""


def test_agent_audit_parses_each_library_once_under_its_cap():
    """A process maps a 100 MB library 300 times: /audit reads its symbols
    once, not once per mapping, and the agent stays under --max-memory."""
    lib = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"
    if not os.path.exists(lib):
        from jt import Skip
        raise Skip(f"{lib} is not installed")
    with agent("-F", "19", "--max-memory", "128", token="cap-t0ken") as a:
        proc = subprocess.Popen([*AS_USER, "python3", "-c", MAPPER, lib],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline() == "ready\n"
            status, body = a.get(f"/audit?pid={proc.pid}", timeout=300)
            m = a.metrics()
        finally:
            proc.kill()
            proc.wait()
    assert status == 200, body[:200]
    cow = [f for f in json.loads(body) if f["kind"] == "cow" and lib in json.dumps(f)]
    assert len(cow) == 300, len(cow)
    peak = m["jittrace_agent_peak_rss_bytes"]
    assert peak < 128 << 20, peak
    print(f"    peak RSS {peak / 2**20:.0f} MB for 300 mappings of {os.path.basename(lib)}")


def test_daemonset_never_listens_beyond_loopback_without_a_token():
    """The DaemonSet's agent listens on the pod network: it must want the
    token, read from a mounted Secret."""
    text = open(os.path.join(os.path.dirname(UNIT), "../kubernetes/daemonset.yaml")).read()
    args = re.findall(r'"([^"]*)"', re.search(r"args: \[(.*?)\]", text, re.S).group(1))
    listen = args[args.index("--listen") + 1]
    assert listen.startswith(("127.0.0.1:", "[::1]:")) or "--auth-token-file" in args, args
    token = args[args.index("--auth-token-file") + 1]
    mount = re.search(r"\{name: (\w+), mountPath: " + re.escape(os.path.dirname(token)), text)
    assert mount, text
    assert re.search(rf"- name: {mount.group(1)}\s+secret: \{{secretName: ", text), text


def readme_service_name():
    """service_name in the documented Alloy scrape config."""
    readme = open(os.path.join(os.path.dirname(UNIT), "../../docs/agent.md")).read()
    block = re.search(r'pyroscope\.scrape "jittrace" \{.*?\n\}', readme, re.S).group(0)
    return re.search(r'"service_name" = "([^"]+)"', block).group(1)


def test_agent_labels_by_default_only_comm_and_source():
    """Each label set is a series in the backend: by default no pid, so
    one per command and name source, not one per process."""
    need("go")
    prof = os.path.join(TMP, "agent-labels.pb.gz")
    with agent("-F", "199", labels=None) as a:
        t, res = fetch_in_background(f"{a.url}/debug/pprof/profile?seconds=3", prof)
        time.sleep(0.5)
        run([os.path.join(WL, "mmloop"), "callsfor", "0.5"])
        t.join()
    assert res["p"].returncode == 0, res["p"].stderr
    _, samples = pprof_raw(prof)
    assert samples and {tuple(sorted(lab)) for *_, lab in samples} == {("comm", "source")}
    bad = run([JT, "agent", "--labels", "pid,uid"], check=False)
    assert bad.returncode == 2 and "--labels wants pid, comm and source" in bad.stderr


# What Parca's DefaultScrapeConfig and Alloy's DefaultProfilingConfig
# scrape unless told not to, each at its path.
SCRAPED_BY_DEFAULT = {"memory": "/debug/pprof/allocs", "block": "/debug/pprof/block",
                      "goroutine": "/debug/pprof/goroutine", "mutex": "/debug/pprof/mutex"}


def test_readme_scrape_configs_ask_only_for_what_the_agent_serves():
    readme = open(os.path.join(os.path.dirname(UNIT), "../../docs/agent.md")).read()
    parca = re.search(r"```yaml\nscrape_configs:\n(.*?)```", readme, re.S).group(1)
    alloy = re.search(r'pyroscope\.scrape "jittrace" \{.*?\n\}', readme, re.S).group(0)
    assert re.search(r"process_cpu: \{enabled: true, path: /debug/pprof/profile", parca), parca
    assert "authorization: {credentials_file: " in parca, parca
    assert re.search(r'profile\.process_cpu \{\s+enabled = true\s+path\s+= "/debug/pprof/profile"',
                     alloy), alloy
    assert 'bearer_token_file = "' in alloy, alloy
    for kind in SCRAPED_BY_DEFAULT:
        assert f"{kind}: {{enabled: false}}" in parca, (kind, parca)
        assert f"profile.{kind} {{ enabled = false }}" in alloy, (kind, alloy)
    assert readme_service_name() == "jittrace"
    # What they still ask for is served; what they would have asked for is not.
    with agent("-F", "19") as a:
        assert a.get("/debug/pprof/profile?seconds=1", timeout=60)[0] == 200
        for path in SCRAPED_BY_DEFAULT.values():
            assert a.get(path)[0] == 404, path


def test_agent_takes_one_request_at_a_time_from_a_user_who_sees_only_their_own():
    """Another local user cannot take the profile slots root's scrapers
    share: one request at a time, the next 429."""
    with agent("-F", "19") as a:
        # Long enough that the two certainly overlap, however slow the start.
        url = f"{a.url}/debug/pprof/profile?seconds=8"
        codes = []
        ts = [threading.Thread(target=lambda: codes.append(get_as_nobody(url)[0]))
              for _ in range(2)]
        ts.append(threading.Thread(target=lambda: codes.append(
            ("root", a.get("/debug/pprof/profile?seconds=3", timeout=60)[0]))))
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert ("root", 200) in codes, codes
    assert sorted(c for c in codes if not isinstance(c, tuple)) == [200, 429], codes
