#!/bin/sh
# Short torture of one store.
#
#   run.sh TORTURE_BINARY URL [SECONDS_PER_RUN]
#       every workload under the holder faults (kill -9, SIGSTOP past the
#       lease), and the control that must show a violation;
#   run.sh TORTURE_BINARY URL SECONDS_PER_RUN semaphore
#       a semaphore of 3 under kill -9 and SIGSTOP (never more than 3
#       holders at once), and the control whose workers ask for 4, which
#       the checker must catch;
#   run.sh TORTURE_BINARY URL SECONDS_PER_RUN elect [RATE...]
#       the same with leaders (dlock_elect): mutual exclusion under kill -9,
#       the fenced counter under SIGSTOP past the lease, and under it with
#       half of the workers on a clock at each RATE (0.99..1.01: must pass);
#       the control that must show a violation is the locks' (the same
#       harness and checker);
#   run.sh TORTURE_BINARY URL SECONDS_PER_RUN server SCRIPT DIR FAULT:KIND...
#       the fenced counter under server-wide faults, one run per FAULT,
#       injected from outside with `SCRIPT ctl DIR ...`:
#         restart        stop and start the server
#         crash-restart  kill -9 the server, then start it (crash recovery)
#         kill-clients   kill every client connection on the server side
#         script-flush   Redis's SCRIPT FLUSH
#         failover       Redis Sentinel or Cluster: a graceful failover (settled)
#         kill-master    Redis Sentinel or Cluster: kill -9 of the master (of the
#                        torture name's slot for Cluster; settled)
#         kill-leader    etcd cluster: kill -9 of the leader, started again
#         restart-member etcd cluster: TERM a member, start it again
#         pause-leader   etcd cluster: SIGSTOP the leader until the others
#                        have a new one, and 0.5..1.5 s more; then SIGCONT
#                        (the etcd faults by tests/torture/etcd-nemesis.sh,
#                        which also measures, with $DLOCK_CLI, how soon a
#                        new holder had a lock after the leader was lost:
#                        run.sh prints p50 and max of those)
#       KIND says what the store promises under that fault: `revokes` (the
#       locks are gone: a holder must be told, and fences must keep a late
#       holder's writes out) or `keeps` (the locks stay, no holder may
#       overlap another).
#   run.sh TORTURE_BINARY URL SECONDS_PER_RUN clock RATE...
#       the fenced counter under SIGSTOP past the lease, with half of the
#       workers on a clock at RATE x real time (libfaketime), one run per
#       RATE.  At 0.99..1.01 the run must pass; at other rates no lease
#       can promise mutual exclusion (issue 24): the run is measured and
#       reported, and only lost fenced updates fail it.
# $DLOCK_TORTURE_SECONDS overrides SECONDS_PER_RUN (`make torture` sets it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$1 url=$2 secs=${DLOCK_TORTURE_SECONDS:-${3:-4}}
fails=0
# etcd grants no lease under 2 s (its minimum with a 1 s election): the
# default 300 ms lease would be one of 2 s on the server, so its kill and
# stop faults could not be told from a slow store.  Its runs use 2 s,
# and last at least 12 s: a SIGSTOP (1 critical section in 12) holds the
# lock for its whole 2..3 s lease, so 4 s fit only one or two rounds of
# ~12 acquisitions, and the progress floor (10) failed by chance (CI,
# torture-etcd-clock: 7 acquisitions in 4 s).
ttl=
case $url in
etcd://* | etcds://*)
    ttl="--ttl 2000"
    [ "$secs" -ge 12 ] || secs=12
    ;;
esac
run() {
    echo "--- $* $ttl"
    # shellcheck disable=SC2086 # $ttl is empty or two words
    "$bin" "$url" --seconds "$secs" $ttl "$@" || fails=$((fails + 1))
}
if [ "${4:-}" = server ]; then
    script=$5 dir=$6
    shift 6
    [ "$secs" -ge 8 ] || secs=8 # room for faults and a recovery after them (a
    # restart can take over a second: 3 of them left 6 s too little service)
    for f in "$@"; do
        every=700 quiet=2000 nem="" least=0
        case ${f%%:*} in
        restart) cmd=restart ;;
        crash-restart) cmd=crash-restart ;;
        kill-clients) cmd=kill-clients ;;
        script-flush) cmd="cli SCRIPT FLUSH" ;;
        # A failover takes seconds, and Sentinel will not fail the same
        # master over again within 2 x failover-timeout (3 s).  The
        # fault lasts until its aftermath is over (a second, spontaneous
        # failover included: server-redis-sentinel.sh aftermath()), up to
        # ~20 s: none starts in the last 20 s, and the run lasts at least
        # 36 s so that one always starts (the first within 2 x every).
        failover) cmd=failover every=6000 quiet=20000 ;;
        kill-master) cmd=kill-master every=6000 quiet=20000 ;;
        # etcd: each fault takes 1..3 s, and the cluster is whole again
        # when it ends; an election takes ~1 s (server-etcd.sh: election
        # timeout 1000 ms), and a request that hung on a member meanwhile
        # up to the store's timeout (5 s): none in the last 8 s.
        kill-leader | restart-member | pause-leader)
            cmd=${f%%:*} every=1500 quiet=8000
            nem="'$here/etcd-nemesis.sh' '$script' '$dir' '$url' $cmd"
            least=16
            ;;
        *) echo "run.sh: unknown server fault $f" >&2; exit 64 ;;
        esac
        case ${f#*:} in
        revokes) kind=--revokes ;;
        keeps) kind= ;;
        *) echo "run.sh: $f: say revokes or keeps" >&2; exit 64 ;;
        esac
        # Holds long enough to span a fault: up to 400 ms in a 1 s lease.
        keep=$secs
        [ "$quiet" -lt 20000 ] || [ "$secs" -ge 36 ] || secs=36
        [ "$secs" -ge "$least" ] || secs=$least
        [ -n "$nem" ] || nem="'$script' ctl '$dir' $cmd >/dev/null"
        out=$(mktemp /tmp/dlock-run.XXXXXX)
        run --workload fenced --fault none --ttl 1000 --hold 400 \
            --nemesis "$nem" --every $every --quiet $quiet $kind >"$out" 2>&1
        cat "$out"
        # etcd-nemesis.sh's measurements: p50 and max over the run.
        grep '^etcd-nemesis: .*new_holder_ms=[0-9]' "$out" |
            sed 's/.*new_holder_ms=\([0-9]*\).*/\1/' | sort -n | awk -v f="${f%%:*}" '
            { v[NR] = $1 }
            END { if (NR) printf "INFO %s: new holder after the leader was lost: %d faults, p50 %d ms, max %d ms\n", f, NR, v[int((NR + 1) / 2)], v[NR] }'
        rm -f "$out"
        secs=$keep
    done
elif [ "${4:-}" = clock ]; then
    shift 4
    for r in "$@"; do
        if awk -v r="$r" 'BEGIN { exit !(r >= 0.99 && r <= 1.01) }'; then
            run --workload fenced --fault stop --clock-rate "$r"
        else
            echo "--- --workload fenced --fault stop --clock-rate $r (measured)"
            # shellcheck disable=SC2086 # $ttl: empty or two words
            out=$("$bin" "$url" --seconds "$secs" $ttl --workload fenced \
                --fault stop --clock-rate "$r" 2>&1)
            echo "$out"
            # What no lease can promise is reported; fences must hold.
            if echo "$out" | grep -q "^FAIL counter\|^FAIL crashes\|^FAIL fences\|^FAIL progress"; then
                fails=$((fails + 1))
            fi
        fi
    done
elif [ "${4:-}" = elect ]; then
    shift 4
    run --elect --workload mutex --fault kill
    run --elect --workload fenced --fault stop
    for r in "$@"; do
        run --elect --workload fenced --fault stop --clock-rate "$r"
    done
elif [ "${4:-}" = semaphore ]; then
    # Holds up to 20 ms, so that 3 (and, in the control, 4) overlap often.
    run --workload semaphore --limit 3 --hold 20 --fault kill
    run --workload semaphore --limit 3 --hold 20 --fault stop
    run --workload semaphore --limit 3 --hold 20 --fault none --expect-violation
else
    run --workload mutex --fault kill
    run --workload counter --fault kill
    run --workload fenced --fault stop
    run --workload counter --fault stop --expect-violation
fi
echo "torture: $fails run(s) failed"
[ "$fails" = 0 ]
