# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Real JIT runtimes: Node.js (--perf-prof, --perf-basic-prof), LLVM
lli -jit-kind=mcjit and PostgreSQL's LLVM JIT, named against truth read
independently of jittrace."""
import glob
import os
import shutil

import jitdump
from jt import AS_USER, ROOT, TMP, Skip, hx, record, run, script

JS = os.path.join(ROOT, "tests/workloads/compile-loop.js")
PG_BIN = "/usr/lib/postgresql/15/bin"


def workdir(name):
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    return d


def need(tool):
    if not shutil.which(tool):
        raise Skip(f"{tool} is not installed")


def user_samples(data, pid):
    return [s for s in script(data) if s["type"] == "sample" and s["pid"] == pid
            and not s["kernel"]]


def check_against_jitdump(samples, records):
    named = 0
    want_at = jitdump.truths(records, [(hx(s["ip"]), s["time"]) for s in samples])
    for s in samples:
        if s["source"] != "jitdump":
            continue
        want = want_at[(hx(s["ip"]), s["time"])]
        if want is None:
            # Ran before its record was written: only a retro name is right.
            assert s["retro"], s
        else:
            assert s["sym"] == want, (s, want)
        named += 1
    return named


def test_node_perf_prof_jitdump():
    need("node")
    d = workdir("node-jitdump")
    p, data = record(["sh", "-c", f"cd {d} && exec node --perf-prof {JS} 2"])
    dumps = glob.glob(os.path.join(d, "jit-*.dump"))
    assert len(dumps) == 1, dumps
    pid = int(os.path.basename(dumps[0])[4:-5])
    records = jitdump.read(dumps[0])
    samples = user_samples(data, pid)
    named = check_against_jitdump(samples, records)
    assert named >= 0.4 * len(samples), (named, len(samples))
    assert sum(1 for s in samples if (s["sym"] or "").startswith("JS:*made_")) > 50


def test_node_perf_basic_prof_perfmap():
    need("node")
    d = workdir("node-perfmap")
    p, data = record(["sh", "-c", f"cd {d} && exec node --perf-basic-prof {JS} 2"])
    pid = next(e["pid"] for e in script(data) if e["type"] == "exec" and e["comm"] == "node")
    path = f"/tmp/perf-{pid}.map"
    lines = []
    with open(path) as f:
        for line in f:
            a, sz, name = line.rstrip("\n").split(" ", 2)
            lines.append((int(a, 16), int(sz, 16), name))
    os.unlink(path)
    samples = user_samples(data, pid)
    named = [s for s in samples if s["source"] == "perfmap"]
    assert len(named) >= 0.4 * len(samples), (len(named), len(samples))
    for s in named:
        ip = hx(s["ip"])
        assert s["sym"] in {n for a, sz, n in lines if a <= ip < a + sz}, s
    assert sum(1 for s in named if s["sym"].startswith("JS:*made_")) > 50


def test_lli_mcjit_jitdump():
    need("lli")
    d = workdir("lli")
    ll = os.path.join(ROOT, "tests/workloads/hot.ll")
    p, data = record(["env", f"JITDUMPDIR={d}", "lli", "-jit-kind=mcjit", ll])
    dumps = glob.glob(os.path.join(d, ".debug/jit/*/jit-*.dump"))
    assert len(dumps) == 1, dumps
    pid = int(os.path.basename(dumps[0])[4:-5])
    records = jitdump.read(dumps[0])
    samples = user_samples(data, pid)
    check_against_jitdump(samples, records)
    spin = [s for s in samples if s["sym"] == "spin"]
    assert len(spin) >= 0.8 * len(samples) and all(s["source"] == "jitdump" for s in spin)



def pg_queries(path, queries):
    """A temporary table, then queries whose WHERE is JIT-compiled with
    the operators inlined, each in its own JIT context: the backend frees
    one query's code before the next query compiles its own."""
    terms = " + ".join(f"(g*{p}+{{k}})%{q}" for p, q in
                       [(7, 11), (13, 17), (19, 23), (29, 31), (37, 41), (43, 47),
                        (53, 59), (61, 67), (71, 73), (79, 83), (89, 97), (101, 103),
                        (107, 109), (113, 127), (131, 137), (139, 149)])
    with open(path, "w") as f:
        f.write("create temp table t as select g from generate_series(1, 1000000) g;\n")
        for k in range(1, queries + 1):
            f.write(f"select count(*) from t where {terms.format(k=k)} = g % 151;\n")


def test_postgres_llvm_jit_reused_addresses():
    """PostgreSQL 15's LLVM JIT writes a jitdump (jit_profiling_support)
    and compiles each query's expressions at the address where the last
    query's code was, under a new name (evalexpr_1_0, evalexpr_2_0, ...).
    Every sample in that code is named as the dump says at its time, and
    none in it goes unnamed."""
    postgres = os.path.join(PG_BIN, "postgres")
    if not os.access(postgres, os.X_OK) or not shutil.which("psql"):
        raise Skip("PostgreSQL 15 is not installed (postgresql-15)")
    d = workdir("pg")
    data_dir, sock, jit = (os.path.join(d, n) for n in ("data", "sock", "jit"))
    run(AS_USER + [os.path.join(PG_BIN, "initdb"), "-D", data_dir, "-A", "trust",
                   "-U", "jt", "--no-sync"], timeout=120)
    os.mkdir(sock)
    os.chmod(sock, 0o777)
    queries = 4
    pg_queries(os.path.join(d, "q.sql"), queries)
    gucs = " ".join(f"-c {g}" for g in (
        "listen_addresses=", "jit=on", "jit_above_cost=0", "jit_inline_above_cost=0",
        "jit_optimize_above_cost=0", "jit_profiling_support=on",
        "max_parallel_workers_per_gather=0"))
    # The server is a child of the traced shell, so its backends are traced;
    # psql's one session is one backend, which runs every query.
    script_sh = (f"{postgres} -D {data_dir} -k {sock} {gucs} & pm=$!; "
                 f"until [ -S {sock}/.s.PGSQL.5432 ]; do "
                 f"kill -0 $pm || exit 1; sleep 0.05; done; "
                 f"psql -X -q -At -h {sock} -U jt -d postgres -v ON_ERROR_STOP=1 "
                 f"-f {d}/q.sql; rc=$?; kill -INT $pm; wait $pm; exit $rc")
    p, data = record(["env", f"JITDUMPDIR={jit}", "sh", "-c", script_sh], timeout=300)
    dumps = glob.glob(os.path.join(jit, ".debug/jit/*/jit-*.dump"))
    assert len(dumps) == 1, dumps
    pid = int(os.path.basename(dumps[0])[4:-5])
    records = jitdump.read(dumps[0])
    # The premise: one address held each query's code in turn.
    by_addr = {}
    for _, op, addr, _, name in records:
        if op == "load":
            by_addr.setdefault(addr, set()).add(name)
    reused = max(by_addr, key=lambda a: len(by_addr[a]))
    assert len(by_addr[reused]) >= queries, by_addr
    samples = user_samples(data, pid)
    named = check_against_jitdump(samples, records)
    want_at = jitdump.truths(records, [(hx(s["ip"]), s["time"]) for s in samples])
    unnamed = [s for s in samples if s["source"] != "jitdump"
               and want_at[(hx(s["ip"]), s["time"])] is not None]
    assert not unnamed, unnamed[:5]
    size = max(r[3] for r in records if r[1] == "load" and r[2] == reused)
    at_reused = {s["sym"] for s in samples if hx(s["ip"]) - reused in range(size)
                 and s["source"] == "jitdump"}
    assert named >= 20 and len(at_reused) >= 2, (named, at_reused)
    print(f"    postgres: {named} of {len(samples)} backend samples in JIT code, "
          f"{len(at_reused)} names at {reused:#x}")


def test_compare_perf_names_at_least_what_perf_names():
    if not shutil.which("perf"):
        raise Skip("perf is not installed")
    out = run([os.path.join(ROOT, "scripts/compare-perf.sh"),
               "jitgen:reuse:perfmap", "jitgen:adjacent:jitdump"], timeout=300).stdout
    share = {}
    for line in out.splitlines()[1:]:
        w, tool, n, right, _ = line.split()
        share[(w, tool)] = (int(n), int(right))
    for w in ("jitgen:reuse:perfmap", "jitgen:adjacent:jitdump"):
        n, right = share[(w, "jittrace")]
        pn, pright = share[(w, "perf")]
        assert n > 500 and right == n, (w, n, right)
        assert right / n >= pright / pn, (w, share)
    # The case perf gets wrong: addresses reused, perf-map only.
    pn, pright = share[("jitgen:reuse:perfmap", "perf")]
    assert pright < 0.5 * pn, share
