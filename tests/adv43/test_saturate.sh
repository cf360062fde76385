#!/bin/sh
# Item 9 of issue 43: a run record whose times are at the ends of int64
# (start -9e18, end 9e18, and the reverse) must not overflow anything that
# is computed from them: history, status and list (text and --json) exit 0
# and print no garbage duration.  On e2c3a4f cli_print_run() computed
# end - start in int64: UBSan aborted `history`, `status` and `list`.
#   test_saturate.sh DLOCK
set -u
DLOCK=$1
command -v python3 >/dev/null || exit 77
T=$(mktemp -d /tmp/dlock-adv43s.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
export DLOCK_STORE="sqlite://$T/s.db"
"$DLOCK" run adv43-sat -- true || { echo "FAIL: first run"; exit 1; }
python3 - "$T/s.db" <<'PY' || { echo "FAIL: plant"; exit 1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = [(900, -9000000000000000000, 9000000000000000000),
        (901, -9223372036854775808, 9223372036854775807),
        (902, 1, 9223372036854775807),
        (903, 9223372036854775807, 9223372036854775807),
        (904, 9000000000000000000, -9000000000000000000)]
for fence, start, end in rows:
    db.execute("INSERT INTO dlock_runs (name,fence,host,pid,start_ms,end_ms,"
               "result,status) VALUES ('adv43-sat', ?, 'h', 1, ?, ?, 1, 0)",
               (fence, start, end))
db.commit()
PY
for t in "history adv43-sat" "status adv43-sat" "list" "-v status adv43-sat" \
         "history --json adv43-sat" "status --json adv43-sat" "list --json"; do
    # shellcheck disable=SC2086
    "$DLOCK" $t >"$T/o" 2>"$T/e"
    rc=$?
    # status of the free name: 3 (free), not 0.
    case $t in *status*) want=3 ;; *) want=0 ;; esac
    [ $rc -eq $want ] || { echo "FAIL: $t: exit $rc, not $want"; cat "$T/e"; fail=1; }
    # No duration longer than the clamp (a year) and no negative one.
    if grep -Eq 'took (-|[0-9]{9,})' "$T/o"; then
        echo "FAIL: $t: a duration out of range:"; cat "$T/o"; fail=1
    fi
    case $t in *--json*)
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/o" ||
            { echo "FAIL: $t: not JSON:"; cat "$T/o"; fail=1; } ;;
    esac
done
# A run under --metrics-file reads the records back for the textfile.
"$DLOCK" run --metrics-file "$T/m.prom" adv43-sat -- true 2>"$T/e" ||
    { echo "FAIL: run --metrics-file"; cat "$T/e"; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
