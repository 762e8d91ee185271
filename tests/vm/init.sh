#!/bin/busybox sh
# PID 1 of the test VM: load the virtio/9p modules, mount the host's / read
# only, give it writable /tmp and results, run the command, power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do
	insmod "/modules/$m.ko" || echo "jtvm: insmod $m failed"
done
res=$(sed -n 's/.*jt.results=\([^ ]*\).*/\1/p' /proc/cmdline)
proj=$(sed -n 's/.*jt.project=\([^ ]*\).*/\1/p' /proc/cmdline)
r=/host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot $r ||
	echo "jtvm: cannot mount the host's root"
mount -t tmpfs tmp $r/tmp
mount -t tmpfs run $r/run
mount -t proc proc $r/proc
mount -t sysfs sys $r/sys
mount -t devtmpfs dev $r/dev
mount -t devpts devpts $r/dev/pts 2>/dev/null
mount -t bpf bpf $r/sys/fs/bpf
mount -t tracefs nodev $r/sys/kernel/tracing
mount -t debugfs nodev $r/sys/kernel/debug 2>/dev/null
chmod 1777 $r/tmp
# The project again and its results, last: a checkout under /tmp (CI's)
# would be hidden by the tmpfs.
mkdir -p "$r$proj"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose project "$r$proj" ||
	echo "jtvm: cannot mount the project"
mkdir -p "$r$res"
mount -t 9p -o trans=virtio,version=9p2000.L,rw results "$r$res" ||
	echo "jtvm: cannot mount the results directory"
echo "jtvm: up $(cut -d' ' -f1 /proc/uptime)s"
chroot $r /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	PYTHONDONTWRITEBYTECODE=1 /bin/sh "$res/cmd.sh" >"$r$res/out.log" 2>&1
echo $? >"$r$res/rc"
sync
echo "jtvm: done $(cut -d' ' -f1 /proc/uptime)s"
poweroff -f
