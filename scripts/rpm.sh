#!/usr/bin/env bash
# make rpm: the built module as an RPM for the RHEL family (RHEL 9 and 10,
# EPEL, Fedora), RPMDIR/msetex-<version>-<release>.<arch>.rpm (RPMDIR
# defaults to target/rpm), with rpmbuild and packaging/msetex.spec.
#
# The library is installed once, in /usr/lib64/msetex/msetex.so, and linked
# from the module directories of the valkey and redis packages,
# /usr/lib64/valkey/modules and /usr/lib64/redis/modules; the README, the
# licences and a commented loadmodule sample per server go to the
# documentation directory. No scriptlet: the package never edits a server's
# configuration. This script works out what the spec needs from the build:
# the newest glibc symbol version the library uses, the licences of what is
# linked into it, and the servers the suite passed on (docs/COMPATIBILITY.md,
# make test-matrix). MSETEX_MODULE packages another build of the library.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022
export LC_ALL=C

module="${MSETEX_MODULE:-target/release/libmsetex.so}"
out="${RPMDIR:-target/rpm}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
if [ ! -f "$module" ]; then
    echo "$module is missing: run make build first" >&2
    exit 1
fi
if ! command -v rpmbuild >/dev/null 2>&1; then
    echo "make rpm needs rpmbuild: install rpm (Debian: sudo apt-get install rpm; RHEL: sudo dnf install rpm-build)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sources="$work/SOURCES"
mkdir -p "$sources"
cp "$module" "$sources/libmsetex.so"
cp README.md LICENSE "$sources/"
cp packaging/redis.conf.example packaging/valkey.conf.example "$sources/"

# The oldest glibc it runs on: the newest GLIBC_x.y its symbols need.
glibc="$(objdump -T "$module" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)"
if [ -z "$glibc" ]; then
    echo "no GLIBC symbol version in $module (objdump -T)" >&2
    exit 1
fi

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

# "Redis 7.0.15, Valkey 9.1.2, ...": every server of the last matrix run
# without a failure.
tested="$(awk -F'|' '/^\| (Redis|Valkey) / && $4 + 0 == 0 { gsub(/^ +| +$/, "", $2); printf "%s%s", sep, $2; sep = ", " }' docs/COMPATIBILITY.md)"
matrix_date="$(sed -n 's/^- date: //p' docs/COMPATIBILITY.md)"
matrix_commit="$(sed -n 's/^- module: //p' docs/COMPATIBILITY.md)"
tested="$(echo "Tested on $tested (make test-matrix, $matrix_commit, $matrix_date)." | fold -s -w 72 | sed 's/ *$//')"

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

# The values the spec takes from this build, as a macro file: a macro
# defined on the command line cannot span lines.
macros="$work/msetex.macros"
{
    echo "%msetex_version $version"
    echo "%msetex_glibc $glibc"
    echo "%msetex_license $license"
    echo "%msetex_packager $packager"
    echo "$tested" | sed '1s/^/%msetex_tested /; $!s/$/\\/'
} > "$macros"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rpmbuild -bb --quiet \
    --load "$macros" \
    --dbpath "$work/rpmdb" \
    --define "_topdir $work" \
    --define "_sourcedir $sources" \
    --define "_rpmdir $out" \
    --define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
    "$spec" >&2
rpm="$out/msetex-$version-1.$(rpm --eval '%{_arch}').rpm"
if [ ! -f "$rpm" ]; then
    echo "rpmbuild did not write $rpm" >&2
    exit 1
fi
echo "$rpm"
