#!/bin/bash
# Throwaway etcd servers for tests (Debian's etcd-server 3.4), everything
# in one directory, one subdirectory per member (DIR/m1, DIR/m2, ...):
#   scripts/server-etcd.sh start DIR          one member; print the store
#                                             URL etcd://127.0.0.1:PORT
#                                             (also DIR/url)
#   scripts/server-etcd.sh start-cluster DIR  three members, a static
#       initial cluster; print etcd://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#       (`MEMBERS=N start DIR` starts N members, start-cluster is N=3)
#   scripts/server-etcd.sh stop DIR           stop every member (TERM, up to
#                                             15 s, then KILL); 0 if none runs.
#       It removes only its pid files: a later start in DIR (none running)
#       starts afresh, with new ports and empty members.
#   scripts/server-etcd.sh ctl DIR CMD..      for tests; members are 1..N, and
#       each waits (bounded) until the cluster is in a known state again
#       and prints what it did:
#       leader          the leader's member index and client URL ("2
#                       http://127.0.0.1:P2")
#       kill-leader     kill -9 the leader, wait until the others elect a new
#                       one, start the killed member again on its data, wait
#                       until every member is healthy under one leader
#       restart I       TERM member I, start it again, wait the same way
#                       (I may be left out with one member)
#       stop-member I   TERM member I; wait until the others (if a quorum)
#                       have a leader
#       start-member I  start member I on its data; wait until every running
#                       member is healthy under one leader
#       pause I         SIGSTOP member I (returns once it is stopped; say
#                       `ctl DIR settle` to wait for a new leader)
#       resume I        SIGCONT member I; wait as start-member
#       settle          wait until the running, unpaused members (if a
#                       quorum) are healthy and agree on one leader
#       health          `etcdctl endpoint health` of every member
#       status          `etcdctl endpoint status` of every member
#       etcdctl ARGS..  etcdctl against every member's endpoint (no timeout)
#       url I, port I, pid I, where I   member I's client URL, client port,
#                       pid, and "NS ADDR" (its network namespace, if any)
# Each member listens for clients and peers on 127.0.0.1 only, on free
# ports in 21000-29999 (client, peer: two in a row per member), data in
# DIR/mI/data (kept by a restart), log in DIR/mI/log.  Settings for tests:
# --heartbeat-interval 100 --election-timeout 1000, no auto compaction, no
# --config-file (in 3.4 a config file turns the v3 JSON gateway off unless
# it sets enable-grpc-gateway: true).  Every probe is bounded by
# `timeout ${CLI_TIMEOUT:-5}`; every wait by DLOCK_ETCD_WAIT (default 30) s.
# With DLOCK_SERVER_HOST=ADDR (an address of this network namespace, for
# the partition tests) a single member listens on ADDR too, and the URL
# names ADDR.  With DLOCK_SERVER_NETNS="NS:ADDR NS:ADDR NS:ADDR" (network
# namespaces and an address in each, one per member in order) each member
# runs in its namespace, listens on its address too (peers talk over
# those addresses), and the URL names them; DIR/netns records it (client
# PORT NS ADDR a line), so ctl and stop work the same.
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

die() {
    echo "server-etcd.sh: $*" >&2
    exit 1
}

wait_s=${DLOCK_ETCD_WAIT:-30}

# DIR/ports: "CLIENT PEER" a line, member I on line I.
nmembers() { wc -l <"$dir/ports"; }
cport() { sed -n "$1p" "$dir/ports" | cut -d' ' -f1; }
pport() { sed -n "$1p" "$dir/ports" | cut -d' ' -f2; }
maddr() { addr_of "$(cport "$1")"; }
murl() { echo "http://$(maddr "$1"):$(cport "$1")"; }
mpid() { cat "$dir/m$1/pid" 2>/dev/null; }
members() { seq 1 "$(nmembers)"; }

check_member() {
    [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$(nmembers)" ] ||
        die "no member '$1' (1..$(nmembers))"
}

# ctl_at I ARGS...: etcdctl against member I alone, bounded.
ctl_at() {
    local i=$1
    shift
    at "$(cport "$i")" timeout "${CLI_TIMEOUT:-5}" etcdctl \
        --endpoints "$(murl "$i")" --dial-timeout 2s \
        --command-timeout "${CLI_TIMEOUT:-5}s" "$@"
}

# running I: member I's process lives; up I: and is not stopped (SIGSTOP).
running() {
    local pid
    pid=$(mpid "$1") && [ -n "$pid" ] && alive "$pid"
}

stopped() {
    [ "$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$(mpid "$1")/stat" \
        2>/dev/null)" = T ]
}
up() { running "$1" && ! stopped "$1"; }

# healthy I: member I answers a linearizable read (endpoint health does
# one: it needs the leader and a quorum).
healthy() { ctl_at "$1" endpoint health >/dev/null 2>&1; }

# status_of I: "MEMBER_ID LEADER_ID" as member I's status says (the v3
# gateway gives 64-bit numbers as JSON strings, exact); fails when it
# knows no leader (the gateway leaves a 0 out).
status_of() {
    at "$(cport "$1")" timeout "${CLI_TIMEOUT:-5}" curl -sf \
        --max-time "${CLI_TIMEOUT:-5}" -X POST -d '{}' \
        "http://127.0.0.1:$(cport "$1")/v3/maintenance/status" 2>/dev/null |
        sed -n 's/.*"member_id":"\([0-9]*\)".*"leader":"\([0-9]*\)".*/\1 \2/p' |
        grep .
}

# agreed: every up member (they must be a quorum) is healthy and names the
# same leader, itself an up member; sets $leader to its index.
agreed() {
    local i n=0 l='' st ids=()
    leader=
    for i in $(members); do
        up "$i" || continue
        n=$((n + 1))
        healthy "$i" || return 1
        st=$(status_of "$i") || return 1
        # shellcheck disable=SC2086
        set -- $st
        [ $# = 2 ] && [ "$2" != 0 ] || return 1
        [ -z "$l" ] || [ "$l" = "$2" ] || return 1
        l=$2
        ids[i]=$1
    done
    [ "$n" -ge $(($(nmembers) / 2 + 1)) ] || return 1
    for i in "${!ids[@]}"; do
        if [ "${ids[i]}" = "$l" ]; then
            leader=$i
            return 0
        fi
    done
    return 1
}

# settle: wait until agreed, if the up members are a quorum; $leader is
# then the leader's index, else empty.
settle() {
    local end=$((SECONDS + wait_s)) n=0 i
    leader=
    for i in $(members); do up "$i" && n=$((n + 1)); done
    if [ "$n" -lt $(($(nmembers) / 2 + 1)) ]; then
        echo "$n of $(nmembers) members up: no quorum, not waiting for a leader"
        return 0
    fi
    while [ "$SECONDS" -lt "$end" ]; do
        agreed && return 0
        sleep 0.1
    done
    return 1
}

initial_cluster() {
    local i s=
    for i in $(members); do
        s="$s,m$i=http://$(maddr "$i"):$(pport "$i")"
    done
    echo "${s#,}"
}

# member_launch I: start member I in the background (its data dir, if
# any, is kept: the initial-cluster flags only count for a new one).
member_launch() {
    local i=$1 c p a m=$dir/m$1 args
    c=$(cport "$i")
    p=$(pport "$i")
    a=$(maddr "$i")
    mkdir -p "$m"
    local listen_c=http://127.0.0.1:$c listen_p=http://127.0.0.1:$p
    if [ "$a" != 127.0.0.1 ]; then
        listen_c="$listen_c,http://$a:$c"
        listen_p="$listen_p,http://$a:$p"
    fi
    args=(--name "m$i" --data-dir "$m/data"
        --listen-client-urls "$listen_c" --advertise-client-urls "http://$a:$c"
        --listen-peer-urls "$listen_p" --initial-advertise-peer-urls "http://$a:$p"
        --initial-cluster "$(initial_cluster)" --initial-cluster-state new
        --initial-cluster-token "dlock-test-$(cport 1)"
        --heartbeat-interval 100 --election-timeout 1000
        --auto-compaction-retention 0 --enable-v2=false
        --logger zap --log-outputs stderr)
    # setsid: a signal to the caller's process group (^C) is not for it;
    # its own session, as a daemonized redis-server.
    (
        exec </dev/null >>"$m/log" 2>&1
        if [ -n "${node_ns[$c]:-}" ]; then
            exec ip netns exec "${node_ns[$c]}" setsid etcd "${args[@]}"
        fi
        exec setsid etcd "${args[@]}"
    ) &
    echo $! >"$m/pid"
}

# serving I: member I answers HTTP on its client port (etcd serves clients
# only once it has joined its cluster: with a quorum).
serving() {
    local pid
    pid=$(mpid "$1") && alive "$pid" || return 2
    at "$(cport "$1")" timeout "${CLI_TIMEOUT:-5}" curl -s -o /dev/null \
        --max-time 1 "http://127.0.0.1:$(cport "$1")/version" 2>/dev/null ||
        return 1
    # Ours (the subshell has become etcd), not another server on the port.
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = etcd ] || return 2
}

# wait_serving I...: every member I serves, within the wait; 1 as soon
# as one is gone.
wait_serving() {
    local end=$((SECONDS + wait_s)) i rc
    for i in "$@"; do
        while :; do
            rc=0
            serving "$i" || rc=$?
            [ "$rc" = 0 ] && break
            [ "$rc" = 1 ] && [ "$SECONDS" -lt "$end" ] || return 1
            sleep 0.1
        done
    done
}

# peer_listening I: member I listens on its peer port (before it has a
# quorum to serve clients with).
peer_listening() {
    alive "$(mpid "$1")" &&
        [ -n "$(at "$(cport "$1")" ss -Hltn "sport = :$(pport "$1")")" ]
}

# member_start I: launch member I and wait until it serves clients or,
# without a quorum of members up to join, until it listens for peers.
member_start() {
    local i n=0
    member_launch "$1"
    for i in $(members); do up "$i" && n=$((n + 1)); done
    if [ "$n" -ge $(($(nmembers) / 2 + 1)) ]; then
        wait_serving "$1"
    else
        wait_for "$wait_s" peer_listening "$1"
    fi
}

member_stop() {
    local pid
    pid=$(mpid "$1") || return 0
    [ -z "$pid" ] || { kill -CONT "$pid" 2>/dev/null || true; stop_pid "$pid" TERM; }
    rm -f "$dir/m$1/pid"
}

stop() {
    local f pid
    for f in "$dir"/m*/pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        # A paused member would not see its TERM.
        [ -z "$pid" ] || kill -CONT "$pid" 2>/dev/null || true
    done
    stop_pidfiles "$dir"
}

start() {
    local n=${MEMBERS:-1} base i where u
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    [[ "$n" =~ ^[1-9]$ ]] || die "MEMBERS: 1 to 9"
    if [ -f "$dir/ports" ]; then
        for i in $(members); do
            ! running "$i" || die "$dir has members running (stop it first)"
        done
        for i in $(members); do rm -rf "$dir/m$i"; done
    fi
    for _ in 1 2 3 4 5 6 7 8; do
        base=$((21000 + RANDOM % (9000 - 2 * n)))
        for i in $(seq 0 $((2 * n - 1))); do port_free $((base + i)) || continue 2; done
        for i in $(seq 0 $((n - 1))); do
            echo "$((base + 2 * i)) $((base + 2 * i + 1))"
        done >"$dir/ports"
        rm -f "$dir/netns"
        if [ -n "${DLOCK_SERVER_NETNS:-}" ]; then
            read -r -a where <<<"$DLOCK_SERVER_NETNS"
            [ ${#where[@]} = "$n" ] || die "DLOCK_SERVER_NETNS: say NS:ADDR $n times"
            for i in $(seq 0 $((n - 1))); do
                echo "$((base + 2 * i)) ${where[i]%%:*} ${where[i]#*:}"
            done >"$dir/netns"
        elif [ -n "${DLOCK_SERVER_HOST:-}" ]; then
            [ "$n" = 1 ] || die "DLOCK_SERVER_HOST: one member only (DLOCK_SERVER_NETNS for more)"
            echo "$base - $DLOCK_SERVER_HOST" >"$dir/netns"
        fi
        node_ns=()
        node_addr=()
        load_netns "$dir"
        for i in $(seq 1 "$n"); do
            [ "${node_ns[$(cport "$i")]:-}" != - ] || unset "node_ns[$(cport "$i")]"
        done
        for i in $(seq 1 "$n"); do
            rm -rf "$dir/m$i/data"
            member_launch "$i"
        done
        # shellcheck disable=SC2046
        if wait_serving $(seq 1 "$n") && settle >/dev/null; then
            u=
            for i in $(seq 1 "$n"); do u="$u,$(maddr "$i"):$(cport "$i")"; done
            echo "etcd://${u#,}" >"$dir/url"
            cat "$dir/url"
            return 0
        fi
        stop
        # Lost a port to someone else?  Try others; anything else is fatal.
        if ! grep -qs "address already in use" "$dir"/m*/log; then
            echo "etcd in $dir did not come up; logs:" >&2
            tail -n 5 "$dir"/m*/log >&2 2>/dev/null || true
            rm -f "$dir/ports" "$dir/netns"
            return 1
        fi
        for i in $(seq 1 "$n"); do rm -rf "$dir/m$i"; done
    done
    rm -f "$dir/ports" "$dir/netns"
    die "no free ports found"
}

wait_settled() {
    settle || die "no leader that every running member agrees on after ${wait_s} s"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

kill_leader() {
    local t0 old end n=0 i
    agreed || wait_settled
    [ -n "$leader" ] || die "no leader to kill"
    old=$leader
    t0=$(now_ms)
    kill -KILL "$(mpid "$old")"
    end=$((SECONDS + wait_s))
    while alive "$(mpid "$old")"; do
        [ "$SECONDS" -lt "$end" ] || die "member $old did not die"
        sleep 0.01
    done
    rm -f "$dir/m$old/pid"
    for i in $(members); do up "$i" && n=$((n + 1)); done
    if [ "$n" -ge $(($(nmembers) / 2 + 1)) ]; then
        leader=
        while [ "$SECONDS" -lt "$end" ]; do
            agreed && [ "$leader" != "$old" ] && break
            leader=
            sleep 0.1
        done
        [ -n "$leader" ] || die "the others elected no new leader in ${wait_s} s"
        echo "killed leader m$old; new leader m$leader after $(($(now_ms) - t0)) ms"
    else
        echo "killed leader m$old; the others ($n) are no quorum"
    fi
    member_start "$old" || die "member $old did not start again"
    wait_settled
    echo "m$old rejoined; all $(nmembers) healthy under leader m$leader after $(($(now_ms) - t0)) ms"
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|start-cluster|stop|ctl DIR [...]"
[ "$cmd" = stop ] || command -v etcd >/dev/null ||
    die "no etcd (Debian: etcd-server; scripts/deps.sh test)"
shift 2
[ "$cmd" = start ] || [ "$cmd" = start-cluster ] || [ -f "$dir/ports" ] ||
    { [ "$cmd" = stop ] && exit 0; } || die "no etcd members in $dir"
if [ -f "$dir/netns" ]; then
    load_netns "$dir"
    for p in "${!node_ns[@]}"; do
        [ "${node_ns[$p]}" != - ] || unset "node_ns[$p]"
    done
fi
case $cmd in
start) start ;;
start-cluster) MEMBERS=3 start ;;
stop) stop ;;
ctl)
    sub=${1:-}
    shift || true
    case $sub in
    leader)
        agreed || wait_settled
        [ -n "$leader" ] || die "no quorum up: no leader"
        echo "$leader $(murl "$leader")"
        ;;
    kill-leader) kill_leader ;;
    restart)
        # One member: `ctl DIR restart` as for server-redis.sh.
        [ $# -gt 0 ] || [ "$(nmembers)" != 1 ] || set -- 1
        check_member "${1:-}"
        t0=$(now_ms)
        member_stop "$1"
        member_start "$1" || die "member $1 did not start again"
        wait_settled
        echo "restarted m$1 in $(($(now_ms) - t0)) ms${leader:+; leader m$leader}"
        ;;
    stop-member)
        check_member "${1:-}"
        member_stop "$1"
        echo "stopped m$1"
        wait_settled
        [ -z "$leader" ] || echo "leader m$leader"
        ;;
    start-member)
        check_member "${1:-}"
        running "$1" && die "member $1 runs already"
        member_start "$1" || die "member $1 did not start"
        wait_settled
        echo "started m$1${leader:+; leader m$leader}"
        ;;
    pause)
        check_member "${1:-}"
        running "$1" || die "member $1 does not run"
        was=no
        agreed && [ "$leader" = "$1" ] && was=yes
        kill -STOP "$(mpid "$1")"
        wait_for "$wait_s" stopped "$1" ||
            die "member $1 did not stop"
        echo "paused m$1 (it was the leader: $was)"
        ;;
    resume)
        check_member "${1:-}"
        running "$1" || die "member $1 does not run"
        kill -CONT "$(mpid "$1")"
        wait_settled
        echo "resumed m$1${leader:+; leader m$leader}"
        ;;
    settle)
        wait_settled
        [ -z "$leader" ] || echo "leader m$leader"
        ;;
    health | status)
        rc=0
        for i in $(members); do ctl_at "$i" endpoint "$sub" || rc=1; done
        exit $rc
        ;;
    etcdctl)
        eps=
        for i in $(members); do eps="$eps,$(murl "$i")"; done
        if [ -n "${node_ns[$(cport 1)]:-}" ]; then
            exec ip netns exec "${node_ns[$(cport 1)]}" etcdctl --endpoints "${eps#,}" "$@"
        fi
        exec etcdctl --endpoints "${eps#,}" "$@"
        ;;
    url) check_member "${1:-}" && murl "$1" ;;
    port) check_member "${1:-}" && cport "$1" ;;
    pid) check_member "${1:-}" && mpid "$1" ;;
    where)
        check_member "${1:-}"
        echo "${node_ns[$(cport "$1")]:-} ${node_addr[$(cport "$1")]:-}"
        ;;
    *) die "unknown ctl command '$sub' (leader, kill-leader, restart, stop-member, start-member, pause, resume, settle, health, status, etcdctl, url, port, pid, where)" ;;
    esac
    ;;
*) die "unknown command '$cmd' (start, start-cluster, stop, ctl)" ;;
esac
