#!/bin/sh
# test_redact_server.sh DLOCK STORE URL - issue 33 item 7: a password
# holding '@', '/', '?', '#', ':' and '%' works when percent-encoded (and
# one with a bare '@' works too: dlock's parse, the last '@', is what the
# driver gets), against a real server on loopback whose user has that
# password; a wrong password's message holds neither form of it.
# STORE: postgres, redis, mysql or etcd (auth enabled here: a root user
# and two users with the root role); the server is started here on loopback
# (scripts/server-STORE.sh, which makes the users) and stopped at the end.
DLOCK=$1
STORE=$2
SCRIPTS=$(cd "$(dirname "$0")/../../scripts" && pwd)
D=$(mktemp -d /tmp/dlock-redact-srv-XXXXXX)
trap '"$SCRIPTS/server-$STORE.sh" stop "$D" >/dev/null 2>&1; rm -rf "$D"' EXIT
URL=$("$SCRIPTS/server-$STORE.sh" start "$D") || {
    echo "SKIP: cannot start a $STORE server"; exit 77; }
PW='Sx7@pa/ss?wo#rd:%41'
ENC='Sx7%40pa%2Fss%3Fwo%23rd%3A%2541'
BARE='Sx7@bare9'   # only an '@': the last '@' ends it
fails=0
ok() { echo "ok - $1"; }
fail() { echo "FAIL - $1"; fails=$((fails + 1)); }

hostpart=${URL#*://}
hostpart=${hostpart#*@}   # 127.0.0.1:port/db...
hostport=${hostpart%%/*}
rest=${hostpart#"$hostport"}
host=${hostport%:*}
port=${hostport##*:}
case $STORE in
postgres)
    "$SCRIPTS/server-postgres.sh" ctl "$D" sql --super \
        "CREATE ROLE r33a LOGIN SUPERUSER PASSWORD '$PW';
         CREATE ROLE r33b LOGIN SUPERUSER PASSWORD '$BARE'" || exit 1
    good="postgres://r33a:$ENC@$hostport$rest"
    bare="postgres://r33b:$BARE@$hostport$rest"
    bad="postgres://r33a:${ENC}x@$hostport$rest"
    ;;
redis)
    redis-cli -u "$URL" ACL SETUSER r33a on ">$PW" '~*' '&*' '+@all' >/dev/null &&
    redis-cli -u "$URL" ACL SETUSER r33b on ">$BARE" '~*' '&*' '+@all' >/dev/null || exit 1
    good="redis://r33a:$ENC@$hostport$rest"
    bare="redis://r33b:$BARE@$hostport$rest"
    bad="redis://r33a:${ENC}x@$hostport$rest"
    ;;
mysql)
    "$SCRIPTS/server-mysql.sh" ctl "$D" sql --root \
        "CREATE USER r33a IDENTIFIED BY '$PW'; CREATE USER r33b IDENTIFIED BY '$BARE';
         GRANT ALL ON *.* TO r33a; GRANT ALL ON *.* TO r33b" || exit 1
    good="mysql://r33a:$ENC@$hostport$rest"
    bare="mysql://r33b:$BARE@$hostport$rest"
    bad="mysql://r33a:${ENC}x@$hostport$rest"
    ;;
etcd)
    ectl() { "$SCRIPTS/server-etcd.sh" ctl "$D" etcdctl "$@" >/dev/null; }
    ectl user add root --new-user-password=root-pw --interactive=false &&
    ectl user grant-role root root &&
    ectl auth enable &&
    ectl --user root:root-pw user add r33a --new-user-password="$PW" \
        --interactive=false &&
    ectl --user root:root-pw user grant-role r33a root &&
    ectl --user root:root-pw user add r33b --new-user-password="$BARE" \
        --interactive=false &&
    ectl --user root:root-pw user grant-role r33b root || exit 1
    good="etcd://r33a:$ENC@$hostport$rest"
    bare="etcd://r33b:$BARE@$hostport$rest"
    bad="etcd://r33a:${ENC}x@$hostport$rest"
    # Several endpoints (a closed one first): the password still goes to
    # the one that answers, and no message holds it.
    closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    multi="etcd://r33a:$ENC@127.0.0.1:$closed,$hostport$rest"
    ;;
*) echo "usage: $0 DLOCK postgres|redis|mysql|etcd URL"; exit 64 ;;
esac

out=$("$DLOCK" -s "$good" run -n redact33 -- sh -c 'echo "$DLOCK_STORE"' 2>&1)
rc=$?
[ $rc = 0 ] && ok "percent-encoded '@/?#:%' password connects" ||
    fail "percent-encoded password: rc $rc: $out"
case $out in *Sx7*|*pa/ss*|*pa%2F*) fail "child saw the password: $out" ;; esac
out=$(DLOCK_STORE="$bare" "$DLOCK" status redact33 --json 2>&1)
rc=$?
[ $rc = 3 ] && ok "a bare '@' in a password connects (the last '@' ends it)" ||
    fail "bare '@': rc $rc: $out"
case $out in *Sx7*|*bare9*) fail "status printed the password: $out" ;; esac
out=$("$DLOCK" -s "$bad" status redact33 2>&1)
rc=$?
[ $rc = 69 ] && ok "a wrong password is refused (rc $rc)" || fail "wrong password: rc $rc"
case $out in
*Sx7*|*pa/ss*|*pa%2F*|*wo#rd*|*wo%23*) fail "wrong password printed: $out" ;;
*) ok "no password in the message: $out" ;;
esac
if [ "$STORE" = etcd ]; then
    # Endpoints in turn: a closed first one, then the server; verbose.
    out=$("$DLOCK" -v -s "$multi" run -n redact33 -- true 2>&1)
    rc=$?
    [ $rc = 0 ] && ok "a closed endpoint first, then the server: connects" ||
        fail "several endpoints: rc $rc: $out"
    case $out in
    *Sx7*|*pa/ss*|*pa%2F*|*wo#rd*|*wo%23*) fail "-v printed the password: $out" ;;
    *) ok "no password in -v's output" ;;
    esac
    # A wrong password with every endpoint tried: nothing prints it.
    out=$("$DLOCK" -v -s "etcd://r33a:${ENC}x@127.0.0.1:$closed,$hostport" \
        status redact33 2>&1)
    rc=$?
    case $rc:$out in
    0:* | 3:*) fail "a wrong password over two endpoints was accepted" ;;
    *Sx7*|*pa/ss*|*pa%2F*|*wo#rd*|*wo%23*) fail "wrong password printed: $out" ;;
    *) ok "a wrong password over two endpoints: rc $rc, no password" ;;
    esac
fi
[ $fails = 0 ] || exit 1
echo PASS
