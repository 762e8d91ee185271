#!/bin/sh
# The probe tiers' overhead on the first kernel of kernels.txt, measured in
# the VM (the host refuses fentry and has no kprobes), on a guest clock
# that counts instructions (vm.sh, JT_VM_ICOUNT): a nanosecond is one
# instruction executed, whatever the host's pace. Timed by the host's
# clock, eleven runs still left a row's median 2,700 ns apart an hour
# later; counted, a row's runs mostly agree to a few tenths of a percent,
# with an outlier now and then (one run 3.6% or 18% below its median):
# rows are read by their medians and paired differences.
# usage: [RUNS=N] [ROWS="mmap programs"] [JT_VM_BENCH=NAME] bench.sh
# BUILD_DIR (ROWS: some of bench-guest.sh's rows, all by default;
# JT_VM_BENCH: another x86 kernel of kernels.txt, with its suite= and
# tiers= as the VM suite takes them)
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# As the VM suite does (run.py): a fresh machine has no qemu yet.
if ! command -v qemu-system-x86_64 >/dev/null && [ "$(id -u)" = 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends qemu-system-x86 \
		busybox-static xz-utils >/dev/null
fi
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "bench-vm: SKIPPED LOUDLY: qemu-system-x86_64 not installed"; exit 0; }
set -- $(grep -v '^#' "$here/kernels.txt" |
	awk -v k="$JT_VM_BENCH" '!k || $1 == k' | head -1)
[ $# -ge 2 ] || { echo "bench-vm: no kernel $JT_VM_BENCH in kernels.txt" >&2; exit 1; }
opt() { printf '%s\n' "$@" | sed -n "s/^$1=//p"; }
suite=$(opt suite "$@") tiers=$(opt tiers "$@" | tr , ' ')
[ -z "$(opt arch "$@")" ] ||
	{ echo "bench-vm: $1 is not x86-64: the bench counts x86 instructions" >&2; exit 1; }
dir=$build/vm/$1
sh "$here/vm.sh" prepare "$2" "$dir" "$suite" || exit 1
res=$dir/bench
rm -rf "$res" && mkdir -p "$res"
echo "TIERS=\"${tiers:-tracepoint fentry kprobe}\" sh $here/bench-guest.sh" \
	"$build ${RUNS:-5} ${ROWS:+\"$ROWS\"}" >"$res/cmd.sh"
JT_VM_ICOUNT=1 sh "$here/vm.sh" run "$dir" "$res" 3600 || exit 1
echo "probe tiers on $(cat "$dir/release") under qemu TCG, one vCPU, ns counting" \
	"instructions (${RUNS:-5} runs each):"
cat "$res/out.log"
