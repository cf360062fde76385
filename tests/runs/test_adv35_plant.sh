#!/bin/sh
# Run records planted in a SQLite store by hand (anyone who can write the
# file): hostile host and values, and a name that is not UTF-8.  history,
# status and list (text and --json) must stay valid, escaped, and list
# must still list the good names and exit 0.  Before the fix `dlock list`
# exited 64 ("lock name is not valid UTF-8") after printing part of it.
#   test_adv35_plant.sh DLOCK
set -u
DLOCK=$1
command -v python3 >/dev/null || exit 77
T=$(mktemp -d /tmp/dlock-adv35p.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
export DLOCK_STORE="sqlite://$T/s.db"
"$DLOCK" run adv35-plant -- true || { echo "FAIL: first run"; exit 1; }
python3 - "$T/s.db" <<'PY' || { echo "FAIL: plant"; exit 1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.text_factory = bytes
db.execute("INSERT INTO dlock_runs (name,fence,host,pid,start_ms,end_ms,"
           "result,status) VALUES ('adv35-plant', 999, "
           "CAST(X'1b5b326a0aff22' AS TEXT), -5, 9223372036854775807, "
           "-9223372036854775808, 99, 2147483647)")
db.execute("INSERT INTO dlock_runs (name,fence,host,pid,start_ms,end_ms,"
           "result,status) VALUES (CAST(X'61ff0a' AS TEXT), 5, X'00410042',"
           " 'abc', 'x', 1.5, -1, 'q')")
db.execute("INSERT INTO dlock_run_names (name,last_start,last_fence) "
           "VALUES (CAST(X'61ff0a' AS TEXT), 1, 5)")
db.commit()
PY
for j in "history --json adv35-plant" "status --json adv35-plant" "list --json"; do
    # shellcheck disable=SC2086
    "$DLOCK" $j >"$T/j" 2>"$T/e"
    rc=$?
    # status of the free name: 3 (free), not 0.
    case $j in status*) want=3 ;; *) want=0 ;; esac
    [ $rc -eq $want ] || { echo "FAIL: $j exit $rc, not $want"; cat "$T/e"; fail=1; }
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1], "rb"))
s = json.dumps(d)
assert "adv35-plant" in s, s
' "$T/j" || { echo "FAIL: $j:"; cat "$T/j"; fail=1; }
done
for t in "history adv35-plant" "status adv35-plant" "list"; do
    # shellcheck disable=SC2086
    "$DLOCK" $t >"$T/o" 2>"$T/e"
    rc=$?
    case $t in status*) want=3 ;; *) want=0 ;; esac
    [ $rc -eq $want ] || { echo "FAIL: $t exit $rc, not $want"; cat "$T/e"; fail=1; }
    grep -q adv35-plant "$T/o" || [ "$t" != list ] || { echo "FAIL: $t:"; cat "$T/o"; fail=1; }
    if grep -q "$(printf '\033')" "$T/o" "$T/e"; then
        echo "FAIL: $t: raw escape"; fail=1
    fi
done
[ $fail -eq 0 ] && echo ok
exit $fail
