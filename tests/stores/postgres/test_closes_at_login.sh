#!/bin/sh
# test_closes_at_login.sh DLOCK: a server that closes the connection after
# the password (a shutdown or restart with a login in flight) is a store
# that is not up, not one that refused us: `dlock run -w` tries the open
# again until its deadline (more than one connection), where it used to
# give up at the first (DLOCK_ESTORE, as for a wrong password).
DLOCK=$1
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/dlock-pgclose.XXXXXX)
python3 "$here/fake_closes.py" "$T/port" "$T/count" &
fake=$!
trap 'kill $fake 2>/dev/null; rm -rf "$T"' EXIT
i=0
while [ ! -s "$T/port" ]; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "FAIL the fake server did not start"; exit 1; }
    sleep 0.1 # polling a process that is starting: no event to wait on
done
url="postgres://u:pw@127.0.0.1:$(cat "$T/port")/db?timeout=1s"
out=$("$DLOCK" -s "$url" run -w 3 closes -- true 2>&1)
rc=$?
n=$(cat "$T/count" 2>/dev/null || echo 0)
echo "rc=$rc connections=$n: $out"
fails=0
[ "$rc" -eq 69 ] || { echo "FAIL want exit 69, got $rc"; fails=1; }
[ "$n" -ge 2 ] || { echo "FAIL the open was not tried again ($n connection): a closed login read as a refusal"; fails=1; }
case $out in
*'pw@'*) echo "FAIL the password was printed"; fails=1 ;;
esac
[ $fails -eq 0 ] && echo "PASS"
exit $fails
