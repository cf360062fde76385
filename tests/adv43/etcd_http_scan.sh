#!/bin/bash
# Issue 43 item 8: a gateway that always answers a range with "more":
# true made `dlock list` (the last runs' scan, then the locks' scan) run
# for ever: each page was bounded, the scan was not.  The whole scan must
# end within ?timeout= (2 s here) and ETCD_SCAN_KEYS keys, with a clear
# error and exit 69.  Two gateways (etcd_http_gateway.py): one that sends
# the same key on every page, one that sends 1000 new keys on every page
# (a keyspace without end), and the same 0.3 s late a page (the deadline
# ends it before the key count).  A bound of 20 s for each call, against 2 s
# of ?timeout=: the machine may be loaded, a loop is unbounded.
#   etcd_http_scan.sh DLOCK
set -u
dlock=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || {
    echo "no python3"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv43-scan.XXXXXX")
gw=
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
fails=0 n=0
start() { # MODE: the gateway, its URL in $url
    [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null
    : >"$dir/log"
    python3 "$here/etcd_http_gateway.py" "$1" - "$dir/log" >"$dir/port" \
        2>"$dir/gw.err" &
    gw=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.1 # polling the gateway's start: no event to wait on
    done
    [ -s "$dir/port" ] || {
        echo "FAIL the gateway did not start: $(cat "$dir/gw.err")"
        exit 1
    }
    url="etcd://127.0.0.1:$(cat "$dir/port")?timeout=2s"
}
for mode in more-same more-new more-slow; do
    start "$mode"
    for cmd in list "list --json" "list m/"; do
        n=$((n + 1))
        t0=$(date +%s%N)
        # shellcheck disable=SC2086 # cmd is words
        timeout -k 2 20 "$dlock" -s "$url" $cmd >"$dir/out" 2>&1
        rc=$?
        ms=$((($(date +%s%N) - t0) / 1000000))
        out=$(head -c 400 "$dir/out")
        pages=$(grep -c /v3/kv/range "$dir/log")
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            echo "FAIL $mode, $cmd: still listing after 20 s ($pages pages read)"
            fails=$((fails + 1))
        elif [ "$rc" != 69 ]; then
            echo "FAIL $mode, $cmd: exit $rc (wanted 69) in $ms ms: $out"
            fails=$((fails + 1))
        elif ! grep -q "not all read within ?timeout=\|more than 100000 keys\|out of order or outside the range" "$dir/out"; then
            echo "FAIL $mode, $cmd: exit 69 in $ms ms, but not the clear error: $out"
            fails=$((fails + 1))
        else
            echo "ok   $mode, $cmd: exit 69 in $ms ms after $pages pages: $out"
        fi
        : >"$dir/log"
    done
done
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
