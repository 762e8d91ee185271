#!/bin/sh
# Record JIT workloads with perf (record -k 1, inject --jit, script) and
# with jittrace, and print for each tool the share of JIT samples named
# as the run's own jitdump says (the latest load at or before the sample).
# usage: sudo scripts/compare-perf.sh [--attach SECS] [WORKLOAD...]   (none: all)
# --attach SECS: start each workload, and attach both tools with -p after
# SECS, as to a server that was already running.
# WORKLOAD: jitgen:MODE:SOURCE (MODE adjacent|reuse|memfd|shanon|late|move,
# SOURCE jitdump|perfmap), node:jitdump, node:perfmap, lli
exec python3 "$(dirname "$0")/compare_perf.py" "$@"
