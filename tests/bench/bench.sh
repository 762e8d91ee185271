#!/bin/sh
# Overhead per call of jittrace record against perf record -d on the same
# loops, in the same run. Each loop times itself; the minimum and the
# median of RUNS (11) runs are reported, and for the call and page loops
# the median of each run's fastest block of 1,000 calls or pages; then
# jittrace against perf run by run (paired.sh).
# usage: bench.sh BUILD_DIR
out=${1:-build}
jt=$out/jittrace
wl=$out/workloads/mmloop
runs=${RUNS:-11}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/paired.sh"
as_user="setpriv --reuid $(id -u nobody) --regid $(id -g nobody) --clear-groups"

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
minimum() { sort -n | head -1; }

# ns per op of one run of: $1 (a tracer) $2 (calls|touch|...) $3 (N)
one() {
	case $1 in
	none) $as_user $wl "$2" "$3" ;;
	jittrace) $jt record $samp -o "$tmp/jt.data" --user nobody -- $wl "$2" "$3" 2>/dev/null ;;
	jtcow) $jt record $ev --cow -d -o "$tmp/jt.data" --user nobody -- $wl "$2" "$3" 2>/dev/null ;;
	perf) perf record -q $ev $samp -d -o "$tmp/perf.data" -- $as_user $wl "$2" "$3" 2>/dev/null ;;
	floor-*) $out/bench/hookfloor "${1#floor-}" -- $wl "$2" "$3" 2>/dev/null ;;
	esac | awk '/^ns_per_op / {w = $2} /^ns_per_op_best / {b = $2}
		END {print w, b}'
}

# Runs interleave (none, jittrace, perf, none, ...) so that drift in a
# noisy machine's speed hits all alike. Each row gives the minimum (the
# cost with the least interference) and the median of the runs.
bench() {
	for t in none $tracers; do : >"$tmp/$t.all"; : >"$tmp/$t.best"; done
	i=0
	while [ $i -lt "$runs" ]; do
		for t in none $tracers; do
			one $t "$1" "$2" >"$tmp/one"
			awk '{print $1}' "$tmp/one" >>"$tmp/$t.all"
			awk 'NF > 1 {print $2}' "$tmp/one" >>"$tmp/$t.best"
		done
		i=$((i + 1))
	done
	echo "$3"
	stats="minimum:all median:all"
	# The loop's fastest block of each run, as well (mmloop's calls
	# and page loops).
	[ -s "$tmp/none.best" ] && stats="$stats median:best"
	for s in $stats; do
		stat=${s%:*} f=${s#*:}
		base=$($stat <"$tmp/none.$f")
		pbase=$($stat <"$tmp/perf.$f")
		name=$stat
		[ "$f" = best ] && name="best-blk"
		for t in none $tracers; do
			printf '%s %s\n' "$t" "$($stat <"$tmp/$t.$f")"
		done | awk -v stat="$name" -v base="$base" -v perf="$pbase" -v ev="$ev" -v samp="$samp" '
		function label(t) {
			if (t == "jtcow") return "jittrace " ev " --cow -d"
			if (t == "jittrace" && samp != "") return "jittrace " samp
			if (t == "perf") return "perf " ev samp " -d"
			if (t ~ /^floor-/) return "floor: " substr(t, 7) " hooks"
			return t
		}
		{
			o = $2 - base
			r = ($1 == "none" || $1 == "perf") ? "" : \
			    (perf > base && o > 0 ? sprintf("  %.2fx perf", o / (perf - base)) : "  within noise")
			if ($1 == "none")
				printf "  %-7s %-28s %8.1f ns/op\n", stat, label($1), $2
			else
				printf "  %-7s %-28s %8.1f ns/op  overhead %+8.1f ns%s\n", stat, label($1), $2, o, r
		}'
	done
	paired "jittrace - perf" "$tmp/jittrace.all" "$tmp/perf.all"
	case " $tracers " in
	*" jtcow "*) paired "jittrace --cow - perf" "$tmp/jtcow.all" "$tmp/perf.all" ;;
	esac
}

command -v perf >/dev/null || { echo "bench: perf not installed" >&2; exit 1; }
echo "$runs runs each; sampling event: $(perf stat -e cycles true 2>&1 | grep -q 'not supported' && echo cpu-clock || echo cycles)"
# "jittrace --cow" rows record data addresses too (-d), as perf does.
ev=
# The floor: the same three syscall-exit tracepoints with nothing in them
# (empty), with only the clock read a record's time takes (clock), with a
# record of a map event's size each (ring), with those records gathered
# in a per-CPU batch of 16 (batch), written to the CPU's own lane of a
# mapped array with no lock (lane), and with a VMA lookup at mmap's as
# well (lookup), read as jittrace reads its ring.
tracers="jittrace jtcow perf floor-empty floor-clock floor-ring floor-batch floor-lane floor-lookup"
bench calls 200000 "mmap+mprotect+munmap (per loop)"
# The same loop with the sampling all but off in both (one sample a
# second of CPU): the mapping calls alone. The row above counts perf's
# default 4,000 samples a second against jittrace's 999, and where a
# timer interrupt is dear (a Firecracker guest: about 500 ns a loop of
# perf's 1,450 to 1,700) that hides what the calls cost each tracer.
samp="-c 1000000000"
tracers="jittrace perf"
# Beside them, with no sampling either: the syscall-exit floor again,
# and a hook off the slow syscall path, a raw tracepoint the loop's
# calls all pass (mmap_lock_released), empty and with a lane write, so
# the row says whether another hook would bring the calls' cost down.
if $out/bench/hookfloor lock-empty -- true 2>/dev/null; then
	tracers="$tracers floor-empty floor-lock-empty floor-lock-lane"
else
	echo "bench: no mmap_lock_released raw tracepoint: lock floors skipped" >&2
fi
bench calls 200000 "mmap+mprotect+munmap, sampling off in both (per loop)"
samp=
tracers="jittrace jtcow perf"
bench touch 200000 "page touch (per page)"
# Copy-on-write cost: fault samples with data addresses in both tools.
ev="-e page-faults"
bench touch 100000 "anon page write, -e page-faults -d (per page)"
bench filetouch 100000 "private file page write, -e page-faults -d (per page)"
