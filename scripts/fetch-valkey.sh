#!/usr/bin/env bash
# fetch-valkey.sh DIR: put Valkey 8.1 (valkey-server and valkey-cli) in DIR,
# for the tests of spec/redis-valkey-8.1.yaml. 'make deps' runs it with
# DIR=.bin/valkey-8.1; stores/redis/redistest looks there.
#
# Debian 12 (bookworm) ships Redis 7.0 and, in backports, Valkey 8.0, which
# has no SET IFEQ; Valkey 8.1 is Debian 13's (trixie). Its binaries need
# trixie's C library, so this downloads trixie's valkey-server, valkey-tools
# and the libraries they link (apt-get download, with a private package
# list and cache: nothing is installed, no root needed), unpacks them, and
# writes two wrappers that run each program on trixie's own loader and
# libraries. Needs apt-get and Debian's archive keyring.
set -euo pipefail

dir=${1:?usage: fetch-valkey.sh DIR}
arch=$(dpkg --print-architecture)
case $arch in
  amd64) triplet=x86_64-linux-gnu loader=ld-linux-x86-64.so.2 ;;
  arm64) triplet=aarch64-linux-gnu loader=ld-linux-aarch64.so.1 ;;
  *) echo "fetch-valkey: no recipe for $arch" >&2; exit 1 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/root"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$work/sources.list"
apt=(apt-get -qq -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Dir::State::status=/dev/null
  -o APT::Architecture="$arch" -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")

echo "fetch-valkey: reading Debian trixie's package list"
"${apt[@]}" update
# valkey's own packages, then what valkey-server and valkey-cli link, down
# to the C library: every library comes from trixie, none from the host.
pkgs=(valkey-server valkey-tools libc6 libgcc-s1 libstdc++6 zlib1g libssl3t64 libjemalloc2 liblzf1
  libsystemd0 libcap2 libzstd1 liblz4-1 liblzma5 libatomic1)
(cd "$work/debs" && "${apt[@]}" download "${pkgs[@]}")
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
done

out="$work/valkey"
mkdir -p "$out/lib" "$out/libexec"
cp -a "$work/root/usr/lib/$triplet/." "$out/lib/"
cp -a "$work/root/usr/bin/valkey-server" "$work/root/usr/bin/valkey-check-rdb" "$work/root/usr/bin/valkey-cli" "$out/libexec/"
for program in valkey-server valkey-cli; do
  # valkey-server is a link to valkey-check-rdb and tells the two apart by
  # its name, which the loader passes on as argv[0].
  cat >"$out/$program" <<WRAPPER
#!/bin/sh
# $program from Debian trixie, on trixie's loader and libraries
# (written by scripts/fetch-valkey.sh).
d=\$(dirname "\$(readlink -f "\$0")")
exec "\$d/lib/$loader" --library-path "\$d/lib" "\$d/libexec/$program" "\$@"
WRAPPER
  chmod +x "$out/$program"
done
"$out/valkey-server" --version
"$out/lib/$loader" --library-path "$out/lib" --list "$out/libexec/valkey-server" | grep -v "$out/lib" | grep -v vdso && {
  echo "fetch-valkey: valkey-server links a library from outside $out/lib" >&2; exit 1; } || true

rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$out" "$dir"
echo "fetch-valkey: Valkey 8.1 is in $dir"
