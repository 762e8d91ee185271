#!/bin/sh
# Runs inside the test VM: the end-to-end tests named in $JT_VM_TESTS once
# per tier given, each recording kept under RESULTS/TIER for the host to
# compare. Address-space randomization is off so that the tiers' runs of
# a workload lay out memory identically.
# usage: guest.sh RESULTS BUILD TIER...
res=$1 build=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
echo 0 >/proc/sys/kernel/randomize_va_space
# Under TCG every sample interrupt looks long, and the kernel would keep
# lowering perf_event_max_sample_rate (arm64 went to 500 Hz, and tests
# that count samples fell short); a real machine's budget does not apply.
# The maximum first: with the budget at 0 the kernel refuses that write.
echo 100000 >/proc/sys/kernel/perf_event_max_sample_rate
echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
uname -r >"$res/uname-r"
"$build/jittrace" doctor >"$res/doctor.txt" 2>&1
echo $? >"$res/doctor.rc"
# libbpf's and the verifier's messages, for a failure's report
"$build/jittrace" doctor -v >"$res/doctor-v.txt" 2>&1
for t in "$@"; do
	rm -rf "${res:?}/$t" && mkdir -p "$res/$t" && chmod 755 "$res/$t"
	start=$(cut -d' ' -f1 /proc/uptime)
	JT_BUILD=$build JT_TIER=$t JT_KEEP=$res/$t \
		python3 "$root/tests/e2e/run.py" $JT_VM_TESTS >"$res/$t/e2e.log" 2>&1
	echo "$t $start $(cut -d' ' -f1 /proc/uptime)" >>"$res/times"
done
