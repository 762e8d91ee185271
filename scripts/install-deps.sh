#!/bin/sh
# Install what building and testing jittrace needs on Debian 12.
# Idempotent and silent when everything is already there.
set -e
pkgs="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcmocka-dev \
pkg-config make gcc jq linux-perf libclang-rt-14-dev libdw-dev \
protobuf-c-compiler libprotobuf-c-dev libmicrohttpd-dev libcurl4-openssl-dev \
openjdk-17-jdk-headless"
[ "${1:-}" = "--test" ] && pkgs="$pkgs python3 procps util-linux nodejs llvm-14 golang-go \
	golang-github-google-pprof-dev hotspot xvfb xauth imagemagick libc6-dbg \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross qemu-user scdoc debhelper lintian \
	man-db zsh chromium clang-format python3-fusepy postgresql-15"
# --arm64 (and --test, which cross-builds once): the cross compiler and
# the arm64 -dev packages, from Debian's arm64 architecture.
arm64="libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libdw-dev:arm64 \
libprotobuf-c-dev:arm64 libmicrohttpd-dev:arm64 libcurl4-openssl-dev:arm64"
case "${1:-}" in
--arm64 | --test)
	[ "${1:-}" = --arm64 ] && pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
		libstdc++-12-dev-arm64-cross"
	pkgs="$pkgs $arm64"
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		[ "$(id -u)" = 0 ] || {
			echo "install-deps: run as root to add the arm64 architecture" >&2
			exit 1
		}
		dpkg --add-architecture arm64
	fi
	;;
esac
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing:$missing (run as root to install)" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends $missing >/dev/null
