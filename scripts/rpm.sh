#!/usr/bin/env bash
# make rpm: the module as an RPM per architecture for the RHEL family (RHEL 9
# and 10, EPEL, Fedora; docs/OPERATIONS.md says why not RHEL 8 and Amazon
# Linux 2),
# RPMDIR/msetex-<version>-<release>.<arch>.rpm (x86_64, aarch64; RPMDIR
# defaults to target/rpm), with rpmbuild and packaging/msetex.spec, and
# RPMDIR/SHA256SUMS for the packages built.
#
#   rpm.sh LIBRARY...   (make rpm: the portable build of each ARCH)
#
# The library is installed once, in /usr/lib64/msetex/msetex.so, and linked
# from the module directories of the valkey and redis packages,
# /usr/lib64/valkey/modules and /usr/lib64/redis/modules; the README, the
# licences and a commented loadmodule sample per server go to the
# documentation directory. No scriptlet: the package never edits a server's
# configuration. This script works out what the spec needs from the build:
# the architecture (readelf -h) and the newest glibc symbol version
# (objdump -T) of each library file, the licences of what is linked into it,
# and the servers the suite passed on (docs/COMPATIBILITY.md, make
# test-matrix).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/release.sh
source scripts/release.sh
umask 022
export LC_ALL=C

out="${RPMDIR:-target/rpm}"
version="$(crate_version)"
require_libraries rpm.sh "$@"
if ! command -v rpmbuild >/dev/null 2>&1; then
    echo "make rpm needs rpmbuild: install rpm (Debian: sudo apt-get install rpm; RHEL: sudo dnf install rpm-build)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sources="$work/SOURCES"
mkdir -p "$sources"
cp README.md LICENSE "$sources/"
cp packaging/redis.conf.example packaging/valkey.conf.example "$sources/"

# The licences of the crates linked into the library (not the build-time
# ones: proc-macros, build scripts), as Fedora's %cargo_license macros list
# them: one line per crate in LICENSE.dependencies, and their conjunction,
# the crate's own first, for the License tag.
cargo tree -p msetex --locked --offline --edges no-build,no-dev,no-proc-macro \
    --prefix none --format '{l}	{p}' |
    awk -F'\t' '{ sub(/ \(.*\)$/, "", $2); gsub("/", " OR ", $1); print $2 ": " $1 }' |
    sort -u > "$sources/LICENSE.dependencies"
# Each crate's licence as one term ("(Apache-2.0 OR MIT)"), the crate's own
# first, then the others sorted, each once.
terms="$(awk -F': ' '{
    n = split($2, alt, / OR /)
    for (i = 2; i <= n; i++) for (j = i; j > 1 && alt[j - 1] > alt[j]; j--) { t = alt[j]; alt[j] = alt[j - 1]; alt[j - 1] = t }
    expr = alt[1]
    for (i = 2; i <= n; i++) expr = expr " OR " alt[i]
    print ($1 ~ /^msetex / ? "0" : "1") "\t" (n > 1 ? "(" expr ")" : expr)
}' "$sources/LICENSE.dependencies" | sort -t "$(printf '\t')" -k1,1 -k2 | cut -f2 | awk '!seen[$0]++')"
license="$(echo "$terms" | awk '{ printf "%s%s", sep, $0; sep = " AND " }')"
if [ -z "$license" ]; then
    echo "cargo tree listed no licence" >&2
    exit 1
fi


# Who packaged it: RPM_PACKAGER, else the author of the commit built; the
# changelog entry is the commit's.
packager="${RPM_PACKAGER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || true)}"
if [ -z "$packager" ]; then
    echo "set RPM_PACKAGER=\"Name <email>\" (no git history to take it from)" >&2
    exit 1
fi
date="$(git log -1 --format=%ad --date=format:'%a %b %d %Y' 2>/dev/null || date +'%a %b %d %Y')"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
spec="$work/msetex.spec"
{
    cat packaging/msetex.spec
    echo "* $date $packager - $version-1"
    echo "- Release $version, from commit $commit."
} > "$spec"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rpms=()
# One package: the library $1, for the architecture its header names. The
# values the spec takes from this build are defined at its top (rpmbuild
# --target drops a macro file loaded with --load, and a macro defined on the
# command line cannot span lines).
package() {
    local module="$1" arch glibc
    arch="$(elf_arch "$module")"
    # The oldest glibc it runs on: the newest GLIBC_x.y its symbols need.
    glibc="$(newest_glibc "$module")"
    cp "$module" "$sources/libmsetex.so"
    local arch_spec="$work/msetex-$arch.spec"
    {
        echo "%global msetex_version $version"
        echo "%global msetex_glibc $glibc"
        echo "%global msetex_license $license"
        echo "%global msetex_packager $packager"
        tested_servers "$arch" | fold -s -w 72 | sed 's/ *$//' |
            sed '1s/^/%global msetex_tested /; $!s/$/\\/'
        cat "$spec"
    } > "$arch_spec"
    rpmbuild -bb --quiet \
        --target "$arch" \
        --dbpath "$work/rpmdb" \
        --define "_topdir $work" \
        --define "_sourcedir $sources" \
        --define "_rpmdir $out" \
        --define "__strip $(strip_command "$arch")" \
        --define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
        "$arch_spec" >&2
    local rpm="$out/msetex-$version-1.$arch.rpm"
    if [ ! -f "$rpm" ]; then
        echo "rpmbuild did not write $rpm" >&2
        exit 1
    fi
    echo "$rpm"
    rpms+=("$(basename "$rpm")")
}

for module in "$@"; do
    package "$module"
done
write_sums "$out" "${rpms[@]}"
