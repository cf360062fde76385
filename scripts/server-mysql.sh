#!/usr/bin/env bash
# Throwaway MariaDB (or MySQL) server for the dlock tests.
#
#   server-mysql.sh start DIR   start one with everything in DIR; print the
#                               dlock URL (also written to DIR/url)
#   server-mysql.sh stop DIR    stop it (graceful, then SIGKILL); always 0
#   server-mysql.sh ctl DIR sql [--root] STATEMENT...
#                               run SQL as the test user (or root) over the
#                               socket, print tab-separated rows
#   server-mysql.sh ctl DIR restart
#                               stop and start the same server, same port
#   server-mysql.sh ctl DIR crash-restart
#                               kill -9 the server (nothing flushed, MyISAM
#                               tables left open, InnoDB recovers from its
#                               log), then start it, same port
#   server-mysql.sh ctl DIR kill-clients
#                               KILL every connection of the test user,
#                               and wait (<= 5 s) until they are gone
#   server-mysql.sh ctl DIR pid print the server's pid
#
# The server listens on 127.0.0.1 only, on a free unusual port, and never
# touches Debian's packaged service or /var/lib/mysql.  With
# DLOCK_SERVER_HOST=ADDR (an address of this network namespace, for the
# partition tests) it listens on ADDR too, the URL names ADDR, and the
# test user may log in from DLOCK_SERVER_CLIENTS (a CIDR, default ADDR/32).
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

die() { echo "server-mysql.sh: $*" >&2; exit 1; }

[ $# -ge 2 ] || die "usage: $0 start|stop|ctl DIR [...]"
cmd=$1
dir=$2
shift 2

host=${DLOCK_SERVER_HOST:-}
clients=${DLOCK_SERVER_CLIENTS:-${host:+$host/32}}
user=dlock
password=dlock-test-pw
database=dlocktest

mariadbd=$(command -v mariadbd || command -v mysqld ||
           ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -n1 ||
           true)
client=$(command -v mariadb || command -v mysql || true)
admin=$(command -v mariadb-admin || command -v mysqladmin || true)
installdb=$(command -v mariadb-install-db || command -v mysql_install_db ||
            true)

server_pid() {
    [ -f "$dir/mysqld.pid" ] || return 1
    local pid
    pid=$(cat "$dir/mysqld.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && alive "$pid" || return 1
    echo "$pid"
}

root_sql() {
    "$client" --no-defaults --protocol=socket --socket="$dir/mysql.sock" \
        -uroot --connect-timeout=5 -N -B -e "$1"
}

# Start mariadbd on $port in the background and wait (bounded) until it
# answers.  The caller has set $port.
launch() {
    local run_as=()
    [ "$(id -u)" -eq 0 ] && run_as=(--user=mysql)
    rm -f "$dir/mysqld.pid"
    "$mariadbd" --no-defaults --datadir="$dir/data" \
        --socket="$dir/mysql.sock" --pid-file="$dir/mysqld.pid" \
        --port="$port" --bind-address="127.0.0.1${host:+,$host}" "${run_as[@]}" \
        --log-error="$dir/error.log" --skip-name-resolve \
        --innodb-buffer-pool-size=16M --innodb-log-file-size=8M \
        --max-connections=4200 --performance-schema=OFF \
        --tmpdir="$dir/tmp" </dev/null >>"$dir/stdout.log" 2>&1 &
    echo $! >"$dir/launcher.pid"
    local i
    for i in $(seq 1 300); do   # 300 x 0.1 s = 30 s at most
        if "$admin" --no-defaults --protocol=socket \
            --socket="$dir/mysql.sock" -uroot --connect-timeout=1 \
            ping >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$(cat "$dir/launcher.pid")" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    echo "server-mysql.sh: the server did not become ready; log tail:" >&2
    tail -n 30 "$dir/error.log" "$dir/stdout.log" >&2 2>/dev/null || true
    return 1
}

stop_server() {
    local pid
    pid=$(server_pid) || pid=$(cat "$dir/launcher.pid" 2>/dev/null) || true
    [ -n "${pid:-}" ] || return 0
    stop_pid "$pid" TERM
}

case $cmd in
start)
    [ -d "$dir" ] || die "$dir is not a directory"
    [ -n "$mariadbd" ] && [ -n "$client" ] && [ -n "$admin" ] &&
        [ -n "$installdb" ] || die "mariadb-server is not installed"
    dir=$(cd "$dir" && pwd)
    mkdir -p "$dir/data" "$dir/tmp"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R mysql:mysql "$dir/data" "$dir/tmp"
        chmod 755 "$dir"
        chown mysql "$dir"
    fi
    # Bootstrap without our own server: the install tool runs its own.
    if ! "$installdb" --no-defaults --datadir="$dir/data" \
        $( [ "$(id -u)" -eq 0 ] && echo --user=mysql ) \
        --auth-root-authentication-method=normal --skip-test-db \
        >"$dir/install.log" 2>&1; then
        tail -n 30 "$dir/install.log" >&2
        die "mariadb-install-db failed"
    fi
    for attempt in $(seq 1 20); do
        port=$(( 20000 + (RANDOM % 20000) ))
        port_free "$port" || continue
        if launch; then
            break
        fi
        stop_server
        # A port taken between the check and bind: try another one.
        if grep -q "Address already in use" "$dir/error.log" 2>/dev/null; then
            : >"$dir/error.log"
            continue
        fi
        die "could not start mariadbd (see $dir/error.log)"
    done
    server_pid >/dev/null || die "could not find a free port"
    echo "$port" >"$dir/port"
    root_sql "CREATE DATABASE IF NOT EXISTS $database;
        CREATE USER IF NOT EXISTS '$user'@'127.0.0.1'
            IDENTIFIED BY '$password';
        CREATE USER IF NOT EXISTS '$user'@'localhost'
            IDENTIFIED BY '$password';
        GRANT ALL ON $database.* TO '$user'@'127.0.0.1';
        GRANT ALL ON $database.* TO '$user'@'localhost';
        CREATE USER IF NOT EXISTS 'other'@'127.0.0.1'
            IDENTIFIED BY 'other-pw';
        GRANT SELECT, INSERT, UPDATE, DELETE ON $database.*
            TO 'other'@'127.0.0.1';
        FLUSH PRIVILEGES;" || die "could not create the test user"
    if [ -n "$clients" ]; then
        # MariaDB names a network as ADDR/NETMASK.
        bits=${clients#*/}
        mask=$(( (0xffffffff << (32 - bits)) & 0xffffffff ))
        mask=$((mask >> 24)).$((mask >> 16 & 255)).$((mask >> 8 & 255)).$((mask & 255))
        from="${clients%/*}/$mask"
        root_sql "CREATE USER IF NOT EXISTS '$user'@'$from'
                IDENTIFIED BY '$password';
            GRANT ALL ON $database.* TO '$user'@'$from';
            FLUSH PRIVILEGES;" || die "could not let $clients in"
    fi
    url="mysql://$user:$password@${host:-127.0.0.1}:$port/$database"
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
    case $sub in
    sql)
        if [ "${1:-}" = --root ]; then
            shift
            root_sql "$*"
        else
            "$client" --no-defaults --protocol=tcp -h127.0.0.1 \
                -P"$(cat "$dir/port")" -u"$user" -p"$password" \
                --connect-timeout=5 -N -B "$database" -e "$*"
        fi
        ;;
    restart)
        port=$(cat "$dir/port")
        stop_server
        launch || die "restart failed"
        ;;
    crash-restart)
        port=$(cat "$dir/port")
        if pid=$(server_pid); then
            stop_pid "$pid" KILL
        fi
        launch || die "start after the crash failed"
        ;;
    kill-clients)
        # KILL returns before the connection is gone (its locks go with
        # it): wait (<= 5 s) until none of those killed is left, so the
        # torture harness dates the fault right.
        ids=$(root_sql "SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE USER = '$user'")
        root_sql "KILL CONNECTION USER $user"
        case $ids in ''|NULL) ;; *)
            for _ in $(seq 1 50); do
                [ "$(root_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ($ids)")" = 0 ] && break
                sleep 0.1
            done ;;
        esac
        ;;
    pid)
        server_pid || die "not running"
        ;;
    *) die "unknown ctl command $sub" ;;
    esac
    ;;
*)
    die "unknown command $cmd"
    ;;
esac
