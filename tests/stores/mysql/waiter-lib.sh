# Sourced by the mysql-waiter-* scripts (which set STORE, n and fails):
# ok/fail counters, sql against the server of STORE, the GET_LOCK waits
# in its process list, and a bounded poll.
ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }

# The server, for the process list: mysql://user:pass@host:port/db?...
rest=${STORE#*://}
auth=${rest%%@*}
hostpart=${rest#*@}
db=${hostpart#*/}
db=${db%%\?*}
hostport=${hostpart%%/*}
user=${auth%%:*}
pass=${auth#*:}
host=${hostport%%:*}
port=${hostport#*:}
[ "$port" = "$hostport" ] && port=3306
client=$(command -v mariadb || command -v mysql || true)
if [ -z "$client" ]; then
    echo "FAIL no mariadb/mysql client to read the server's process list"
    exit 1
fi
sql() {
    MYSQL_PWD=$pass "$client" --no-defaults --protocol=tcp -h"$host" \
        -P"$port" -u"$user" --connect-timeout=5 -N -B "$db" -e "$1"
}
# Sessions waiting in GET_LOCK on the key NAME (its own key: <= 64 chars).
getlock_waits() {
    sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%GET_LOCK(''$1'', %' AND INFO NOT LIKE '%GET_LOCK(''$1'', 0%'"
}
# Poll until CMD succeeds, for at most $2 tenths of a second.
until_true() {
    i=0
    while [ "$i" -lt "$2" ]; do
        if eval "$1"; then
            return 0
        fi
        i=$((i + 1))
        sleep 0.1
    done
    return 1
}
