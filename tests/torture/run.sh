#!/bin/sh
# Short torture of one store: every workload under the faults that apply,
# and the control that must show a violation.
#   run.sh TORTURE_BINARY URL [SECONDS_PER_RUN [nemesis-only]]
# With $DLOCK_TORTURE_NEMESIS (a shell command) set, one more run injects
# that server-wide fault at random moments.
# `make torture` calls it with longer runs.
set -u
bin=$1 url=$2 secs=${DLOCK_TORTURE_SECONDS:-${3:-4}}
fails=0
run() {
    echo "--- $*"
    "$bin" "$url" --seconds "$secs" "$@" || fails=$((fails + 1))
}
if [ "${4:-}" != nemesis-only ]; then
    run --workload mutex --fault kill
    run --workload counter --fault kill
    run --workload fenced --fault stop
    run --workload counter --fault stop --expect-violation
fi
# A server-wide fault from outside, when the caller gives one (make test
# gives Redis's SCRIPT FLUSH).
if [ -n "${DLOCK_TORTURE_NEMESIS:-}" ]; then
    run --workload fenced --fault kill --nemesis "$DLOCK_TORTURE_NEMESIS" --every 300
fi
echo "torture: $fails run(s) failed"
[ "$fails" = 0 ]
