#!/bin/sh
# health_tree.sh DLOCK URL: a --health-cmd that overruns its interval is
# ended with everything it started, at once, not left running for as
# long as dlock leads: its first run starts a child and waits on it
# (as `sleep 100; true` does), later runs pass, so the leader stays.
set -u
DLOCK=$1
URL=$2
T=$(mktemp -d)
epid=
cleanup() {
    [ -n "$epid" ] && kill "$epid" 2>/dev/null
    [ -s "$T/hpid" ] && kill "$(cat "$T/hpid")" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkfifo "$T/go"
"$DLOCK" -s "$URL" elect "adv45-health-tree-$$" --health-interval 0.3 \
    --health-fails 3 --health-cmd \
    "if [ ! -e $T/once ]; then : >$T/once; sleep 300 & echo \$! >$T/hpid.new; mv $T/hpid.new $T/hpid; wait; fi; true" \
    -- sh -c "read x <$T/go" 2>"$T/err" &
epid=$!
i=0
until [ -s "$T/hpid" ]; do
    i=$((i + 1))
    [ "$i" -ge 200 ] && fail "the health check never ran: $(cat "$T/err")"
    sleep 0.05
done
hpid=$(cat "$T/hpid")
# Overrun after 0.3 s: its child must be gone within 3 s, dlock leading.
i=0
while kill -0 "$hpid" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -ge 60 ] && fail "the overrun health check's child (pid $hpid) still runs 3 s on"
    sleep 0.05
done
kill -0 "$epid" 2>/dev/null || fail "dlock elect ended: $(cat "$T/err")"
grep -q "failed (1 of 3" "$T/err" || fail "the overrun was not a failure: $(cat "$T/err")"
echo "ok: the overrun health check's child is gone, the leader leads on"
echo go >"$T/go"
wait "$epid"
rc=$?
epid=
[ "$rc" -eq 0 ] || fail "dlock elect exited $rc: $(cat "$T/err")"
echo "ok: CMD's exit ends it (0)"
