#!/bin/bash
# A throwaway Redis Sentinel topology for tests, everything in one
# directory: one master, one replica, three sentinels (quorum 2).
#   scripts/server-redis-sentinel.sh start DIR   print the store URL (also DIR/url)
#   scripts/server-redis-sentinel.sh stop DIR    stop it all (0 if not running)
#   scripts/server-redis-sentinel.sh start-tls DIR  the same over TLS only
#       (nodes, replication and sentinels): a throwaway CA and certificates
#       in DIR/tls-certs (server-lib.sh: make_tls_certs); the URL is
#       rediss-sentinel://...?cacert=DIR/tls-certs/ca.crt
#   scripts/server-redis-sentinel.sh ctl DIR CMD..  for tests:
#       failover      SENTINEL FAILOVER, then wait (<= 30 s) until the
#                     sentinels name the other node and it is master
#       kill-master   kill -9 the master, wait the same way, then start
#                     the old one again (it rejoins as a replica); both
#                     return once one node is master, the other its
#                     replica in sync, and the sentinels have been calm
#                     for 3 s (aftermath(): a second, spontaneous failover
#                     is waited out too)
#       master        print the master's port
#       replica-ready  wait (<= 60 s) until the replica is in sync and every
#                     sentinel knows it as healthy (so a failover can
#                     promote it), print its port
#       cli PORT ARGS...  redis-cli against one of the nodes
#       freeze PORT   SIGSTOP the node on PORT (a replica that stops
#                     acknowledging: ?replicas=); thaw PORT: SIGCONT
# Listens on 127.0.0.1 only, on free ports in 21000-29999 (five in a row).
# No RDB, no AOF.  Sentinels run as `redis-sentinel` (Debian's
# redis-sentinel package) or, without it, `redis-server --sentinel`.
# With DLOCK_SERVER_NETNS="NS:ADDR NS:ADDR NS:ADDR NS:ADDR NS:ADDR" (for
# the partition tests: network namespaces and an address in each, for the
# master, the replica and the three sentinels in that order) each node
# runs in its namespace and listens on its address too; nodes and the URL
# name those addresses.  DIR/netns records it (PORT NS ADDR a line), so
# ctl works the same; ctl where PORT prints "NS ADDR".
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

NAME=dlockm

die() {
    echo "server-redis-sentinel.sh: $*" >&2
    exit 1
}

# Every probe is bounded (CLI_TIMEOUT s, 0: none; `ctl cli` has none): a
# node or sentinel that accepts but never answers (SIGSTOPped, frozen by a
# test) would hold redis-cli, and the wait_for or aftermath() loop around
# it, forever; their 30 s bounds are checked between probes only.
cli() {
    local p=$1
    shift
    at "$p" timeout "${CLI_TIMEOUT:-5}" redis-cli "${tls[@]}" -h 127.0.0.1 \
        -p "$p" "$@"
}

pong() {
    [ "$(cli "$1" ping 2>/dev/null)" = PONG ]
}

node_start() { # DIR PORT [replicaof PORT]
    local dir=$1 port=$2 args
    mkdir -p "$dir/n$port"
    args=(--port "$port" --bind 127.0.0.1 ${node_addr[$port]:+"${node_addr[$port]}"}
        --save '' --appendonly no --repl-diskless-sync-delay 0
        --dir "$dir/n$port" --daemonize yes --pidfile "$dir/n$port/pid"
        --logfile "$dir/n$port/log" --protected-mode no)
    [ -z "${3:-}" ] || args+=(--replicaof "$(addr_of "$3")" "$3")
    if [ -f "$dir/tls" ]; then
        local c=$dir/tls-certs
        args=(--port 0 --tls-port "$port" "${args[@]:2}" --tls-replication yes
            --tls-cert-file "$c/server.crt" --tls-key-file "$c/server.key"
            --tls-ca-cert-file "$c/ca.crt" --tls-auth-clients optional)
    fi
    at "$port" redis-server "${args[@]}" >/dev/null 2>&1 || return 1
    wait_for 30 pong "$port"
}

sentinel_start() { # DIR PORT MASTERPORT
    local dir=$1 port=$2 m=$3 bin=(redis-sentinel)
    mkdir -p "$dir/s$port"
    cat >"$dir/s$port/sentinel.conf" <<EOF
port $port
bind 127.0.0.1 ${node_addr[$port]:-}
daemonize yes
pidfile $dir/s$port/pid
logfile $dir/s$port/log
dir $dir/s$port
protected-mode no
sentinel monitor $NAME $(addr_of "$m") $m 2
sentinel down-after-milliseconds $NAME 1000
sentinel failover-timeout $NAME 1500
sentinel parallel-syncs $NAME 1
EOF
    if [ -f "$dir/tls" ]; then
        local c=$dir/tls-certs
        sed -i "s/^port $port\$/port 0\ntls-port $port/" "$dir/s$port/sentinel.conf"
        printf '%s\n' "tls-replication yes" "tls-auth-clients optional" \
            "tls-cert-file $c/server.crt" "tls-key-file $c/server.key" \
            "tls-ca-cert-file $c/ca.crt" >>"$dir/s$port/sentinel.conf"
    fi
    command -v redis-sentinel >/dev/null || bin=(redis-server)
    at "$port" "${bin[@]}" "$dir/s$port/sentinel.conf" --sentinel >/dev/null 2>&1 ||
        return 1
    wait_for 30 pong "$port"
}

ports() { cat "$1/ports"; }

# The master's port as the first sentinel that answers says.
master_port() {
    local dir=$1 s
    for s in $(ports "$dir" | cut -d' ' -f3-); do
        cli "$s" sentinel get-master-addr-by-name "$NAME" 2>/dev/null |
            sed -n 2p && return 0
    done
    return 1
}

# is_replica_of PORT MASTERPORT: PORT replicates MASTERPORT, link up.
is_replica_of() {
    [ "$(cli "$1" role 2>/dev/null | sed -n '1p;3p;4p' | tr '\n' ' ')" = \
        "slave $2 connected " ]
}

is_master() {
    cli "$1" role 2>/dev/null | head -1 | grep -qx master
}

# Every sentinel names NEW as master, and NEW says it is.
settled_on() {
    local dir=$1 new=$2 s
    is_master "$new" || return 1
    for s in $(ports "$dir" | cut -d' ' -f3-); do
        [ "$(cli "$s" sentinel get-master-addr-by-name "$NAME" 2>/dev/null |
            sed -n 2p)" = "$new" ] || return 1
    done
}

# Each sentinel knows the replica and the other sentinels.
ready() {
    local dir=$1 s
    for s in $(ports "$dir" | cut -d' ' -f3-); do
        cli "$s" sentinel master "$NAME" 2>/dev/null |
            awk 'p{v[k]=$0;p=0;next}{k=$0;p=1}END{exit !(v["num-slaves"]>=1 && v["num-other-sentinels"]>=2)}' ||
            return 1
    done
}

# PORT is a replica in sync, and every sentinel lists it as a healthy
# replica: only then can a later failover promote it.
replica_ok() {
    local dir=$1 port=$2 s
    [ "$(cli "$port" role 2>/dev/null | sed -n 4p)" = connected ] || return 1
    for s in $(ports "$dir" | cut -d' ' -f3-); do
        cli "$s" sentinel replicas "$NAME" 2>/dev/null |
            awk -v p="$port" 'k{if(k=="port")cur=$0; if(k=="flags"&&cur==p&&$0=="slave")ok=1; k="";next}{k=$0}END{exit !ok}' ||
            return 1
    done
}

start() {
    local dir=$1 base try p where
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    for try in 1 2 3 4 5 6 7 8; do
        base=$((21000 + RANDOM % 8990))
        for p in 0 1 2 3 4; do port_free $((base + p)) || continue 2; done
        echo "$base $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4))" \
            >"$dir/ports"
        if [ -n "${DLOCK_SERVER_NETNS:-}" ]; then
            read -r -a where <<<"$DLOCK_SERVER_NETNS"
            [ ${#where[@]} = 5 ] || die "DLOCK_SERVER_NETNS: say NS:ADDR five times"
            for p in 0 1 2 3 4; do
                echo "$((base + p)) ${where[p]%%:*} ${where[p]#*:}"
            done >"$dir/netns"
            load_netns "$dir"
        fi
        node_start "$dir" "$base" &&
            node_start "$dir" $((base + 1)) "$base" &&
            sentinel_start "$dir" $((base + 2)) "$base" &&
            sentinel_start "$dir" $((base + 3)) "$base" &&
            sentinel_start "$dir" $((base + 4)) "$base" &&
            wait_for 30 ready "$dir" &&
            wait_for 30 replica_ok "$dir" $((base + 1)) || {
            echo "sentinel topology in $dir did not come up; logs:" >&2
            tail -n 5 "$dir"/*/log >&2 2>/dev/null || true
            stop "$dir"
            return 1
        }
        echo "redis-sentinel://$(addr_of $((base + 2))):$((base + 2)),$(addr_of $((base + 3))):$((base + 3)),$(addr_of $((base + 4))):$((base + 4))/$NAME" \
            >"$dir/url"
        [ ! -f "$dir/tls" ] ||
            sed -i "s#^redis-sentinel://\(.*\)#rediss-sentinel://\1?cacert=$dir/tls-certs/ca.crt#" "$dir/url"
        cat "$dir/url"
        return 0
    done
    die "no free ports found"
}

stop() { stop_pidfiles "$1"; }

# The replica is known to every sentinel as a healthy one, so a failover
# can promote it.  After a fault the sentinels would find a replica that
# came back only at their next look at the master's INFO (every 10 s):
# SENTINEL RESET makes them look at once (and find each other again by
# their hello messages, every 2 s).
other_ready() {
    local dir=$1 old=$2 new s
    new=$(ports "$dir" | cut -d' ' -f1-2 | tr ' ' '\n' | grep -vx "$old")
    if ! wait_for 1 replica_ok "$dir" "$new"; then
        for s in $(ports "$dir" | cut -d' ' -f3-); do
            cli "$s" sentinel reset "$NAME" >/dev/null 2>&1 || true
        done
    fi
    wait_for 30 ready "$dir" && wait_for 30 replica_ok "$dir" "$new" ||
        die "replica $new not ready"
    echo "$new"
}

failover() {
    local dir=$1 old new
    old=$(master_port "$dir") || die "no sentinel answers"
    new=$(other_ready "$dir" "$old")
    cli "$(ports "$dir" | cut -d' ' -f3)" sentinel failover "$NAME" >/dev/null
    wait_for 30 settled_on "$dir" "$new" || die "failover did not settle"
    # What the sentinels will do too: a SENTINEL RESET (other_ready) must
    # not leave the old master a master.
    cli "$old" replicaof "$(addr_of "$new")" "$new" >/dev/null
    aftermath "$dir" "$old" "$new"
}

kill_master() {
    local dir=$1 old new
    old=$(master_port "$dir") || die "no sentinel answers"
    new=$(other_ready "$dir" "$old")
    kill -KILL "$(cat "$dir/n$old/pid")"
    wait_for 30 settled_on "$dir" "$new" || die "failover did not settle"
    # The old master comes back empty, as a replica of the new one.
    node_start "$dir" "$old" "$new" || die "old master did not restart"
    aftermath "$dir" "$old" "$new"
}

# Every sentinel names MASTER with no other flag than "master" (no s_down,
# o_down, failover_in_progress), and MASTER says it is one.
calm_on() {
    local dir=$1 m=$2 s
    is_master "$m" || return 1
    for s in $(ports "$dir" | cut -d' ' -f3-); do
        cli "$s" sentinel master "$NAME" 2>/dev/null |
            awk -v p="$m" 'k!=""{v[k]=$0;k="";next}{k=$0}END{exit !(v["port"]==p && v["flags"]=="master")}' ||
            return 1
    done
}

# aftermath DIR OLD NEW: a failover is over when what follows it is: the
# two data nodes a master and its connected replica, and every sentinel
# naming that master with no other flag, for 3 s in a row (three times
# down-after-milliseconds).  Seen here: a sentinel that switched to the new
# master took it for down 1 s later (its new link had no PING answered
# yet), won the vote of the others and failed it over again -- once
# aborting only because OLD, restarted empty, was not yet a "good slave",
# once (CI, loaded) promoting OLD back.  Either node may be the master at
# the end; a fault's consequences belong inside its window, so this waits
# them out, up to 45 s.
aftermath() {
    local dir=$1 old=$2 new=$3 end since=0 now m other
    end=$((SECONDS + 45))
    while [ "$SECONDS" -lt "$end" ]; do
        now=$(date +%s%N)
        if m=$(master_port "$dir") && { [ "$m" = "$old" ] || [ "$m" = "$new" ]; } &&
            calm_on "$dir" "$m"; then
            if [ "$m" = "$old" ]; then other=$new; else other=$old; fi
        else
            m=
        fi
        if [ -n "$m" ] && is_replica_of "$other" "$m"; then
            [ "$since" != 0 ] || since=$now
            [ $(((now - since) / 1000000)) -lt 3000 ] || return 0
        else
            since=0
        fi
        sleep 0.1
    done
    die "the topology did not settle after the failover (master: ${m:-none})"
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|start-tls|stop|ctl DIR [...]"
shift 2
load_netns "$dir"
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
    sub=${1:-}
    shift || true
    case $sub in
    failover) failover "$dir" ;;
    kill-master) kill_master "$dir" ;;
    master) master_port "$dir" ;;
    replica-ready)
        # After a split the sentinels agree again on one master first.
        old=
        end=$((SECONDS + 30))
        while [ "$SECONDS" -lt "$end" ]; do
            old=$(master_port "$dir") && settled_on "$dir" "$old" && break
            old=
            sleep 0.1
        done
        [ -n "$old" ] || die "the sentinels do not agree on a master"
        # A master cut off from the sentinels while they failed it over
        # learns it is a replica now from them (at their next INFO to it,
        # up to 10 s): until it has, a SENTINEL RESET (other_ready) would
        # make them forget it for good.
        other=$(ports "$dir" | cut -d' ' -f1-2 | tr ' ' '\n' | grep -vx "$old")
        wait_for 30 is_replica_of "$other" "$old" ||
            die "$other did not become a replica of $old"
        other_ready "$dir" "$old"
        ;;
    cli) CLI_TIMEOUT=0 cli "$@" ;;
    freeze | thaw)
        pid=$(cat "$dir/n${1:?say which port}/pid") || die "no node on $1"
        if [ "$sub" = freeze ]; then kill -STOP "$pid"; else kill -CONT "$pid"; fi
        ;;
    where) echo "${node_ns[${1:-}]:-} ${node_addr[${1:-}]:-}" ;;
    *) die "unknown ctl command '$sub' (failover, kill-master, master, replica-ready, cli, freeze, thaw, where)" ;;
    esac
    ;;
*) die "unknown command '$cmd' (start, start-tls, stop, ctl)" ;;
esac
