#!/bin/sh
# The waiter that fences off a hung holder gets a whole lease (issue 34,
# item 4):
#   test_mysql_takeover_lease.sh DLOCK_BINARY STORE_URL
#
# H runs `run --ttl 2 NAME` and is stopped (SIGSTOP) as soon as its
# command says it holds.  C runs `-v run -w 15 --ttl 2 NAME`: it waits
# for H's lease to end, fences H off and takes the name.  C must then run
# its command (exit 0, with a fence above H's), and the lease it counts
# at the grant (its -v line "lease N ms left") must be close to its ttl:
# more than 3/4 of it.  0.2 counted C's lease from the start of the wait
# slice in which it took over, up to half a ttl before the INSERT that
# wrote its row: 1 s or so of 2 was gone, and often all but a few
# hundred ms (then C stopped its command at once and exited 75).  H,
# continued, must find its lock lost (exit 75).  Several rounds: where in
# C's slices H's lease ends varies from round to round.
#
# In lease mode (?mode=lease) the same must hold.
#
# Synchronisation: FIFOs and the processes' exits; no sleep stands for an
# event.
set -u
DLOCK=$1
STORE=$2
if [ -z "$STORE" ]; then
    echo "FAIL no store URL (DLOCK_TEST_MYSQL_URL)"
    exit 1
fi
TTL=2000
ROUNDS=${ROUNDS:-3}
T=$(mktemp -d /tmp/dlock-takeover.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do
        kill -CONT "$p" 2>/dev/null
        kill "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }

r=1
while [ "$r" -le "$ROUNDS" ]; do
    name="takeover-$$-$r"
    mkfifo "$T/held.$r" "$T/go.$r"
    # H: holds until killed; stopped the moment its command runs.
    "$DLOCK" -s "$STORE" run --ttl 2 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/h_fence.$1"; echo x >"$0/held.$1"; read _ <"$0/go.$1"' \
        "$T" "$r" 2>"$T/h_err.$r" &
    H=$!
    pids="$pids $H"
    read _ <"$T/held.$r"
    kill -STOP "$H"
    # C: waits for H's lease, fences H off, runs its command.
    "$DLOCK" -s "$STORE" -v run -w 15 --ttl 2 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/c_fence.$1"' "$T" "$r" \
        2>"$T/c_err.$r"
    rc=$?
    hf=$(cat "$T/h_fence.$r" 2>/dev/null)
    cf=$(cat "$T/c_fence.$r" 2>/dev/null)
    if [ "$rc" = 0 ] && [ "$cf" -gt "$hf" ] 2>/dev/null; then
        ok "round $r: C took over from stopped H and ran its command (fence $cf > $hf)"
    else
        fail "round $r: C exited $rc, fence '$cf' (H's '$hf'): $(grep -v '^dlock: waiting' "$T/c_err.$r" | tr '\n' ' ')"
    fi
    left=$(sed -n "s/.*run: acquired .* lease \([0-9-]*\) ms left).*/\1/p" "$T/c_err.$r")
    if [ -n "$left" ] && [ "$left" -gt $((TTL * 3 / 4)) ]; then
        ok "round $r: C's lease left at the grant: $left ms of $TTL"
    else
        fail "round $r: C's lease left at the grant: '$left' ms of $TTL (want > $((TTL * 3 / 4))): $(grep -v '^dlock: waiting' "$T/c_err.$r" | tr '\n' ' ')"
    fi
    # H, continued, finds its lease gone (its session KILLed in session
    # mode, its row taken in lease mode) and stops its command.
    kill -CONT "$H"
    wait "$H"
    rc=$?
    if [ "$rc" = 75 ]; then
        ok "round $r: H, continued, exited 75 (lost)"
    else
        fail "round $r: H, continued, exited $rc: $(tr '\n' ' ' <"$T/h_err.$r")"
    fi
    r=$((r + 1))
done

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
