#!/usr/bin/env bash
# make portable (make dist, make deb and make rpm run it first): the module
# for each architecture named (x86_64, aarch64), built with cargo-zigbuild
# against glibc $PORTABLE_GLIBC (the Makefile's GLIBC, 2.17), so that one
# library per architecture loads on RHEL 8 (glibc 2.28), Amazon Linux 2
# (2.26) and everything newer:
#
#   target/<arch>-unknown-linux-gnu/release/libmsetex.so
#
#   portable.sh [--soft] ARCH...
#
# What it needs and is missing, it installs: the Rust target (rustup target
# add), zig and cargo-zigbuild (from PyPI, pinned, into a virtual environment
# in ~/.cache/msetex-cross, unless both are on PATH already), and for another
# architecture than the machine's, GNU binutils for it (the packages strip
# the library with its strip; scripts/deps.sh, apt-get as root).
#
# After each build it reads the newest GLIBC symbol version the library needs
# (objdump -T) and fails if that is above the floor: it never assumes it.
#
# --soft (make test): where that toolchain cannot be installed, the reason goes
# to target/cross/<arch>.skip and the script goes on; the tests that need the
# library skip with that reason. A build that fails is an error either way.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/release.sh
source scripts/release.sh

soft=no
if [ "${1:-}" = --soft ]; then
    soft=yes
    shift
fi
glibc="${PORTABLE_GLIBC:-2.17}"
cross=target/cross
# The versions this was tested with (cargo-zigbuild's zig wrapper follows zig).
ziglang_version=0.17.1
cargo_zigbuild_version=0.24.1
# Not under the repository: zig names the include directories below the
# current one relative to it, and bindgen, run in the redis-module crate's
# directory, would not find them (sys/types.h not found).
tools="${XDG_CACHE_HOME:-$HOME/.cache}/msetex-cross/ziglang-$ziglang_version-cargo-zigbuild-$cargo_zigbuild_version"
mkdir -p "$cross"

# Each check returns 1 with the reason in $reason.
reason=""

# zig and cargo-zigbuild: on PATH, or installed from PyPI into $tools (tried
# once per run).
zig_reason=unchecked
zig_tools() {
    if [ "$zig_reason" = unchecked ]; then
        if install_zig_tools; then zig_reason=""; else zig_reason="$reason"; fi
    fi
    reason="$zig_reason"
    [ -z "$zig_reason" ]
}

install_zig_tools() {
    if command -v cargo-zigbuild >/dev/null 2>&1 &&
        { command -v zig >/dev/null 2>&1 || python3 -c 'import ziglang' 2>/dev/null; }; then
        return 0
    fi
    if [ ! -x "$tools/bin/cargo-zigbuild" ] || ! "$tools/bin/python3" -c 'import ziglang' 2>/dev/null; then
        if ! command -v python3 >/dev/null 2>&1; then
            reason="zig and cargo-zigbuild come from PyPI, which needs python3 (apt-get install python3-venv)"
            return 1
        fi
        if ! python3 -c 'import ensurepip, venv' 2>/dev/null && ! scripts/deps.sh packages python3-venv >&2; then
            reason="installing zig and cargo-zigbuild from PyPI needs python3-venv, which is not installed"
            return 1
        fi
        echo "msetex: installing ziglang $ziglang_version and cargo-zigbuild $cargo_zigbuild_version from PyPI into $tools" >&2
        rm -rf "$tools"
        mkdir -p "$(dirname "$tools")"
        local log="$cross/pip.log"
        if ! { python3 -m venv "$tools" &&
            "$tools/bin/pip" install --quiet "ziglang==$ziglang_version" \
                "cargo-zigbuild==$cargo_zigbuild_version"; } > "$log" 2>&1; then
            reason="pip could not install ziglang and cargo-zigbuild from PyPI: $(tail -n 1 "$log")"
            return 1
        fi
    fi
    # cargo-zigbuild runs zig as `python3 -m ziglang`, the environment's.
    PATH="$tools/bin:$PATH"
    export PATH
}

# The Rust standard library for the target.
rust_target() {
    local triple="$1"
    if rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
        return 0
    fi
    if ! command -v rustup >/dev/null 2>&1; then
        reason="the Rust target $triple is not installed, and rustup is not here to add it"
        return 1
    fi
    if ! rustup target add "$triple" >&2; then
        reason="rustup target add $triple failed"
        return 1
    fi
}

# The packages strip the library with the strip of its architecture.
cross_strip() {
    local arch="$1" strip
    strip="$(strip_command "$arch")"
    command -v "$strip" >/dev/null 2>&1 && return 0
    if ! scripts/deps.sh packages "$(binutils_package "$arch")" >&2; then
        reason="packaging the $arch library needs $strip ($(binutils_package "$arch")), which is not installed"
        return 1
    fi
}

for arch in "$@"; do
    case "$arch" in
        x86_64 | aarch64) ;;
        *)
            echo "ARCH=$arch: the architectures are x86_64 and aarch64" >&2
            exit 1
            ;;
    esac
    triple="$arch-unknown-linux-gnu"
    skip="$cross/$arch.skip"
    if ! { zig_tools && rust_target "$triple" && cross_strip "$arch"; }; then
        if [ "$soft" = yes ]; then
            echo "$reason" > "$skip"
            echo "msetex: no $arch library against glibc $glibc: $reason" >&2
            continue
        fi
        echo "msetex: $reason" >&2
        exit 1
    fi
    rm -f "$skip"
    library="$(portable_library "$arch")"
    # cargo does not relink for another glibc floor alone: drop the library
    # built against another one.
    stamp="$cross/$arch.glibc"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$glibc" ]; then
        rm -f "$library"
    fi
    # A GNU build id, as the machine's linker writes it (rpm and debuggers use it).
    RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-Wl,--build-id=sha1" \
        cargo zigbuild --release --locked --target "$triple.$glibc"
    echo "$glibc" > "$stamp"
    if [ "$(elf_arch "$library")" != "$arch" ]; then
        echo "$library is not an $arch library" >&2
        exit 1
    fi
    needs="$(newest_glibc "$library")"
    if [ "$(printf '%s\n%s\n' "$needs" "$glibc" | sort -V | tail -n 1)" != "$glibc" ]; then
        echo "$library needs glibc $needs (objdump -T), above the floor $glibc" >&2
        exit 1
    fi
    echo "$library: $arch, needs glibc $needs or newer (objdump -T)"
done
