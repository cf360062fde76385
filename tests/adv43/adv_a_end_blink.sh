#!/bin/sh
# Adversary pass on issue 43 item 1 (tests/adv43/adv_a.cmake), on Redis,
# a private redis-server on a unix socket (CLIENT PAUSE ALL is the blink:
# every call of dlock's times out meanwhile, ?timeout=1).
#  1. --once, the store blinking (2.5 s) as CMD ends: the end is tried
#     again until it lands, and a second --once skips (once_end.sh has no
#     Redis case).
#  2. The lock broken (release --force) while CMD runs, then the blink:
#     the release's LOST cannot be dated (R11: CMD's status, 0), but dlock
#     must not claim "the command ended under the lock" and that the lock
#     "goes when its lease runs out": it is gone.  On a843813 it did.
#  3. The same without the blink: 75, "lost before the command ended".
#   adv_a_end_blink.sh DLOCK
set -u
DLOCK=$1
skip() {
    if [ "${CI:-}" = true ]; then echo "FAIL (CI): $1"; exit 1; fi
    echo "SKIP: $1"; exit 77
}
command -v redis-server >/dev/null || skip "no redis-server"
command -v redis-cli >/dev/null || skip "no redis-cli"
T=$(mktemp -d /tmp/dlock-adva-blink.XXXXXX)
redis-server --port 0 --unixsocket "$T/r.sock" --dir "$T" --save '' \
    --appendonly no --daemonize yes --pidfile "$T/pid" --logfile "$T/log" ||
    skip "redis-server does not start"
trap 'redis-cli -s "$T/r.sock" shutdown nosave >/dev/null 2>&1; rm -rf "$T"' EXIT
i=0
while ! redis-cli -s "$T/r.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 300 ] && { echo "FAIL - redis-server not ready"; exit 1; }
    sleep 0.1 # polling a server that is starting: no event to wait on
done
fail=0
U="unix://$T/r.sock?timeout=1"
PAUSE="redis-cli -s '$T/r.sock' CLIENT PAUSE 2500 ALL >/dev/null"

# 1
"$DLOCK" -s "$U" run --once --ttl 9 adva-b1 -- sh -c "$PAUSE; exit 0" \
    2>"$T/e1"
rc=$?
[ $rc = 0 ] || { echo "FAIL(1): exit $rc: $(cat "$T/e1")"; fail=1; }
out=$("$DLOCK" -s "$U" run --once adva-b1 -- echo RAN-AGAIN 2>"$T/e1b")
if [ "$out" = RAN-AGAIN ]; then
    echo "FAIL(1): --once ran the job again after a blink: $(cat "$T/e1")"
    fail=1
fi

# 2
"$DLOCK" -s "$U" run --ttl 9 adva-b2 -- sh -c \
    "'$DLOCK' -s '$U' release --force adva-b2 >/dev/null; $PAUSE; exit 0" \
    2>"$T/e2"
rc=$?
[ $rc = 0 ] || { echo "FAIL(2): exit $rc, want the command's 0 (R11): $(cat "$T/e2")"; fail=1; }
if grep -q "ended under the lock" "$T/e2"; then
    echo "FAIL(2): a lock broken while CMD ran is said held to the end: $(cat "$T/e2")"
    fail=1
fi
grep -q "could not be confirmed (.*): found lost" "$T/e2" ||
    { echo "FAIL(2): no word of the loss: $(cat "$T/e2")"; fail=1; }

# 3
"$DLOCK" -s "$U" run --ttl 9 adva-b3 -- sh -c \
    "'$DLOCK' -s '$U' release --force adva-b3 >/dev/null; exit 0" 2>"$T/e3"
rc=$?
[ $rc = 75 ] || { echo "FAIL(3): exit $rc, want 75: $(cat "$T/e3")"; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
