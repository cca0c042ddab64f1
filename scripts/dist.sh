#!/usr/bin/env bash
# make dist: a release tarball per architecture,
# DISTDIR/msetex-<version>-<arch>-unknown-linux-gnu.tar.gz (DISTDIR defaults
# to target/dist), holding the library, the README, the licence and
# msetex.conf, and DISTDIR/SHA256SUMS for the tarballs built.
#
#   dist.sh LIBRARY...   (make dist: the portable build of each ARCH)
#
# The architecture in each name is read from the library file (readelf -h).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/release.sh
source scripts/release.sh
umask 022

out="${DISTDIR:-target/dist}"
version="$(crate_version)"
require_libraries dist.sh "$@"
mkdir -p "$out"
tarballs=()
for module in "$@"; do
    name="msetex-$version-$(elf_arch "$module")-unknown-linux-gnu"
    rm -rf "${out:?}/$name"
    mkdir -p "$out/$name"
    # Redis 7+ and Valkey refuse to load a module file without execute permission.
    install -m 0755 "$module" "$out/$name/libmsetex.so"
    install -m 0644 README.md LICENSE packaging/msetex.conf "$out/$name/"
    tar -C "$out" -czf "$out/$name.tar.gz" "$name"
    rm -rf "${out:?}/$name"
    echo "$out/$name.tar.gz"
    tarballs+=("$name.tar.gz")
done
write_sums "$out" "${tarballs[@]}"
