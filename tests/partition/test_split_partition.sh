#!/bin/bash
# Split brain behind asynchronous replication (issue 24):
#
#   test_split_partition.sh TORTURE sentinel|cluster
#
# Every Redis node on a host of its own (a network namespace,
# scripts/netns.sh), four torture workers on client hosts c1..c4.  The
# nemesis (tests/torture/split-nemesis.sh) cuts the master (Sentinel: the
# master; Cluster: the master of the torture name's slot) and the clients
# c1, c2 (and, for Sentinel, one of the three sentinels) off from the
# rest, silently, until the other side has promoted the replica; clients
# c3, c4 then lock on the new master while c1, c2 may go on with the old
# one; then it heals.  Fenced counter, 1 s leases, holds up to 400 ms.
#
# Overlap is expected here: replication is asynchronous, and the old
# master serves its side until it learns of the failover (Sentinel: at
# the heal; Cluster: after the node timeout, when it sees it lost the
# majority).  Overlapping windows, fences out of order and late releases
# are measured and reported (torture --overlap-expected); lost fenced
# updates, crashes, no recovery after the heal fail the run.
#
# Hosts: Sentinel: master srv, replica c5, sentinels c6 (with the master),
# c7, c8.  Cluster: srv, c5..c9 (three masters, three replicas).
# $DLOCK_TORTURE_SECONDS sets the run's length (default 40; no split
# starts in its last 15 s).  Prints one line for the README table:
#   SUMMARY store=... fault=... result=PASS|FAIL <torture's summary>
# Root only; 77 (skipped) where the machine cannot, 1 with CI=true.
set -euo pipefail
usage="usage: test_split_partition.sh TORTURE sentinel|cluster"
TORTURE=$(realpath "${1:?$usage}")
mode=${2:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
nemesis=$here/../torture/split-nemesis.sh
workers=4
ttl=1000
secs=${DLOCK_TORTURE_SECONDS:-40}

# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
command -v redis-server >/dev/null || partition_cannot "no redis-server"
case $mode in
sentinel)
    command -v redis-sentinel >/dev/null ||
        redis-server --help 2>&1 | grep -q sentinel ||
        partition_cannot "no redis-sentinel"
    hosts=8 script=$partition_scripts/server-redis-sentinel.sh
    nodes=(srv c5 c6 c7 c8) with="c1 c2 c6" store=redis-sentinel
    ;;
cluster)
    hosts=9 script=$partition_scripts/server-redis-cluster.sh
    nodes=(srv c5 c6 c7 c8 c9) with="c1 c2" store=redis-cluster
    ;;
*)
    echo "$usage" >&2
    exit 64
    ;;
esac
partition_up "$hosts"

where=
for h in "${nodes[@]}"; do
    where="$where $(netns_name "$h"):$(netns_addr "$h")"
done
sdir=$T/server-$mode
mkdir -p "$sdir"
netns_at_exit "'$script' stop '$sdir' >/dev/null 2>&1"
url=$(DLOCK_SERVER_NETNS="${where# }" timeout 120 "$script" start "$sdir") ||
    partition_cannot "the $store servers did not start in namespaces"

echo "--- $store, split brain ($url)"
rc=0
# Bounded: the run, what a cut worker adds (its store timeouts), and a
# nemesis that waits at most 60 + 30 s and a split of 3 s.
timeout -k 10 $((secs * 3 + 120)) "$TORTURE" "$url" \
    --workers "$workers" --seconds "$secs" \
    --workload fenced --fault none --ttl "$ttl" --hold 400 \
    --netns "$(netns_name c)" --hosts "$workers" --overlap-expected \
    --nemesis "'$nemesis' '$partition_scripts/netns.sh' '$NETNS_TAG' $NETNS_N $mode $ttl '$script' '$sdir' '$with'" \
    --every 2000 --quiet 15000 >"$T/out" 2>&1 || rc=$?
cat "$T/out"
if [ "$rc" != 0 ]; then
    echo "--- the servers' logs, last lines"
    tail -n 15 "$sdir"/*/log 2>/dev/null || true
fi
line=$(grep '^summary: ' "$T/out" | cut -d' ' -f2-) || line="(no summary)"
result=PASS
[ "$rc" = 0 ] || result=FAIL
echo "SUMMARY store=$store fault=split-brain result=$result $line"
[ "$rc" = 0 ]
