#!/usr/bin/env bash
# make deb: the module as a Debian package per architecture,
# DEBDIR/msetex_<version>_<arch>.deb (amd64, arm64; DEBDIR defaults to
# target/deb), with dpkg-deb, and DEBDIR/SHA256SUMS for the packages built.
#
#   deb.sh LIBRARY...   (make deb: the portable build of each ARCH)
#
# The library is installed once, in /usr/lib/msetex, and reachable where each
# server's modules go: /usr/lib/redis/modules (as Debian's redis-* module
# packages) and /usr/lib/valkey/modules. The README, the licence and a
# commented loadmodule sample per server go to /usr/share/doc/msetex. No
# maintainer script: the package never edits a server's configuration. Its
# description names the servers the suite passed on, from
# docs/COMPATIBILITY.md (make test-matrix). The architecture and the glibc
# the package depends on are read from each library file (readelf -h,
# objdump -T).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/release.sh
source scripts/release.sh
# Directories and files as dpkg should create them, whatever the caller's umask.
umask 022

out="${DEBDIR:-target/deb}"
version="$(crate_version)"
require_libraries deb.sh "$@"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Who maintains it: DEB_MAINTAINER, else the author of the commit built.
maintainer="${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || true)}"
if [ -z "$maintainer" ]; then
    echo "set DEB_MAINTAINER=\"Name <email>\" (no git history to take it from)" >&2
    exit 1
fi
date="$(git log -1 --format=%aD 2>/dev/null || date -R)"

# One package: the library $1, for the architecture its header names.
package() {
    local module="$1" arch deb_arch
    arch="$(elf_arch "$module")"
    case "$arch" in
        x86_64) deb_arch=amd64 ;;
        aarch64) deb_arch=arm64 ;;
    esac
    local pkg="$work/msetex_${version}_${deb_arch}"
    local doc="$pkg/usr/share/doc/msetex"
    install -d "$pkg/DEBIAN" "$pkg/usr/lib/msetex" "$pkg/usr/lib/redis/modules" \
        "$pkg/usr/lib/valkey/modules" "$doc/examples"
    # Redis 7+ and Valkey refuse to load a module file without execute permission.
    local library="$pkg/usr/lib/msetex/libmsetex.so"
    install -m 0755 "$module" "$library"
    "$(strip_command "$arch")" --strip-unneeded --remove-section=.comment --remove-section=.note \
        "$library"
    ln -s ../../msetex/libmsetex.so "$pkg/usr/lib/redis/modules/libmsetex.so"
    ln -s ../../msetex/libmsetex.so "$pkg/usr/lib/valkey/modules/libmsetex.so"
    install -m 0644 README.md "$doc/README.md"
    install -m 0644 packaging/redis.conf.example "$doc/examples/redis.conf"
    install -m 0644 packaging/valkey.conf.example "$doc/examples/valkey.conf"
    {
        echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
        echo "Upstream-Name: redis-msetex"
        echo
        echo "Files: *"
        echo "License: MIT"
        sed 's/^$/./; s/^/ /' LICENSE
    } > "$doc/copyright"
    chmod 0644 "$doc/copyright"
    # A native package's changelog, from the commit built.
    {
        echo "msetex ($version) unstable; urgency=medium"
        echo
        echo "  * Release $version, from commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
        echo
        echo " -- $maintainer  $date"
    } | gzip -9n > "$doc/changelog.gz"
    chmod 0644 "$doc/changelog.gz"

    # The glibc its symbols need, read from the packaged file (and libgcc's
    # unwinder where the library links it).
    local depends
    depends="libc6 (>= $(newest_glibc "$library"))"
    if objdump -p "$library" | grep -q 'NEEDED *libgcc_s'; then
        depends+=", libgcc-s1"
    fi

    {
        echo "Package: msetex"
        echo "Version: $version"
        echo "Architecture: $deb_arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk "$pkg/usr" | cut -f1)"
        echo "Depends: $depends"
        echo "Suggests: redis-server | valkey-server"
        echo "Section: database"
        echo "Priority: optional"
        echo "Description: many keys, one TTL, one atomic step: MSETEX for Redis and Valkey"
        echo " A server module that adds MSETEX, which sets every key and its time to"
        echo " live in one atomic step, in native code: MSETEX seconds key value ..., or"
        echo " the numkeys form of Redis 8.4+ / Valkey 9.1+."
        echo " ."
        tested_servers "$arch" | fold -s -w 72 | sed 's/ *$//; s/^/ /'
        echo " ."
        echo " The library is installed in /usr/lib/msetex and linked from"
        echo " /usr/lib/redis/modules and /usr/lib/valkey/modules. No server"
        echo " configuration is changed: add a loadmodule line, as the samples in"
        echo " /usr/share/doc/msetex/examples show."
    } > "$pkg/DEBIAN/control"

    (cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
    chmod 0644 "$pkg/DEBIAN/md5sums"

    local deb="$out/msetex_${version}_${deb_arch}.deb"
    dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
    echo "$deb"
    debs+=("$(basename "$deb")")
}

mkdir -p "$out"
debs=()
for module in "$@"; do
    package "$module"
done
write_sums "$out" "${debs[@]}"
