#!/bin/sh
# Item 16 of issue 43: the DLOCK_ variables dlock reads (DLOCK_STORE_FILE,
# DLOCK_METRICS_FILE) must not reach the command `dlock run` runs, as
# docs/threat-model.md says of every inherited DLOCK_ variable; the child's
# DLOCK_NAME/FENCE/STORE are dlock's own.  On e2c3a4f both reached it.
#   test_child_env.sh DLOCK
set -u
DLOCK=$1
T=$(mktemp -d /tmp/dlock-adv43e.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
printf 'sqlite://%s/s.db\n' "$T" >"$T/store"
chmod 600 "$T/store"
DLOCK_STORE_FILE="$T/store" DLOCK_METRICS_FILE="$T/m.prom" \
    DLOCK_NAME=inherited DLOCK_FENCE=999999 DLOCK_OTHER=kept \
    "$DLOCK" run adv43-env -- env >"$T/env" 2>"$T/err" ||
    { echo "FAIL: run: $(cat "$T/err")"; exit 1; }
for v in DLOCK_STORE_FILE DLOCK_METRICS_FILE; do
    if grep -q "^$v=" "$T/env"; then
        echo "FAIL: $v reached the command: $(grep "^$v=" "$T/env")"; fail=1
    fi
done
grep -qx 'DLOCK_NAME=adv43-env' "$T/env" || { echo "FAIL: DLOCK_NAME is not dlock's own"; fail=1; }
[ "$(grep -c '^DLOCK_NAME=' "$T/env")" = 1 ] || { echo "FAIL: two DLOCK_NAME"; fail=1; }
grep -q '^DLOCK_FENCE=999999$' "$T/env" && { echo "FAIL: inherited DLOCK_FENCE"; fail=1; }
grep -q '^DLOCK_STORE=sqlite://' "$T/env" || { echo "FAIL: no DLOCK_STORE"; fail=1; }
grep -qx 'DLOCK_OTHER=kept' "$T/env" || { echo "FAIL: a variable dlock does not read was dropped"; fail=1; }
# The variables were still used by dlock itself: the store file's store,
# the metrics file written.
[ -s "$T/m.prom" ] || { echo "FAIL: DLOCK_METRICS_FILE was not used"; fail=1; }
[ -f "$T/s.db" ] || { echo "FAIL: DLOCK_STORE_FILE was not used"; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
