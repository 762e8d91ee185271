#!/bin/sh
# Every input that once crashed a parser, and every seed, through every
# fuzz harness (ASan, UBSan): one test per harness and input.
# usage: replay.sh BUILD_DIR; closes with "fuzz: N passed, N failed, 0 skipped".
out=$1
here=$(dirname "$0")
pass=0 fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for h in "$out"/fuzz/fuzz_*; do
	for f in "$here"/regressions/* "$here"/seeds/*; do
		# A file argument is run once, not fuzzed.
		if "$h" -close_fd_mask=3 "$f" >"$log" 2>&1; then
			pass=$((pass + 1))
			echo "ok   $(basename "$h") $(basename "$f")"
		else
			fail=$((fail + 1))
			echo "FAIL $(basename "$h") $(basename "$f")"
			tail -30 "$log"
		fi
	done
done
echo "fuzz: $pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
