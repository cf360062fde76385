#!/bin/bash
# A gateway whose headers say revision INT64_MAX (adv_gateway.py
# rev-max): `dlock leader --watch` (an observer's watch) and a waiter
# behind a holder (a waiter's watch) end by their bounds, with no
# sanitizer report (rev + 1 overflowed int64 once).
#   adv45b_rev_max.sh DLOCK ADV_GATEWAY_PY
set -u
dlock=$1
gateway=$2
fail=0
gw_pid=
holder=
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv45b-rev.XXXXXX")
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
    [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
bad() { echo "FAIL: $*"; fail=1; }

python3 "$gateway" rev-max >"$dir/port" 2>"$dir/gw.err" &
gw_pid=$!
for _ in $(seq 50); do
    [ -s "$dir/port" ] && break
    sleep 0.1
done
[ -s "$dir/port" ] || { echo "FAIL: no gateway: $(cat "$dir/gw.err")"; exit 1; }
url="etcd://127.0.0.1:$(cat "$dir/port")?timeout=2s"
n="adv45b-rev-$$"

# check WHAT RCS CMD...: CMD ends in 20 s with one of RCS, no sanitizer.
check() {
    local what=$1 rcs=$2 rc
    shift 2
    timeout -k 2 20 "$@" >"$dir/out" 2>&1
    rc=$?
    if grep -q "runtime error\|Sanitizer" "$dir/out"; then
        bad "$what: $(grep -m1 "runtime error\|Sanitizer" "$dir/out")"
    elif ! printf ' %s ' "$rcs" | grep -q " $rc "; then
        bad "$what: exit $rc: $(head -c 300 "$dir/out")"
    else
        echo "ok   $what: exit $rc"
    fi
}

# The observer: watches 2 s (several slices), SIGINT ends it (130).
check "leader --watch" "130" timeout --preserve-status -s INT 2 "$dlock" -s "$url" leader \
    --watch "$n-obs"
grep -q "no leader" "$dir/out" || bad "leader --watch printed: $(cat "$dir/out")"

# The waiter: a holder's command runs until killed; a waiter waits 2 s.
"$dlock" -s "$url" run -n "$n" -- sleep 30 >"$dir/holder" 2>&1 &
holder=$!
for _ in $(seq 50); do
    "$dlock" -s "$url" status "$n" >/dev/null 2>&1 && break
    sleep 0.1
done
check "a waiter's watch" "1" "$dlock" -s "$url" run -w 2 "$n" -- true
exit $fail
