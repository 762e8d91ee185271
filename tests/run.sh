#!/bin/sh
# Run the cmocka unit suites, the style check, the fuzz regressions,
# and the end-to-end and VM suites; close with one "N passed, N failed,
# N skipped" line.
# usage: run.sh BUILD_DIR [unit|style|fuzz|e2e|vm]
out=$1
what=${2:-all}
pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count() { sed -n "s/$1/\1/p" "$log" | awk '{s += $1} END {print s + 0}'; }

if [ "$what" = all ] || [ "$what" = unit ]; then
	for t in "$out"/tests/test_*; do
		# Beside each binary lies its .d (header dependencies).
		[ -x "$t" ] || continue
		"$t" >"$log" 2>&1
		rc=$?
		cat "$log"
		p=$(count '^\[  PASSED  \] \([0-9]*\) test.*')
		f=$(count '^\[  FAILED  \] \([0-9]*\) test.*')
		s=$(count '^\[  SKIPPED \] \([0-9]*\) test.*')
		# A suite that crashed reports nothing: count it as failed.
		[ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	done
fi
# A suite that ends with "NAME: N passed, N failed, N skipped".
suite() {
	name=$1
	shift
	JT_BUILD=$(cd "$out" && pwd) "$@" | tee "$log"
	p=$(count "^$name: \\([0-9]*\\) passed.*")
	f=$(count "^$name: [0-9]* passed, \\([0-9]*\\) failed.*")
	s=$(count "^$name: .* \\([0-9]*\\) skipped\$")
	grep -q "^$name: " "$log" || f=$((f + 1))
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

here=$(dirname "$0")
if [ "$what" = all ] || [ "$what" = style ]; then
	suite style sh "$here/style.sh"
fi
if [ "$what" = all ] || [ "$what" = fuzz ]; then
	suite fuzz sh "$here/fuzz/replay.sh" "$out"
fi
if [ "$what" = all ] || [ "$what" = e2e ]; then
	suite e2e python3 "$here/e2e/run.py"
fi
if [ "$what" = all ] || [ "$what" = vm ]; then
	suite vm python3 "$here/vm/run.py"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
