#!/bin/bash
# kill -9 of a holder (dlock run --ttl 2): its key goes when its lease
# ends, and a waiter gets the lock then (issue 38):
#   test_etcd_kill9.sh DLOCK URL
# The lease is granted ttl + 1 s and renewed every ttl/3, so the key
# lives on for 2/3 ttl .. ttl + 1 s after the kill, plus etcd's lease
# expiry tick (500 ms) and the waiter's wake-up.  The waiter must not get
# it before 2/3 ttl (the holder's lease as dlock counts it could still
# run: a holder stopped rather than killed believes it holds until then)
# nor later than ttl + 1 s + 1.5 s.  3 rounds; the times are printed.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: test_etcd_kill9.sh DLOCK URL}" "${2-}" python3
TTL=2
MIN_MS=1300 # 2/3 of the ttl, less the clock's slack
MAX_MS=4500 # ttl + 1 s slack + 1.5 s (etcd's tick, the wake-up)
mkfifo "$T/held"
all=""
for r in 1 2 3; do
    name="kill9-$$-$r"
    "$DLOCK" -s "$URL" run --ttl "$TTL" "$name" -- \
        sh -c 'echo $$ >"$0"; echo x >"$1"; exec sleep 60' "$T/cmd.$r" \
        "$T/held" >"$T/h.$r" 2>&1 &
    H=$!
    pids="$pids $H"
    await "$T/held" 20 || fail "round $r: the holder never ran: $(cat "$T/h.$r")"
    "$DLOCK" -s "$URL" run -w 20 "$name" -- sh -c 'date +%s%N >"$0"' \
        "$T/got.$r" >"$T/w.$r" 2>&1 &
    W=$!
    pids="$pids $W"
    until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 ||
        fail "round $r: the waiter never queued: $(queue "$name" | tr '\n' ' ')"
    set -- $(queue "$name" | head -1)
    ttl_left=$(ectl lease timetolive "$3" 2>&1 | sed -n 's/.*remaining(\([-0-9]*\)s).*/\1/p')
    kill -KILL "$H"
    t0=$(now_ms)
    wait "$H" 2>/dev/null
    wait_exit "$W" 200
    if [ "$rc" != 0 ] || [ ! -s "$T/got.$r" ]; then
        fail "round $r: the waiter exited $rc: $(cat "$T/w.$r")"
        continue
    fi
    ms=$(($(cat "$T/got.$r") / 1000000 - t0))
    all="$all $ms"
    if [ "$ms" -ge "$MIN_MS" ] && [ "$ms" -le "$MAX_MS" ]; then
        ok "round $r: the waiter got it $ms ms after kill -9 (lease ${ttl_left}s left before; $MIN_MS..$MAX_MS)"
    else
        fail "round $r: the waiter got it $ms ms after kill -9, wanted $MIN_MS..$MAX_MS (lease ${ttl_left}s left before)"
    fi
    c=$(cat "$T/cmd.$r" 2>/dev/null)
    [ -n "$c" ] && until_true "! alive $c" 50 ||
        fail "round $r: the killed holder's command ($c) still runs"
done
echo "     kill -9 to the waiter's grant, ms (ttl $TTL s):$all"
finish
