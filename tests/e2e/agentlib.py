# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Running jittrace agent in a test: a free loopback port, the line that
says it serves, SIGTERM at the end, and go tool pprof -raw parsed with
each sample's labels."""
import contextlib
import datetime
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

from jt import JT, TMP, Skip

import shutil


def need(tool):
    if not shutil.which(tool):
        raise Skip(f"{tool} is not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Agent:
    def __init__(self, args, env=None, prefix=(), token=None,
                 labels="pid,comm,source"):
        # Tests tell processes apart by pid; the agent's default has none.
        if labels:
            args = [*args, "--labels", labels]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        if token:
            path = os.path.join(TMP, f"agent-{self.port}.token")
            with open(path, "w") as f:
                f.write(token + "\n")
            os.chmod(path, 0o600)
            args = [*args, "--auth-token-file", path]
        self.err_path = os.path.join(TMP, f"agent-{self.port}.err")
        self.err = open(self.err_path, "w+")
        self.p = subprocess.Popen(
            [*prefix, JT, "agent", "--listen", f"127.0.0.1:{self.port}", *args],
            stdout=subprocess.DEVNULL, stderr=self.err, env=env)
        end = time.monotonic() + 60
        while "agent: serving" not in self.said():
            if self.p.poll() is not None:
                raise AssertionError(f"agent exited {self.p.returncode}:\n{self.said()}")
            assert time.monotonic() < end, self.said()
            time.sleep(0.05)

    def said(self):
        with open(self.err_path) as f:
            return f.read()

    def get(self, path, timeout=30, token=None):
        """(status, body bytes) of a GET, errors included; with the
        agent's token, or the one given ("" for none)."""
        token = self.token if token is None else token
        req = urllib.request.Request(self.url + path)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def metrics(self):
        status, body = self.get("/metrics")
        assert status == 200, status
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stop(self, timeout=30):
        """SIGTERM; returns the exit code, which must come in time."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=timeout)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
            self.err.close()


@contextlib.contextmanager
def agent(*args, **kw):
    a = Agent(list(args), **kw)
    try:
        yield a
    finally:
        rc = a.stop()
        assert rc == 0, f"agent exited {rc}:\n{a.said()}"


_checker = []


def pprofcheck(*paths):
    """Each profile as the backends read it (tests/e2e/pprofcheck): google/pprof's
    Parse and CheckValid, Parca's sequential ids, Pyroscope's UTF-8."""
    gopath = "/usr/share/gocode"
    if not os.path.isdir(os.path.join(gopath, "src/github.com/google/pprof/profile")):
        raise Skip("golang-github-google-pprof-dev is not installed: "
                   "profiles cannot be checked as the backends read them")
    if not _checker:
        out = os.path.join(TMP, "pprofcheck")
        env = {**os.environ, "GOPATH": gopath, "GO111MODULE": "off",
               "GOCACHE": os.path.join(TMP, "gocache"), "GOFLAGS": ""}
        p = subprocess.run(["go", "build", "-o", out, "."], env=env, capture_output=True,
                           text=True, cwd=os.path.join(os.path.dirname(__file__), "pprofcheck"))
        assert p.returncode == 0, p.stderr
        _checker.append(out)
    p = subprocess.run([_checker[0], *paths], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def pprof_raw(source, *opts, timeout=120):
    """go tool pprof -raw of a file or URL: header fields and samples as
    (count, nanos, [frame names, leaf first], {label: value}). A file is
    checked as the backends read it, too."""
    if os.path.isfile(source):
        pprofcheck(source)
    p = subprocess.run(["go", "tool", "pprof", *opts, "-raw", source],
                       capture_output=True, timeout=timeout,
                       env={**os.environ, "TZ": "UTC"})
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace")
    head, samples, locs, section = {}, [], {}, None
    for line in out.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section is None:
            k, _, v = line.partition(": ")
            head[k] = v
        elif section == "Samples:":
            m = re.match(r"\s+(\d+)\s+(\d+): ([\d ]+)$", line)
            if m:
                samples.append([int(m.group(1)), int(m.group(2)),
                                [int(x) for x in m.group(3).split()], {}])
            elif samples and ":[" in line:
                samples[-1][3] = dict(re.findall(r"(\w+):\[([^\]]*)\]", line))
        elif section == "Locations":
            m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) \S+:\d+ s=\d+$", line)
            if m:
                locs[int(m.group(1))] = m.group(2)
            else:
                m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
                if m:
                    locs[int(m.group(1))] = m.group(2)
    return head, [(n, ns, [locs.get(i, "?") for i in ids], lab)
                  for n, ns, ids, lab in samples]


def leaf_counts(samples, **labels):
    """Samples per leaf function, of the samples with those labels."""
    out = {}
    for n, _, frames, lab in samples:
        if all(lab.get(k) == str(v) for k, v in labels.items()):
            out[frames[0]] = out.get(frames[0], 0) + n
    return out


def fetch_in_background(url, out):
    """go tool pprof fetches url while the test runs the workload."""
    res = {}

    def go():
        res["p"] = subprocess.run(["go", "tool", "pprof", "-proto", "-output", out, url],
                                  capture_output=True, timeout=180)
    t = threading.Thread(target=go)
    t.start()
    return t, res


def window_mono(head, seconds):
    """A scraped profile's window [start, end) on CLOCK_MONOTONIC, the
    recording's clock: its Time is the start on the realtime clock."""
    when = re.match(r"(\d+-\d+-\d+ \d+:\d+:\d+)\.(\d+) \+0000 UTC$", head["Time"])
    assert when, head
    start = int(datetime.datetime.strptime(when.group(1), "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()) * 10**9 + int(when.group(2).ljust(9, "0"))
    start -= time.time_ns() - time.monotonic_ns()
    return start, start + seconds * 10**9


def in_window(events, window):
    """A recording's samples that the agent's window holds: the two are
    compared over the same time, however long the workload took."""
    return [e for e in events if e["type"] == "sample"
            and window[0] <= e["time"] < window[1]]
