#!/bin/sh
# A late KILL must not hit a waiter that took the name in time (issue 33,
# item 6, adversarial review):
#   test_mysql_waiter_late_kill.sh DLOCK_BINARY KILL_GATE_SO STORE_URL
#
# H holds NAME; W (`run -w 60 --ttl 2`) waits in GET_LOCK and is stopped;
# H lets go, so the server grants W's stopped session S.  Once W's lease
# is over, C (`run -w 30`) fences S off: it deletes W's waiter row, sees
# S still holding the key, and is held (kill_gate.so) just before its
# `KILL CONNECTION S`, as a contender stopped there would be.  W is
# continued: its claim finds its waiter row gone, so it lets go and waits
# again, and gets the name (the key is free) with a fresh lease.  Then C's
# KILL goes out.  It must not break W, which holds the name with a
# current lease: W's holding session survives, W's command finishes and
# W exits 0; C gets the name after W with a larger fence.
#
# Synchronisation: FIFOs, files the gate writes, polls of the server.
set -u
DLOCK=$1
GATE=$2
STORE=$3
if [ -z "$STORE" ]; then
    echo "FAIL no store URL (DLOCK_TEST_MYSQL_URL)"
    exit 1
fi
case $STORE in
    *mode=lease*) echo "SKIP lease mode: a waiter holds nothing"; exit 0 ;;
esac
T=$(mktemp -d /tmp/dlock-wlk.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do
        kill -CONT "$p" 2>/dev/null
        kill "$p" 2>/dev/null
    done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
. "$(dirname "$0")/waiter-lib.sh"

mkfifo "$T/kill_go" "$T/w_held" "$T/w_go"
S=0
for try in 1 2 3; do
    name="wlk-$$-$try"
    mkfifo "$T/h_held.$try" "$T/h_go.$try"
    "$DLOCK" -s "$STORE" run --ttl 30 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/h_fence"; echo x >"$0/h_held.$1"; read _ <"$0/h_go.$1"' \
        "$T" "$try" 2>"$T/h_err" &
    H=$!
    pids="$pids $H"
    read _ <"$T/h_held.$try"
    "$DLOCK" -s "$STORE" run -w 60 --ttl 2 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/w_fence"; echo x >"$0/w_held"; read _ <"$0/w_go"' \
        "$T" >"$T/w_out" 2>"$T/w_err" &
    W=$!
    pids="$pids $W"
    until_true "[ \"\$(getlock_waits '$name')\" = 1 ]" 300 ||
        fail "W's GET_LOCK wait never showed on the server"
    kill -STOP "$W"
    echo x >"$T/h_go.$try"
    wait "$H"
    S=$(sql "SELECT IFNULL(IS_USED_LOCK('$name'), 0)")
    [ "$S" != 0 ] && break
    echo "     W's wait slice ended before H let go: again"
    kill -CONT "$W"
    kill "$W"
    wait "$W"
done
if [ "$S" = 0 ]; then
    fail "W's stopped session was never granted the GET_LOCK"
    exit 1
fi
echo "     W's stopped session $S was granted the GET_LOCK"
until_true "\"\$DLOCK\" -s \"\$STORE\" status \"\$name\" 2>&1 | grep -q ': free'" 100 ||
    fail "W's lease never ran out: $("$DLOCK" -s "$STORE" status "$name" 2>&1)"

# C fences S off and is held at its KILL.
DLOCK_TEST_KILL_GATE=$T LD_PRELOAD=$GATE \
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    "$DLOCK" -s "$STORE" -v run -w 30 "$name" -- sh -c \
    'echo "$DLOCK_FENCE" >"$0/c_fence"' "$T" 2>"$T/c_err" &
C=$!
pids="$pids $C"
if until_true "[ -e '$T/at_kill' ]" 200; then
    ok "C is at its KILL: $(cat "$T/at_kill")"
else
    fail "C never came to a KILL: $(cat "$T/c_err"); holder $(sql "SELECT IFNULL(IS_USED_LOCK('$name'), 0)"); rows: $(sql "SELECT name, connection_id, lock_acquired, expires_ms FROM shared_locks" | tr "\n" " ")"
    exit 1
fi

# W goes on: it must give up S's grant and take the name afresh.
kill -CONT "$W"
( read _ <"$T/w_held"; echo held >"$T/w_state" ) &
until_true "[ -e '$T/w_state' ] || ! kill -0 $W 2>/dev/null" 200
if [ ! -e "$T/w_state" ]; then
    fail "W did not take the name while C was held at its KILL: $(cat "$T/w_err")"
    echo x >"$T/kill_go"
    exit 1
fi
WS=$(sql "SELECT IFNULL(IS_USED_LOCK('$name'), 0)")
ok "W holds the name (session $WS, fence $(cat "$T/w_fence"))"

# C's KILL goes out now.
echo x >"$T/kill_go"
until_true "[ -e '$T/kill_done' ]" 100 || fail "C's KILL never came back"
now=$(sql "SELECT IFNULL(IS_USED_LOCK('$name'), 0)")
if [ "$now" = "$WS" ] && [ "$WS" != 0 ]; then
    ok "after C's late KILL (result $(cat "$T/kill_done")), W's session $WS still holds"
else
    fail "C's late KILL of session $S broke W, which held the name with a current lease (holder now: session $now, was $WS)"
fi
echo x >"$T/w_go"
wait "$W"
rc=$?
if [ "$rc" = 0 ]; then
    ok "W exited 0"
else
    fail "W exited $rc: $(grep -v '^dlock: waiting' "$T/w_err" | tail -n 2 | tr '\n' ' ')"
fi
wait "$C"
rc=$?
if [ "$rc" = 0 ] && [ "$(cat "$T/c_fence")" -gt "$(cat "$T/w_fence")" ] 2>/dev/null; then
    ok "C got the name after W, fence $(cat "$T/c_fence") > $(cat "$T/w_fence")"
else
    fail "C exited $rc, fence '$(cat "$T/c_fence" 2>/dev/null)' (W's $(cat "$T/w_fence")): $(tail -n 2 "$T/c_err")"
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
