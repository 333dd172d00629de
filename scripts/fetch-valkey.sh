#!/usr/bin/env bash
# fetch-valkey.sh DIR: put Valkey 8.1 (valkey-server and valkey-cli) in DIR,
# for the tests of spec/redis-valkey-8.1.yaml. 'make deps' runs it with
# DIR=.bin/valkey-8.1; stores/redis/rediskit looks there (or wherever
# KVBLOB_VALKEY_SERVER and KVBLOB_VALKEY_CLI say).
#
# Debian 12 (bookworm) ships Redis 7.0 and, in backports, Valkey 8.0, which
# has no SET IFEQ; Valkey 8.1 is Debian 13's (trixie). Its binaries need
# trixie's C library, so this downloads trixie's valkey-server, valkey-tools
# and the libraries they link (apt-get download, with a private package
# list and cache: nothing is installed, no root needed), unpacks them, and
# writes two wrappers that run each program on trixie's own loader and
# libraries. Needs apt-get, dpkg-deb and Debian's archive keyring.
#
# DIR is replaced only when complete: the new copy is built beside it and
# renamed into place, and DIR/.complete is written last. An existing DIR
# without that stamp is not this script's, and is left alone.
set -euo pipefail

dir=${1:?usage: fetch-valkey.sh DIR}
dir=${dir%/}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
for tool in apt-get dpkg-deb dpkg; do
  command -v "$tool" >/dev/null || { echo "fetch-valkey: $tool not found: this needs Debian's apt (or set KVBLOB_VALKEY_SERVER and KVBLOB_VALKEY_CLI to a Valkey 8.1 of your own)" >&2; exit 1; }
done
test -r "$keyring" || { echo "fetch-valkey: $keyring not found: install debian-archive-keyring (or set KVBLOB_VALKEY_SERVER and KVBLOB_VALKEY_CLI to a Valkey 8.1 of your own)" >&2; exit 1; }
if test -e "$dir" && ! test -e "$dir/.complete"; then
  echo "fetch-valkey: $dir exists and is not a Valkey this script fetched (no $dir/.complete); move it away first" >&2
  exit 1
fi
arch=$(dpkg --print-architecture)
case $arch in
  amd64) triplet=x86_64-linux-gnu loader=ld-linux-x86-64.so.2 ;;
  arm64) triplet=aarch64-linux-gnu loader=ld-linux-aarch64.so.1 ;;
  *) echo "fetch-valkey: no recipe for $arch; set KVBLOB_VALKEY_SERVER and KVBLOB_VALKEY_CLI to a Valkey 8.1 of your own" >&2; exit 1 ;;
esac

mkdir -p "$(dirname "$dir")"
work=$(mktemp -d "$(dirname "$dir")/.fetch-valkey.XXXXXX")
trap 'rm -rf "$work"' EXIT
work=$(cd "$work" && pwd) # apt runs in a subfolder: its paths must be absolute
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/root"
echo "deb [signed-by=$keyring] http://deb.debian.org/debian trixie main" >"$work/sources.list"
apt=(apt-get -qq -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Dir::State::status=/dev/null
  -o APT::Architecture="$arch" -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")

echo "fetch-valkey: [1/3] reading Debian trixie's package list (a few MB from deb.debian.org)"
"${apt[@]}" update
# valkey's own packages, then what valkey-server and valkey-cli link, down
# to the C library: every library comes from trixie, none from the host.
# When trixie renames one of them, the download below fails naming it, and
# the check after it names any library this list misses.
pkgs=(valkey-server valkey-tools libc6 libgcc-s1 libstdc++6 zlib1g libssl3t64 libjemalloc2 liblzf1
  libsystemd0 libcap2 libzstd1 liblz4-1 liblzma5 libatomic1)
echo "fetch-valkey: [2/3] downloading ${#pkgs[@]} packages (valkey-server, valkey-tools and the libraries they link, about 10 MB)"
(cd "$work/debs" && "${apt[@]}" download "${pkgs[@]}") || {
  echo "fetch-valkey: downloading ${pkgs[*]} from trixie failed; if a package was renamed, update the list in $0" >&2
  exit 1
}
echo "fetch-valkey: [3/3] unpacking them and checking that valkey-server and valkey-cli run on their own libraries"
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
  libs=$("$out/lib/$loader" --library-path "$out/lib" --list "$out/libexec/$program")
  if outside=$(grep -v -e "$out/lib/" -e vdso <<<"$libs"); then
    echo "fetch-valkey: $program links libraries from outside the download; add their packages to the list in $0:" >&2
    echo "$outside" >&2
    exit 1
  fi
  "$out/$program" --version
done

date -u +%FT%TZ >"$out/.complete"
rm -rf "$dir"
mv "$out" "$dir"
echo "fetch-valkey: Valkey 8.1 is in $dir"
