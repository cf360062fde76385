#!/bin/sh
# A waiter outlives a restart of its server:
#   test_restart.sh DLOCK_BINARY STORE_URL SERVER_SCRIPT SERVER_DIR
# A holder holds NAME; a waiter (`run -w 60`) waits for it; the server is
# restarted.  The restart ends the holder's lock (a session store drops it,
# a Redis without persistence forgets it), so the waiter must get the lock
# once the server is back: exit 0, not 69 ("store unreachable") a second
# after the restart.  Synchronisation by FIFOs, not sleeps.
set -u
DLOCK=$1
STORE=$2
SERVER=$3
DIR=$4
T=$(mktemp -d /tmp/dlock-restart.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
name="restart-$$"
fails=0
n=0
ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }

mkfifo "$T/held" "$T/waiting"
# The holder: a short lease, so it learns of the restart quickly (LOST, 75).
"$DLOCK" -s "$STORE" run "$name" --ttl 2 -- sh -c "echo x >'$T/held'; exec sleep 120" 2>/dev/null &
holder=$!
read _ <"$T/held"
# The waiter says (-v) when it found the lock held, just before it waits.
"$DLOCK" -s "$STORE" -v run "$name" -w 60 -- sh -c "echo acquired" \
    >"$T/out" 2>"$T/waiting" &
waiter=$!
read _ <"$T/waiting"
cat "$T/waiting" >"$T/err" &
"$SERVER" ctl "$DIR" restart >/dev/null
back=$(date +%s)
echo "server restarted"
# etcd keeps keys and leases through a restart: a holder whose renewal
# bridged the restart (it takes 0.3..2 s) still holds, rightly.  Then it
# is let go (TERM: dlock run releases), and the waiter must get the lock.
case $STORE in
etcd://* | etcds://*)
    kill -TERM "$holder" 2>/dev/null ;;
esac
wait "$waiter"
rc=$?
took=$(($(date +%s) - back))
wrc=$rc
if [ "$rc" = 0 ] && grep -q acquired "$T/out"; then
    ok "the waiter got the lock after the restart"
else
    fail "the waiter exited $rc: $(cat "$T/err")"
fi
# etcd keeps keys and leases through a restart: what is left in the queue
# is the holder's key (let go above) and whatever the waiter left
# while the server was down; the waiter's own leftovers must not keep it
# waiting for their whole lease (31 s with the default TTL).
case $STORE in
etcd://*|etcds://*)
    if [ "$wrc" != 0 ]; then
        : # said above
    elif [ "$took" -le 10 ]; then
        ok "the waiter got it ${took} s after the server was back"
    else
        fail "the waiter got it ${took} s after the server was back (over 10 s)"
    fi ;;
esac
wait "$holder"
rc=$?
case $STORE:$rc in
etcd://*:75 | etcds://*:75)
    ok "the holder was told its lock was lost (75)" ;;
etcd://*:143 | etcds://*:143 | etcd://*:0 | etcds://*:0)
    ok "the holder kept its lock through the restart, let go on TERM ($rc)" ;;
*:75)
    ok "the holder was told its lock was lost (75)" ;;
*)
    fail "the holder exited $rc, not 75" ;;
esac
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
