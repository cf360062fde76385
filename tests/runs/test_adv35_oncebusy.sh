#!/bin/sh
# dlock run --once while another host's run of the job is still running
# (not known to have succeeded: it may fail).  Exit 0 there would tell
# `dlock run --once m -- ./migrate && ./app` that the migration is done.
# Before the fix: without -w a busy lock was a skip, exit 0, CMD not run,
# and the running one then failed: nothing ever succeeded, yet both
# exited 0; with -w, a lock still busy at the end was a skip too.
# Now: --once waits as a plain run (default forever) then decides; a lock
# still busy at the end of -w is "not acquired" (1, or -E CODE).
#   test_adv35_oncebusy.sh DLOCK URL
set -u
DLOCK=$1 URL=$2
T=$(mktemp -d /tmp/dlock-adv35o.XXXXXX)
APID=
trap '[ -n "$APID" ] && kill "$APID" 2>/dev/null; rm -rf "$T"' EXIT
fail=0
export DLOCK_STORE="$URL"
"$DLOCK" init >/dev/null 2>&1
m="adv35-once-busy-$$"
mkfifo "$T/up" "$T/go"
# Open read-write: neither A's "up" nor its exit line ever blocks.
exec 4<>"$T/up"
# A: the first run; it says "up", waits for "go", then fails (exit 3);
# then its exit status follows on the same fifo.
{
    "$DLOCK" run --once "$m" -- sh -c 'echo up >"$1"; read x <"$2"; exit 3' \
        sh "$T/up" "$T/go"
    echo "A-exit $?" >"$T/up"
} 2>"$T/errA" &
APID=$!
read -r x <&4
if [ "$x" != up ]; then
    echo "FAIL: A did not start its command ($x)"; cat "$T/errA"; exit 1
fi
# B: the lock is busy to the end of -w: not acquired, CMD not run.
"$DLOCK" run --once -w 0.3 "$m" -- sh -c 'echo B >>"$1"' sh "$T/ran" 2>"$T/errB"
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: B (busy, -w 0.3) exit $rc, want 1"; cat "$T/errB"; fail=1; }
"$DLOCK" run --once -w 0.3 -E 7 "$m" -- sh -c 'echo B >>"$1"' sh "$T/ran" 2>"$T/errB"
rc=$?
[ $rc -eq 7 ] || { echo "FAIL: B (-E 7) exit $rc, want 7"; cat "$T/errB"; fail=1; }
grep -q 'is running now' "$T/errB" || { echo "FAIL: B's message:"; cat "$T/errB"; fail=1; }
# C, no -w: waits for A; A fails; so C runs the job.
"$DLOCK" run --once "$m" -- sh -c 'echo C >>"$1"' sh "$T/ran" 2>"$T/errC" &
CPID=$!
# Whether C starts waiting before or after A ends, it must run the job
# (A fails); before the fix, a C that found the lock busy exited 0.
echo go >"$T/go"
read -r x rcA <&4
wait "$APID"; APID=
wait "$CPID"; rcC=$?
[ "$rcA" -eq 3 ] || { echo "FAIL: A exit $rcA, want 3"; cat "$T/errA"; fail=1; }
[ $rcC -eq 0 ] || { echo "FAIL: C exit $rcC"; cat "$T/errC"; fail=1; }
[ "$(cat "$T/ran" 2>/dev/null)" = C ] || { echo "FAIL: ran: $(cat "$T/ran" 2>/dev/null)"; cat "$T/errC"; fail=1; }
# D: after C's success, a skip (exit 0), CMD not run.
"$DLOCK" run --once "$m" -- sh -c 'echo D >>"$1"' sh "$T/ran" 2>"$T/errD"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: D exit $rc"; fail=1; }
[ "$(cat "$T/ran")" = C ] || { echo "FAIL: D ran"; fail=1; }
grep -q 'already ran at' "$T/errD" || { echo "FAIL: D's message:"; cat "$T/errD"; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
