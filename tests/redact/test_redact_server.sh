#!/bin/sh
# test_redact_server.sh DLOCK STORE URL - issue 33 item 7: a password
# holding '@', '/', '?', '#', ':' and '%' works when percent-encoded (and
# one with a bare '@' works too: dlock's parse, the last '@', is what the
# driver gets), against a real server on loopback whose user has that
# password; a wrong password's message holds neither form of it.
# STORE: postgres, redis or mysql; the server is started here on loopback
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
*) echo "usage: $0 DLOCK postgres|redis|mysql URL"; exit 64 ;;
esac

out=$("$DLOCK" -s "$good" run -n redact33 -- sh -c 'echo "$DLOCK_STORE"' 2>&1)
rc=$?
[ $rc = 0 ] && ok "percent-encoded '@/?#:%' password connects" ||
    fail "percent-encoded password: rc $rc: $out"
case $out in *Sx7*|*pa/ss*|*pa%2F*) fail "child saw the password: $out" ;; esac
out=$(DLOCK_STORE="$bare" "$DLOCK" status redact33 --json 2>&1)
rc=$?
[ $rc = 0 ] && ok "a bare '@' in a password connects (the last '@' ends it)" ||
    fail "bare '@': rc $rc: $out"
case $out in *Sx7*|*bare9*) fail "status printed the password: $out" ;; esac
out=$("$DLOCK" -s "$bad" status redact33 2>&1)
rc=$?
[ $rc != 0 ] && ok "a wrong password is refused (rc $rc)" || fail "wrong password accepted"
case $out in
*Sx7*|*pa/ss*|*pa%2F*|*wo#rd*|*wo%23*) fail "wrong password printed: $out" ;;
*) ok "no password in the message: $out" ;;
esac
[ $fails = 0 ] || exit 1
echo PASS
