#!/bin/bash
# A hostile or broken etcd gateway (adv_gateway.py on 127.0.0.1):
# - its lease numbers: TTLs near INT64_MAX in a grant, a keepalive or a
#   lease's time-to-live, a TTL that is not a number, -1, an error inside
#   a keepalive's "result";
# - the shapes of its replies: a range's "kvs" that is not an array in a
#   read-only txn, a watch's "events" that is not an array;
# - a waiter's created headers (revisions missing, huge, negative, junk,
#   one created for three, a compaction, a re-read never answered).
# Each `dlock` call must end within its bound with a store error (69), a
# loss (75), not acquired (1, a waiter only) or the command's own exit
# (0): never a sanitizer's "runtime error" (signed overflow is undefined
# behaviour: an ASan/UBSan build aborts, a plain one computes a lease end
# from a wrapped number), never an abort (json-c asserts on
# json_object_array_length() of a non-array: SIGABRT, exit 134).
#   adv_hostile_gateway.sh DLOCK
set -u
dlock=$1
here=$(cd "$(dirname "$0")" && pwd)
fail=0
gw_pid=
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv-ttl.XXXXXX")
# shellcheck disable=SC2317 # the EXIT trap calls it
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
# (checkw: 1, not acquired, is fine too.)
ok_codes="0 69 75"
checkw() {
    ok_codes="0 1 69 75"
    check "$@"
    ok_codes="0 69 75"
}
check() {
    local mode=$1 what=$2 rc
    shift 2
    timeout -k 2 20 "$@" >"$dir/out" 2>&1
    rc=$?
    if grep -q "runtime error\|Sanitizer" "$dir/out"; then
        bad "$mode, $what: $(grep -m1 "runtime error\|Sanitizer" "$dir/out")"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        bad "$mode, $what: no answer in 20 s"
    elif ! printf ' %s ' "$ok_codes" | grep -q " $rc "; then
        bad "$mode, $what: exit $rc: $(head -c 300 "$dir/out")"
    else
        echo "ok   $mode, $what: exit $rc"
    fi
}

for mode in ttl-max ttl-huge ttl-live ttl-junk ka-neg ka-error kvs-int; do
    start "$mode"
    n="adv-ttl-$mode-$$"
    check "$mode" "run" "$dlock" -s "$url" run -n --ttl 3 "$n" -- sleep 2
    check "$mode" "status of a held lock" \
        "$dlock" -s "$url" run -n "$n-s" -- "$dlock" -s "$url" status "$n-s"
    check "$mode" "--once-per" "$dlock" -s "$url" run -n --once-per 1h \
        "$n-p" -- true
done
# A waiter's watch (a holder's command runs 3 s, the waiter waits 2 s).
start watch-bad
n="adv-watch-$$"
"$dlock" -s "$url" run -n "$n" -- sleep 3 >/dev/null 2>&1 &
holder=$!
sleep 0.5 # the holder has it (not a synchronisation: a late holder only
# makes the waiter's case an acquire)
checkw watch-bad "a waiter's watch" "$dlock" -s "$url" run -w 2 "$n" -- true
wait "$holder"
# A waiter's three-watch request (issue 48) answered with created headers
# that lie (no revision, INT64_MAX, INT64_MIN, "12abc" and a watch id -1,
# 1000 past the store's), one created for three, a compacted first watch,
# or a re-read that is never answered once the watch is made: each wait
# ends by its bound, no runtime error, never a second holder (1 or 69).
for mode in made-none made-max made-neg made-junk made-up made-one \
    made-compact made-hang; do
    start "$mode"
    n="adv-made-$mode-$$"
    "$dlock" -s "$url" run -n "$n" -- sleep 3 >/dev/null 2>&1 &
    holder=$!
    sleep 0.5 # as above: not a synchronisation
    ok_codes="1 69"
    check "$mode" "a waiter's three watches" \
        "$dlock" -s "$url" run -w 2 "$n" -- true
    ok_codes="0 69 75"
    wait "$holder"
done
exit $fail
