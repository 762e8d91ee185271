# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""jittrace html in a real browser: Debian's chromium, headless, renders
the page of a coalesced JIT recording (jitpages), a reused-address one
(jitgen reuse, jitdump and perf-map) and a copy-on-write one (cowdata
-d). From the DOM it has drawn: the region boxes and coalesced VMAs alive
at the end are the ones maps --json gives, the JIT bands are every code
load script --json gives, one tenant after another, and the private pages
are audit --json's. The page asks the network for nothing: chromium goes
through a proxy that counts requests, and a page that does ask is seen
asking. Screenshots of each part are kept in BUILD/artifacts/html."""
import http.server
import json
import os
import re
import shutil
import socketserver
import subprocess
import threading
from html.parser import HTMLParser

from jt import BUILD, JT, TMP, WL, Skip, record, run, script

ART = os.path.join(BUILD, "artifacts", "html")
# Requests the browser makes for itself, not for a page.
BROWSER = ("update.googleapis.com",)
CHROMIUM = shutil.which("chromium")


class Proxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy on 127.0.0.1 that answers 404 and counts requests."""
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self):
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                self.send_error(404)

            do_CONNECT = do_POST = do_HEAD = do_GET

            def log_message(self, *a):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def handle_error(self, request, client_address):
        pass  # a browser hanging up on a 404


def browser(url, proxy, *extra):
    if not CHROMIUM:
        raise Skip("chromium is not installed (scripts/install-deps.sh --test installs it)")
    # The browser's own services, quieted; update.googleapis.com (its
    # component updater) still asks, whatever the flags: see BROWSER.
    args = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-default-apps",
            "--disable-extensions", "--disable-client-side-phishing-detection",
            "--disable-domain-reliability", "--no-pings",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,"
            "MediaRouter,Translate,AutofillServerCommunication",
            "--google-base-url=http://127.0.0.1:9", "--gaia-url=http://127.0.0.1:9",
            "--lso-url=http://127.0.0.1:9",
            f"--proxy-server=http://127.0.0.1:{proxy.server_address[1]}",
            "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=10000",
            f"--user-data-dir={TMP}/chromium-profile", *extra, url]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-1000:]
    return p.stdout


class Dom(HTMLParser):
    """Every element's tag, classes and data-* attributes."""

    def __init__(self, text):
        super().__init__()
        self.els = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.els.append((tag, set((a.get("class") or "").split()),
                         {k[5:]: v for k, v in a.items() if k.startswith("data-")}))

    def of(self, cls, **data):
        return [d for _, c, d in self.els if cls <= c and
                all(d.get(k) == str(v) for k, v in data.items())]


def render(data, name, proxy):
    page = os.path.join(TMP, f"{name}.html")
    run([JT, "html", "-i", data, "-o", page])
    text = open(page).read()
    assert "http://" not in text.split('id="jt-data"')[0]
    dom = browser("file://" + page, proxy, "--dump-dom")
    os.makedirs(ART, exist_ok=True)
    for part in ("timeline", "flame", "cow", "audit"):
        browser(f"file://{page}#part={part}", proxy, "--hide-scrollbars",
                "--window-size=1200,800", f"--screenshot={ART}/{name}-{part}.png")
    assert 'data-ready="1"' in dom, "the page's script did not finish"
    return Dom(dom), os.path.getsize(page)


def hexs(v):
    return hex(int(v, 16))


def test_html_draws_regions_vmas_jit_and_pages_as_the_views_give_them():
    proxy = Proxy()
    try:
        # 1. jitpages: 8 pages mapped one below the other, one kernel VMA.
        _, data = record([os.path.join(WL, "jitpages"), "8", "0.3"])
        dom, size = render(data, "jitpages", proxy)
        rows = json.loads(run([JT, "maps", "-i", data, "--json"]).stdout)
        pid = rows[0]["pid"]
        want = {(hexs(r["start"]), hexs(r["end"]), r["name"]) for r in rows}
        got = {(hexs(r["start"]), hexs(r["end"]), r["name"])
               for r in dom.of({"region"}, pid=pid, last="true")}
        assert got == want, (sorted(got ^ want)[:6], len(got), len(want))
        want_co = {(hexs(r["kernel_vma"]["start"]), hexs(r["kernel_vma"]["end"]))
                   for r in rows if r["coalesced"]}
        got_co = {(hexs(c["start"]), hexs(c["end"]))
                  for c in dom.of({"coalesced"}, pid=pid, last="true")}
        assert got_co == want_co and len(want_co) >= 1, (got_co, want_co)
        members = [c for c in dom.of({"coalesced"}, pid=pid, last="true")
                   if int(c["regions"]) == 8]
        assert len(members) == 1, members
        print(f"    jitpages: {len(got)} live regions and {len(got_co)} coalesced VMA "
              f"as maps gives them ({size} bytes)")

        # 2. jitgen reuse: four functions at one address, from both sources.
        jd = os.path.join(TMP, "html-jitdumps")
        os.makedirs(jd, exist_ok=True)
        os.chmod(jd, 0o777)
        _, data = record([os.path.join(WL, "jitgen"), "reuse", "4", "0.4", "-m", "-j", jd])
        dom, size = render(data, "jitgen-reuse", proxy)
        loads = [e for e in script(data) if e["type"] == "jit_load"]
        want = sorted((e["pid"], hexs(e["addr"]), e["name"], e["source"]) for e in loads)
        bands = dom.of({"jit"})
        got = sorted((int(b["pid"]), hexs(b["start"]), b["name"], b["source"]) for b in bands)
        assert got == want and len(want) == 8, (got, want)
        for src in ("jitdump", "perfmap"):
            tenants = sorted((int(b["from"]), int(b["to"]), b["name"]) for b in bands
                             if b["source"] == src)
            # One after another at the same address: each ends as the next begins.
            assert len({hexs(b["start"]) for b in bands if b["source"] == src}) == 1
            assert all(a[1] <= b[0] for a, b in zip(tenants, tenants[1:])), tenants
            assert [n for _, _, n in tenants] == [f"reused_{i}" for i in range(4)], tenants
        ticks = dom.of({"tick"})
        assert ticks and {t["source"] for t in ticks} & {"jitdump", "perfmap"}
        print(f"    jitgen reuse: {len(got)} JIT bands, 4 tenants per source in order, "
              f"{len(ticks)} sample ticks ({size} bytes)")

        # 3. cowdata: private pages of three processes.
        _, data = record([os.path.join(WL, "cowdata"), os.path.join(WL, "libjtdata.so"), "2"],
                         ["-e", "page-faults", "-c", "1", "-d"])
        dom, size = render(data, "cowdata", proxy)
        findings = json.loads(run([JT, "audit", "-i", data, "--json"]).stdout)
        want = sorted((f["pid"], hexs(p["addr"])) for f in findings if f["kind"] == "cow"
                      for p in f["detail"]["pages"])
        got = sorted((int(c["pid"]), hexs(c["addr"])) for c in dom.of({"page", "private"}))
        assert got == want and len(want) > 10, (len(got), len(want))
        # Cache lines several processes hit, marked on their private page.
        private = {(f["pid"], f["detail"]["backing"], int(p["file_offset"], 16))
                   for f in findings if f["kind"] == "cow" for p in f["detail"]["pages"]
                   if p.get("file_offset")}
        want_sus = {(pid, f["detail"]["path"], int(f["detail"]["offset"], 16) & ~4095)
                    for f in findings if f["kind"] == "false-sharing-suspect"
                    for pid in f["detail"]["pids"]} & private
        got_sus = {(int(c["pid"]), c["file"], int(c["offset"], 16))
                   for c in dom.of({"page", "private", "suspect"})}
        assert got_sus == want_sus and want_sus, (got_sus ^ want_sus)
        lis = [d for t, _, d in dom.els if t == "li" and "kind" in d]
        assert len(lis) == len(findings), (len(lis), len(findings))
        print(f"    cowdata: {len(got)} private pages in the grid as audit gives them, "
              f"{len(lis)} findings listed ({size} bytes)")

        # Nothing asked the network; a page that does ask is seen asking.
        pages = [r for r in proxy.requests if not any(b in r for b in BROWSER)]
        assert not pages, pages
        probe = os.path.join(TMP, "asks.html")
        with open(probe, "w") as f:
            f.write('<img src="http://jt-html-test.invalid/x.png">')
        browser("file://" + probe, proxy, "--dump-dom")
        assert any("jt-html-test.invalid" in r for r in proxy.requests), proxy.requests
        print(f"    no network request from the pages; screenshots in {ART}")
    finally:
        proxy.shutdown()


def test_html_refuses_to_write_through_a_link():
    _, data = record(["true"])
    link = os.path.join(TMP, "html-link.html")
    target = os.path.join(TMP, "html-target")
    open(target, "w").close()
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)
    p = run([JT, "html", "-i", data, "-o", link], check=False)
    assert p.returncode == 1 and "html-link.html" in p.stderr, p.stderr
    assert os.path.getsize(target) == 0
    p = run([JT, "html", "-i", os.path.join(TMP, "no-such.data"), "-o",
             os.path.join(TMP, "x.html")], check=False)
    assert p.returncode == 1 and "no-such.data" in p.stderr, p.stderr
    assert not re.search("Segmentation|Aborted", p.stderr)


def test_last_html_renders_every_recording_the_suite_made():
    """Every recording the other tests made (this run's TMP), once they
    all ran: a page, no error, with the data and audit's findings."""
    def ours(f):
        with open(os.path.join(TMP, f), "rb") as fh:
            return fh.read(8) == b"JITTRACE"  # not perf's perf.data files

    datas = sorted(f for f in os.listdir(TMP) if f.endswith(".data") and ours(f))
    if len(datas) < 5:
        raise Skip("run with the whole suite: few recordings made so far")
    sizes = []
    for f in datas:
        out = os.path.join(TMP, f + ".html")
        p = run([JT, "html", "-i", os.path.join(TMP, f), "-o", out], check=False,
                timeout=300)
        assert p.returncode == 0, (f, p.stderr[-500:])
        text = open(out).read()
        assert text.startswith("<!doctype html>") and "</html>" in text[-30:], f
        data = json.loads(text.split('type="application/json">', 1)[1]
                          .split("</script>", 1)[0].replace("<\\/", "</"))
        assert {"data", "audit"} <= set(data), f
        sizes.append(len(text))
    print(f"    {len(datas)} recordings, pages of {min(sizes)} to {max(sizes)} bytes")
