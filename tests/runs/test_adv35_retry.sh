#!/bin/sh
# A run_begin that committed on the server but whose answer was lost, sent
# again by the pool's retry-once (PostgreSQL lease mode), must go ahead:
# the run it finds is its own.  Before the fix it skipped because of its
# own start ("already ran (its record is no longer kept)"): no run at all
# in that period, and a record RUNNING forever.
#   test_adv35_retry.sh DLOCK POSTGRES_URL
# The URL's host:port are reached through tests/runs/cut_after_commit.py.
set -u
DLOCK=$1 URL=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/dlock-adv35.XXXXXX)
PX=
cleanup() { [ -n "$PX" ] && kill "$PX" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail=0
hp=${URL#*@}; hp=${hp%%/*}; host=${hp%:*}; port=${hp##*:}
mkfifo "$T/px"
python3 "$HERE/cut_after_commit.py" "$host" "$port" \
    'dlock_run_names AS x' 'Z\x00\x00\x00\x05' >"$T/px" &
PX=$!
exec 3<"$T/px"
read -r pport <&3
purl=$(printf '%s' "$URL" | sed "s/@$host:$port/@127.0.0.1:$pport/")
case $purl in *\?*) purl="$purl&mode=lease" ;; *) purl="$purl?mode=lease" ;; esac
export DLOCK_STORE="$purl"
"$DLOCK" init >/dev/null || { echo "FAIL: init"; exit 1; }
name="adv35-retry-$$"
"$DLOCK" run --once-per 1h "$name" -- sh -c "echo ran >>'$T/ran'" 2>"$T/err"
rc=$?
read -r cut <&3
[ "$cut" = cut ] || { echo "FAIL: the proxy did not cut ($cut)"; fail=1; }
[ $rc -eq 0 ] || { echo "FAIL: run exit $rc"; cat "$T/err"; fail=1; }
n=$(cat "$T/ran" 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || { echo "FAIL: the job ran $n times, want 1"; cat "$T/err"; fail=1; }
"$DLOCK" history "$name" >"$T/h"
grep -q '^exited 0' "$T/h" || { echo "FAIL: history:"; cat "$T/h"; fail=1; }
[ "$(wc -l <"$T/h")" -eq 1 ] || { echo "FAIL: history:"; cat "$T/h"; fail=1; }
# A second run in the period skips, naming the first.
"$DLOCK" run --once-per 1h "$name" -- sh -c "echo ran >>'$T/ran'" 2>"$T/err"
n=$(cat "$T/ran" 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || { echo "FAIL: second start ran ($n)"; fail=1; }
grep -q 'already ran at' "$T/err" || { echo "FAIL: skip message:"; cat "$T/err"; fail=1; }
[ $fail -eq 0 ] && echo "ok"
exit $fail
