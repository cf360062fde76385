#!/bin/bash
# etcd issue 11456 (etcd 3.4's own lock, fixed in 3.5.0): a waiter whose
# lease is revoked while it waits must not believe it holds (issue 38):
#   test_etcd_11456.sh DLOCK URL
# A holds NAME (its command blocks on a fifo).  B waits (run -w 30); once
# B's key is under NAME/, its lease (the key's hex suffix) is revoked with
# etcdctl, which deletes B's key.  C then queues (run -w 30), and A lets
# go.  B wakes (A's key went) but has no key any more: it must re-read,
# find it gone and queue again, not run its command.  Each command appends
# "X start" / "X end" (O_APPEND) around a hold of 0.3 s: the log must show
# no two commands at once, and A, B and C must all run (B re-queues within
# its wait).  Run 3 times, and once more with `etcdctl lock` as C.  Sequenced by fifos and polls of NAME/'s keys.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: test_etcd_11456.sh DLOCK URL}" "${2-}" python3

# shellcheck disable=SC2016 # for sh -c
rec='echo "$1 start" >>"$0"; sleep 0.3; echo "$1 end" >>"$0"'
round() {
    local r=$1 kind=${2:-dlock} name="i11456-$$-$1" A B C bkey blease akey log="$T/log.$1"
    : >"$log"
    mkfifo "$T/held.$r" "$T/go.$r"
    "$DLOCK" -s "$URL" run --ttl 10 "$name" -- sh -c \
        'echo "A start" >>"$0"; echo x >"$1"; read _ <"$2"; echo "A end" >>"$0"' \
        "$log" "$T/held.$r" "$T/go.$r" >"$T/A.$r" 2>&1 &
    A=$!
    pids="$pids $A"
    await "$T/held.$r" 20 || fail "round $r: A never ran: $(cat "$T/A.$r")"
    akey=$(queue "$name" | head -1)
    "$DLOCK" -s "$URL" run -w 30 --ttl 10 "$name" -- sh -c "$rec" "$log" B \
        >"$T/B.$r" 2>&1 &
    B=$!
    pids="$pids $B"
    if ! until_true "[ \"\$(nkeys $name)\" = 2 ]" 100; then
        fail "round $r: B never queued: $(queue "$name" | tr '\n' ' ')"
        return
    fi
    # shellcheck disable=SC2046
    set -- $(queue "$name" | sed -n 2p)
    bkey=$1 blease=$3
    if ! ectl lease revoke "$blease" >"$T/revoke.$r" 2>&1; then
        fail "round $r: lease revoke $blease: $(cat "$T/revoke.$r")"
        return
    fi
    queue "$name" | grep -q "^$bkey " &&
        fail "round $r: B's key $bkey outlived its lease's revocation"
    if [ "$kind" = etcdctl ]; then
        timeout 60 etcdctl --endpoints="$EPS" lock "$name" -- \
            sh -c "$rec" "$log" C >"$T/C.$r" 2>&1 &
    else
        "$DLOCK" -s "$URL" run -w 30 --ttl 10 "$name" -- sh -c "$rec" "$log" C \
            >"$T/C.$r" 2>&1 &
    fi
    C=$!
    pids="$pids $C"
    # C queued: a key created after B's.  (B may have queued again
    # already: then it is before or after C, either is fine.)
    if ! until_true "[ \"\$(queue $name | grep -cv \"^$bkey \")\" -ge 2 ] && ! queue $name | grep -q \"^$bkey \"" 100; then
        fail "round $r: C never queued: $(queue "$name" | tr '\n' ' ')"
    fi
    echo "     round $r: A ${akey%% *}, B's revoked key $bkey (lease $blease); queue before A lets go: $(queue "$name" | cut -d' ' -f1 | tr '\n' ' ')"
    echo x >"$T/go.$r"
    for w in A B C; do
        eval "p=\$$w"
        wait_exit "$p" 400
        [ "$rc" = 0 ] || fail "round $r: $w exited $rc: $(cat "$T/$w.$r")"
    done
    order=$(tr '\n' ',' <"$log")
    # Well nested: X start, X end, Y start, Y end... each of A B C once.
    if python3 - "$log" <<'PY'; then
import sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
held, seen = None, []
for l in lines:
    who, what = l.split()
    if what == "start":
        if held is not None:
            sys.exit(1)
        held = who
        seen.append(who)
    else:
        if held != who:
            sys.exit(1)
        held = None
sys.exit(0 if held is None and sorted(seen) == ["A", "B", "C"] else 1)
PY
        ok "round $r (C: $kind): one holder at a time, A B C each ran once: $order"
    else
        fail "round $r: two holders at once, or one did not run: $order"
    fi
    until_true "[ \"\$(nkeys $name)\" = 0 ]" 50 ||
        fail "round $r: keys left: $(queue "$name" | tr '\n' ' ')"
}
for r in 1 2 3; do
    round "$r"
done
# C is `etcdctl lock` (Go's Mutex): B must not run beside it either.
round 4 etcdctl
finish
