# Sourced by portable.sh, dist.sh, deb.sh and rpm.sh: the release's names,
# and what they read from a library file rather than assume (its
# architecture, the glibc it needs).

# The crate version (Cargo.toml).
crate_version() {
    sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1
}

# The library files dist.sh, deb.sh and rpm.sh were given: at least one, and
# each there (make dist, deb and rpm build them with make portable first).
require_libraries() {
    local script="$1"
    shift
    if [ $# -eq 0 ]; then
        echo "usage: $script LIBRARY... (make ${script%.sh} builds and names them)" >&2
        exit 1
    fi
    local module
    for module in "$@"; do
        if [ ! -f "$module" ]; then
            echo "$module is missing: run make portable (or make ${script%.sh}) first" >&2
            exit 1
        fi
    done
}

# Where scripts/portable.sh leaves the library of an architecture (x86_64,
# aarch64): cargo's output directory for its target triple.
portable_library() {
    echo "target/$1-unknown-linux-gnu/release/libmsetex.so"
}

# The architecture an ELF file is built for, as `uname -m` names it, from its
# header (readelf -h).
elf_arch() {
    local machine
    machine="$(readelf -h "$1" | sed -n 's/^ *Machine: *//p')"
    case "$machine" in
        "Advanced Micro Devices X86-64") echo x86_64 ;;
        AArch64) echo aarch64 ;;
        *)
            echo "$1: a library for '$machine', not x86_64 or aarch64" >&2
            return 1
            ;;
    esac
}

# The newest GLIBC_x.y symbol version the library needs (objdump -T): the
# oldest glibc it loads on.
newest_glibc() {
    local glibc
    glibc="$(objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)"
    if [ -z "$glibc" ]; then
        echo "no GLIBC symbol version in $1 (objdump -T)" >&2
        return 1
    fi
    echo "$glibc"
}

# The strip that reads an architecture's files: the machine's own, or GNU
# binutils' cross one (Debian package binutils-<arch>-linux-gnu).
strip_command() {
    if [ "$1" = "$(uname -m)" ]; then echo strip; else echo "$1-linux-gnu-strip"; fi
}

binutils_package() {
    echo "binutils-${1//_/-}-linux-gnu"
}

# Writes DIR/SHA256SUMS for the files named (relative to DIR), in the format
# `sha256sum -c SHA256SUMS` checks.
write_sums() {
    local dir="$1"
    shift
    (cd "$dir" && sha256sum -- "$@" > SHA256SUMS)
    echo "$dir/SHA256SUMS"
}

# What the package description says the library of an architecture was
# tested on: for x86_64, "Tested on Redis 7.0.15, Valkey 9.1.2, ... (make
# test-matrix, <commit>, <date>).", every server of the last matrix run
# (docs/COMPATIBILITY.md) without a failure; for aarch64, the arm64 server of
# make test first.
tested_servers() {
    local tested date commit
    tested="$(awk -F'|' '/^\| (Redis|Valkey) / && $4 + 0 == 0 { gsub(/^ +| +$/, "", $2); printf "%s%s", sep, $2; sep = ", " }' docs/COMPATIBILITY.md)"
    date="$(sed -n 's/^- date: //p' docs/COMPATIBILITY.md)"
    commit="$(sed -n 's/^- module: //p' docs/COMPATIBILITY.md)"
    if [ "$1" = aarch64 ]; then
        echo "Tested on Debian 12's arm64 redis-server under qemu user-mode emulation (make test); the x86_64 build on $tested (make test-matrix, $commit, $date)."
    else
        echo "Tested on $tested (make test-matrix, $commit, $date)."
    fi
}
