#!/bin/bash
# A hostile or broken etcd gateway's lease numbers (adv_gateway.py on
# 127.0.0.1): TTLs near INT64_MAX in a grant, a keepalive or a lease's
# time-to-live, a TTL that is not a number, -1, an error inside a
# keepalive's "result".  Each `dlock` call must end within its bound
# with a store error (69), a loss (75) or the command's own exit (0):
# never a sanitizer's "runtime error" (signed overflow is undefined
# behaviour: an ASan/UBSan build aborts, a plain one computes a lease
# end from a wrapped number).
#   adv_hostile_ttl.sh DLOCK
set -u
dlock=$1
here=$(cd "$(dirname "$0")" && pwd)
fail=0
gw_pid=
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv-ttl.XXXXXX")
cleanup() {
    [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
bad() { echo "FAIL: $*"; fail=1; }

# start MODE: the gateway, its URL in $url.
start() {
    [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
    rm -f "$dir/port"
    python3 "$here/adv_gateway.py" "$1" >"$dir/port" 2>"$dir/gw.err" &
    gw_pid=$!
    for _ in $(seq 50); do
        [ -s "$dir/port" ] && break
        sleep 0.1
    done
    if [ ! -s "$dir/port" ]; then
        echo "FAIL: the gateway did not start: $(cat "$dir/gw.err")"
        exit 1
    fi
    url="etcd://127.0.0.1:$(cat "$dir/port")?timeout=2s"
}

# check MODE WHAT CMD...: CMD ends in 20 s, 0/69/75, no runtime error.
check() {
    local mode=$1 what=$2 rc
    shift 2
    timeout -k 2 20 "$@" >"$dir/out" 2>&1
    rc=$?
    if grep -q "runtime error\|Sanitizer" "$dir/out"; then
        bad "$mode, $what: $(grep -m1 "runtime error\|Sanitizer" "$dir/out")"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        bad "$mode, $what: no answer in 20 s"
    elif [ "$rc" != 0 ] && [ "$rc" != 69 ] && [ "$rc" != 75 ]; then
        bad "$mode, $what: exit $rc: $(head -c 300 "$dir/out")"
    else
        echo "ok   $mode, $what: exit $rc"
    fi
}

for mode in ttl-max ttl-huge ttl-live ttl-junk ka-neg ka-error; do
    start "$mode"
    n="adv-ttl-$mode-$$"
    check "$mode" "run" "$dlock" -s "$url" run -n --ttl 3 "$n" -- sleep 2
    check "$mode" "status of a held lock" \
        "$dlock" -s "$url" run -n "$n-s" -- "$dlock" -s "$url" status "$n-s"
    check "$mode" "--once-per" "$dlock" -s "$url" run -n --once-per 1h \
        "$n-p" -- true
done
exit $fail
