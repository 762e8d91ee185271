// jittrace html: the page's script (compiled into jittrace). Everything
// it draws comes from the JSON in #jt-data; names are set as text, never
// as markup.
"use strict";
(function () {
  const T0 = performance.now();
  const J = JSON.parse(document.getElementById("jt-data").textContent);
  const D = J.data;
  const SVGNS = "http://www.w3.org/2000/svg";
  // jittrace sends each process's first 20000 regions and JIT functions
  // one by one, the rest as boxes (D.boxes): one per kernel VMA, or per
  // region and source of JIT code.
  const MAX_PROCS = 40;
  const W = 1100, LEFT = 130, TOPPAD = 14;
  const hex = (s) => parseInt(s, 16);
  const h = (s) => "0x" + s.toString(16);

  function el(tag, attrs, text) {
    const e = tag === "svg" || ["rect", "line", "text", "g"].includes(tag) ?
      document.createElementNS(SVGNS, tag) : document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const notes = [];
  const details = el("div", { id: "details" }, "Click anything for its details.");
  function show(obj) {
    details.textContent = Object.entries(obj)
      .map(([k, v]) => k + ": " + v).join("\n");
  }

  // ---- header
  const header = el("header");
  header.appendChild(el("h1", {}, "jittrace: " + J.file));
  const nav = el("nav");
  for (const [id, name] of [["timeline", "Address space over time"],
    ["flame", "Flame graph"], ["cow", "Copy-on-write map"], ["audit", "Findings"]])
    nav.appendChild(el("a", { href: "#" + id }, name));
  header.appendChild(nav);
  const noteLine = el("div", { class: "note", id: "notes" });
  header.appendChild(noteLine);
  document.body.appendChild(header);

  function section(id, title) {
    const s = el("section", { id: id });
    s.appendChild(el("h2", {}, title));
    document.body.appendChild(s);
    return s;
  }

  // ---- part 1: the address space over time, per process
  const byPid = (arr) => {
    const m = new Map();
    for (const x of arr) {
      if (!m.has(x.pid)) m.set(x.pid, []);
      m.get(x.pid).push(x);
    }
    return m;
  };
  const regions = byPid(D.regions), jits = byPid(D.jit), ticks = byPid(D.ticks);
  const boxes = byPid(D.boxes);
  const t0 = D.t0, span = Math.max(1, D.t1 - D.t0);
  const X = (t) => LEFT + (Math.min(Math.max(t, t0), D.t1) - t0) / span * (W - LEFT - 10);

  // The address ranges in use, cut at every boundary any range has: each
  // piece gets a band whose height grows with the log of its size, so a
  // one-page JIT region is as visible as a library; unused address space
  // between them collapses to a gap.
  function segments(ranges, tall) {
    const cuts = new Set();
    for (const [lo, hi] of ranges) { cuts.add(lo); cuts.add(hi); }
    const xs = [...cuts].sort((a, b) => a - b);
    const merged = [];
    for (const [lo, hi] of ranges.slice().sort((a, b) => a[0] - b[0])) {
      const last = merged[merged.length - 1];
      if (last && lo <= last[1]) last[1] = Math.max(last[1], hi);
      else merged.push([lo, hi]);
    }
    const segs = [];
    let m = 0;
    for (let i = 0; i + 1 < xs.length; i++) {
      const lo = xs[i], hi = xs[i + 1];
      while (m < merged.length && merged[m][1] <= lo) m++;
      if (m < merged.length && merged[m][0] <= lo)
        segs.push({ lo: lo, hi: hi, gap: !segs.length || segs[segs.length - 1].hi !== lo });
    }
    // Pieces holding JIT code (tall) get room for their tenants.
    let t = 0;
    const want = segs.map((s) => {
      while (t < tall.length && tall[t][1] <= s.lo) t++;
      const jit = t < tall.length && tall[t][0] < s.hi;
      return (jit ? 28 : 6) + 3 * Math.log2(Math.max(1, (s.hi - s.lo) / 4096));
    });
    const total = want.reduce((a, b) => a + b, 0) + segs.filter((s) => s.gap).length * 6;
    const scale = Math.min(1, 4000 / Math.max(1, total));
    let y = TOPPAD;
    for (let i = segs.length - 1; i >= 0; i--) { // addresses run up
      const s = segs[i];
      s.h = Math.max(0.5, want[i] * scale);
      s.y = y;
      y += s.h + (s.gap ? 6 : 0);
    }
    return { segs: segs, height: y + 10 };
  }
  function yOf(segs, a) {
    let lo = 0, hi = segs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (segs[mid].lo <= a) lo = mid; else hi = mid - 1;
    }
    const s = segs[lo];
    const f = Math.min(1, Math.max(0, (a - s.lo) / Math.max(1, s.hi - s.lo)));
    return s.y + (1 - f) * s.h;
  }
  function box(svg, segs, cls, lo, hi, from, to, info) {
    const y1 = yOf(segs, hi), y0 = yOf(segs, lo);
    const r = el("rect", { class: cls, x: X(from), y: Math.min(y1, y0),
      width: Math.max(1, X(to) - X(from)), height: Math.max(1, Math.abs(y0 - y1)) });
    for (const k in info) r.setAttribute("data-" + k, info[k]);
    svg.appendChild(r);
    return r;
  }
  function kindOf(name) {
    if (name === "[heap]") return "heap";
    if (name === "[stack]") return "stack";
    return name && name[0] === "/" ? "file" : "anon";
  }

  function drawProc(parent, p) {
    const R = regions.get(p.pid) || [], JT = jits.get(p.pid) || [], TK = ticks.get(p.pid) || [];
    const B = boxes.get(p.pid) || [];
    const div = el("div", { class: "proc", "data-pid": p.pid });
    div.appendChild(el("h3", {}, `pid ${p.pid} (${p.comm}): ${R.length} regions, ` +
      `${JT.length} JIT functions, ${p.samples} samples`));
    const ranges = R.map((r) => [hex(r.start), hex(r.end)])
      .concat(JT.map((j) => [hex(j.start), hex(j.end)]))
      .concat(B.map((b) => [hex(b.start), hex(b.end)]));
    if (!ranges.length) return;
    const { segs, height } = segments(ranges,
      JT.map((j) => [hex(j.start), hex(j.end)]).sort((a, b) => a[0] - b[0]));
    const svg = el("svg", { class: "timeline", width: W, height: height, "data-pid": p.pid });
    // A label where each run of used addresses begins.
    for (const s of segs)
      if (s.gap) svg.appendChild(el("text", { class: "axis", x: 2, y: s.y + s.h }, h(s.lo)));
    if (B.length)
      notes.push(`pid ${p.pid}: ${p.regions} regions and ${p.jit} JIT functions; past ` +
        `the first ${R.length} and ${JT.length}, one box per kernel VMA (regions) or ` +
        "per region and source (JIT code)");
    // Kernel VMAs: one outline over the life of the regions they held.
    const vmas = new Map();
    for (const r of R) {
      if (!r.vma_start) continue;
      const k = r.vma_start + "-" + r.vma_end;
      const v = vmas.get(k) || { lo: hex(r.vma_start), hi: hex(r.vma_end), from: r.from,
        to: r.to, n: 0, members: 0, last: false };
      v.from = Math.min(v.from, r.from); v.to = Math.max(v.to, r.to);
      v.n++; v.members = Math.max(v.members, r.vma_regions);
      if (r.last) { v.last = true; v.last_members = r.vma_regions; }
      vmas.set(k, v);
    }
    {
      for (const r of R)
        box(svg, segs, "region " + kindOf(r.name), hex(r.start), hex(r.end), r.from, r.to,
          { pid: p.pid, start: r.start, end: r.end, prot: r.prot, name: r.name,
            from: r.from, to: r.to, last: r.last, alive: r.alive,
            vma: r.vma_start ? r.vma_start + "-" + r.vma_end : "none" });
    }
    for (const b of B.filter((b) => b.what === "regions"))
      box(svg, segs, "region agg", hex(b.start), hex(b.end), b.from, b.to,
        { pid: p.pid, start: b.start, end: b.end, regions: b.n });
    for (const v of vmas.values()) {
      box(svg, segs, "kvma", v.lo, v.hi, v.from, v.to,
        { pid: p.pid, start: h(v.lo), end: h(v.hi), regions: v.members, last: v.last });
      // At the end, or at some moment before it: the kernel merged them.
      if (v.members > 1)
        box(svg, segs, "coalesced", v.lo, v.hi, v.from, v.to,
          { pid: p.pid, start: h(v.lo), end: h(v.hi), regions: v.members,
            last: v.last && v.last_members > 1,
            what: "one kernel VMA over " + v.members + " requested regions" });
    }
    for (const j of JT)
      box(svg, segs, "jit jit-" + j.source,
        j.source === "perfmap" ? hex(j.start) : hex(j.start) + (hex(j.end) - hex(j.start)) / 2,
        j.source === "perfmap" ? hex(j.start) + (hex(j.end) - hex(j.start)) / 2 : hex(j.end),
        j.from, j.to,
        { pid: p.pid, start: j.start, end: j.end, name: j.name, source: j.source,
          from: j.from, to: j.to, last: j.last });
    for (const b of B.filter((b) => b.what !== "regions"))
      box(svg, segs, "jit agg jit-" + b.what, hex(b.start), hex(b.end), b.from, b.to,
        { pid: p.pid, start: b.start, end: b.end, functions: b.n, source: b.what });
    for (const t of TK) {
      const a = hex(t.ip);
      if (!segs.length || a < segs[0].lo || a >= segs[segs.length - 1].hi) continue;
      const x = X(t.t), y = yOf(segs, a);
      const l = el("line", { class: "tick", x1: x, x2: x, y1: y - 3, y2: y + 3,
        "data-pid": p.pid, "data-ip": t.ip, "data-name": t.name, "data-source": t.source,
        "data-t": t.t });
      svg.appendChild(l);
    }
    svg.addEventListener("click", (ev) => {
      const t = ev.target;
      if (!t.dataset || !t.dataset.pid) return;
      document.querySelectorAll(".selected").forEach((e) => e.classList.remove("selected"));
      t.classList.add("selected");
      show(Object.assign({ element: t.getAttribute("class") }, t.dataset));
    });
    svg.jt = { segs: segs };
    div.appendChild(svg);
    parent.appendChild(div);
  }

  const tl = section("timeline", "Address space over time");
  const legend = el("div", { class: "legend" });
  for (const [c, n] of [["#90caf9", "anonymous region"], ["#a5d6a7", "file region"],
    ["#ce93d8", "heap/stack"], ["#fb8c00", "JIT: jitdump"], ["#fdd835", "JIT: perf-map"]])
    legend.appendChild(el("span", { style: "background:" + c }, n));
  legend.appendChild(el("span", { style: "border:2px dashed #d32f2f" }, "coalesced VMA"));
  tl.appendChild(legend);
  const procs = D.procs.filter((p) => regions.has(p.pid) || jits.has(p.pid))
    .sort((a, b) => (b.jit + b.regions + b.samples) - (a.jit + a.regions + a.samples));
  if (procs.length > MAX_PROCS)
    notes.push(`${procs.length} processes: the ${MAX_PROCS} busiest are drawn`);
  for (const p of procs.slice(0, MAX_PROCS)) drawProc(tl, p);
  tl.appendChild(details);
  if (D.ticks_drawn < D.samples)
    notes.push(`${D.ticks_drawn} of ${D.samples} samples drawn as ticks`);

  // ---- part 2: the flame graph
  const fl = section("flame", "Flame graph");
  const N = D.flame.map((n, i) => ({ i: i, parent: n[0], name: n[1], source: n[2],
    total: n[3], self: n[4], retro: n[5], kids: [] }));
  for (const n of N) if (n.i) N[n.parent].kids.push(n);
  for (const n of N) n.kids.sort((a, b) => b.total - a.total);
  if (D.flame_cut) notes.push(`${D.flame_cut} samples' stacks stop short: the tree reached its size`);
  const ctl = el("div");
  const search = el("input", { id: "fsearch", placeholder: "search names", size: 30 });
  const reset = el("button", { id: "freset" }, "whole graph");
  const found = el("span", { id: "ffound" });
  ctl.append(search, reset, found);
  fl.appendChild(ctl);
  const fsrc = el("div", { class: "legend" });
  for (const s of ["jitdump", "perfmap", "elf", "kallsyms", "anon", "unknown"])
    fsrc.appendChild(el("span", { class: "src-" + s }, s));
  fsrc.appendChild(el("span", { class: "src-elf retro" }, "named retroactively"));
  fl.appendChild(fsrc);
  const fg = el("div", { id: "fg" });
  fl.appendChild(fg);
  const FW = W;
  function drawFlame(root) {
    fg.textContent = "";
    let depth = 0, drawn = 0;
    const q = [[root, 0, 0]];
    while (q.length) {
      const [n, x, d] = q.pop();
      const w = n.total / Math.max(1, root.total) * FW;
      if (w < 1) continue;
      const e = el("div", { class: "fnode src-" + n.source + (n.retro ? " retro" : ""),
        "data-name": n.name, "data-source": n.source, "data-samples": n.total,
        title: `${n.name} (${n.source}): ${n.total} samples, ${n.self} here` });
      e.style.left = x + "px"; e.style.top = d * 18 + "px"; e.style.width = w + "px";
      e.textContent = n.name;
      e.onclick = () => drawFlame(n);
      fg.appendChild(e);
      drawn++;
      depth = Math.max(depth, d);
      let cx = x;
      for (const k of n.kids) {
        q.push([k, cx, d + 1]);
        cx += k.total / Math.max(1, root.total) * FW;
      }
    }
    fg.style.height = (depth + 1) * 18 + 4 + "px";
    fg.dataset.nodes = drawn;
    mark();
  }
  function mark() {
    const s = search.value;
    let n = 0;
    fg.querySelectorAll(".fnode").forEach((e) => {
      const m = s && e.dataset.name.includes(s);
      e.classList.toggle("match", !!m);
      if (m) n++;
    });
    found.textContent = s ? ` ${n} frames match` : "";
  }
  search.oninput = mark;
  reset.onclick = () => drawFlame(N[0]);
  if (N.length) drawFlame(N[0]);

  // ---- part 3: the copy-on-write map, from audit's findings
  const cw = section("cow", "Copy-on-write map");
  const cows = J.audit.filter((f) => f.kind === "cow");
  const suspects = J.audit.filter((f) => f.kind === "false-sharing-suspect");
  const files = new Map();
  for (const f of cows) {
    const b = f.detail.backing;
    if (!files.has(b)) files.set(b, new Map());
    const pages = files.get(b);
    // A file's page by its offset; an anonymous one (shared with a fork)
    // by its address.
    for (const pg of f.detail.pages) {
      const key = pg.file_offset || pg.addr;
      if (!pages.has(key)) pages.set(key, new Map());
      pages.get(key).set(f.pid, pg);
    }
  }
  if (!files.size) cw.appendChild(el("p", {}, "No private pages: record with --cow or -d."));
  for (const [file, pages] of files) {
    cw.appendChild(el("h3", {}, file));
    const pids = [...new Set([...pages.values()].flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
    const t = el("table", { class: "cow", "data-file": file });
    const hr = el("tr");
    hr.appendChild(el("th", {}, file[0] === "/" ? "file page" : "address"));
    for (const pid of pids) hr.appendChild(el("th", {}, "pid " + pid));
    t.appendChild(hr);
    const offs = [...pages.keys()].sort((a, b) => hex(a) - hex(b));
    for (const off of offs) {
      const tr = el("tr");
      tr.appendChild(el("th", {}, off));
      for (const pid of pids) {
        const pg = pages.get(off).get(pid);
        const td = el("td", { class: "page " + (pg ? "private" : "shared"), "data-pid": pid,
          "data-offset": off, "data-file": file });
        if (pg) {
          // A cache line of this page that several processes' samples hit.
          const page = hex(pg.file_offset || "0") & ~4095;
          const sus = suspects.some((s) => s.detail.path === file &&
            (hex(s.detail.offset) & ~4095) === page && s.detail.pids.includes(pid));
          if (sus) td.classList.add("suspect");
          td.title = `private since ${pg.time_ns} (${pg.why}); written by ` +
            `${pg.sym || pg.ip} in ${pg.dso || "?"}; data: ` +
            ((pg.data_syms || []).map((d) => d.name || d).join(", ") || "none named");
          td.dataset.addr = pg.addr;
        } else {
          td.title = "still the file's page in this process";
        }
        td.onclick = () => show(Object.assign({ file: file }, td.dataset, { about: td.title }));
        tr.appendChild(td);
      }
      t.appendChild(tr);
    }
    cw.appendChild(t);
  }

  // ---- part 4: audit's findings, each linked to its place
  function summary(f) {
    const d = f.detail || {};
    switch (f.kind) {
      case "coalesced": return `${d.regions} requested regions in one kernel VMA (${d.backing})`;
      case "cow": return `${d.count || (d.pages || []).length} page(s) of ${d.backing} made private`;
      case "false-sharing-suspect":
        return `cache line ${d.offset} of ${d.path}: ${(d.pids || []).length} processes (${d.sharing})`;
      default: return JSON.stringify(d).slice(0, 120);
    }
  }
  const au = section("audit", "Findings");
  const ul = el("ul", { class: "findings" });
  for (const f of J.audit) {
    const li = el("li", { "data-kind": f.kind, "data-pid": f.pid });
    li.appendChild(el("span", { class: "kind" }, f.kind));
    li.appendChild(document.createTextNode(` pid ${f.pid} ${f.start}-${f.end}  ` +
      summary(f)));
    li.onclick = () => {
      const svg = document.querySelector(`svg.timeline[data-pid="${f.pid}"]`);
      if (!svg) return;
      svg.querySelectorAll("rect.hl").forEach((e) => e.remove());
      const segs = svg.jt.segs, lo = hex(f.start), hi = hex(f.end);
      if (segs.length && lo >= segs[0].lo && lo < segs[segs.length - 1].hi) {
        const y1 = yOf(segs, hi), y0 = yOf(segs, lo);
        svg.appendChild(el("rect", { class: "hl", x: LEFT, width: W - LEFT,
          y: Math.min(y0, y1) - 2, height: Math.abs(y0 - y1) + 4 }));
      }
      svg.scrollIntoView();
      show(Object.assign({ finding: f.kind, pid: f.pid, range: f.start + "-" + f.end },
        { detail: JSON.stringify(f.detail) }));
    };
    ul.appendChild(li);
  }
  if (!J.audit.length) au.appendChild(el("p", {}, "No findings."));
  au.appendChild(ul);

  noteLine.textContent = notes.join("; ");
  // #part=flame: that part alone (for a screenshot).
  const m = location.hash.match(/part=(\w+)/);
  if (m) {
    document.body.classList.add("part");
    const s = document.getElementById(m[1]);
    if (s) s.classList.add("shown");
  }
  document.body.dataset.renderMs = Math.round(performance.now() - T0);
  document.body.dataset.ready = "1";
})();
