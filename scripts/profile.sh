#!/usr/bin/env bash
# make profile: where MSETEX spends its time, from perf. For each server (the
# one of `make test`, and Redis 8.6.3 and Valkey 9.1.2 from ../shared/servers
# when there; SERVERS="bin ..." to pick others) and each workload (refreshing
# 32-byte values, refreshing integers, new keys; 100 keys per call, 20
# clients), a few seconds of redis-benchmark load are sampled with perf and
# the time inside the command is split by the server function it went to.
# Writes docs/PROFILE.md (PROFILE_OUT=path for another file).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${PROFILE_OUT:-docs/PROFILE.md}"
seconds="${PROFILE_SECONDS:-4}"
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)"; exit 1; }

work="$(mktemp -d)"
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${SERVERS:-}" ]; then
    read -r -a servers <<< "$SERVERS"
else
    servers=("${REDIS_SERVER:-redis-server}")
    for bin in ../shared/servers/redis-8.6.3/redis-server ../shared/servers/valkey-9.1.2/valkey-server; do
        [ -f "$bin" ] && servers+=("$bin")
    done
fi

# The server functions a call's time goes to, as perf names them, with the
# label the report uses. Time inside the command not listed is "the rest".
parts=(
    "RM_OpenKey|open each key (RedisModule_OpenKey: a lookup, and one in the expires table)"
    "RM_SetAbsExpire|set each deadline (RedisModule_SetAbsExpire: a lookup, an expires-table insert)"
    "RM_StringDMA|write a value in place (RedisModule_StringDMA)"
    "RM_StringSet|store a new key (RedisModule_StringSet: the keyspace insert)"
    "VM_OpenKey|open each key (ValkeyModule_OpenKey)"
    "VM_SetAbsExpire|set each deadline (ValkeyModule_SetAbsExpire)"
    "VM_StringDMA|write a value in place (ValkeyModule_StringDMA)"
    "VM_StringSet|store a new key (ValkeyModule_StringSet)"
    "RM_CloseKey|close each key (RedisModule_CloseKey: free the handle, and signal it on Redis 8.6)"
    "VM_CloseKey|close each key (ValkeyModule_CloseKey)"
    "msetGenericCommand|the server's MSET, for the batch"
    "msetexCommand|the server's built-in MSETEX, for the batch (Valkey 9.1)"
    "moduleCreateArgvFromUserFormat|RedisModule_Call's argument vector"
    "RM_NotifyKeyspaceEvent|keyspace events"
    "VM_NotifyKeyspaceEvent|keyspace events"
    "RM_SignalModifiedKey|WATCH and client-side caching signals"
    "VM_SignalModifiedKey|WATCH and client-side caching signals"
    "msetex::command::check_acl|the Redis 7.0 ACL check: MSET on the keys, SET on each"
    "RM_ReplicateVerbatim|counting the change (nobody listens)"
    "VM_ReplicateVerbatim|counting the change (nobody listens)"
)

value32=$(printf 'x%.0s' $(seq 32))
pairs() {
    local value=$1 args=""
    for _ in $(seq 100); do args="$args k:__rand_int__ $value"; done
    echo "$args"
}

profile() {
    local title=$1 value=$2 keyspace=$3 auth=${4:-}
    cli flushall >/dev/null
    if [ "$keyspace" -le 100000 ]; then
        # Every key of the working set exists with a TTL and a value of the size written.
        redis-benchmark -p "$port" -n 2000 -r "$keyspace" -c 20 "$name" 3600 $(pairs "$value") >/dev/null 2>&1
    fi
    cli config resetstat >/dev/null
    # shellcheck disable=SC2046
    # shellcheck disable=SC2086
    redis-benchmark -p "$port" $auth -n 100000000 -r "$keyspace" -c 20 "$name" 3600 $(pairs "$value") >/dev/null 2>&1 &
    local bench=$!
    sleep 0.5
    perf record -q -F 2000 --call-graph dwarf,8192 -p "$pid" -o "$work/perf.data" -- sleep "$seconds" >/dev/null 2>&1
    kill "$bench" 2>/dev/null; wait "$bench" 2>/dev/null || true
    local stats mset_stats
    stats=$(cli info commandstats | tr -d '\r' | sed -n "s/^cmdstat_${name}:.*usec_per_call=\\([0-9.]*\\).*/\\1/p")
    perf report -i "$work/perf.data" --children --stdio -g none --percent-limit 0 2>/dev/null \
        > "$work/report.txt"
    share() { awk -v s="$1" '$6 == s { print $1 + 0; exit }' "$work/report.txt"; }
    local total
    total=$(share "msetex::command::msetex")
    {
        echo
        echo "### $label: $title"
        echo
        echo "Server time per call: ${stats:-?} µs for 100 keys (INFO commandstats)."
        echo "Of the time inside MSETEX:"
        echo
        echo "| went to | share |"
        echo "| --- | ---: |"
        local listed=0
        for part in "${parts[@]}"; do
            local symbol=${part%%|*} label=${part#*|} pct
            pct=$(share "$symbol")
            [ -z "$pct" ] && continue
            listed=$(awk -v a="$listed" -v b="$pct" 'BEGIN { print a + b }')
            awk -v p="$pct" -v t="$total" -v l="$label" 'BEGIN { if (t > 0 && p / t >= 0.005) printf "| %s | %.0f%% |\n", l, 100 * p / t }'
        done
        awk -v p="$listed" -v t="$total" 'BEGIN { if (t > 0) printf "| the rest: the module'"'"'s own code, argument access, allocation | %.0f%% |\n", 100 * (t - p) / t }'
    } >> "$work/out.md"
}

servers_seen=()
for server in "${servers[@]}"; do
    bin="$(command -v "$server" || echo "$server")"
    if [ ! -x "$bin" ]; then
        cp "$server" "$work/server" && chmod +x "$work/server" && bin="$work/server"
    fi
    label="$("$bin" --version | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^v=/) v = substr($i, 3);
        print (($1 == "Redis") ? "Redis" : "Valkey") " " v }')"
    # Servers with a built-in MSETEX (Redis 8.4+, Valkey 9.1+) keep that
    # name: the module is loaded as msetex.ttl there.
    name=msetex
    args=()
    if echo "$label" | awk '{ split($2, v, "."); exit !(($1 == "Redis" && (v[1] > 8 || (v[1] == 8 && v[2] >= 4))) || ($1 == "Valkey" && (v[1] > 9 || (v[1] == 9 && v[2] >= 1)))) }'; then
        name=msetex.ttl
        args=(COMMAND-NAME msetex.ttl)
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 6399)
    "$bin" --port "$port" --bind 127.0.0.1 --dir "$work" --save "" --appendonly no \
        --logfile "$work/log" --loadmodule "$PWD/target/release/libmsetex.so" "${args[@]}" &
    pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    cli() { redis-cli -p "$port" "$@"; }
    profile "Refreshing 32-byte values" "$value32" 10000
    profile "Refreshing integers" "1234567890" 10000
    profile "New keys, 32-byte values" "$value32" 2000000000
    if [ "${label%.*}" = "Redis 7.0" ]; then
        # The ACL check asks about every key: as a user whose rules name key patterns.
        cli acl setuser app on '>pw' '~app:*' '~k:*' '%R~r:*' '+@all' >/dev/null
        profile "Refreshing 32-byte values, as a user with key patterns" "$value32" 10000 "--user app -a pw"
    fi
    servers_seen+=("$label")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=""
done

# make bench-instr's section (between its markers) stays as it is.
instr="$(sed -n '/<!-- instr:start -->/,/<!-- instr:end -->/p' "$out" 2>/dev/null || true)"
{
    echo "# Where MSETEX spends its time"
    echo
    echo "Generated by \`make profile\` (scripts/profile.sh); do not edit by hand."
    echo "perf samples (call graphs) of the server during redis-benchmark load, 100 keys"
    echo "per call, 20 clients; each share is of the samples inside the MSETEX command"
    echo "itself (argument parsing, replies and the event loop are outside it)."
    echo "docs/DESIGN.md explains the parts."
    echo
    echo "**What lies above the module API's floor.** The floor (bench/floor, measured in"
    echo "instructions by \`make bench-instr\`: its section below) makes the same calls per key:"
    echo "open, rewrite in place or store, set the deadline, close, the two events, the signal,"
    echo "the change count. What MSETEX spends beyond it is in the last row of each table"
    echo "(the module's own code: parsing, the choice of path per key, the batch"
    echo "bookkeeping, the wire that reports each key to the replication, argument"
    echo "access) and, on Redis 7.0, in the ACL check's row: one permission query for MSET"
    echo "on the call's keys and one for SET per key, each a command lookup and a walk of"
    echo "the user's selectors, which no single query can replace exactly."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
    echo "- servers: ${servers_seen[*]}"
    echo "- module: commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    cat "$work/out.md"
    if [ -n "$instr" ]; then echo; echo "$instr"; fi
} > "$out"
echo "wrote $out"
