#!/bin/bash
# The torture harness under network faults (issue 24):
#
#   test_torture_partition.sh TORTURE DLOCK [CASE...]
#
# CASE as in test_cli_partition.sh (default: every store compiled into
# DLOCK).  Six workers, each on its own client host (a network namespace,
# torture --netns), the store's server on host srv.  Per case, the fenced
# counter with a 1 s lease and holds up to 400 ms, under each network
# nemesis of tests/torture/netns-nemesis.sh (holder, waiter, server, flap:
# cuts of 0.2..3 x the lease at random moments), with the checker's
# definitions unchanged.  $DLOCK_TORTURE_SECONDS sets each run's length
# (default 15: no fault starts in the last 7 s, so that after the last
# heal, up to 4 s later, the run shows the store serving again).  $DLOCK_PARTITION_NEMESES picks the nemeses.
#
# Root only; 77 (skipped) where the machine cannot, 1 with CI=true.
set -euo pipefail
TORTURE=$(realpath "${1:?usage: test_torture_partition.sh TORTURE DLOCK [CASE...]}")
DLOCK=$(realpath "${2:?usage: test_torture_partition.sh TORTURE DLOCK [CASE...]}")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
nemesis=$here/../torture/netns-nemesis.sh
workers=6
ttl=1000
secs=${DLOCK_TORTURE_SECONDS:-15}
read -r -a nemeses <<<"${DLOCK_PARTITION_NEMESES:-holder waiter server flap}"

# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
partition_begin "$workers" "$@"
for c in "${cases[@]}"; do
    if ! partition_url "$c"; then
        echo "FAIL $c: the ${c%-lease} server did not start"
        fails=$((fails + 1))
        continue
    fi
    for m in "${nemeses[@]}"; do
        echo "--- $c, nemesis $m"
        # The torture itself is bounded by its run length; what a worker
        # stuck in a cut call adds is bounded by the store's timeouts,
        # and the whole by timeout(1).
        rc=0
        timeout -k 10 $((secs * 4 + 60)) "$TORTURE" "$PARTITION_URL" \
            --workers "$workers" --seconds "$secs" \
            --workload fenced --fault none --ttl "$ttl" --hold 400 \
            --netns "$(netns_name c)" --hosts "$workers" \
            --nemesis "'$nemesis' '$partition_scripts/netns.sh' '$NETNS_TAG' $NETNS_N $m $ttl" \
            --every 800 --quiet 7000 >"$T/out" 2>&1 || rc=$?
        cat "$T/out"
        if [ "$rc" = 0 ]; then
            summary+=("$(printf '%-15s %-7s PASS' "$c" "$m")")
        else
            fails=$((fails + 1))
            summary+=("$(printf '%-15s %-7s FAIL %s' "$c" "$m" \
                "$(grep '^FAIL' "$T/out" | cut -c6- | cut -d: -f1 |
                    sort -u | tr '\n' ' ')")")
        fi
    done
done
# Renewed holds that outlast the lease (3..6 leases of 500 ms) under
# holder cuts of 2..3 leases: with the fenced counter nothing may be lost (a cut holder's late
# write is refused by its fence); the control, the unfenced counter whose
# holders ignore LOST, must lose updates, or the harness is blind to what
# a cut-off holder that does not stop does.
for c in "${cases[@]}"; do
    partition_url "$c" || continue
    for w in fenced counter; do
        echo "--- $c, nemesis holder, renewed holds, $w"
        rc=0
        extra=()
        len=$secs
        # The control runs twice as long: every fault should show, and one
        # is enough, but a run of a few faults could miss by chance.
        [ "$w" = counter ] && extra=(--expect-violation) len=$((secs * 2))
        timeout -k 10 $((len * 4 + 60)) "$TORTURE" "$PARTITION_URL" \
            --workers "$workers" --seconds "$len" --renew \
            --workload "$w" --fault none --ttl 500 --hold 3000 \
            --netns "$(netns_name c)" --hosts "$workers" \
            --nemesis "'$nemesis' '$partition_scripts/netns.sh' '$NETNS_TAG' $NETNS_N holder-long 500" \
            --every 800 --quiet 4500 "${extra[@]}" >"$T/out" 2>&1 || rc=$?
        cat "$T/out"
        tag=renew-$w
        [ "$w" = counter ] && tag=control
        if [ "$rc" = 0 ]; then
            summary+=("$(printf '%-15s %-13s PASS' "$c" "$tag")")
        else
            fails=$((fails + 1))
            summary+=("$(printf '%-15s %-13s FAIL' "$c" "$tag")")
        fi
    done
done
echo
printf '%s\n' "${summary[@]}"
echo "partition torture: $fails run(s) failed"
[ "$fails" = 0 ]
