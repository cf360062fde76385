#!/bin/sh
# A waiter's GET_LOCK wait must not outlast its lease (issue 33, item 6,
# adversarial review):
#   test_mysql_waiter_late_wait.sh DLOCK_BINARY GATE_SO STORE_URL
#
# H holds NAME.  W (`run -w 60 --ttl 10`) writes its waiter row and is
# held (kill_gate.so, DLOCK_TEST_GATE_ON) just before it
# sends its GET_LOCK wait, as a process stopped or a network slow between
# the two statements would be, until its lease is over.  A second waiter
# W2 comes and goes, tidying stale waiter rows: W's (over, its session
# holds nothing) goes.  W is let go: its GET_LOCK wait starts on the
# server with no lease of W's there; W is stopped once it shows, and H
# lets go, so the server grants W's stopped session.  C (`run -w 25`)
# must get the name all the same within W's lease bound: a session
# granted with no lease must not be taken for a GET_LOCK-only client and
# waited for without bound.
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
T=$(mktemp -d /tmp/dlock-wlw.XXXXXX)
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

name="wlw-$$"
t0=$(sql "SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
mkfifo "$T/h_held" "$T/h_go" "$T/kill_go"
"$DLOCK" -s "$STORE" run --ttl 60 "$name" -- sh -c \
    'echo x >"$0/h_held"; read _ <"$0/h_go"' "$T" 2>"$T/h_err" &
H=$!
pids="$pids $H"
read _ <"$T/h_held"

DLOCK_TEST_KILL_GATE=$T DLOCK_TEST_GATE_ON="GET_LOCK('$name', " DLOCK_TEST_GATE_NOT="GET_LOCK('$name', 0" \
LD_PRELOAD=$GATE \
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    "$DLOCK" -s "$STORE" run -w 60 --ttl 10 "$name" -- sh -c \
    'echo "$DLOCK_FENCE" >"$0/w_fence"' "$T" 2>"$T/w_err" &
W=$!
pids="$pids $W"
if ! until_true "[ -e '$T/at_kill' ]" 300; then
    fail "W never came to its GET_LOCK wait: $(cat "$T/w_err")"
    exit 1
fi
case $(cat "$T/at_kill") in
    *"GET_LOCK('$name', 0"*) fail "W's first GET_LOCK is a try, not a wait: $(cat "$T/at_kill")"; exit 1 ;;
esac
wrows="SELECT COUNT(*) FROM shared_locks WHERE name LIKE '%~%' AND lock_acquired = 0 AND fence IS NULL AND acquired_ms >= $t0"
if [ "$(sql "$wrows")" -ge 1 ]; then
    ok "W wrote its waiter row and is held before: $(cat "$T/at_kill")"
else
    fail "no waiter row of W while it is held before $(cat "$T/at_kill"): $(sql "SELECT name, connection_id, lock_acquired, fence FROM shared_locks" | tr "\n" " ")"
fi
# W's lease runs out while it is held.
until_true "[ \"\$(sql \"$wrows AND expires_ms <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)\")\" -ge 1 ]" 250 ||
    fail "W's waiter row never ran out"
# W2 comes and goes (its wait tidies stale waiter rows).
"$DLOCK" -s "$STORE" run -w 2 "$name" -- true 2>/dev/null
left=$(sql "$wrows")
if [ "$left" = 0 ]; then
    ok "W2 came and went, and tidied W's waiter row (over, its session holds nothing)"
else
    echo "     W2 came and went; W's waiter row is still there ($left)"
fi
# W is let go: its GET_LOCK wait starts; stop it there, and H lets go.
echo x >"$T/kill_go"
until_true "[ \"\$(getlock_waits '$name')\" = 1 ]" 100 ||
    fail "W's GET_LOCK wait never showed on the server"
kill -STOP "$W"
echo x >"$T/h_go"
wait "$H"
S=$(sql "SELECT IFNULL(IS_USED_LOCK('$name'), 0)")
if [ "$S" = 0 ]; then
    fail "W's stopped session was not granted the GET_LOCK"
    exit 1
fi
echo "     W's stopped session $S was granted the GET_LOCK"
if "$DLOCK" -s "$STORE" run -w 25 "$name" -- sh -c 'echo "$DLOCK_FENCE" >"$0/c_fence"' "$T" 2>"$T/c_err"; then
    ok "C got the name (fence $(cat "$T/c_fence")) while W's session, granted with no lease, hung"
else
    fail "C did not get the name within 25 s: $(tail -n 1 "$T/c_err"); status: $("$DLOCK" -s "$STORE" status "$name" 2>&1)"
fi
kill -CONT "$W"
wait "$W"
rc=$?
if [ -e "$T/w_fence" ] && [ -e "$T/c_fence" ] && ! [ "$(cat "$T/w_fence")" -gt "$(cat "$T/c_fence")" ]; then
    fail "W ran with fence $(cat "$T/w_fence"), not above C's $(cat "$T/c_fence")"
else
    ok "W exit $rc, fence '$(cat "$T/w_fence" 2>/dev/null)'"
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
