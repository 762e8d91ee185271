# Sourced by the benches (tests/bench/bench.sh, tests/vm/bench-guest.sh).
# One tracer's runs against another's, run by run: the runs interleave,
# so each pair ran within seconds of each other and the machine's drift,
# which moves a median by more than the difference between tracers, is
# mostly the same in both. Prints the median difference and in how many
# runs the first was at or below the second.
# usage: paired LABEL FILE OTHER (one ns/op a line, in run order)
paired() {
	paste "$2" "$3" | awk '{print $1 - $2}' | sort -n | awk -v t="$1" '
		{d[NR] = $1; below += $1 <= 0}
		END {
		printf "  paired  %-28s median %+8.1f ns/op, at or below in %d of %d runs\n",
			t, d[int((NR + 1) / 2)], below, NR }'
}
