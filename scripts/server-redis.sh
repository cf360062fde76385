#!/bin/bash
# A throwaway redis-server for tests, everything in one directory:
#   scripts/server-redis.sh start DIR      print the store URL (also DIR/url)
#   scripts/server-redis.sh stop DIR       stop it (0 even if not running)
#   scripts/server-redis.sh ctl DIR CMD..  for tests:
#       restart                 stop and start again on the same port
#                               (no persistence: every key is gone)
#       cli ARGS...             redis-cli against it
#       start-auth SUBDIR PASS  a second instance with requirepass in
#                               DIR/SUBDIR; prints its URL (with password)
#       stop-auth SUBDIR        stop that one
#       start-tls SUBDIR VARIANT  a second TLS instance in DIR/SUBDIR
#                               with DIR's certificates, VARIANT:
#                               expired (an expired server certificate)
#                               or clientauth (requires a client
#                               certificate); prints its URL
#       stop-tls SUBDIR         stop that one
#   scripts/server-redis.sh start-tls DIR  the same over TLS only (no
#       plaintext port): a throwaway CA and certificates in DIR/tls
#       (server-lib.sh: make_tls_certs), the URL is
#       rediss://127.0.0.1:PORT?cacert=DIR/tls/ca.crt.  Client
#       certificates are optional (DIR/tls/client.crt is one).
# Listens on 127.0.0.1 only, on a free port in 21000-29999, plus a unix
# socket DIR/redis.sock (plaintext, for ctl cli, with TLS too).  No RDB, no AOF: a restart loses every lock.
# With DLOCK_SERVER_HOST=ADDR (an address of this network namespace, for
# the partition tests) it listens on ADDR too, and the URL names ADDR.
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

die() {
    echo "server-redis.sh: $*" >&2
    exit 1
}

# TLS arguments of redis-server for DIR (DIR/tls: "", tls, expired,
# clientauth; the certificates in $certs).
tls_args() {
    local mode certs
    mode=$(cat "$1/tls" 2>/dev/null) || return 0
    certs=$(cat "$1/certs")
    local crt=$certs/server.crt auth=optional
    [ "$mode" = expired ] && crt=$certs/expired.crt
    [ "$mode" = clientauth ] && auth=yes
    echo --tls-cert-file "$crt" --tls-key-file "$certs/server.key" \
        --tls-ca-cert-file "$certs/ca.crt" --tls-auth-clients "$auth"
}

# start_in DIR PORT [PASSWORD]: start and wait (<= 30 s) for PING.  With
# DIR/tls the port is a TLS port, and the PING goes to the unix socket.
start_in() {
    local dir=$1 port=$2 pass=${3:-} i
    local args=(--port "$port" --bind 127.0.0.1 ${host:+"$host"}
        --save '' --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/redis.pid"
        --logfile "$dir/redis.log" --unixsocket "$dir/redis.sock"
        --unixsocketperm 700 --protected-mode no)
    local cli=(redis-cli -p "$port" -h 127.0.0.1)

    if [ -f "$dir/tls" ]; then
        # shellcheck disable=SC2207
        args=(--port 0 --tls-port "$port" "${args[@]:2}" $(tls_args "$dir"))
        cli=(redis-cli -s "$dir/redis.sock")
    fi

    if [ -n "$pass" ]; then
        args+=(--requirepass "$pass")
        cli+=(--no-auth-warning -a "$pass")
    fi
    redis-server "${args[@]}" >"$dir/start.out" 2>&1 || {
        cat "$dir/start.out" >&2
        tail -n 20 "$dir/redis.log" >&2 2>/dev/null || true
        return 1
    }
    echo "$port" >"$dir/port"
    for i in $(seq 1 300); do
        # Lost the port to another process: fail fast, start() retries.
        if grep -q "Address already in use" "$dir/redis.log" 2>/dev/null; then
            return 1
        fi
        if [ "$("${cli[@]}" ping 2>/dev/null)" = PONG ]; then
            # Ours, not some other server that holds the port?
            if [ "$("${cli[@]}" info server 2>/dev/null |
                tr -d '\r' | sed -n 's/^process_id://p')" = \
                "$(cat "$dir/redis.pid" 2>/dev/null)" ]; then
                return 0
            fi
        fi
        sleep 0.1
    done
    echo "redis-server in $dir not ready after 30 s; log:" >&2
    tail -n 20 "$dir/redis.log" >&2 2>/dev/null || true
    stop_in "$dir"
    return 1
}

# start DIR [PASSWORD]: pick a free port (retry on a race), start.
start() {
    local dir=$1 pass=${2:-} port try
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    for try in 1 2 3 4 5 6 7 8; do
        port=$((21000 + RANDOM % 9000))
        port_free "$port" || continue
        if start_in "$dir" "$port" "$pass"; then
            if [ -f "$dir/tls" ]; then
                echo "rediss://${host:-127.0.0.1}:$port?cacert=$(cat "$dir/certs")/ca.crt" >"$dir/url"
            elif [ -n "$pass" ]; then
                echo "redis://:$pass@${host:-127.0.0.1}:$port" >"$dir/url"
            else
                echo "redis://${host:-127.0.0.1}:$port" >"$dir/url"
            fi
            cat "$dir/url"
            return 0
        fi
        # Lost the port to someone else?  Try another.
        grep -q "Address already in use" "$dir/redis.log" 2>/dev/null ||
            return 1
        rm -f "$dir/redis.log"
    done
    die "no free port found"
}

stop_in() {
    local dir=$1 pid
    pid=$(cat "$dir/redis.pid" 2>/dev/null) || return 0
    [ -n "$pid" ] && stop_pid "$pid" TERM
    rm -f "$dir/redis.pid"
    return 0
}

host=${DLOCK_SERVER_HOST:-}
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|start-tls|stop|ctl DIR [...]"
shift 2
case $cmd in
start)
    start "$dir"
    ;;
start-tls)
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    make_tls_certs "$dir/tls-certs" || die "cannot make certificates"
    echo tls >"$dir/tls"
    echo "$dir/tls-certs" >"$dir/certs"
    start "$dir"
    ;;
stop)
    # TLS variants (ctl start-tls) too.
    for sub in "$dir"/*/tls; do
        [ -f "$sub" ] && stop_in "$(dirname "$sub")"
    done
    stop_in "$dir"
    ;;
ctl)
    sub=${1:-}
    shift || true
    case $sub in
    restart)
        port=$(cat "$dir/port")
        stop_in "$dir"
        start_in "$dir" "$port" >/dev/null
        ;;
    cli)
        [ -f "$dir/tls" ] && exec redis-cli -s "$dir/redis.sock" "$@"
        exec redis-cli -p "$(cat "$dir/port")" -h 127.0.0.1 "$@"
        ;;
    start-tls)
        [ $# -eq 2 ] || die "usage: ctl DIR start-tls SUBDIR expired|clientauth"
        case $2 in expired | clientauth) ;; *) die "unknown TLS variant $2" ;; esac
        dir=$(cd "$dir" && pwd)
        make_tls_certs "$dir/tls-certs" || die "cannot make certificates"
        mkdir -p "$dir/$1"
        echo "$2" >"$dir/$1/tls"
        echo "$dir/tls-certs" >"$dir/$1/certs"
        start "$dir/$1"
        ;;
    stop-tls)
        [ $# -eq 1 ] || die "usage: ctl DIR stop-tls SUBDIR"
        stop_in "$dir/$1"
        ;;
    start-auth)
        [ $# -eq 2 ] || die "usage: ctl DIR start-auth SUBDIR PASSWORD"
        mkdir -p "$dir/$1"
        start "$dir/$1" "$2"
        ;;
    stop-auth)
        [ $# -eq 1 ] || die "usage: ctl DIR stop-auth SUBDIR"
        stop_in "$dir/$1"
        ;;
    *)
        die "unknown ctl command '$sub' (restart, cli, start-auth, stop-auth, start-tls, stop-tls)"
        ;;
    esac
    ;;
*)
    die "unknown command '$cmd' (start, start-tls, stop, ctl)"
    ;;
esac
