#!/usr/bin/env bash
# Throwaway PostgreSQL server for the dlock tests.
#
#   server-postgres.sh start DIR   initdb into DIR, start a server on
#                                  127.0.0.1 and a free unusual port, print
#                                  the dlock URL (also written to DIR/url)
#   server-postgres.sh stop DIR    stop it (fast shutdown, then SIGKILL);
#                                  always 0
#   server-postgres.sh ctl DIR sql [--super] STATEMENT
#                                  run SQL with psql as the test role (or
#                                  the superuser) over the socket in DIR;
#                                  prints unaligned, tuples-only rows
#   server-postgres.sh ctl DIR restart   stop and start, same port
#   server-postgres.sh ctl DIR crash-restart
#                                  kill -9 the postmaster and its backends
#                                  (what is only in shared memory is lost,
#                                  UNLOGGED tables are reset by the crash
#                                  recovery), then start, same port
#   server-postgres.sh ctl DIR kill-clients
#                                  pg_terminate_backend() every backend of
#                                  the test roles, and wait until they are
#                                  gone; prints how many
#   server-postgres.sh ctl DIR pid       print the postmaster's pid
#   server-postgres.sh ctl DIR port      print the port
#
# With DLOCK_SERVER_HOST=ADDR (an address of this network namespace, for
# the partition tests) the server listens on ADDR too, the URL names ADDR,
# and TCP clients from DLOCK_SERVER_CLIENTS (a CIDR, default ADDR/32) may
# log in with a password.
#
# Roles: "dlock" (password dlock-test-pw, owns database dlocktest; the URL
# uses it) and "other" (password other-pw, may use dlocktest's tables but
# cannot signal dlock's backends).  Local socket connections are trusted;
# TCP needs a password (scram-sha-256).
#
# initdb and postgres refuse to run as root: as root, everything runs as
# the "postgres" user (runuser) and DIR is chowned to it.  Debian's
# packaged service (/var/lib/postgresql, systemd) is never used.
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

die() { echo "server-postgres.sh: $*" >&2; exit 1; }

[ $# -ge 2 ] || die "usage: $0 start|stop|ctl DIR [...]"
cmd=$1
dir=$2
shift 2

host=${DLOCK_SERVER_HOST:-}
clients=${DLOCK_SERVER_CLIENTS:-${host:+$host/32}}
role=dlock
password=dlock-test-pw
database=dlocktest

# The server binaries: pg_config's bindir (the libpq-dev one may belong to
# another major version than the server), else the newest Debian server.
find_bindir() {
    local d
    if command -v pg_config >/dev/null; then
        d=$(pg_config --bindir 2>/dev/null || true)
        if [ -n "$d" ] && [ -x "$d/postgres" ] && [ -x "$d/initdb" ]; then
            echo "$d"
            return 0
        fi
    fi
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/postgres" ] && [ -x "$d/initdb" ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

server_pid() {
    local pid
    [ -f "$dir/data/postmaster.pid" ] || return 1
    pid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && alive "$pid" || return 1
    echo "$pid"
}

psql_super() {
    as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -At -h "$dir" \
        -p "$port" -U postgres -d "${1:-postgres}" -c "$2"
}

# Start postgres on $port in the background and wait (bounded) until it
# accepts connections.  The caller has set $port.
# pg_stat_statements, where the server has it, lets dlock-bench count the
# statements a hand-off costs (the cumulative statistics lag by a second).
launch() {
    local extra=()
    : >"$dir/server.log"
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir/server.log"
    [ -f "$bindir/../lib/pg_stat_statements.so" ] &&
        extra=(-c shared_preload_libraries=pg_stat_statements)
    # Tests skip fsync; make bench (DLOCK_SERVER_DURABLE=1) measures a
    # server that commits durably, as in production.
    if [ "${DLOCK_SERVER_DURABLE:-0}" = 1 ]; then
        extra+=(-c fsync=on -c full_page_writes=on)
    else
        extra+=(-c fsync=off -c full_page_writes=off)
    fi
    as_pg "$bindir/postgres" -D "$dir/data" -k "$dir" -p "$port" \
        -c listen_addresses=127.0.0.1${host:+,$host} -c max_connections=300 \
        -c shared_buffers=16MB \
        -c logging_collector=off -c log_min_messages=warning "${extra[@]}" \
        </dev/null >>"$dir/server.log" 2>&1 &
    echo $! >"$dir/launcher.pid"
    local i
    for i in $(seq 1 300); do   # 300 x 0.1 s = 30 s at most
        if "$bindir/pg_isready" -q -h "$dir" -p "$port" -t 1; then
            return 0
        fi
        kill -0 "$(cat "$dir/launcher.pid")" 2>/dev/null || break
        sleep 0.1
    done
    echo "server-postgres.sh: the server did not become ready; log tail:" >&2
    tail -n 30 "$dir/server.log" >&2 2>/dev/null || true
    return 1
}

stop_server() {
    local pid
    pid=$(server_pid) || pid=$(cat "$dir/launcher.pid" 2>/dev/null) || true
    [ -n "${pid:-}" ] || return 0
    stop_pid "$pid" INT   # fast shutdown; backends die with the postmaster
}

case $cmd in
start)
    [ -d "$dir" ] || die "$dir is not a directory"
    bindir=$(find_bindir) || die "PostgreSQL server binaries not found " \
        "(install the postgresql package)"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || die "no postgres user to run as"
        chown postgres "$dir"
        chmod 755 "$dir"
    fi
    echo "$bindir" >"$dir/bindir"
    pwfile="$dir/pw"
    echo "postgres-super-pw" >"$pwfile"
    [ "$(id -u)" -ne 0 ] || chown postgres "$pwfile"
    if ! as_pg "$bindir/initdb" -D "$dir/data" -U postgres -E UTF8 \
        --locale=C --auth-local=trust --auth-host=scram-sha-256 \
        --pwfile="$pwfile" >"$dir/initdb.log" 2>&1; then
        tail -n 30 "$dir/initdb.log" >&2
        die "initdb failed"
    fi
    rm -f "$pwfile"
    if [ -n "$clients" ]; then
        echo "host all all $clients scram-sha-256" >>"$dir/data/pg_hba.conf"
    fi
    started=
    for attempt in $(seq 1 20); do
        port=$(( 21000 + (RANDOM % 20000) ))
        port_free "$port" || continue
        if launch; then
            started=1
            break
        fi
        stop_server
        # A port taken between the check and the bind: try another one.
        if grep -q "could not bind\|already in use" "$dir/server.log"; then
            continue
        fi
        die "could not start postgres (see $dir/server.log)"
    done
    [ -n "$started" ] || die "could not find a free port"
    echo "$port" >"$dir/port"
    # Each -c is its own transaction (CREATE DATABASE needs that).
    if ! psql_super postgres "CREATE ROLE $role LOGIN
            PASSWORD '$password'" >/dev/null ||
        ! psql_super postgres "CREATE ROLE other LOGIN
            PASSWORD 'other-pw'" >/dev/null ||
        ! psql_super postgres "CREATE DATABASE $database
            OWNER $role" >/dev/null ||
        ! psql_super "$database" "GRANT ALL ON SCHEMA public
            TO $role, other" >/dev/null ||
        ! psql_super "$database" "ALTER DEFAULT PRIVILEGES FOR ROLE $role
            IN SCHEMA public GRANT ALL ON TABLES TO other" >/dev/null ||
        ! psql_super "$database" "ALTER DEFAULT PRIVILEGES FOR ROLE $role
            IN SCHEMA public GRANT ALL ON SEQUENCES TO other" >/dev/null; then
        stop_server
        die "could not create the test roles and database"
    fi
    if [ -f "$bindir/../lib/pg_stat_statements.so" ]; then
        psql_super "$database" "CREATE EXTENSION IF NOT EXISTS
            pg_stat_statements" >/dev/null || true
    fi
    url="postgres://$role:$password@${host:-127.0.0.1}:$port/$database"
    echo "$url" >"$dir/url"
    echo "$url"
    ;;
stop)
    [ -d "$dir" ] || exit 0
    stop_server
    exit 0
    ;;
ctl)
    [ $# -ge 1 ] || die "ctl needs a command"
    sub=$1
    shift
    bindir=$(cat "$dir/bindir" 2>/dev/null) || die "no server in $dir"
    port=$(cat "$dir/port" 2>/dev/null) || die "no server in $dir"
    case $sub in
    sql)
        if [ "${1:-}" = --super ]; then
            shift
            psql_super "$database" "$*"
        else
            as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -At -h "$dir" \
                -p "$port" -U "$role" -d "$database" -c "$*"
        fi
        ;;
    restart)
        stop_server
        launch || die "restart failed"
        ;;
    crash-restart)
        # The postmaster first, so that it restarts nothing; then its
        # children, which would otherwise linger until they noticed.
        if pid=$(server_pid); then
            kids=$(ps -o pid= --ppid "$pid" || true)
            kill -KILL "$pid" $kids 2>/dev/null || true
            for p in $pid $kids; do
                stop_pid "$p" KILL
            done
        fi
        launch || die "start after the crash failed"
        ;;
    kill-clients)
        # PostgreSQL 14+: wait (<= 5 s) until each backend is gone.  The
        # signal alone returns at once and a backend dies a moment later,
        # after this command: the torture harness would date the fault
        # too early, and see a lock taken in that moment and then dropped
        # by the kill as held past it.
        if [ "$(psql_super "$database" "SHOW server_version_num")" -ge 140000 ]; then
            psql_super "$database" "SELECT count(pg_terminate_backend(pid, 5000))
                FROM pg_stat_activity WHERE usename IN ('$role', 'other')"
        else
            psql_super "$database" "SELECT count(pg_terminate_backend(pid))
                FROM pg_stat_activity WHERE usename IN ('$role', 'other')"
        fi
        ;;
    pid)
        server_pid || die "not running"
        ;;
    port)
        echo "$port"
        ;;
    *) die "unknown ctl command $sub" ;;
    esac
    ;;
*)
    die "unknown command $cmd"
    ;;
esac
