#!/usr/bin/env bash
# make test: the unit tests, the benchmark's own unit tests and the
# integration suite on one server (REDIS_SERVER, default redis-server on
# PATH). A test of something this server lacks returns early, and libtest
# counts it as passed: the skips are listed at the end, with their reasons.
set -uo pipefail
cd "$(dirname "$0")/.."

skips="$(mktemp)"
trap 'rm -f "$skips"' EXIT
MSETEX_SKIPS="$skips" cargo test --release --locked --workspace "$@"
status=$?
if [ -s "$skips" ]; then
    echo "== $(wc -l < "$skips") integration tests skipped on $("${REDIS_SERVER:-redis-server}" --version | cut -d' ' -f1-3) (counted as passed above):"
    sort "$skips" | sed 's/^/   /'
else
    echo "== no integration test skipped"
fi
exit $status
