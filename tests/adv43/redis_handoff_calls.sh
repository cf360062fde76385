#!/bin/bash
# Issue 43 item 18: what a waiting `dlock run` costs on Redis, in lock
# calls (EVAL + EVALSHA, as INFO commandstats counts them), and that the
# figure is flat in the number of waiters.
#   redis_handoff_calls.sh DLOCK SERVER_SCRIPT URL DIR
#
# N processes `dlock run -w 120 NAME -- true` queue behind a holder (each
# next one starts once the server's queue lists the one before), the
# holder lets go, and each gets the lock in turn.  The calls of the whole
# round, less those of the same holder's run alone, over N: at N = 10 and
# N = 30.  The larger may be at most 1 call per waiter above the smaller
# (nothing timed).  docs/performance.md gives the figure.
set -u
dlock=$1 script=$2 url=$3 dir=$4
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }

if [ -z "$url" ] || [ -z "$dir" ]; then
    echo "no redis server (DLOCK_TEST_REDIS_URL/_DIR)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
t=$(mktemp -d /tmp/dlock-handoff-calls.XXXXXX)
trap 'exec 4>&- 2>/dev/null; rm -rf "$t"' EXIT
cli() { "$script" ctl "$dir" cli "$@"; }

# EVAL + EVALSHA calls the server has run, and all the requests dlock's
# clients sent (commandstats also counts the redis.call()s inside
# scripts, so only these top-level names; INFO and ZCARD are this
# script's own): "CALLS REQUESTS".
calls() {
    cli INFO commandstats | tr -d '\r' |
        awk -F'[:=,]' '
            $1 == "cmdstat_eval" || $1 == "cmdstat_evalsha" {n += $3}
            $1 ~ /^cmdstat_(eval|evalsha|subscribe|unsubscribe|ping|script\|load|script\|exists|hello|auth|select|client\|setname)$/ {r += $3}
            END {print n + 0, r + 0}'
}

# The holder: `dlock run NAME` whose command waits for a line on a fifo.
# hold NAME: starts it (fd 4 is the fifo's write end) and waits until it
# holds; unhold: lets it go and waits for it.
hold() {
    rm -f "$t/go"
    mkfifo "$t/go"
    "$dlock" -s "$url" run "$1" -- sh -c 'echo held; read -r _; exit 0' \
        <"$t/go" >"$t/holder.out" 2>&1 &
    holder=$!
    exec 4>"$t/go"
    for _ in $(seq 200); do
        grep -q held "$t/holder.out" && return 0
        sleep 0.05
    done
    bad "the holder of $1 did not start: $(cat "$t/holder.out")"
    return 1
}
unhold() {
    exec 4>&-
    wait "$holder" || bad "the holder exited $?"
}

# queued NAME N: bounded wait until the server lists N queued waiters.
queued() {
    local n
    for _ in $(seq 600); do
        n=$(cli ZCARD "dlock:$1"$'\xff'"queue")
        [ "${n:-0}" -ge "$2" ] && return 0
        sleep 0.05
    done
    bad "only ${n:-0} of $2 waiters queued on $1"
    return 1
}

# round N: the lock calls per waiting process into $per (two decimals).
round() {
    local n=$1 name=hc-$$-$1 base before after pids=() i p
    local rbase rbefore rafter
    # The holder's run alone: its cost, left out below.
    read -r before rbefore < <(calls)
    hold "$name-solo" && unhold
    read -r after rafter < <(calls)
    base=$((after - before)) rbase=$((rafter - rbefore))
    read -r before rbefore < <(calls)
    hold "$name" || return 1
    for i in $(seq "$n"); do
        # Not holding the fifo's write end (fd 4): the holder's read
        # would wait for the waiters to end.
        "$dlock" -s "$url" run -w 120 "$name" -- true \
            >>"$t/waiters.out" 2>&1 4>&- &
        pids+=($!)
        queued "$name" "$i" || break
    done
    unhold
    for p in "${pids[@]}"; do
        wait "$p" || bad "a waiter of $name exited $?"
    done
    read -r after rafter < <(calls)
    per=$(awk -v d="$((after - before - base))" -v n="$n" \
        'BEGIN {printf "%.2f\n", d / n}')
    echo "  $n waiters: $((after - before)) lock calls, the holder's run" \
        "alone $base: $per per waiting process; all requests" \
        "$((rafter - rbefore)), alone $rbase:" \
        "$(awk -v d="$((rafter - rbefore - rbase))" -v n="$n" \
            'BEGIN {printf "%.2f", d / n}') per waiting process"
}

# A first run loads the scripts (EVAL before EVALSHA): not in a round.
"$dlock" -s "$url" run "hc-$$-warm" -- true || bad "a first run failed"
per=0
ns=${SMALL:-10} nl=${LARGE:-30}
round "$ns"
small=$per
round "$nl"
large=$per
echo "lock calls per waiting process: $small at $ns waiters, $large at $nl"
if awk -v s="$small" -v l="$large" 'BEGIN {exit !(l <= s + 1 && s > 0)}'; then
    ok "flat in the number of waiters ($small at $ns, $large at $nl)"
else
    bad "not flat: $small per waiter at $ns, $large at $nl"
fi
[ -s "$t/waiters.out" ] && { echo "waiters said:"; cat "$t/waiters.out"; }
[ $fail = 0 ] && echo "all ok"
exit $fail
