#!/bin/bash
# Server faults on an etcd cluster (scripts/server-etcd.sh start-cluster)
# for the torture harness (its --nemesis command, from run.sh):
#
#   etcd-nemesis.sh SERVER_SH DIR URL FAULT
#
#   kill-leader     kill -9 the leader; once it is dead and the others
#                   have a new leader, start it again on its data and wait
#                   until all are healthy under one leader
#   restart-member  TERM a member drawn at random (1..3), start it again,
#                   wait the same way (server-etcd.sh ctl restart)
#   leader-host PREFIX  no fault: print the host (scripts/netns.sh's name)
#                   of the leader of a cluster started in namespaces
#                   (DLOCK_SERVER_NETNS): its namespace less PREFIX (for
#                   netns-nemesis.sh's leader kind; URL unused)
#   pause-leader    SIGSTOP the leader; wait until the others have elected
#                   a new one; keep it stopped 0.5..1.5 s more (the fault's
#                   length); SIGCONT it and wait until all agree again
#
# For kill-leader and pause-leader it measures how soon after the leader
# was lost a new holder had a lock: `dlock run` of a name of its own
# (not the torture's: the checker knows nothing of this holder) started
# right after the kill or the stop, bounded by 20 s ($DLOCK_CLI, the
# dlock command; without it no measurement).  One line to stdout (the
# torture's output), which run.sh sums up:
#   etcd-nemesis: fault=F member=I new_holder_ms=MS attempts=N new_leader_ms=MS
# attempts: the `dlock run`s it took (one that fails, e.g. 69 when its
# endpoint's request timed out while there was no leader, is followed by
# another; their errors go to stderr).
# new_leader_ms: until the others agreed on a new leader (server-etcd.sh
# ctl settle, polled every 0.1 s: an upper bound).  A measurement that
# failed prints "-" and fails the nemesis (the torture counts it a crash).
set -euo pipefail
server=$1 sdir=$2 url=$3 fault=$4
if [ "$fault" = leader-host ]; then
    i=$("$server" ctl "$sdir" leader | cut -d' ' -f1)
    ns=$("$server" ctl "$sdir" where "$i" | cut -d' ' -f1)
    [ -n "$ns" ] || {
        echo "etcd-nemesis.sh: member $i is in no namespace" >&2
        exit 1
    }
    echo "${ns#"$5"}"
    exit 0
fi
cli=${DLOCK_CLI:-}

srv() { "$server" ctl "$sdir" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# leader: L = the leader's member index.
leader() {
    L=$(srv leader | cut -d' ' -f1)
    [[ $L =~ ^[0-9]+$ ]] || {
        echo "etcd-nemesis.sh: no leader ($L)" >&2
        exit 1
    }
}

# measure_holder: start a bounded `dlock run` in the background, its
# result (ms after T0, or -) into $tmp/holder.
measure_holder() {
    [ -n "$cli" ] || {
        echo "- 0" >"$tmp/holder"
        return 0
    }
    (
        # Until one `dlock run` gets the lock (an attempt may fail: the
        # store unreachable while the cluster has no leader), within 20 s.
        n=0
        while [ $(($(now_ms) - t0)) -lt 20000 ]; do
            n=$((n + 1))
            if timeout -k 2 $((20 - ($(now_ms) - t0) / 1000)) "$cli" -s "$url" \
                run -w 18 "etcd-nemesis-$$" -- true >/dev/null 2>>"$tmp/holder.err"; then
                echo "$(($(now_ms) - t0)) $n" >"$tmp/holder"
                exit 0
            fi
        done
        echo "- $n" >"$tmp/holder"
    ) &
    holder_pid=$!
}

# new_leader OLD: wait (bounded, as server-etcd.sh's waits) until the
# members other than OLD agree on a leader that is not OLD; ms after T0.
new_leader() {
    local end=$((SECONDS + 30)) l
    while [ "$SECONDS" -lt "$end" ]; do
        if l=$(srv settle 2>/dev/null | sed -n 's/^leader m//p') &&
            [ -n "$l" ] && [ "$l" != "$1" ]; then
            new_leader_ms=$(($(now_ms) - t0))
            return 0
        fi
        sleep 0.1
    done
    echo "etcd-nemesis.sh: no new leader other than m$1 within 30 s" >&2
    return 1
}

# dead PID: the process is gone or a zombie (bounded poll by the caller).
dead() {
    local s
    s=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null) ||
        return 0
    [ -z "$s" ] || [ "$s" = Z ] || [ "$s" = X ]
}

tmp=$(mktemp -d /tmp/etcd-nemesis.XXXXXX)
holder_pid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    [ -z "$holder_pid" ] || kill "$holder_pid" 2>/dev/null || true
    [ -z "$holder_pid" ] || wait "$holder_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
new_leader_ms=-
rc=0

case $fault in
kill-leader | pause-leader)
    leader
    pid=$(srv pid "$L")
    if [ "$fault" = kill-leader ]; then
        kill -KILL "$pid"
    else
        kill -STOP "$pid"
    fi
    t0=$(now_ms)
    measure_holder
    if [ "$fault" = kill-leader ]; then
        end=$((SECONDS + 15))
        while ! dead "$pid"; do
            [ "$SECONDS" -lt "$end" ] || {
                echo "etcd-nemesis.sh: m$L (pid $pid) did not die" >&2
                exit 1
            }
            sleep 0.01
        done
    fi
    new_leader "$L" || rc=1
    if [ "$fault" = kill-leader ]; then
        srv start-member "$L" >/dev/null || rc=1
    else
        # The fault's length past the election, not a synchronisation.
        sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.3f", 0.5 + rand() }')"
        srv resume "$L" >/dev/null || rc=1
    fi
    # The measurement goes on (bounded) while the member comes back.
    [ -z "$holder_pid" ] || wait "$holder_pid" || true
    holder_pid=
    read -r h tries <"$tmp/holder"
    if [ -n "$cli" ] && [ "$h" = - ]; then
        echo "etcd-nemesis.sh: no holder within 20 s of losing m$L:" \
            "$(head -c 300 "$tmp/holder.err")" >&2
        rc=1
    elif [ -s "$tmp/holder.err" ]; then
        echo "etcd-nemesis.sh: failed attempts: $(head -c 300 "$tmp/holder.err")" >&2
    fi
    echo "etcd-nemesis: fault=$fault member=$L new_holder_ms=$h attempts=$tries new_leader_ms=$new_leader_ms"
    ;;
restart-member)
    i=$((RANDOM % $(wc -l <"$sdir/ports") + 1))
    srv restart "$i" >/dev/null || rc=1
    echo "etcd-nemesis: fault=$fault member=$i"
    ;;
*)
    echo "etcd-nemesis.sh: unknown fault $fault" >&2
    exit 64
    ;;
esac
exit "$rc"
