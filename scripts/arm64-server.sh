#!/usr/bin/env bash
# An arm64 Redis to test the aarch64 library in (make test): Debian 12's
# arm64 redis-server and redis-tools packages with the libraries they link,
# unpacked with dpkg-deb into target/cross/arm64-root (never installed), and
# target/cross/arm64-redis-server, which runs that redis-server under
# qemu-aarch64 user-mode emulation: a server binary the test harness starts
# like any other.
#
#   arm64-server.sh [--soft]
#
# qemu-user comes from apt (scripts/deps.sh, as root). The packages come from
# the machine's own apt sources, read for arm64 with a private apt state in
# target/cross/apt-arm64 (the machine's dpkg architectures and lists stay as
# they are). The libraries are those the packages depend on, followed from
# package to package; then every library the server and its libraries need
# (readelf -d) must be in the root, or the script fails.
#
# --soft (make test): where qemu or the packages cannot be had, the reason goes
# to target/cross/arm64-server.skip and the script exits 0; the test skips
# with that reason. The unpacked root is kept: a second run reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."

soft=no
[ "${1:-}" = --soft ] && soft=yes
cross="$PWD/target/cross"
root="$cross/arm64-root"
server="$cross/arm64-redis-server"
skip="$cross/arm64-server.skip"
mkdir -p "$cross"

unavailable() {
    if [ "$soft" = yes ]; then
        echo "$1" > "$skip"
        echo "msetex: no arm64 server to test in: $1" >&2
        exit 0
    fi
    echo "msetex: $1" >&2
    exit 1
}

if ! command -v qemu-aarch64 >/dev/null 2>&1 && ! scripts/deps.sh packages qemu-user >&2; then
    unavailable "qemu-aarch64 (Debian package qemu-user) is not installed"
fi
qemu="$(command -v qemu-aarch64)" || unavailable "qemu-aarch64 not found after installing qemu-user"

if [ ! -f "$root/.complete" ]; then
    command -v apt-get >/dev/null 2>&1 ||
        unavailable "fetching Debian's arm64 redis-server needs apt-get (Debian and its derivatives)"
    apt_dir="$cross/apt-arm64"
    rm -rf "$root" "$apt_dir"
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" "$root"
    : > "$apt_dir/status"
    apt_options=(
        -o APT::Architecture=arm64 -o APT::Architectures::=arm64
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
        -o Dir::Cache="$apt_dir/cache" -o Debug::NoLocking=1
        -o APT::Sandbox::User="$(id -un)"
    )
    if ! apt-get "${apt_options[@]}" update > "$apt_dir/update.log" 2>&1; then
        unavailable "apt-get update for arm64 failed: $(grep -m 1 '^[EW]:' "$apt_dir/update.log" || tail -n 1 "$apt_dir/update.log")"
    fi
    # The packages, and the libraries they depend on (each dependency's first
    # alternative), package by package.
    queue=(redis-server redis-tools)
    wanted=()
    while [ ${#queue[@]} -gt 0 ]; do
        package="${queue[0]}"
        queue=("${queue[@]:1}")
        case " ${wanted[*]} " in *" $package "*) continue ;; esac
        fields="$(apt-cache "${apt_options[@]}" show --no-all-versions "$package" 2>/dev/null)" ||
            unavailable "Debian's arm64 package $package is not in this machine's apt sources"
        wanted+=("$package")
        for dep in $(echo "$fields" | sed -n 's/^\(Pre-\)\?Depends: //p' | tr ',' '\n' |
            sed 's/|.*//; s/(.*)//; s/:any//; s/ //g'); do
            case "$dep" in lib*) queue+=("$dep") ;; esac
        done
    done
    if ! (cd "$apt_dir/debs" && apt-get "${apt_options[@]}" download "${wanted[@]}") > "$apt_dir/download.log" 2>&1; then
        unavailable "apt-get download of arm64 ${wanted[*]} failed: $(grep -m 1 '^E:' "$apt_dir/download.log" || tail -n 1 "$apt_dir/download.log")"
    fi
    for deb in "$apt_dir"/debs/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    # Every library the server needs, and theirs, is in the root.
    pending=("$root/usr/bin/redis-check-rdb")
    checked=" "
    while [ ${#pending[@]} -gt 0 ]; do
        file="${pending[0]}"
        pending=("${pending[@]:1}")
        for lib in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            case "$checked" in *" $lib "*) continue ;; esac
            checked+="$lib "
            found=""
            for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib; do
                if [ -e "$root/$dir/$lib" ]; then
                    found="$root/$dir/$lib"
                    break
                fi
            done
            if [ -z "$found" ]; then
                echo "the arm64 root lacks $lib, which $(basename "$file") needs" >&2
                exit 1
            fi
            pending+=("$(readlink -f "$found")")
        done
    done
    versions="$(dpkg-deb -f "$(ls "$apt_dir"/debs/redis-server_*.deb)" Version)"
    echo "Debian's arm64 redis-server $versions, unpacked from ${wanted[*]}" > "$root/.complete"
fi

cat > "$server" <<EOF
#!/bin/sh
# $(cat "$root/.complete"):
# run under qemu user-mode emulation (scripts/arm64-server.sh).
exec "$qemu" -L "$root" "$root/usr/bin/redis-server" "\$@"
EOF
chmod 0755 "$server"
"$server" --version >/dev/null || unavailable "$server --version failed under $qemu"
rm -f "$skip"
echo "$server: $("$server" --version)"
