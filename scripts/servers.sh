# Sourced by test-matrix.sh and soak.sh: the server binaries to run on.
#
#   SERVERS="bin bin ..."   overrides the list (default: Debian's redis-server
#                           plus every server of ../shared/servers below)
#   SHARED_SERVERS=dir      where the shared builds are (default ../shared/servers)
#
# Sets `servers` (binaries, each runnable: a read-only copy without its run
# bit is copied to $work) and `missing` (servers of the default list that are
# not on this machine: reported, not fatal). Needs `work`, a scratch directory.

shared="${SHARED_SERVERS:-../shared/servers}"
# The servers the README promises, as ../shared/servers names them; with
# MATRIX_EXTRA=1 (make test-matrix), also builds made for the tests:
# redis-keystep is Redis 8.6.3 reading a keynum key spec as 7.0-8.4.3 did
# (see ../shared/servers/README.md); it is no release, so nothing else runs on it.
expected=(redis-6.2.16 redis-7.2.6 redis-7.4.1 redis-8.0.6 redis-8.6.3
          valkey-7.2.7 valkey-8.0.1 valkey-8.1.1 valkey-9.1.2)
[ -n "${MATRIX_EXTRA:-}" ] && expected+=(redis-keystep)

servers=()
missing=()
if [ -n "${SERVERS:-}" ]; then
    read -r -a servers <<< "$SERVERS"
else
    if command -v redis-server >/dev/null 2>&1; then
        servers+=("$(command -v redis-server)")
    else
        missing+=("redis-server (Debian's, from apt)")
    fi
    for name in "${expected[@]}"; do
        found=""
        for bin in "$shared/$name"/*-server; do
            [ -f "$bin" ] && found="$bin"
        done
        if [ -n "$found" ]; then servers+=("$found"); else missing+=("$name"); fi
    done
fi

for index in "${!servers[@]}"; do
    bin="${servers[$index]}"
    if [ ! -x "$bin" ]; then
        copy="$work/bin-$index/$(basename "$bin")"
        mkdir -p "$(dirname "$copy")" && cp "$bin" "$copy" && chmod +x "$copy"
        servers[$index]="$copy"
    fi
done

# "Redis 7.0.15", "Valkey 9.1.2": the label of a server binary (a test build
# adds its directory's name: "Redis 8.6.3 (redis-keystep)").
server_label() {
    local label dir
    label="$("$1" --version 2>/dev/null | awk '{
        for (i = 1; i <= NF; i++) if ($i ~ /^v=/) v = substr($i, 3);
        name = ($1 == "Redis") ? "Redis" : "Valkey"; print name " " v }')"
    dir="$(basename "$(dirname "$1")")"
    case "$dir" in *keystep*) label="$label ($dir)" ;; esac
    echo "${label:-$1}"
}
