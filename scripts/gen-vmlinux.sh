#!/bin/sh
# Regenerate the committed CO-RE vmlinux.h from the running kernel's BTF.
# CO-RE relocations make the result portable: only regenerate to reach
# types that newer kernels added.
set -e
out=${1:-$(dirname "$0")/../vmlinux/x86/vmlinux.h}
bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$out.tmp"
mv "$out.tmp" "$out"
