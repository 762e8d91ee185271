#!/bin/sh
# The bundled demo: a JIT-like program maps 8 code pages next to each
# other; the kernel merges them into one VMA and perf's MMAP2 records
# claim ever larger ranges. jittrace shows the 8 regions that were asked
# for, the kernel VMA they share, and where the samples landed.
set -e
out=${1:-build}
jt=$out/jittrace
data=${DEMO_DATA:-/tmp/jittrace-demo.data}
user=${SUDO_USER:-nobody}
[ "$(id -u)" = 0 ] || { echo "demo: run as root: sudo make demo" >&2; exit 1; }

echo "== jittrace record -- jitpages 8 1   (as $user)"
$jt record -o "$data" --user "$user" -- "$out/workloads/jitpages" 8 1
pid=$($jt script -i "$data" --json | awk -F'"pid":' '/"type":"exec"/ {split($2, a, ","); print a[1]; exit}')
echo
echo "== jittrace maps --pid $pid --perf   (anonymous executable regions, then perf's view)"
$jt maps -i "$data" --pid "$pid" --perf | awk '
	NR <= 2 || / r-xp .*\[anon\]/ || /^# perf/ || (/^#/ && /\/\/anon/ && / r-x\]/)'
echo
echo "== samples per requested region (jittrace report --sort sym)"
$jt report -i "$data" --pid "$pid" --sort sym | grep -E '^#|\[anon 0x'
