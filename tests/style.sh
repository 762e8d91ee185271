#!/bin/sh
# The sources are as clang-format writes them (.clang-format): one test,
# failed with the files it would change. vmlinux.h is generated.
# usage: style.sh
cd "$(dirname "$0")/.." || exit 1
if ! command -v clang-format >/dev/null || ! git rev-parse 2>/dev/null; then
	echo "SKIP style: SKIPPED LOUDLY: needs clang-format and a git checkout"
	echo "style: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
bad=$(git ls-files '*.c' '*.h' | grep -v '^vmlinux/' | while read -r f; do
	clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
	echo "FAIL style: clang-format would change (make format):" $bad
	echo "style: 0 passed, 1 failed, 0 skipped"
else
	echo "ok   style: $(git ls-files '*.c' '*.h' | grep -vc '^vmlinux/') files as clang-format writes them"
	echo "style: 1 passed, 0 failed, 0 skipped"
fi
