#!/bin/sh
# The recorder's own memory over a long system-wide recording: `record -a`
# while processes come and go (a fork+exec loop, short mmap churners and
# perf-map writers), its RSS printed every STEP seconds. Flat is the goal.
# usage: record_memory.sh BUILD_DIR [SECONDS] [STEP]
out=${1:-build}
secs=${2:-600}
step=${3:-30}
jt=$out/jittrace
load=$out/workloads/modelload
tmp=$(mktemp -d)
as_user="setpriv --reuid $(id -u nobody) --regid $(id -g nobody) --clear-groups"

# Churn as nobody: new processes all the time, some writing perf-maps.
churn() {
	while :; do
		$as_user $load churn 2000 >/dev/null
		$as_user $load perfmap 2000 4 >/dev/null
		$as_user sh -c 'for i in 1 2 3 4 5 6 7 8; do /bin/true; done'
	done
}

$jt record -a -o "$tmp/rec.data" --duration "$secs" 2>"$tmp/err" &
rec=$!
churn &
load_pid=$!
trap 'kill $load_pid 2>/dev/null; kill $rec 2>/dev/null; rm -rf "$tmp"; find /tmp -maxdepth 1 -name "perf-*.map" -user nobody -delete' EXIT
t=0
echo "record -a for ${secs}s with process churn: recorder RSS (MB), recording size (MB)"
while [ $t -le "$secs" ] && kill -0 $rec 2>/dev/null; do
	rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$rec/status 2>/dev/null)
	size=$(du -m "$tmp/rec.data" 2>/dev/null | cut -f1)
	echo "  t=${t}s rss=${rss}MB file=${size:-0}MB"
	sleep "$step"
	t=$((t + step))
done
kill $load_pid 2>/dev/null
wait $rec
tail -2 "$tmp/err"
