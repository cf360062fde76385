#!/bin/sh
# A waiter whose lease is shorter than its wait keeps its place in the
# queue (issue 34, item 5):
#   test_pg_waiter_order.sh DLOCK_BINARY STORE_URL
#
# H holds NAME (--ttl 30; its command blocks on a FIFO).  W runs
# `run -w 60 --ttl 1 NAME` and queues first, then X1, X2, X3 with
# `--ttl 30`, each once the one before it is queued on the server (its
# backend waiting for NAME's advisory key in pg_locks).  Once W has
# waited longer than its ttl (1.5 s, pg_locks' waitstart), H lets go.  Each
# command appends its letter to a file: the order must be H W X1 X2 X3.
# In 0.2, W was granted the key at the end of a wait statement sent more
# than its ttl before, counted its lease from that send time, found it
# over, let the grant go and queued again behind X1..X3 (H X1 X2 X3 W).
#
# Synchronisation: FIFOs, polls of pg_locks, the processes' exits; no
# sleep stands for an event.  A wait statement lasts one wait slice (5 s
# at most); if W's first one ended before H let go (a loaded machine),
# W is no longer first in the server's queue: pg_locks' waitstart says
# so, and the round is run again (3 rounds at most).
set -u
DLOCK=$1
STORE=$2
if [ -z "$STORE" ]; then
    echo "FAIL no store URL (DLOCK_TEST_POSTGRES_URL)"
    exit 1
fi
if ! command -v psql >/dev/null 2>&1; then
    echo "FAIL no psql to read pg_locks"
    exit 1
fi
# psql takes the URL without dlock's own options.
PGURL=${STORE%%\?*}
T=$(mktemp -d /tmp/dlock-worder.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do
        kill "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }

sql() {
    psql -X -q -A -t -v ON_ERROR_STOP=1 "$PGURL" -c "$1"
}
# The backends waiting for NAME's advisory key (session mode's exclusive
# key: hashtextextended(name, 0)), in the order they began to wait.
waiters() {
    sql "SELECT string_agg(pid::text, ' ' ORDER BY waitstart, pid) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('$1', 0)"
}
# Has the first of them waited 1.5 s (on the server's clock)?
waited() {
    sql "SELECT clock_timestamp() - min(waitstart) > interval '1500 ms' FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('$1', 0)"
}
count() { set -- $1; echo $#; }
# Poll until CMD succeeds, for at most $2 tenths of a second.
until_true() {
    i=0
    while [ "$i" -lt "$2" ]; do
        if eval "$1"; then
            return 0
        fi
        i=$((i + 1))
        sleep 0.1
    done
    return 1
}

# One round: sets $order (the letters, in the order the commands ran) and
# $queued (the waiters' backends just before H let go, as pg_locks
# ordered them) and $want (W's, X1's, X2's, X3's, in the order each
# queued).
round() {
    name="worder-$$-$1"
    out="$T/order.$1"
    : >"$out"
    mkfifo "$T/held.$1" "$T/go.$1"
    "$DLOCK" -s "$STORE" run --ttl 30 "$name" -- sh -c \
        'echo H >>"$0"; echo x >"$1"; read _ <"$2"' \
        "$out" "$T/held.$1" "$T/go.$1" 2>"$T/H.err.$1" &
    H=$!
    pids="$pids $H"
    read _ <"$T/held.$1"
    want=""
    all="$H"
    for who in W X1 X2 X3; do
        ttl=30
        [ "$who" = W ] && ttl=1
        before=$(count "$want")
        "$DLOCK" -s "$STORE" run -w 60 --ttl "$ttl" "$name" -- sh -c \
            'echo "$1" >>"$0"' "$out" "$who" 2>"$T/$who.err.$1" &
        p=$!
        pids="$pids $p"
        all="$all $p"
        eval "pid_$who=$p"
        if ! until_true "[ \"\$(count \"\$(waiters '$name')\")\" -gt $before ]" 200; then
            fail "round $1: $who never queued for '$name' (pg_locks: '$(waiters "$name")')"
            break
        fi
        # The backend that just joined.
        new=""
        for b in $(waiters "$name"); do
            case " $want " in *" $b "*) ;; *) new=$b ;; esac
        done
        want="${want:+$want }$new"
    done
    # W has waited longer than its ttl (the scenario): 1.5 s of 1.
    until_true "[ \"\$(waited '$name')\" = t ]" 100 ||
        fail "round $1: the first waiter never waited 1.5 s"
    queued=$(waiters "$name")
    echo x >"$T/go.$1" # H lets go
    for p in $all; do
        wait "$p"
        rc=$?
        [ "$rc" = 0 ] || fail "round $1: pid $p exited $rc: $(cat "$T"/*.err."$1" | tr '\n' ' ')"
    done
    order=$(tr '\n' ' ' <"$out")
    order=${order% }
}

for r in 1 2 3; do
    round "$r"
    if [ "$queued" != "$want" ]; then
        echo "     round $r: the server's queue was '$queued', not '$want' (a wait slice ended before H let go): again"
        continue
    fi
    if [ "$order" = "H W X1 X2 X3" ]; then
        ok "round $r: grants in queue order: $order"
    else
        fail "round $r: grants in the order '$order', not 'H W X1 X2 X3': W said: $(tr '\n' ' ' <"$T/W.err.$r")"
    fi
    break
done
[ "$n" -gt 0 ] || fail "no round had its waiters queued in order W X1 X2 X3"

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
