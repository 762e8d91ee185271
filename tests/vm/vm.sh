#!/bin/sh
# Boot a stock distribution kernel under qemu to run jittrace's tests on
# it. The kernel package is unpacked into the build tree, never installed.
#
#   vm.sh prepare PACKAGE DIR [SUITE] [ARCH]
#                               fetch (from Debian's SUITE, if given),
#                               unpack, decompress, build initramfs; for
#                               a foreign ARCH (arm64), also its root
#                               filesystem, from Debian's packages
#   vm.sh run DIR RESULTS [SECS] boot DIR's kernel; the guest runs
#                               RESULTS/cmd.sh as root in a chroot of the
#                               host's / or DIR's root filesystem (read
#                               only; RESULTS and /tmp are writable) and
#                               leaves RESULTS/out.log, rc
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# Another Debian release's kernels (SUITE: bullseye for 5.10) come from
# apt with a sources list and lists of their own, under the build tree:
# the machine's own apt setup stays as it is.
apt_for() {
	APT=
	[ -n "$1" ] || return 0
	a=$2/apt-$1
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
	kr=/usr/share/keyrings/debian-archive-keyring.gpg
	for s in "$1 main" "$1-updates main"; do
		echo "deb [signed-by=$kr] http://deb.debian.org/debian $s"
	done >"$a/sources.list"
	echo "deb [signed-by=$kr] http://deb.debian.org/debian-security $1-security main" \
		>>"$a/sources.list"
	APT="-o Dir::Etc::SourceList=$a/sources.list -o Dir::Etc::SourceParts=/dev/null
	     -o Dir::State::Lists=$a/lists -o Dir::Cache=$a/cache"
	# Lists a day old are new enough: kernels move slower than that.
	[ -n "$(find "$a/lists" -name '*Packages*' -mtime -1 2>/dev/null)" ] ||
		apt-get $APT update >/dev/null 2>&1 ||
		{ echo "vm.sh: apt-get update for $1 failed" >&2; return 1; }
}

# An arm64 guest cannot use the host's /: its root filesystem is Debian
# 12's arm64 packages, extracted (not configured, so no emulator runs on
# the host) by mmdebstrap. It holds what the end-to-end tests run: python3,
# a shell and its tools, jittrace's libraries, and busybox for the
# initramfs. The project and results are mounted into it as on x86.
ROOTFS_PKGS="libc6 libc-bin dash bash coreutils grep sed findutils gawk \
util-linux procps binutils file python3 busybox-static base-passwd \
libbpf1 libelf1 zlib1g libdw1 libprotobuf-c1 libmicrohttpd12 libcurl4 \
libstdc++6 libc6-dbg"

rootfs() {
	arch=$1 fs=$2
	key="bookworm $arch $ROOTFS_PKGS"
	[ -f "$fs.ready" ] && [ "$(cat "$fs.ready")" = "$key" ] && return 0
	command -v mmdebstrap >/dev/null ||
		{ echo "vm.sh: mmdebstrap is needed for the $arch root filesystem" >&2; return 1; }
	rm -rf "$fs" "$fs.ready"
	mmdebstrap --quiet --variant=extract --architectures="$arch" \
		--include="$(echo $ROOTFS_PKGS | tr ' ' ,)" bookworm "$fs" \
		http://deb.debian.org/debian >"$fs.log" 2>&1 ||
		{ echo "vm.sh: mmdebstrap failed: $(tail -3 "$fs.log")" >&2; return 1; }
	# What maintainer scripts would have made: mount points, /bin/sh,
	# the users and groups.
	mkdir -p "$fs/proc" "$fs/sys" "$fs/dev" "$fs/run" "$fs/tmp" "$fs/root"
	[ -e "$fs/bin/sh" ] || ln -s dash "$fs/bin/sh"
	cp "$fs/usr/share/base-passwd/passwd.master" "$fs/etc/passwd"
	cp "$fs/usr/share/base-passwd/group.master" "$fs/etc/group"
	echo "$key" >"$fs.ready"
}

# The concrete package behind a metapackage such as linux-image-amd64, or
# the newest one a pattern such as linux-image-6.12.*+deb12-amd64 names.
concrete() {
	case $1 in
	*'*'*)
		apt-cache $APT pkgnames linux-image- 2>/dev/null |
			grep -x "$(echo "$1" | sed 's/[.+]/\\&/g; s/\*/.*/g')" |
			sort -V | tail -1
		return ;;
	esac
	dep=$(apt-cache $APT depends "$1" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -1)
	echo "${dep:-$1}"
}

# Recursive module dependencies from each .ko's .modinfo, leaves first.
add_module() {
	grep -qx "$1" "$dir/modules.order" 2>/dev/null && return 0
	# Built into the kernel (6.12 builds virtio in): nothing to load.
	grep -q "/$1.ko\$" "$moddir/modules.builtin" 2>/dev/null && return 0
	f=$(find "$moddir" -name "$1.ko" -o -name "$1.ko.xz" | head -1)
	[ -n "$f" ] || { echo "vm.sh: module $1 not in the package" >&2; return 1; }
	case $f in *.xz) xz -dc "$f" >"$dir/initrd/modules/$1.ko" ;;
	*) cp "$f" "$dir/initrd/modules/$1.ko" ;; esac
	for d in $(tr '\0' '\n' <"$dir/initrd/modules/$1.ko" |
		sed -n 's/^depends=//p' | tr ',' ' '); do
		add_module "$d"
	done
	echo "$1" >>"$dir/modules.order"
}

# bzImage holds the kernel compressed; qemu boots the ELF by its PVH
# note, which skips the in-guest decompression (seconds under TCG).
decompress() {
	off=$(python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
for m in (b"\xfd7zXZ\0", b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08\0"):
    i = d.find(m)
    if i >= 0:
        print(i + 1, m[0]); break' "$1")
	set -- "$1" $off
	case $3 in
	# The compressed stream is followed by more of the image: the
	# decompressors complain about trailing data, which is expected.
	253) tail -c +"$2" "$1" | xz -dc 2>/dev/null || true ;;
	40) tail -c +"$2" "$1" | zstd -dc 2>/dev/null || true ;;
	*) tail -c +"$2" "$1" | gzip -dc 2>/dev/null || true ;;
	esac
}

prepare() {
	mkdir -p "$(dirname "$2")"
	apt_for "$3" "$(cd "$(dirname "$2")" && pwd)" || return 1
	pkg=$(concrete "$1") dir=$2 arch=${4:-x86}
	[ -n "$pkg" ] || { echo "vm.sh: no package matches $1" >&2; return 1; }
	busybox=/bin/busybox
	if [ "$arch" != x86 ]; then
		rootfs "$arch" "$(dirname "$dir")/rootfs-$arch" || return 1
		busybox=$(dirname "$dir")/rootfs-$arch/bin/busybox
	fi
	# The initramfs holds init.sh: a new one makes a new cache key.
	key="$pkg $arch $(cksum <"$here/init.sh")"
	[ -f "$dir/ready" ] && [ "$(cat "$dir/ready")" = "$key" ] && return 0
	rm -rf "$dir" && mkdir -p "$dir/initrd/modules" "$dir/initrd/bin"
	(cd "$dir" && apt-get $APT download "$pkg" >/dev/null 2>&1) ||
		{ echo "vm.sh: apt-get download $pkg failed" >&2; return 1; }
	dpkg-deb -x "$dir"/*.deb "$dir/pkg"
	rm -f "$dir"/*.deb
	# x86: the ELF inside bzImage. arm64: Debian's vmlinuz is the Image
	# itself (an EFI stub), which says ARMd at byte 56.
	if [ "$arch" = x86 ]; then
		decompress "$dir"/pkg/boot/vmlinuz-* >"$dir/vmlinux"
		magic=$(head -c 4 "$dir/vmlinux" | tail -c 3)
	else
		cp "$dir"/pkg/boot/vmlinuz-* "$dir/vmlinux"
		magic=$(tail -c +57 "$dir/vmlinux" | head -c 4)
	fi
	case $arch.$magic in x86.ELF | arm64.ARMd) ;; *)
		echo "vm.sh: cannot decompress the kernel image" >&2; return 1 ;;
	esac
	echo "$arch" >"$dir/arch"
	moddir=$(echo "$dir"/pkg/lib/modules/*)
	basename "$moddir" >"$dir/release"
	for m in virtio_pci 9pnet_virtio 9p; do add_module "$m"; done
	cp "$dir/modules.order" "$dir/initrd/modules.order"
	cp "$busybox" "$dir/initrd/bin/busybox"
	cp "$here/init.sh" "$dir/initrd/init"
	chmod +x "$dir/initrd/init"
	mkdir -p "$dir/initrd/proc" "$dir/initrd/sys" "$dir/initrd/dev" \
		"$dir/initrd/host"
	(cd "$dir/initrd" && find . | busybox cpio -o -H newc 2>/dev/null) |
		gzip -1 >"$dir/initrd.gz"
	# Keep only what booting needs: the package is 400 MB unpacked.
	rm -rf "$dir/pkg"
	echo "$key" >"$dir/ready"
}

qemu() {
	dir=$1 res=$2 secs=$3 accel=$4
	rm -f "$res/rc" "$res/out.log"
	fs=/
	case $(cat "$dir/arch" 2>/dev/null || echo x86) in
	arm64)
		fs=$(dirname "$dir")/rootfs-arm64
		# The project's path, where the guest mounts it, on a root
		# that is read only there.
		mkdir -p "$fs$root"
		# pauth-impdef: QEMU's own pointer-authentication hash; the
		# architected one costs TCG much more.
		set -- qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on \
			-accel "$accel" -append \
			"console=ttyAMA0 quiet panic=-1 jt.results=$res jt.project=$root" ;;
	*)
		cpu=max
		[ "$accel" = kvm ] && cpu=host
		set -- qemu-system-x86_64 -M q35 -cpu $cpu -accel "$accel" -append \
			"console=ttyS0 quiet panic=-1 jt.results=$res jt.project=$root" ;;
	esac
	# JT_VM_ICOUNT=1 (the bench): one vCPU whose clock counts the
	# instructions it executes, one a nanosecond. Timed by the host's
	# clock, a row's median moved 2,700 ns between runs an hour apart;
	# counted, its runs mostly agree to a few tenths of a percent. QEMU 7.2
	# hangs bringing up a second vCPU with icount.
	smp="-smp 2"
	[ -n "$JT_VM_ICOUNT" ] && [ "$accel" != kvm ] &&
		smp="-smp 1 -icount shift=0"
	timeout "$secs" "$@" \
		-m 1024 $smp -nographic -no-reboot -nodefaults \
		-serial stdio -kernel "$dir/vmlinux" -initrd "$dir/initrd.gz" \
		-fsdev local,id=hr,path="$fs",security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hr,mount_tag=hostroot \
		-fsdev local,id=pr,path="$root",security_model=none,readonly=on \
		-device virtio-9p-pci,fsdev=pr,mount_tag=project \
		-fsdev local,id=rs,path="$res",security_model=none \
		-device virtio-9p-pci,fsdev=rs,mount_tag=results \
		>"$res/console.log" 2>&1 || true
}

# KVM only where it really runs a guest (nested KVM here dies with
# emulation failures), found out once per kernel with a short boot.
# Else TCG on one host thread: with a thread per vCPU, a vCPU can still
# run code another has just patched (kprobes, jump labels), and 6.12
# died on a stale int3 in __schedule in one run of four.
accel() {
	dir=$1
	if [ ! -f "$dir/accel" ]; then
		echo tcg,thread=single >"$dir/accel"
		if [ -w /dev/kvm ] && [ "$(cat "$dir/arch")" = x86 ]; then
			probe=$(mktemp -d)
			echo true >"$probe/cmd.sh"
			qemu "$dir" "$probe" 20 kvm
			[ "$(cat "$probe/rc" 2>/dev/null)" = 0 ] &&
				echo kvm >"$dir/accel"
			rm -rf "$probe"
		fi
	fi
	cat "$dir/accel"
}

run() {
	dir=$1 res=$(cd "$2" && pwd) secs=${3:-600}
	qemu "$dir" "$res" "$secs" "$(accel "$dir")"
	[ -f "$res/rc" ] || {
		echo "vm.sh: the guest did not finish; console:" >&2
		tail -20 "$res/console.log" >&2
		return 1
	}
	return "$(cat "$res/rc")"
}

cmd=$1
shift
case $cmd in
prepare) prepare "$@" ;;
run) run "$@" ;;
*) echo "usage: vm.sh prepare PACKAGE DIR [SUITE] [ARCH] | run DIR RESULTS [SECS]" >&2; exit 2 ;;
esac
