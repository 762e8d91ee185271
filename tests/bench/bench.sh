#!/bin/sh
# Overhead per call of jittrace record against perf record -d on the same
# loops, in the same run. Each loop times itself; the median of RUNS runs
# is reported. usage: bench.sh BUILD_DIR
out=${1:-build}
jt=$out/jittrace
wl=$out/workloads/mmloop
runs=${RUNS:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
as_user="setpriv --reuid $(id -u nobody) --regid $(id -g nobody) --clear-groups"

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# ns per op of one run of: $1 (none|jittrace|perf) $2 (calls|touch) $3 (N)
one() {
	case $1 in
	none) $as_user $wl "$2" "$3" ;;
	jittrace) $jt record -o "$tmp/jt.data" --user nobody -- $wl "$2" "$3" 2>/dev/null ;;
	jtcow) $jt record $ev --cow -d -o "$tmp/jt.data" --user nobody -- $wl "$2" "$3" 2>/dev/null ;;
	perf) perf record -q $ev -d -o "$tmp/perf.data" -- $as_user $wl "$2" "$3" 2>/dev/null ;;
	esac | awk '/^ns_per_op/ {print $2}'
}

# Runs interleave (none, jittrace, perf, none, ...) so that drift in a
# noisy machine's speed hits all three alike.
bench() {
	: >"$tmp/none.all"; : >"$tmp/jittrace.all"; : >"$tmp/perf.all"
	: >"$tmp/jtcow.all"
	i=0
	while [ $i -lt "$runs" ]; do
		for t in none jittrace jtcow perf; do
			one $t "$1" "$2" >>"$tmp/$t.all"
		done
		i=$((i + 1))
	done
	for t in none jittrace jtcow perf; do
		median <"$tmp/$t.all" >"$tmp/$t"
	done
	spread=$(sort -n "$tmp/none.all" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f-%.0f", lo, hi}')
	awk -v what="$3" -v base="$(cat "$tmp/none")" -v jt="$(cat "$tmp/jittrace")" \
		-v perf="$(cat "$tmp/perf")" -v spread="$spread" \
		-v cow="$(cat "$tmp/jtcow")" -v ev="$ev" 'BEGIN {
		oj = jt - base; op = perf - base
		printf "%s\n  no tracer %8.1f ns/op (runs spread %s)\n", what, base, spread
		printf "  jittrace  %8.1f ns/op  overhead %+8.1f ns\n", jt, oj
		printf "  jittrace %s --cow -d %8.1f ns/op  overhead %+8.1f ns\n", ev, cow, cow - base
		printf "  perf %s -d %8.1f ns/op  overhead %+8.1f ns\n", ev, perf, op
		printf "  overhead ratio jittrace/perf: %s; with --cow -d: %s\n",
			(op > 0 && oj > 0 ? sprintf("%.2f", oj / op) : "within noise"),
			(op > 0 && cow > base ? sprintf("%.2f", (cow - base) / op) : "within noise")
	}'
}

command -v perf >/dev/null || { echo "bench: perf not installed" >&2; exit 1; }
echo "median of $runs runs; sampling event: $(perf stat -e cycles true 2>&1 | grep -q 'not supported' && echo cpu-clock || echo cycles)"
# "jittrace --cow" rows record data addresses too (-d), as perf does.
ev=
bench calls 200000 "mmap+mprotect+munmap (per loop)"
bench touch 200000 "page touch (per page)"
# Copy-on-write cost: fault samples with data addresses in both tools.
ev="-e page-faults"
bench touch 100000 "anon page write, -e page-faults -d (per page)"
bench filetouch 100000 "private file page write, -e page-faults -d (per page)"
