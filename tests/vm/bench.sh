#!/bin/sh
# The probe tiers' overhead on the first kernel of kernels.txt, measured in
# the VM (the host refuses fentry and has no kprobes).
#
# The guest's clock counts instructions (qemu -icount, 1 ns each): under
# plain TCG its pace followed the host's load, and the tiers could not be
# ranked. So a row says how many instructions a tier adds per call. What
# costs time without instructions (a trap's pipeline flush, a cache miss)
# is not in it; JT_VM_ICOUNT= (empty) measures emulated wall time instead.
# usage: bench.sh BUILD_DIR
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "bench-vm: qemu-system-x86_64 not installed: skipped"; exit 0; }
set -- $(grep -v '^#' "$here/kernels.txt" | head -1)
dir=$build/vm/$1
sh "$here/vm.sh" prepare "$2" "$dir" || exit 1
res=$dir/bench
rm -rf "$res" && mkdir -p "$res"
echo "sh $here/bench-guest.sh $build ${RUNS:-5}" >"$res/cmd.sh"
export JT_VM_ICOUNT="${JT_VM_ICOUNT-0}"
sh "$here/vm.sh" run "$dir" "$res" 1800 || exit 1
clock="instruction-counted: 1 ns = 1 instruction"
[ -z "$JT_VM_ICOUNT" ] && clock="emulated wall time"
echo "probe tiers on $(cat "$dir/release") under qemu TCG, $clock (median of ${RUNS:-5}):"
cat "$res/out.log"
