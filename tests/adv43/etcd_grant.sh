#!/bin/bash
# issue 43 item 10: a waiter granted the lock late in its wait slice gets
# a whole lease, counted from the lease refresh that covers the grant, not
# what was left of one counted from the slice's start:
#   etcd_grant.sh DLOCK URL
# A holder (`dlock run --ttl 3`) lets go 0.3 .. 2.5 s after the waiter
# (`dlock -v run --ttl 3 -w 30`) queued, by a plain release or by kill -9
# (then its key goes with its lease); core slices are 5 s long.  The
# waiter must say it got the lock with a lease near 3 s left (at least
# 3000 less the reuse slack 750 and the drift margin 30, less 420 ms for a
# loaded machine), and its command, 1.5 s long, must run to its end (exit
# 0, never 75).  Each round's lease left is printed.
here=$(cd "$(dirname "$0")/../stores/etcd" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: etcd_grant.sh DLOCK URL}" "${2-}" python3
MIN_LEFT=1800
mkfifo "$T/held" "$T/go"
all=""
r=0
# How the holder lets go, and when (ms after the waiter queued).  A
# release at 1.3 .. 2.5 s is a grant 1.3 .. 3 s into the waiter's first
# slice, which once left 0 .. 1.7 s of its lease; a kill -9's key goes
# 2 .. 4 s after the kill (the holder's lease), anywhere in a slice.
for round in release:1300 kill:300 release:1900 kill:1200 release:2500 \
    kill:2100; do
    how=${round%:*}
    delay=${round#*:}
    r=$((r + 1))
    name="grant43-$$-$r"
    # The holder's command: say it runs, wait for "go", then end (a
    # release) or be killed with its dlock (kill -9, below).
    "$DLOCK" -s "$URL" run --ttl 3 "$name" -- \
        sh -c 'echo $$ >"$0"; echo x >"$1"; read -r _ <"$2"' \
        "$T/cmd.$r" "$T/held" "$T/go" >"$T/h.$r" 2>&1 &
    H=$!
    pids="$pids $H"
    await "$T/held" 20 || fail "round $r: the holder never ran: $(cat "$T/h.$r")"
    "$DLOCK" -v -s "$URL" run --ttl 3 -w 30 "$name" -- sh -c 'sleep 1.5' \
        >"$T/w.$r" 2>&1 &
    W=$!
    pids="$pids $W"
    until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 ||
        fail "round $r: the waiter never queued: $(queue "$name" | tr '\n' ' ')"
    sleep "$((delay / 1000)).$(printf %03d $((delay % 1000)))"
    if [ "$how" = kill ]; then
        kill -KILL "$H"
        c=$(cat "$T/cmd.$r" 2>/dev/null)
        [ -n "$c" ] && kill -KILL "$c" 2>/dev/null
    else
        echo go >"$T/go"
    fi
    wait "$H" 2>/dev/null
    wait_exit "$W" 300
    left=$(sed -n "s/.*acquired '$name' (fence [0-9]*, lease \([0-9-]*\) ms left).*/\1/p" "$T/w.$r")
    all="$all $how:${left:-?}"
    if [ "$rc" != 0 ]; then
        fail "round $r ($how after $delay ms): the waiter exited $rc: $(tr '\n' ' ' <"$T/w.$r")"
    elif [ -z "$left" ] || [ "$left" -lt "$MIN_LEFT" ]; then
        fail "round $r ($how after $delay ms): granted with ${left:-?} ms of a 3000 ms lease left (want >= $MIN_LEFT)"
    else
        ok "round $r ($how after $delay ms): granted with $left ms left, its command ran to its end"
    fi
done
echo "     lease left at the grant, ms (ttl 3 s):$all"
finish
