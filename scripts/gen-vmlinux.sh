#!/bin/sh
# Regenerate a committed CO-RE vmlinux.h. CO-RE relocations make the
# result portable: only regenerate to reach types that newer kernels
# added.
#
#   gen-vmlinux.sh                  x86: from the running kernel's BTF
#   gen-vmlinux.sh --arm64          arm64: from Debian 12's newest arm64
#                                   kernel package (6.12: the task_vma
#                                   iterator's types), without booting it
set -e
here=$(cd "$(dirname "$0")" && pwd)
if [ "$1" != --arm64 ]; then
	out=${1:-$here/../vmlinux/x86/vmlinux.h}
	bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$out.tmp"
	mv "$out.tmp" "$out"
	exit 0
fi
out=$here/../vmlinux/arm64/vmlinux.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # apt downloads as _apt
# The arm64 package, fetched and unpacked, never installed (needs
# dpkg --add-architecture arm64: scripts/install-deps.sh --arm64).
pkg=$(apt-cache pkgnames linux-image-6.12 | grep -x 'linux-image-6\.12\.[0-9]*+deb12-arm64' |
	sort -V | tail -1)
[ -n "$pkg" ] || { echo "gen-vmlinux.sh: no arm64 6.12 kernel package" >&2; exit 1; }
(cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1)
dpkg-deb -x "$tmp"/*.deb "$tmp/pkg"
# The arm64 Image is not an ELF file: the BTF is found by its header
# (magic 0xeb9f, version 1, a 24-byte header, strings after types).
python3 - "$tmp"/pkg/boot/vmlinuz-* "$tmp/vmlinux.btf" <<'PY'
import gzip, struct, sys
d = open(sys.argv[1], "rb").read()
if d[:2] == b"\x1f\x8b":
    d = gzip.decompress(d)
i = d.find(b"\x9f\xeb\x01\x00")
while i >= 0:
    hdr, toff, tlen, soff, slen = struct.unpack_from("<5I", d, i + 4)
    if hdr == 24 and toff == 0 and soff == tlen and tlen > 1 << 20:
        open(sys.argv[2], "wb").write(d[i:i + hdr + soff + slen])
        sys.exit(0)
    i = d.find(b"\x9f\xeb\x01\x00", i + 1)
sys.exit("gen-vmlinux.sh: no BTF in " + sys.argv[1])
PY
bpftool btf dump file "$tmp/vmlinux.btf" format c >"$out.tmp"
mv "$out.tmp" "$out"
