#!/bin/bash
# stdout that cannot be written (a full disk: /dev/full; a closed
# stdout): `dlock list --json >out` exited 0 with nothing in out and not
# a word.  The failed write is an error; a 0 becomes 70, a result a
# script tests (status's 3) stays.
#   output_full.sh DLOCK URL
set -u
dlock=$1 url=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
[ -w /dev/full ] || { echo "no /dev/full"; exit 77; }
t=$(mktemp -d /tmp/dlock-adv47-full.XXXXXX)
trap 'rm -rf "$t"' EXIT
export DLOCK_STORE=$url
"$dlock" run adv47-full true || bad "setup run"
for args in "list --json" "list" "history --json adv47-full" \
            "run --json adv47-full true" "init --json"; do
    # shellcheck disable=SC2086
    "$dlock" $args >/dev/full 2>"$t/err"
    rc=$?
    if [ $rc -ne 0 ] && grep -q "cannot write the output" "$t/err"; then
        ok "$args >/dev/full: exit $rc, said"
    else
        bad "$args >/dev/full: exit $rc: $(cat "$t/err")"
    fi
done
"$dlock" status --json adv47-full >/dev/full 2>"$t/err"
rc=$?
if [ $rc -eq 3 ] && grep -q '"error".*cannot write the output' "$t/err"; then
    ok "status --json >/dev/full: exit 3 kept, the error object said"
else
    bad "status --json >/dev/full: exit $rc: $(cat "$t/err")"
fi
"$dlock" list --json >&- 2>"$t/err"
rc=$?
[ $rc -ne 0 ] && ok "list --json with stdout closed: exit $rc" ||
    bad "list --json with stdout closed: exit 0"
# Nothing written, nothing to fail: a run without --json, stdout closed.
"$dlock" run adv47-full true >&- 2>"$t/err"
rc=$?
[ $rc -eq 0 ] && ok "run (no --json) with stdout closed: CMD's 0" ||
    bad "run with stdout closed: exit $rc: $(cat "$t/err")"
exit $fail
