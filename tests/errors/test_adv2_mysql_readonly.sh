#!/bin/bash
# Issue 34 (adversarial pass, adv2): a MariaDB server gone read-only (the
# old primary after a failover: SET GLOBAL read_only=1) refuses every
# write with error 1290 "running with the --read-only option"; as Redis's
# READONLY that is DLOCK_EUNAVAIL (retrying may help), not DLOCK_ESTORE:
# a waiter (dlock run -w, an acquire with a wait) must wait it out.  The
# store's open (its CREATE TABLE IF NOT EXISTS) and an acquire on an open
# store both meet it.  Its own server (scripts/server-mysql.sh), as the
# test changes a global setting.
#   test_adv2_mysql_readonly.sh DLOCK ERRORS SERVER_SCRIPT
DLOCK=${1:?usage: test_adv2_mysql_readonly.sh DLOCK ERRORS SERVER_SCRIPT}
ERRORS=${2:?usage}
SCRIPT=${3:?usage}
command -v mariadbd >/dev/null || command -v mysqld >/dev/null || { echo "no mariadbd"; exit 77; }
T=$(mktemp -d)
chmod 777 "$T"
trap '"$SCRIPT" stop "$T" >/dev/null 2>&1; rm -rf "$T"' EXIT
url=$("$SCRIPT" start "$T" | tail -1) || { echo "FAIL: cannot start mariadb"; exit 1; }
sql() { "$SCRIPT" ctl "$T" sql --root "$@"; }
fail=0

# The store's open on a read-only server.
sql "SET GLOBAL read_only=1" || exit 1
"$ERRORS" unreachable "$url" || fail=1
sql "SET GLOBAL read_only=0"

# An open store (tables made), then read-only: the acquire's write.  A
# waiter started while read-only gets the lock once writable again.
"$DLOCK" -s "$url" status adv2-ro >/dev/null
[ $? = 3 ] || { echo "FAIL: status (3: free)"; exit 1; }
sql "SET GLOBAL read_only=1"
"$ERRORS" unreachable "$url" || fail=1
"$DLOCK" -s "$url" run adv2-ro -w 60 -- true >"$T/out" 2>&1 &
pid=$!
# Until it has been refused at least once (Com_insert counts refused
# INSERTs too) or has ended.
base=$(sql "SHOW GLOBAL STATUS LIKE 'Com_insert'" | awk '{print $2}' | tail -1)
for _ in $(seq 600); do
    kill -0 $pid 2>/dev/null || break
    now=$(sql "SHOW GLOBAL STATUS LIKE 'Com_insert'" | awk '{print $2}' | tail -1)
    [ "$now" != "$base" ] && break
done
sql "SET GLOBAL read_only=0"
wait $pid
rc=$?
if [ $rc = 0 ]; then
    echo "ok   dlock run -w waited out read_only"
else
    echo "FAIL: read_only: dlock run -w 60 exit $rc (want 0): $(cat "$T/out")"
    fail=1
fi
exit $fail
