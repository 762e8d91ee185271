#!/bin/sh
# Boot a stock distribution kernel under qemu to run jittrace's tests on
# it. The kernel package is unpacked into the build tree, never installed.
#
#   vm.sh prepare PACKAGE DIR [SUITE]
#                               fetch (from Debian's SUITE, if given),
#                               unpack, decompress, build initramfs
#   vm.sh run DIR RESULTS [SECS] boot DIR's kernel; the guest runs
#                               RESULTS/cmd.sh as root in a chroot of the
#                               host's / (read only; RESULTS and /tmp are
#                               writable) and leaves RESULTS/out.log, rc
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
	pkg=$(concrete "$1") dir=$2
	[ -n "$pkg" ] || { echo "vm.sh: no package matches $1" >&2; return 1; }
	# The initramfs holds init.sh: a new one makes a new cache key.
	key="$pkg $(cksum <"$here/init.sh")"
	[ -f "$dir/ready" ] && [ "$(cat "$dir/ready")" = "$key" ] && return 0
	rm -rf "$dir" && mkdir -p "$dir/initrd/modules" "$dir/initrd/bin"
	(cd "$dir" && apt-get $APT download "$pkg" >/dev/null 2>&1) ||
		{ echo "vm.sh: apt-get download $pkg failed" >&2; return 1; }
	dpkg-deb -x "$dir"/*.deb "$dir/pkg"
	rm -f "$dir"/*.deb
	decompress "$dir"/pkg/boot/vmlinuz-* >"$dir/vmlinux"
	[ "$(head -c 4 "$dir/vmlinux" | tail -c 3)" = ELF ] ||
		{ echo "vm.sh: cannot decompress the kernel image" >&2; return 1; }
	moddir=$(echo "$dir"/pkg/lib/modules/*)
	basename "$moddir" >"$dir/release"
	for m in virtio_pci 9pnet_virtio 9p; do add_module "$m"; done
	cp "$dir/modules.order" "$dir/initrd/modules.order"
	cp /bin/busybox "$dir/initrd/bin/busybox"
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
	cpu=max
	[ "$accel" = kvm ] && cpu=host
	timeout "$secs" qemu-system-x86_64 -M q35 -accel "$accel" \
		-cpu $cpu -m 1024 -smp 2 -nographic -no-reboot -nodefaults \
		-serial stdio -kernel "$dir/vmlinux" -initrd "$dir/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1 jt.results=$res jt.project=$root" \
		-fsdev local,id=hr,path=/,security_model=none,readonly=on,multidevs=remap \
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
		if [ -w /dev/kvm ]; then
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
*) echo "usage: vm.sh prepare PACKAGE DIR [SUITE] | run DIR RESULTS [SECS]" >&2; exit 2 ;;
esac
