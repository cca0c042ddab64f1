#!/usr/bin/env bash
# make deb: the built module as a Debian package, DEBDIR/msetex_<version>_<arch>.deb
# (DEBDIR defaults to target/deb), with dpkg-deb.
#
# The library is installed once, in /usr/lib/msetex, and reachable where each
# server's modules go: /usr/lib/redis/modules (as Debian's redis-* module
# packages) and /usr/lib/valkey/modules. The README, the licence and a
# commented loadmodule sample per server go to /usr/share/doc/msetex. No
# maintainer script: the package never edits a server's configuration. Its
# description names the servers the suite passed on, from
# docs/COMPATIBILITY.md (make test-matrix). MSETEX_MODULE packages another
# build of the library.
set -euo pipefail
cd "$(dirname "$0")/.."
# Directories and files as dpkg should create them, whatever the caller's umask.
umask 022

module="${MSETEX_MODULE:-target/release/libmsetex.so}"
out="${DEBDIR:-target/deb}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
arch="$(dpkg --print-architecture)"
if [ ! -f "$module" ]; then
    echo "$module is missing: run make build first" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pkg="$work/msetex_${version}_${arch}"
doc="$pkg/usr/share/doc/msetex"
install -d "$pkg/DEBIAN" "$pkg/usr/lib/msetex" "$pkg/usr/lib/redis/modules" \
    "$pkg/usr/lib/valkey/modules" "$doc/examples"
# Redis 7+ and Valkey refuse to load a module file without execute permission.
install -m 0755 "$module" "$pkg/usr/lib/msetex/libmsetex.so"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$pkg/usr/lib/msetex/libmsetex.so"
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

# Who maintains it: DEB_MAINTAINER, else the author of the commit built.
maintainer="${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || true)}"
if [ -z "$maintainer" ]; then
    echo "set DEB_MAINTAINER=\"Name <email>\" (no git history to take it from)" >&2
    exit 1
fi
# A native package's changelog, from the commit built.
date="$(git log -1 --format=%aD 2>/dev/null || date -R)"
{
    echo "msetex ($version) unstable; urgency=medium"
    echo
    echo "  * Release $version, from commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo " -- $maintainer  $date"
} | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# The shared libraries it links, as dpkg-shlibdeps (dpkg-dev) words the
# dependency; without dpkg-dev, the newest glibc symbol version it uses.
library="$pkg/usr/lib/msetex/libmsetex.so"
depends=""
if command -v dpkg-shlibdeps >/dev/null 2>&1; then
    mkdir -p "$work/shlibs/debian"
    printf 'Source: msetex\n\nPackage: msetex\nArchitecture: any\n' > "$work/shlibs/debian/control"
    depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O "$library" 2>/dev/null |
        sed -n 's/^shlibs:Depends=//p')"
fi
if [ -z "$depends" ]; then
    glibc="$(objdump -T "$library" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)"
    depends="libc6 (>= ${glibc:-2.17})"
    objdump -p "$library" | grep -q 'NEEDED *libgcc_s' && depends+=", libgcc-s1"
fi

# "Redis 7.0.15, Valkey 9.1.2, ...": every server of the last matrix run
# without a failure.
tested="$(awk -F'|' '/^\| (Redis|Valkey) / && $4 + 0 == 0 { gsub(/^ +| +$/, "", $2); printf "%s%s", sep, $2; sep = ", " }' docs/COMPATIBILITY.md)"
matrix_date="$(sed -n 's/^- date: //p' docs/COMPATIBILITY.md)"
matrix_commit="$(sed -n 's/^- module: //p' docs/COMPATIBILITY.md)"

{
    echo "Package: msetex"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $(du -sk "$pkg/usr" | cut -f1)"
    [ -n "$depends" ] && echo "Depends: $depends"
    echo "Suggests: redis-server | valkey-server"
    echo "Section: database"
    echo "Priority: optional"
    echo "Description: many keys, one TTL, one atomic step: MSETEX for Redis and Valkey"
    echo " A server module that adds MSETEX, which sets every key and its time to"
    echo " live in one atomic step, in native code: MSETEX seconds key value ..., or"
    echo " the numkeys form of Redis 8.4+ / Valkey 9.1+."
    echo " ."
    echo "Tested on $tested (make test-matrix, $matrix_commit, $matrix_date)." | fold -s -w 72 | sed 's/ *$//; s/^/ /'
    echo " ."
    echo " The library is installed in /usr/lib/msetex and linked from"
    echo " /usr/lib/redis/modules and /usr/lib/valkey/modules. No server"
    echo " configuration is changed: add a loadmodule line, as the samples in"
    echo " /usr/share/doc/msetex/examples show."
} > "$pkg/DEBIAN/control"

(cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/md5sums"

mkdir -p "$out"
deb="$out/msetex_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
