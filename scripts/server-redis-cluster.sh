#!/bin/bash
# A throwaway Redis Cluster for tests, everything in one directory: six
# nodes, three masters with one replica each (cluster-node-timeout 1 s).
#   scripts/server-redis-cluster.sh start DIR   print the store URL (also DIR/url):
#                     redis-cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#                     (the three masters, in slot order)
#   scripts/server-redis-cluster.sh stop DIR    stop it all (0 if not running)
#   scripts/server-redis-cluster.sh start-tls DIR  the same over TLS only
#                     (clients, replication and the cluster bus): a
#                     throwaway CA and certificates in DIR/tls-certs
#                     (server-lib.sh: make_tls_certs); the URL is
#                     rediss-cluster://...?cacert=DIR/tls-certs/ca.crt
#   scripts/server-redis-cluster.sh ctl DIR CMD..  for tests:
#       kill-master [PORT]  kill -9 a master (PORT; else the owner of the
#                     slot of dlock:$DLOCK_TORTURE_NAME when the torture
#                     harness runs it; else the owner of slot 0),
#                     wait (<= 30 s) until its replica is promoted and every
#                     node left says cluster_state:ok, then start the old one
#                     again (same port, same nodes.conf, no data) and wait
#                     (<= 30 s) until it is a replica of the new master, in
#                     sync; prints the new master's port
#       failover      CLUSTER FAILOVER on the replica of that same master,
#                     wait (<= 30 s) until the roles have swapped and the
#                     cluster is whole; prints the new master's port
#       migrate SLOT [PORT]  move hash slot SLOT and its keys to another
#                     master (PORT, or the next one in slot order): SETSLOT
#                     IMPORTING / MIGRATING, GETKEYSINSLOT + MIGRATE KEYS by
#                     100s, SETSLOT NODE everywhere; prints the target's port
#       masters       print the masters' ports, one a line, in slot order
#       cli PORT ARGS...  redis-cli against one of the nodes
# Every fault waits until the cluster is whole (all six nodes agree, every
# replica in sync) before it starts, and starts no sooner than 2.5 s after
# the end of the last one (see pace()).
# Listens on 127.0.0.1 only, on six free ports in a row in 21000-29999
# (cluster bus: port + 10000).  No RDB, no AOF (replicas load the sync
# from the socket).  Each node lives in DIR/nPORT (log, pid, nodes.conf).
# Measured (Redis 7.0.15, Debian bookworm): start 2.3 s; kill-master
# 2.5-3.3 s (2.3-3.0 s from the kill -9 to the promotion, 0.2-0.3 s more
# for the old master to come back as an in-sync replica); failover
# 0.5-0.9 s; migrate of a slot with 250 keys 0.5 s.  Back to back, the
# 2.5 s pause adds up to 2.3 s to each.
# With DLOCK_SERVER_NETNS="NS:ADDR ..." (six of them, for the partition
# tests: network namespaces and an address in each) node i runs in the
# i-th namespace and listens on its address too; the nodes and the URL
# name those addresses.  DIR/netns records it (PORT NS ADDR a line), so
# ctl works the same.  More ctl commands, for a nemesis:
#       where PORT    print "NS ADDR" of the node on PORT (empty: loopback)
#       wait-healthy  wait (<= 60 s) until the cluster is whole
#       target        print the master a fault aims at (see kill-master)
#       replica PORT  print the replica of master PORT
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

die() {
    echo "server-redis-cluster.sh: $*" >&2
    exit 1
}

# Bounded: a node that does not answer must not hang a wait.
cli() {
    local p=$1
    shift
    at "$p" timeout 5 redis-cli "${tls[@]}" -h 127.0.0.1 -p "$p" "$@"
}

ports() { cat "$1/ports"; }

logs() {
    tail -n 5 "$1"/n*/log >&2 2>/dev/null || true
}

# fail DIR MESSAGE: for ctl: say what did not happen, with the logs.
fail() {
    echo "server-redis-cluster.sh: $2; logs:" >&2
    logs "$1"
    exit 1
}

# node_up DIR PORT: 0 once PORT answers and is ours (the pid in its
# pidfile), 2 if it lost its port to another process, 1 otherwise.
node_up() {
    local dir=$1 port=$2 pid
    grep -q "Address already in use" "$dir/n$port/log" 2>/dev/null && return 2
    pid=$(cat "$dir/n$port/pid" 2>/dev/null) && [ -n "$pid" ] &&
        [ "$(cli "$port" info server 2>/dev/null | tr -d '\r' |
            sed -n 's/^process_id://p')" = "$pid" ]
}

# node_start DIR PORT: start (or start again: its nodes.conf says who it
# was) and wait (<= 30 s) for it.  Returns 2 if the port was taken.
node_start() {
    local dir=$1 port=$2 end rc c=$1/tls-certs
    local targs=(--port "$port")
    mkdir -p "$dir/n$port"
    rm -f "$dir/n$port/pid"
    : >"$dir/n$port/log"
    [ ! -f "$dir/tls" ] ||
        targs=(--port 0 --tls-port "$port" --tls-replication yes
            --tls-cluster yes --tls-cert-file "$c/server.crt"
            --tls-key-file "$c/server.key" --tls-ca-cert-file "$c/ca.crt"
            --tls-auth-clients optional)
    at "$port" redis-server "${targs[@]}" \
        --bind 127.0.0.1 ${node_addr[$port]:+"${node_addr[$port]}"} --protected-mode no \
        --save '' --appendonly no --dir "$dir/n$port" --daemonize yes \
        --pidfile "$dir/n$port/pid" --logfile "$dir/n$port/log" \
        --cluster-enabled yes --cluster-config-file "$dir/n$port/nodes.conf" \
        --cluster-node-timeout 1000 --repl-diskless-sync-delay 0 \
        --repl-diskless-load swapdb \
        >/dev/null 2>&1 || return 1
    end=$((SECONDS + 30))
    while [ "$SECONDS" -lt "$end" ]; do
        rc=0
        node_up "$dir" "$port" || rc=$?
        [ "$rc" = 1 ] || return "$rc"
        sleep 0.1
    done
    return 1
}

# view PORT: the cluster as PORT sees it, one node a line, by port:
#   PORT master|slave MASTERPORT|- SLOTS...
# with a `!` after the role of a node flagged fail, fail?, handshake or
# noaddr, and a last line `open` if a slot is being migrated.
view() {
    cli "$1" cluster nodes 2>/dev/null | awk '
        NF >= 8 {
            a = $2; sub(/@.*/, "", a); sub(/.*:/, "", a)
            id[NR] = $1; port[$1] = a; m[NR] = $4
            r = $3 ~ /master/ ? "master" : $3 ~ /slave/ ? "slave" : "?"
            if ($3 ~ /fail|handshake|noaddr/) r = r "!"
            role[NR] = r; s = ""
            for (i = 9; i <= NF; i++)
                if ($i ~ /^\[/) open = 1; else s = s " " $i
            sl[NR] = s; n++
        }
        END {
            if (!n) exit 1
            for (i = 1; i <= NR; i++) if (id[i] != "")
                printf "%s %s %s%s\n", port[id[i]], role[i],
                    m[i] == "-" ? "-" : port[m[i]], sl[i]
            if (open) print "open"
        }' | sort -n
}

# cluster_ok PORT: PORT says cluster_state:ok, every slot served.
cluster_ok() {
    cli "$1" cluster info 2>/dev/null | tr -d '\r' | awk -F: '
        { v[$1] = $2 }
        END { exit !(v["cluster_state"] == "ok" &&
                     v["cluster_slots_assigned"] == 16384 &&
                     v["cluster_slots_ok"] == 16384) }'
}

link_up() {
    cli "$1" info replication 2>/dev/null | tr -d '\r' |
        grep -qx master_link_status:up
}

# healthy DIR: all six nodes answer, say cluster_state:ok, and see the
# same cluster: three masters with slots, each with one replica, nothing
# failed, no slot in migration; every replica is in sync with its master.
healthy() {
    local dir=$1 p v ref=
    for p in $(ports "$dir"); do
        cluster_ok "$p" || return 1
        v=$(view "$p") || return 1
        if [ -z "$ref" ]; then
            ref=$v
            echo "$ref" | awk '
                $1 == "open" || $2 !~ /^(master|slave)$/ { exit 1 }
                $2 == "master" && NF > 3 { mm[$1] = 1; nm++ }
                $2 == "slave" { s[$3]++; ns++ }
                END {
                    if (NR != 6 || nm != 3 || ns != 3) exit 1
                    for (k in s) if (!(k in mm) || s[k] != 1) exit 1
                }' || return 1
        else
            [ "$v" = "$ref" ] || return 1
        fi
    done
    for p in $(echo "$ref" | awk '$2 == "slave" { print $1 }'); do
        link_up "$p" || return 1
    done
}

# owner PORT SLOT: the port of the master that serves SLOT, as PORT sees it.
owner() {
    view "$1" | awk -v s="$2" '$2 == "master" {
        for (i = 4; i <= NF; i++) {
            n = split($i, r, "-"); if (n == 1) r[2] = r[1]
            if (s >= r[1] + 0 && s <= r[2] + 0) { print $1; exit }
        } }'
}

# any_node DIR: the first node that answers.
any_node() {
    local p
    for p in $(ports "$1"); do
        [ "$(cli "$p" ping 2>/dev/null)" = PONG ] && echo "$p" && return 0
    done
    return 1
}

# masters_of DIR: master ports in slot order.
masters_of() {
    local p
    p=$(any_node "$1") || return 1
    view "$p" | awk '$2 == "master" && NF > 3 {
        split($4, r, "-"); print r[1], $1 }' | sort -n | cut -d' ' -f2
}

replica_of() { # PORT MASTERPORT: the replica of MASTERPORT as PORT sees it
    view "$1" | awk -v m="$2" '$2 == "slave" && $3 == m { print $1; exit }'
}

node_id() { # PORT
    cli "$1" cluster myid 2>/dev/null | tr -d '\r'
}

# role_is PORT master | PORT slave MASTERPORT: ROLE says so (a replica:
# connected to MASTERPORT).
role_is() {
    local r
    r=$(cli "$1" role 2>/dev/null | tr -d '\r') || return 1
    case $2 in
    master) [ "$(echo "$r" | sed -n 1p)" = master ] ;;
    slave) [ "$(echo "$r" | sed -n '1p;3p;4p' | tr '\n' ' ')" = \
        "slave $3 connected " ] ;;
    esac
}

# survivors_ok DIR DEAD NEW SLOTS: every node but DEAD says cluster_state:ok
# and that NEW, a master, serves SLOTS (what DEAD served).
survivors_ok() {
    local dir=$1 dead=$2 new=$3 slots=$4 p
    role_is "$new" master || return 1
    for p in $(ports "$dir"); do
        [ "$p" = "$dead" ] && continue
        cluster_ok "$p" || return 1
        view "$p" | awk -v n="$new" -v s="$slots" '
            $1 == n { $1 = $2 = $3 = ""; sub(/^ +/, ""); ok = $0 == s && s != "" }
            END { exit !ok }' || return 1
    done
}

# Start six nodes on BASE..BASE+5 and make a cluster of them.  Returns 2
# if a port was taken, 1 on any other failure.
try_start() {
    local dir=$1 base=$2 p rc addrs=()
    for p in $(ports "$dir"); do
        rc=0
        node_start "$dir" "$p" || rc=$?
        [ "$rc" = 0 ] || return "$rc"
        addrs+=("$(addr_of "$p"):$p")
    done
    at "$base" timeout 30 redis-cli "${tls[@]}" --cluster create "${addrs[@]}" \
        --cluster-replicas 1 --cluster-yes </dev/null >"$dir/create.log" 2>&1 ||
        return 1
    wait_for 30 healthy "$dir"
}

start() {
    local dir=$1 base p rc where
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    for _ in 1 2 3 4 5 6 7 8; do
        base=$((21000 + RANDOM % 8995))
        for p in 0 1 2 3 4 5; do
            port_free $((base + p)) && port_free $((base + p + 10000)) ||
                continue 2
        done
        seq "$base" $((base + 5)) | tr '\n' ' ' | sed 's/ $/\n/' >"$dir/ports"
        if [ -n "${DLOCK_SERVER_NETNS:-}" ]; then
            read -r -a where <<<"$DLOCK_SERVER_NETNS"
            [ ${#where[@]} = 6 ] || die "DLOCK_SERVER_NETNS: say NS:ADDR six times"
            for p in 0 1 2 3 4 5; do
                echo "$((base + p)) ${where[p]%%:*} ${where[p]#*:}"
            done >"$dir/netns"
            load_netns "$dir"
        fi
        rc=0
        try_start "$dir" "$base" || rc=$?
        if [ "$rc" = 2 ]; then # lost a port to someone else: other ports
            stop "$dir"
            for p in $(ports "$dir"); do rm -rf "${dir:?}/n$p"; done
            continue
        elif [ "$rc" != 0 ]; then
            echo "redis cluster in $dir did not come up; logs:" >&2
            cat "$dir/create.log" >&2 2>/dev/null || true
            logs "$dir"
            stop "$dir"
            return 1
        fi
        echo "redis-cluster://$(for p in $(masters_of "$dir"); do
            echo "$(addr_of "$p"):$p"
        done | paste -sd,)" >"$dir/url"
        [ ! -f "$dir/tls" ] ||
            sed -i "s#^redis-cluster://\(.*\)#rediss-cluster://\1?cacert=$dir/tls-certs/ca.crt#" "$dir/url"
        cat "$dir/url"
        return 0
    done
    die "no free ports found"
}

stop() { stop_pidfiles "$1"; }

# Leave 2.5 s (2 x node timeout and some) between the end of one fault
# and the next: a master votes for the replicas of a given master once in
# 2 x node timeout only, and (Redis 7.0) a replica that won an election
# less than that ago, and was made a replica again since, may "win" a
# CLUSTER FAILOVER at once with those old votes and its old epoch, and
# fall back to replica a moment later.
pace() {
    local last left
    last=$(cat "$1/last-fault" 2>/dev/null) || return 0
    left=$((last + 2500000 - ${EPOCHREALTIME/./}))
    [ "$left" -le 0 ] || sleep "$((left / 1000000)).$(printf %06d $((left % 1000000)))"
}

fault_done() {
    echo "${EPOCHREALTIME/./}" >"$1/last-fault"
}

kill_master() {
    local dir=$1 old=${2:-} new p slots
    wait_for 30 healthy "$dir" || fail "$dir" "the cluster is not whole"
    p=$(any_node "$dir") || fail "$dir" "no node answers"
    [ -n "$old" ] || old=$(target "$p")
    slots=$(view "$p" | awk -v o="$old" '$1 == o && $2 == "master" {
        $1 = $2 = $3 = ""; sub(/^ +/, ""); print }')
    [ -n "$slots" ] || die "$old is not a master with slots"
    new=$(replica_of "$p" "$old")
    [ -n "$new" ] || die "master $old has no replica"
    pace "$dir"
    kill -KILL "$(cat "$dir/n$old/pid")"
    wait_for 30 survivors_ok "$dir" "$old" "$new" "$slots" ||
        fail "$dir" "replica $new did not take over from $old"
    # The old master comes back empty, and learns it is now a replica.
    node_start "$dir" "$old" || fail "$dir" "old master $old did not restart"
    wait_for 30 role_is "$old" slave "$new" && wait_for 30 healthy "$dir" ||
        fail "$dir" "old master $old did not rejoin as a replica of $new"
    fault_done "$dir"
    echo "$new"
}

# swapped DIR OLD NEW: NEW is a master, OLD its replica, all is well.
swapped() {
    role_is "$3" master && role_is "$2" slave "$3" && healthy "$1"
}

# target NODE: the master a fault aims at: under the torture harness the
# one serving the lock it hammers, else the owner of slot 0.
target() {
    local slot=0
    if [ -n "${DLOCK_TORTURE_NAME:-}" ]; then
        slot=$(cli "$1" cluster keyslot "dlock:$DLOCK_TORTURE_NAME")
    fi
    owner "$1" "$slot"
}

failover() {
    local dir=$1 old new p end
    wait_for 30 healthy "$dir" || fail "$dir" "the cluster is not whole"
    p=$(any_node "$dir") || fail "$dir" "no node answers"
    old=$(target "$p")
    new=$(replica_of "$p" "$old")
    [ -n "$new" ] || die "master $old has no replica"
    pace "$dir"
    # A manual failover that has not happened in 5 s has been given up:
    # ask again (within 30 s in all).
    end=$((SECONDS + 30))
    while :; do
        [ "$(cli "$new" cluster failover | tr -d '\r')" = OK ] ||
            fail "$dir" "CLUSTER FAILOVER refused by $new"
        wait_for 8 swapped "$dir" "$old" "$new" && break
        ! role_is "$new" master || { # done, but slow to settle
            wait_for $((end - SECONDS)) swapped "$dir" "$old" "$new" && break
        }
        [ "$SECONDS" -lt $((end - 8)) ] && wait_for 8 healthy "$dir" ||
            fail "$dir" "failover from $old to $new did not settle"
        echo "server-redis-cluster.sh: failover from $old to $new: again" >&2
    done
    fault_done "$dir"
    echo "$new"
}

migrate() {
    local dir=$1 slot=${2:-} to=${3:-} from p m sid tid end keys n
    case $slot in '' | *[!0-9]*) die "migrate: say which slot (0-16383)" ;; esac
    [ "$slot" -le 16383 ] || die "migrate: no slot $slot"
    wait_for 30 healthy "$dir" || fail "$dir" "the cluster is not whole"
    p=$(any_node "$dir") || fail "$dir" "no node answers"
    from=$(owner "$p" "$slot")
    if [ -z "$to" ]; then # the next master in slot order
        to=$(masters_of "$dir" | awk -v f="$from" '
            { m[NR] = $1; if ($1 == f) i = NR }
            END { print m[i % NR + 1] }')
    fi
    masters_of "$dir" | grep -qx "$to" || die "migrate: $to is not a master"
    [ "$to" != "$from" ] || die "migrate: slot $slot is on $to already"
    sid=$(node_id "$from") && tid=$(node_id "$to") ||
        fail "$dir" "no node ids"
    cli "$to" -e cluster setslot "$slot" importing "$sid" >/dev/null &&
        cli "$from" -e cluster setslot "$slot" migrating "$tid" >/dev/null ||
        fail "$dir" "CLUSTER SETSLOT IMPORTING/MIGRATING failed"
    end=$((SECONDS + 30))
    # (No key: GETKEYSINSLOT prints an empty line, which is a key too.)
    while n=$(cli "$from" cluster countkeysinslot "$slot" | tr -d '\r') &&
        [ "$n" != 0 ]; do
        [ "$SECONDS" -lt "$end" ] || fail "$dir" "slot $slot: keys left after 30 s"
        mapfile -t keys < <(cli "$from" cluster getkeysinslot "$slot" 100 |
            tr -d '\r')
        cli "$from" -e migrate "$(addr_of "$to")" "$to" "" 0 5000 keys "${keys[@]}" \
            >/dev/null || fail "$dir" "MIGRATE of slot $slot to $to failed"
    done
    [ "$n" = 0 ] || fail "$dir" "slot $slot: no key count from $from"
    # The target first: it bumps its epoch, so its claim wins everywhere.
    for m in "$to" "$from" $(masters_of "$dir" | grep -vx -e "$to" -e "$from"); do
        cli "$m" -e cluster setslot "$slot" node "$tid" >/dev/null ||
            fail "$dir" "CLUSTER SETSLOT NODE on $m failed"
    done
    wait_for 30 healthy "$dir" && [ "$(owner "$p" "$slot")" = "$to" ] ||
        fail "$dir" "slot $slot did not settle on $to"
    echo "$to"
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|start-tls|stop|ctl DIR [...]"
shift 2
use_tls "$dir"
case $cmd in
start) start "$dir" ;;
start-tls)
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    setup_tls "$dir" || die "cannot make certificates"
    start "$dir"
    ;;
stop) stop "$dir" ;;
ctl)
    [ -f "$dir/ports" ] || die "no cluster in $dir"
    load_netns "$dir"
    sub=${1:-}
    shift || true
    case $sub in
    kill-master) kill_master "$dir" "$@" ;;
    failover) failover "$dir" ;;
    migrate) migrate "$dir" "$@" ;;
    masters) masters_of "$dir" || die "no node answers" ;;
    cli) cli "$@" ;;
    where) echo "${node_ns[${1:-}]:-} ${node_addr[${1:-}]:-}" ;;
    wait-healthy) wait_for 60 healthy "$dir" || fail "$dir" "the cluster is not whole" ;;
    target)
        p=$(any_node "$dir") || fail "$dir" "no node answers"
        target "$p"
        ;;
    replica)
        p=$(any_node "$dir") || fail "$dir" "no node answers"
        replica_of "$p" "${1:?say which master}"
        ;;
    *) die "unknown ctl command '$sub' (kill-master, failover, migrate, masters, cli, where, wait-healthy, target, replica)" ;;
    esac
    ;;
*) die "unknown command '$cmd' (start, start-tls, stop, ctl)" ;;
esac
