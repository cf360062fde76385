#!/bin/sh
# A host whose name is not UTF-8 (sethostname() takes any bytes; a UTS
# namespace of a container) must still take locks and record runs on
# every store, and every output must show the name safely.  Before the
# fix PostgreSQL refused it ("invalid byte sequence", lease mode: "out of
# memory") and MariaDB too ("the ... table's name column is utf8mb4"):
# the job never ran.
#   test_adv35_host.sh DLOCK URL      (root: unshare -u; else skipped, 77)
set -u
DLOCK=$1 URL=$2
command -v unshare >/dev/null && command -v python3 >/dev/null || exit 77
unshare -u true 2>/dev/null || exit 77
T=$(mktemp -d /tmp/dlock-adv35h.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
export DLOCK_STORE="$URL"
"$DLOCK" init >/dev/null 2>&1
cat >"$T/sethost.py" <<'PY'
import os, socket, sys
socket.sethostname(b'h x\n\x1b[31mRED"q\\\xff\xc3')
os.execv(sys.argv[1], sys.argv[1:])
PY
name="adv35-host-$$"
unshare -u python3 "$T/sethost.py" "$DLOCK" run --once-per 1h "$name" -- \
    sh -c "echo ran >>'$T/ran'" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: run exit $rc"; cat "$T/err"; fail=1; }
n=$(cat "$T/ran" 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || { echo "FAIL: the job ran $n times, want 1"; fail=1; }
# Again from that host: a skip naming it.
unshare -u python3 "$T/sethost.py" "$DLOCK" run --once-per 1h "$name" -- \
    sh -c "echo ran >>'$T/ran'" 2>"$T/err"
n=$(cat "$T/ran" 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || { echo "FAIL: second start ran ($n)"; fail=1; }
grep -q 'already ran at' "$T/err" || { echo "FAIL: skip:"; cat "$T/err"; fail=1; }
# Outputs: no raw ESC or newline from the host; JSON valid, host as kept.
"$DLOCK" history "$name" >"$T/h"
[ "$(wc -l <"$T/h")" -eq 1 ] || { echo "FAIL: history:"; cat -A "$T/h"; fail=1; }
if grep -q "$(printf '\033')" "$T/h" "$T/err"; then
    echo "FAIL: raw escape in output"; fail=1
fi
for j in "history --json $name" "status --json $name" "list --json"; do
    # shellcheck disable=SC2086
    "$DLOCK" $j >"$T/j"
    rc=$?
    # status of the free name: 3 (free), not 0.
    case $j in status*) want=3 ;; *) want=0 ;; esac
    [ $rc = $want ] || { echo "FAIL: $j exit $rc, not $want"; fail=1; }
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1], "rb"))
want = "h x\n\x1b[31mRED\"q\\\\xff\\xc3"
s = json.dumps(d)
assert json.dumps(want)[1:-1] in s, s
' "$T/j" || { echo "FAIL: $j:"; cat "$T/j"; fail=1; }
done
[ $fail -eq 0 ] && echo ok
exit $fail
