#!/usr/bin/env bash
# Installs what building and testing msetex needs and is missing:
#   libclang-dev (bindgen, used by the redis-module crate, needs libclang at
#   build time) and a C compiler (the linker rustc calls; binutils for
#   make deb and make rpm); and, unless called as `deps.sh build` (make
#   build, make deb, make rpm, make install), redis-server and redis-tools
#   (redis-cli, redis-benchmark), which the tests, make run and make bench
#   start, and lintian, rpm (rpmbuild), rpmlint and python3-redis, with
#   which the tests check the packages (make deb, make rpm) and run the
#   redis-py example. `deps.sh packages NAME...` installs the Debian packages
#   named (scripts/portable.sh and scripts/arm64-server.sh: python3-venv,
#   a cross binutils, qemu-user).
# On Debian/Ubuntu as root it runs apt-get; otherwise it names the packages.
set -euo pipefail

mode="${1:-all}"
# The oldest Rust that builds the crate (Cargo.toml rust-version).
rust_min=1.87

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if ! command -v cargo >/dev/null 2>&1; then
    echo "msetex: cargo not found: install Rust (https://rustup.rs) and retry." >&2
    exit 1
fi
rust="$(rustc --version | awk '{ print $2 }')"
if [ "$(printf '%s\n%s\n' "$rust_min" "$rust" | sort -V | head -n 1)" != "$rust_min" ]; then
    echo "msetex: rustc $rust is older than $rust_min (Debian's own is): install Rust with" >&2
    echo "        rustup (https://rustup.rs), or run rustup update, and retry." >&2
    exit 1
fi

case "$mode" in
    packages) packages=("${@:2}") ;;
    build) packages=(libclang-dev) ;;
    *) packages=(libclang-dev redis-server redis-tools lintian rpm rpmlint python3-redis) ;;
esac
[ "$mode" = packages ] || command -v cc >/dev/null 2>&1 || need+=(gcc)

if command -v dpkg-query >/dev/null 2>&1; then
    for pkg in "${packages[@]}"; do
        have_pkg "$pkg" || need+=("$pkg")
    done
elif [ "$mode" = packages ]; then
    need+=("${packages[@]}")
else
    if [ "$mode" != build ]; then
        command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
        command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
    fi
    ls /usr/lib/llvm-*/lib/libclang.so /usr/lib*/libclang.so >/dev/null 2>&1 || need+=(libclang-dev)
fi

[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "msetex: missing packages: ${need[*]}" >&2
    echo "        install them (Debian: sudo apt-get install -y ${need[*]}) and retry." >&2
    exit 1
fi

service_was_active=no
systemctl is-active --quiet redis-server 2>/dev/null && service_was_active=yes

echo "msetex: installing ${need[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${need[@]}" ||
    { apt-get update && apt-get install -y --no-install-recommends "${need[@]}"; }

# Debian starts the packaged redis-server on port 6379 right after
# installing it. We installed it only to run tests and `make run`, which
# wants that port: stop the service we caused, never one that was running.
if [ "$service_was_active" = no ] && systemctl is-active --quiet redis-server 2>/dev/null; then
    echo "msetex: stopping and disabling the redis-server service Debian just started (port 6379)"
    systemctl disable --now redis-server || true
fi
