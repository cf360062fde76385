#!/bin/sh
# test_redact_auth_echo.sh DLOCK - issue 33 item 8 (adversarial pass): a
# server that echoes the AUTH command's arguments ("ERR unknown command
# 'AUTH', with args beginning with: 'PASSWORD'": Redis with AUTH renamed
# away) cuts each argument to fit 128 bytes: a long password (or one after
# a long user name) comes back cut, and scrubbing only the whole password
# missed it.  No output of dlock may hold the password's first 5 bytes.
# A private redis-server on a unix socket only (--port 0): no network.
DLOCK=$1
skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $1 (CI=true: a missing capability fails)"
        exit 1
    fi
    echo "SKIP: $1"
    exit 77
}
command -v redis-server >/dev/null || skip "no redis-server"
"$DLOCK" --version | grep -q redis || skip "dlock built without Redis"
T=$(mktemp -d /tmp/dlock-redact-auth-XXXXXX)
redis-server --port 0 --unixsocket "$T/r.sock" --dir "$T" --save '' \
    --appendonly no --rename-command AUTH '""' --daemonize yes \
    --pidfile "$T/pid" --logfile "$T/log" || skip "redis-server does not start"
trap 'redis-cli -s "$T/r.sock" shutdown nosave >/dev/null 2>&1; rm -rf "$T"' EXIT
i=0
while ! redis-cli -s "$T/r.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 300 ] && { echo "FAIL - redis-server not ready"; exit 1; }
    sleep 0.1 # polling a server that is starting: no event to wait on
done
# The reply must echo the argument, else the test proves nothing.
case $(redis-cli -s "$T/r.sock" AUTH EchoCheck1) in
*EchoCheck1*) ;;
*) skip "this redis-server does not echo an unknown command's arguments" ;;
esac
fails=0
n=0
long=$(printf 'Lq7%0200d' 0 | tr 0 x)Zq9
longuser=$(printf 'U%0119d' 0 | tr 0 u)
for case in ":$long" "$longuser:Mid7Secret" "u:$long" ":Pw8Secret9"; do
    pw=${case#*:}
    head5=$(printf '%.5s' "$pw")
    for cmd in "status x" "list" "run -n x -- true"; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        "$DLOCK" -s "unix://$case@$T/r.sock" $cmd >"$T/out" 2>&1 </dev/null
        if ! grep -q 'authentication failed' "$T/out"; then
            echo "FAIL - expected an AUTH failure: dlock $cmd"
            sed 's/^/    /' "$T/out"
            fails=$((fails + 1))
        elif grep -q "$head5" "$T/out"; then
            echo "FAIL - the password's head in: dlock -s unix://${case%%:*}:...@ $cmd"
            sed 's/^/    /' "$T/out"
            fails=$((fails + 1))
        fi
    done
done
if [ "$fails" -gt 0 ]; then
    echo "redact auth echo: $fails of $n outputs hold a password's head"
    exit 1
fi
echo "redact auth echo: $n outputs, none holds a password's head"
