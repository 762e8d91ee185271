#!/bin/sh
# Install what building and testing jittrace needs on Debian 12.
# Idempotent and silent when everything is already there.
set -e
pkgs="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcmocka-dev \
pkg-config make gcc jq linux-perf libclang-rt-14-dev libdw-dev \
protobuf-c-compiler libprotobuf-c-dev libmicrohttpd-dev libcurl4-openssl-dev \
openjdk-17-jdk-headless"
[ "${1:-}" = "--test" ] && pkgs="$pkgs python3 procps util-linux nodejs llvm-14 golang-go \
	golang-github-google-pprof-dev hotspot xvfb xauth imagemagick libc6-dbg"
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
