#!/bin/bash
# dlock run --keep-runs N (issue 46, history limits):
#   test_keep.sh DLOCK STORE_URL
# A name's setting is kept by every run of it: 5 runs with --keep-runs 3
# leave the newest 3; a plain run after them (no option) keeps the
# setting; raised to 7, the runs grow to 7 and stay; history -n reads up
# to 10000; out-of-range values are 64.  On every store
# (tests/cli/CMakeLists.txt).
set -u
DLOCK=$1
export DLOCK_STORE="$2"
py=/usr/bin/python3
fails=0
N="keep-$$-$RANDOM/job"
ok() { echo "ok   $1"; }
fail() {
    fails=$((fails + 1))
    echo "FAIL $1"
}
check() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi; }
# runs: the kept runs' exit statuses, newest first, one line.
runs() {
    "$DLOCK" history "$N" --json | "$py" -c '
import json, sys
print(" ".join(str(r["status"]) for r in json.load(sys.stdin)))'
}

for i in 1 2 3 4 5; do
    "$DLOCK" run --keep-runs 3 "$N" -- sh -c "exit $i"
done
check "--keep-runs 3: the newest 3 of 5" "5 4 3" "$(runs)"
"$DLOCK" run "$N" -- sh -c 'exit 6'
check "a run without the option keeps the name's setting" "6 5 4" "$(runs)"
for i in 7 8 9 10 11; do
    "$DLOCK" run --keep-runs 7 "$N" -- sh -c "exit $i"
done
check "raised to 7: the runs grow to it" "11 10 9 8 7 6 5" "$(runs)"
"$DLOCK" run --keep-runs 7 "$N" -- sh -c 'exit 12'
check "and stay at it" "12 11 10 9 8 7 6" "$(runs)"
check "history -n 2" 2 "$("$DLOCK" history -n 2 "$N" | wc -l)"
"$DLOCK" history -n 10000 "$N" >/dev/null
check "history -n 10000 is allowed" 0 $?
"$DLOCK" history -n 10001 "$N" >/dev/null 2>&1
check "history -n 10001 is 64" 64 $?
for bad in 0 10001 -1 3x ""; do
    "$DLOCK" run --keep-runs "$bad" "$N" -- true 2>/dev/null
    check "--keep-runs '$bad' is 64" 64 $?
done
check "no bad option ran" "12 11 10 9 8 7 6" "$(runs)"
# SQLite: a count put wrong by hand (the adversary's F3, F4) never costs
# a run its own record (a --once success must stay one), comes right,
# and a planted extreme is no setting and no overflow.
case $DLOCK_STORE in
sqlite://*)
    db=${DLOCK_STORE#sqlite://}
    db=${db%%\?*}
    M="$N-mig"
    for i in 1 2 3; do "$DLOCK" run --once --keep-runs 3 "$M" -- false; done
    "$py" - "$db" "$M" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("DELETE FROM dlock_runs WHERE name = ?", (sys.argv[2],))
c.commit()
PY
    "$DLOCK" run --once --keep-runs 3 "$M" -- true
    out=$("$DLOCK" run --once --keep-runs 3 "$M" -- echo RAN-AGAIN 2>&1)
    case $out in
    *RAN-AGAIN*) fail "--once ran again after the runs were deleted by hand" ;;
    *) ok "--once holds after the runs were deleted by hand ($out)" ;;
    esac
    check "the success is kept" "0" "$("$DLOCK" history "$M" --json |
        "$py" -c 'import json,sys; print(" ".join(str(r["status"]) for r in json.load(sys.stdin)))')"
    for i in 1 2 3 4; do "$DLOCK" run --keep-runs 3 "$M-b" -- true; done
    "$py" - "$db" "$M-b" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE dlock_run_keep SET keep = -3, kept = 9223372036854775807 WHERE name = ?", (sys.argv[2],))
c.commit()
PY
    "$DLOCK" run "$M-b" -- true
    check "a planted kept of INT64_MAX and keep of -3: the run still ends 0" 0 $?
    n=$("$DLOCK" history "$M-b" --json | "$py" -c 'import json,sys; print(len(json.load(sys.stdin)))')
    check "and keep -3 is the default (20), not 1: the 3 kept and the new one" 4 "$n"
    ;;
esac
echo "$fails failed"
[ "$fails" = 0 ]
