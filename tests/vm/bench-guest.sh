#!/bin/sh
# Runs inside the test VM: per-call overhead of each probe tier on the same
# loops, runs interleaved so that drift hits all tiers alike; medians.
# Under TCG every instruction is emulated, so only ratios mean anything;
# the mmap and page loops count each run's fastest block of 1,000 calls
# or pages: the emulator's pace drifts within a run, and with both vCPUs
# on one host thread, the tracer's own work on the other stops the loop
# (a page loop whose hooks never fire still showed +3 us a page).
# usage: bench-guest.sh BUILD RUNS
build=$1 runs=${2:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
wl=$build/workloads/mmloop
tmp=$(mktemp -d)
as_user="setpriv --reuid $(id -u nobody) --regid $(id -g nobody) --clear-groups"

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

one() {
	case $1 in
	none) $as_user $wl "$2" "$3" ;;
	*) "$build/jittrace" record --tier "$1" $4 -o "$tmp/b.data" \
		--user nobody -- $wl "$2" "$3" 2>/dev/null ;;
	esac | awk '/^ns_per_op / {w = $2} /^ns_per_op_best / {b = $2}
		END {print b ? b : w}'
}

bench() {
	for t in none tracepoint fentry kprobe; do : >"$tmp/$t"; done
	i=0
	while [ $i -lt "$runs" ]; do
		for t in none tracepoint fentry kprobe; do
			one $t "$1" "$2" "$4" >>"$tmp/$t"
		done
		i=$((i + 1))
	done
	base=$(median <"$tmp/none")
	echo "$3"
	for t in none tracepoint fentry kprobe; do
		awk -v t=$t -v v="$(median <"$tmp/$t")" -v b="$base" 'BEGIN {
			printf "  %-10s %10.0f ns/op  overhead %+9.0f ns\n", t, v, v - b }'
	done
}

# A bystander: a loop (mmloop KIND N) in a process nobody traces while
# each tier records another (-p): what every task on the machine pays.
bystander() {
	sleep 1000 &
	other=$!
	for t in none tracepoint fentry kprobe; do : >"$tmp/$t"; done
	i=0
	while [ $i -lt "$runs" ]; do
		for t in none tracepoint fentry kprobe; do
			rec=
			if [ $t != none ]; then
				"$build/jittrace" record --tier $t -p $other \
					-o "$tmp/by.data" 2>/dev/null &
				rec=$!
				sleep 2
			fi
			$as_user $wl "$1" "$2" | awk '/^ns_per_op / {w = $2}
				/^ns_per_op_best / {b = $2} END {print b ? b : w}' >>"$tmp/$t"
			[ -n "$rec" ] && kill -INT $rec && wait $rec
		done
		i=$((i + 1))
	done
	kill $other
	base=$(median <"$tmp/none")
	echo "$3 in an untraced process, the tier recording -p OTHER"
	for t in none tracepoint fentry kprobe; do
		awk -v t=$t -v v="$(median <"$tmp/$t")" -v b="$base" 'BEGIN {
			printf "  %-10s %10.0f ns/op  ratio %.3f\n", t, v, v / b }'
	done
}

# Which programs each tier runs on the mmap loop: each runs once or more
# a loop, so their rates show how many a loop takes, and their own cost.
programs() {
	for t in tracepoint fentry; do
		echo "programs the $t tier ran on the mmap loop (bpf_stats; equal rates: as often as each other)"
		python3 "$root/tests/bench/bpf_stats.py" "$build" 5 10 -- \
			"$build/jittrace" record --tier $t -o "$tmp/s.data" \
			--user nobody -- $wl callsfor 20 | tail -n +2
	done
}

bench calls 20000 "mmap+mprotect+munmap (per loop)" ""
programs
bench touch 20000 "first write to a private anon page (per page), --cow" "--cow"
bench filetouch 20000 "private file page write (per page), --cow" "--cow"
bystander getppid 20000 "getppid (per call)"
bystander calls 20000 "mmap+mprotect+munmap (per loop)"
rm -rf "$tmp"
