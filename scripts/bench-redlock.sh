#!/bin/bash
# dlock's uncontended Redis cycle against node-redlock 4.2's, in the same
# run on the same server (bench/node-redlock/README.md):
#   scripts/bench-redlock.sh BUILD_DIR REDIS_URL [--json FILE]
# Blocks of node-redlock (lock + unlock, each awaited, one ioredis client,
# retryCount 0, ttl 30000 ms) alternate with blocks of dlock (a small C
# loop on BUILD_DIR's libdlock: dlock_acquire try + dlock_release, one
# store, ttl 30000 ms, no auto-renew as in dlock-bench's uncontended
# part); the order swaps every pair (A B, B A, ...).  Each block is a
# fresh process: WARMUP untimed cycles, then CYCLES timed ones (at most
# BLOCK_SECONDS).  Prints each block's cycles/s, the median of each and
# dlock/node-redlock.
# Environment:
#   PIN="taskset -c 0"  prefix of both benchmark commands (unset: none)
#   BLOCKS=5 CYCLES=2000 WARMUP=300 BLOCK_SECONDS=5
# node and npm: if missing, apt-get installs them when run as root;
# otherwise "skipped" and exit 0 (also when npm cannot fetch the
# packages).  The packages go to a cache outside the tree:
# ${XDG_CACHE_HOME:-$HOME/.cache}/dlock-bench/node-redlock.
set -euo pipefail
usage() {
    echo "usage: scripts/bench-redlock.sh BUILD_DIR REDIS_URL [--json FILE]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
build=$(cd "$1" && pwd)
url=$2
shift 2
json=
while [ $# -gt 0 ]; do
    case $1 in
    --json) [ $# -ge 2 ] || usage; json=$2; shift 2 ;;
    *) usage ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
src=$root/bench/node-redlock
blocks=${BLOCKS:-5} cycles=${CYCLES:-2000} warmup=${WARMUP:-300}
secs=${BLOCK_SECONDS:-5}
for v in blocks cycles warmup secs; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "bench-redlock: bad $v: ${!v}" >&2; exit 2; }
done
# Bounded: at most 50 pairs of blocks, 100,000 cycles and 60 s a block.
if ((blocks < 1 || blocks > 50 || cycles < 1 || cycles > 100000 ||
    warmup > 100000 || secs < 1 || secs > 60)); then
    echo "bench-redlock: BLOCKS 1..50, CYCLES 1..100000, WARMUP <= 100000, BLOCK_SECONDS 1..60" >&2
    exit 2
fi
# shellcheck disable=SC2206
pin=(${PIN:-})
skip() {
    echo "== node-redlock: skipped ($*)"
    exit 0
}
case $url in
redis://*) ;;
*) skip "not a redis:// URL" ;;
esac

shown=$(echo "${url%%\?*}" | sed -E 's#//[^@/]*@#//***@#')
echo "== dlock against node-redlock 4.2.0, uncontended lock + unlock on $shown${PIN:+ (pinned: $PIN)}"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y nodejs npm >/dev/null ||
            { apt-get update >/dev/null && apt-get install -y nodejs npm >/dev/null; } ||
            skip "node/npm missing, apt-get install nodejs npm failed"
    fi
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        skip "node and npm are needed: apt-get install nodejs npm"
    fi
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dlock-bench/node-redlock
mkdir -p "$cache"
# npm ci when the lock changed (or nothing installed yet).
if ! cmp -s "$src/package.json" "$cache/package.json" ||
    ! cmp -s "$src/package-lock.json" "$cache/package-lock.json" ||
    [ ! -f "$cache/node_modules/redlock/package.json" ] ||
    [ ! -f "$cache/node_modules/ioredis/package.json" ]; then
    cp "$src/package.json" "$src/package-lock.json" "$cache/"
    (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
        { rm -f "$cache/package-lock.json"; skip "npm ci failed (offline?)"; }
fi
cp "$src/cycle.js" "$cache/cycle.js"

# dlock's side: the same loop in C (bench/node-redlock/dlock-cycle.c) on
# BUILD_DIR's library.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
if [ -f "$build/libdlock.so" ]; then
    lib=(-L"$build" -ldlock "-Wl,-rpath,$build")
else
    lib=("$build/libdlock.a" -lsqlite3 -lhiredis -lssl -lcrypto -lpq -lmariadb -lpthread)
fi
"$cc" -O2 -std=c99 -D_POSIX_C_SOURCE=200809L -I"$root/include" \
    "$src/dlock-cycle.c" -o "$tmp/dlock-cycle" "${lib[@]}" ||
    skip "cannot build the dlock loop against $build"

# Redis names: dlock's own key layout for NAME; redlock uses the key as is.
tag=dlock-bench/node-redlock/$$
node_url=${url%%\?*} # ioredis: no dlock query parameters
per=$((secs + 60))   # a hung block ends here
run() { # run node|dlock: one block, prints cycles/s
    local out
    if [ "$1" = node ]; then
        out=$(cd "$cache" && timeout "$per" "${pin[@]}" node cycle.js \
            "$node_url" "$tag:redlock" "$cycles" "$secs" "$warmup")
    else
        out=$(timeout "$per" "${pin[@]}" "$tmp/dlock-cycle" "$url" \
            "$tag/dlock" "$cycles" "$secs" "$warmup")
    fi
    [[ $out =~ \"cycles_per_s\":([0-9.eE+-]+) ]] || {
        echo "bench-redlock: $1 block: no result: $out" >&2
        return 1
    }
    echo "${BASH_REMATCH[1]}"
    echo "$out" >>"$tmp/$1.jsonl"
}
median() { sort -g | awk '{a[NR] = $1} END {
    if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
: >"$tmp/node" && : >"$tmp/dlock" && : >"$tmp/ratio"
printf '%-6s %16s %16s %18s\n' block node-redlock/s dlock/s dlock/node-redlock
for ((b = 1; b <= blocks; b++)); do
    if ((b % 2)); then
        r_node=$(run node) && r_dlock=$(run dlock)
    else
        r_dlock=$(run dlock) && r_node=$(run node)
    fi || { echo "bench-redlock: block $b failed" >&2; exit 1; }
    echo "$r_node" >>"$tmp/node"
    echo "$r_dlock" >>"$tmp/dlock"
    ratio=$(awk -v d="$r_dlock" -v n="$r_node" 'BEGIN { printf "%.3f", d / n }')
    echo "$ratio" >>"$tmp/ratio"
    printf '%-6s %16.0f %16.0f %18s\n' "$b" "$r_node" "$r_dlock" "$ratio"
done
m_node=$(median <"$tmp/node")
m_dlock=$(median <"$tmp/dlock")
m_ratio=$(median <"$tmp/ratio")
lo=$(sort -g "$tmp/ratio" | head -1)
hi=$(sort -g "$tmp/ratio" | tail -1)
ratio=$(awk -v d="$m_dlock" -v n="$m_node" 'BEGIN { printf "%.2f", d / n }')
vers=$(head -1 "$tmp/node.jsonl" | sed -E 's/.*"ioredis":"([^"]*)","node":"([^"]*)".*/ioredis \1, node \2/')
echo "($vers; $cycles cycles a block after $warmup untimed; per-pair ratio median $m_ratio, range $lo..$hi)"
printf 'node-redlock 4.2.0: %.0f cycles/s, dlock: %.0f cycles/s, dlock/node-redlock %s (median of %d blocks)\n' \
    "$m_node" "$m_dlock" "$ratio" "$blocks"
if [ -n "$json" ]; then
    {
        echo "{"
        echo "  \"url\": \"$shown\","
        echo "  \"pin\": \"${PIN:-}\","
        echo "  \"blocks\": $blocks, \"cycles_per_block\": $cycles, \"warmup\": $warmup,"
        echo "  \"node_redlock_blocks\": [$(paste -sd, "$tmp/node.jsonl")],"
        echo "  \"dlock_blocks\": [$(paste -sd, "$tmp/dlock.jsonl")],"
        echo "  \"node_redlock_cycles_per_s_median\": $m_node,"
        echo "  \"dlock_cycles_per_s_median\": $m_dlock,"
        echo "  \"dlock_over_node_redlock\": $ratio,"
        echo "  \"dlock_over_node_redlock_per_pair\": {\"median\": $m_ratio, \"min\": $lo, \"max\": $hi}"
        echo "}"
    } >"$json"
fi
