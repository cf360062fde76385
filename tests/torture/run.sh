#!/bin/sh
# Short torture of one store: every workload under the faults that apply,
# and the control that must show a violation.
#   run.sh TORTURE_BINARY URL [SECONDS_PER_RUN]
# `make torture` calls it with longer runs.
set -u
bin=$1 url=$2 secs=${DLOCK_TORTURE_SECONDS:-${3:-4}}
fails=0
run() {
    echo "--- $*"
    "$bin" "$url" --seconds "$secs" "$@" || fails=$((fails + 1))
}
run --workload mutex --fault kill
run --workload counter --fault kill
run --workload fenced --fault stop
run --workload counter --fault stop --expect-violation
echo "torture: $fails run(s) failed"
[ "$fails" = 0 ]
