#!/bin/sh
# Runs inside the test VM: per-call overhead of each probe tier on the same
# loops, runs interleaved so that drift hits all tiers alike; the
# fastest run and the median, with overheads against those of no tracer.
# bench.sh boots it with one vCPU whose clock counts instructions
# (vm.sh, JT_VM_ICOUNT), so only ratios mean anything. The mmap and page
# loops count each run's fastest block of 1,000 calls or pages: on the
# one vCPU the recorder's own work stops the loop now and then. The
# fentry and kprobe tiers are also set against the tracepoint tier run
# by run (paired.sh), and on the mmap loop every tier against perf -d.
# usage: [TIERS="tracepoint kprobe"] bench-guest.sh BUILD RUNS [ROWS], ROWS
# a quoted list of mmap floor programs touch filetouch bystander (all by
# default); TIERS, the tiers this kernel has (all three by default)
build=$1 runs=${2:-5} rows=${3:-mmap floor programs touch filetouch bystander}
tiers=${TIERS:-tracepoint fentry kprobe}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/bench/paired.sh"
wl=$build/workloads/mmloop
tmp=$(mktemp -d)
as_user="setpriv --reuid $(id -u nobody) --regid $(id -g nobody) --clear-groups"

want() { case " $rows " in *" $1 "*) return 0 ;; esac; return 1; }
has() { case " $tiers " in *" $1 "*) return 0 ;; esac; return 1; }

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# One row: a label, then the fastest and the median run, each against
# the baseline's (usage: line LABEL FILE BASEFILE).
line() {
	awk -v t="$1" -v m="$(sort -n "$2" | head -1)" -v v="$(median <"$2")" \
		-v bm="$(sort -n "$3" | head -1)" -v b="$(median <"$3")" 'BEGIN {
		printf "  %-11s min %6.0f ns/op (%+6.0f)  median %6.0f ns/op (%+6.0f)\n",
			t, m, m - bm, v, v - b }'
}

# A loop's ns/op: its fastest block where it counts blocks.
ns_per_op() {
	awk '/^ns_per_op / {w = $2} /^ns_per_op_best / {b = $2}
		END {print b ? b : w}'
}

# Runs "RUNNER NAME" for each NAME, RUNS times interleaved, into
# $tmp/NAME (usage: interleave RUNNER NAME...).
interleave() {
	run=$1
	shift
	for r in "$@"; do : >"$tmp/$r"; done
	i=0
	while [ $i -lt "$runs" ]; do
		for r in "$@"; do
			$run "$r" >>"$tmp/$r"
		done
		i=$((i + 1))
	done
}

# The loop ($kind $n) under tier $1, under none, or under perf -d (the
# issue's baseline on the host: perf record -d on the same loop).
tier_run() {
	case $1 in
	none) $as_user $wl "$kind" "$n" ;;
	perf) perf record -q -d -o "$tmp/p.data" -- $as_user $wl "$kind" \
		"$n" 2>/dev/null ;;
	*) "$build/jittrace" record --tier "$1" $flags -o "$tmp/b.data" \
		--user nobody -- $wl "$kind" "$n" 2>/dev/null ;;
	esac | ns_per_op
}

# usage: bench KIND N LABEL FLAGS [perf]: with perf, perf -d's runs
# interleave too, and each tier is set against them run by run.
bench() {
	kind=$1 n=$2 flags=$4 perf=$5
	interleave tier_run none $tiers $perf
	echo "$3"
	for t in none $tiers $perf; do
		line $t "$tmp/$t" "$tmp/none"
	done
	has fentry && paired "fentry - tracepoint" "$tmp/fentry" "$tmp/tracepoint"
	has kprobe && paired "kprobe - tracepoint" "$tmp/kprobe" "$tmp/tracepoint"
	[ -n "$perf" ] || return 0
	for t in $tiers; do
		paired "$t - perf -d" "$tmp/$t" "$tmp/perf"
	done
}

# A bystander: the loop in a process nobody traces while tier $1
# records another (-p $other): what every task on the machine pays.
bystander_run() {
	rec=
	if [ "$1" != none ]; then
		: >"$tmp/by.err"
		"$build/jittrace" record --tier "$1" -p $other \
			-o "$tmp/by.data" 2>"$tmp/by.err" &
		rec=$!
		# Its start-up done: on the one vCPU it would share the loop's.
		i=0
		while [ $i -lt 600 ] && ! grep -q "recording pid" "$tmp/by.err"; do
			sleep 0.1
			i=$((i + 1))
		done
	fi
	$as_user $wl "$kind" "$n" | ns_per_op
	[ -n "$rec" ] && kill -INT $rec && wait $rec
}

bystander() {
	kind=$1 n=$2
	sleep 1000 &
	other=$!
	interleave bystander_run none $tiers
	kill $other
	base=$(median <"$tmp/none")
	echo "$3 in an untraced process, the tier recording -p OTHER"
	for t in none $tiers; do
		awk -v t=$t -v v="$(median <"$tmp/$t")" -v b="$base" 'BEGIN {
			printf "  %-10s %10.0f ns/op  ratio %.3f\n", t, v, v / b }'
	done
}

# The floor under both tiers: bare programs at the tracepoints and as
# fexit on the fentry tier's functions (tests/bench/hookfloor.c), empty
# and with one ring record each, on the same mmap loop.
floor_run() {
	if [ "$1" = none ]; then
		$as_user $wl "$kind" "$n"
	else
		"$build/bench/hookfloor" "$1" -- $wl "$kind" "$n" 2>/dev/null
	fi | ns_per_op
}

floor() {
	kind=$1 n=$2
	modes="none empty ring"
	has fentry && modes="none empty fexit-empty ring fexit-ring"
	interleave floor_run $modes
	echo "$3: bare hooks, the floor (tracepoint: empty, ring; fexit: fexit-*)"
	for m in $modes; do
		line $m "$tmp/$m" "$tmp/none"
	done
	has fentry || return 0
	paired "fexit-empty - empty" "$tmp/fexit-empty" "$tmp/empty"
	paired "fexit-ring - ring" "$tmp/fexit-ring" "$tmp/ring"
}

# Which programs each tier runs on the mmap loop: each runs once or more
# a loop, so their rates show how many a loop takes, and their own cost.
programs() {
	for t in $tiers; do
		[ $t = kprobe ] && continue
		echo "programs the $t tier ran on the mmap loop (bpf_stats; equal rates: as often as each other)"
		python3 "$root/tests/bench/bpf_stats.py" "$build" 5 10 -- \
			"$build/jittrace" record --tier $t -o "$tmp/s.data" \
			--user nobody -- $wl callsfor 20 | tail -n +2
		# Some 400 MB on the one vCPU: left in the guest's /tmp, the
		# rows after it ran out of room (SIGBUS in the file page loop).
		rm -f "$tmp/s.data"
	done
}

# 60,000 loops: the fastest block of 20,000 still overlapped the
# recorder's start-up on the other vCPU in some runs of every tier.
want mmap && bench calls 60000 "mmap+mprotect+munmap (per loop)" "" perf
want floor && floor calls 60000 "mmap+mprotect+munmap (per loop)"
want programs && programs
want touch &&
	bench touch 20000 "first write to a private anon page (per page), --cow" "--cow"
want filetouch &&
	bench filetouch 20000 "private file page write (per page), --cow" "--cow"
if want bystander; then
	bystander getppid 20000 "getppid (per call)"
	bystander calls 20000 "mmap+mprotect+munmap (per loop)"
fi
rm -rf "$tmp"
