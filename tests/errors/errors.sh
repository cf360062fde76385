#!/bin/bash
# Each failure class gets its include/dlock.h code on this store, set up
# for real on the test server (users made through its admin access), and
# on Redis: a user name without a password is sent (item 9), and
# release --force refuses a name that spells another lock's derived keys
# (item 14).
#   errors.sh STORE DLOCK ERRORS SERVER_SCRIPT URL DIR
set -u
store=$1 dlock=$2 errors=$3 script=$4 url=$5 dir=$6
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }

[ -n "$url" ] && [ -n "$dir" ] || { echo "no $store server (DLOCK_TEST_*_URL/_DIR)"; exit 77; }

# A port on 127.0.0.1 nobody listens on (the kernel's pick, then closed).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
port=$(free_port)
hostport=${url#*://}
hostport=${hostport#*@}
hostport=${hostport%%/*}
hostport=${hostport%%\?*}
scheme=${url%%://*}

case $store in
sqlite)
    # Permission: a directory this (unprivileged) user may not enter; as
    # root the test runs the check as nobody.
    t=$(mktemp -d)
    trap 'chmod 755 "$t/closed" 2>/dev/null; rm -rf "$t"' EXIT
    mkdir -p "$t/closed" "$t/ro"
    chmod 755 "$t"
    chmod 000 "$t/closed"
    chmod 555 "$t/ro"
    run=()
    if [ "$(id -u)" -eq 0 ]; then
        command -v setpriv >/dev/null || { echo "no setpriv"; exit 77; }
        run=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    fi
    "${run[@]}" "$errors" \
        permission "sqlite://$t/closed/x.db" \
        permission "sqlite://$t/ro/x.db" || fail=1
    ;;
redis)
    cli() { "$script" ctl "$dir" cli "$@"; }
    cli ACL SETUSER dl-pw on '>right-pw' '~*' '&*' '+@all' >/dev/null
    cli ACL SETUSER dl-noperm on '>pw' '~other:*' '&*' '+@all' >/dev/null
    cli ACL SETUSER dl-nopass on nopass '~other:*' '&*' '+@all' >/dev/null
    cli ACL SETUSER dl-nopass-ok on nopass '~*' '&*' '+@all' >/dev/null
    "$errors" \
        unreachable "redis://127.0.0.1:$port" \
        credentials "redis://dl-pw:wrong-pw@$hostport" \
        credentials "redis://dl-pw@$hostport" \
        permission "redis://dl-noperm:pw@$hostport" \
        permission "redis://dl-nopass@$hostport" \
        misconfig "redis://$hostport/9999" || fail=1
    # A nopass user given without a password is the user that connects.
    if "$dlock" -s "redis://dl-nopass-ok@$hostport" run -n errors-nopass -- true; then
        ok "redis://dl-nopass-ok@host works"
    else
        bad "redis://dl-nopass-ok@host failed"
    fi
    # release --force of x + 0xff + a suffix must not reach x's keys.
    t=$(mktemp -d)
    holder=
    trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; rm -rf "$t"' EXIT
    mkfifo "$t/up" "$t/go"
    "$dlock" -s "$url" run -n errx -- true || bad "run errx failed"
    "$dlock" -s "$url" run -n errx -- sh -c "echo up >'$t/up'; read _ <'$t/go'" &
    holder=$!
    read -r _ <"$t/up"
    fence=$(cli GET $'dlock:errx\xfffence')
    [ -n "$fence" ] || bad "no fence counter for errx"
    for suf in fence info queue waiters readers sem; do
        out=$("$dlock" -s "$url" release --force $'errx\xff'"$suf" 2>&1)
        rc=$?
        if [ "$rc" = 0 ] || ! printf '%s' "$out" | grep -q "0xfe or 0xff"; then
            bad "release --force errx\\xff$suf: exit $rc: $out"
        else
            ok "release --force errx\\xff$suf refused (exit $rc)"
        fi
    done
    out=$("$dlock" -s "$url" release --force $'errx\xfe' 2>&1) &&
        bad "release --force errx\\xfe: $out"
    [ "$(cli GET $'dlock:errx\xfffence')" = "$fence" ] &&
        ok "errx's fence counter is still $fence" ||
        bad "errx's fence counter changed: $(cli GET $'dlock:errx\xfffence')"
    [ "$(cli EXISTS dlock:errx)" = 1 ] && ok "errx is still held" ||
        bad "errx's lock key is gone"
    echo go >"$t/go"
    wait "$holder" && ok "errx's holder ended 0 (never lost)" ||
        bad "errx's holder exited $?"
    holder=
    ;;
redis-tls)
    # An encrypted client key: refused with a message naming the file,
    # never a pass phrase prompt, on a terminal (a pty: OpenSSL's own
    # prompt would wait there for ever) or without one.
    command -v script >/dev/null || { echo "no script(1)"; exit 77; }
    certs=$dir/tls-certs
    t=$(mktemp -d)
    trap 'rm -rf "$t"' EXIT
    openssl pkey -in "$certs/client.key" -aes256 -passout pass:secret \
        -out "$t/enc.key" 2>/dev/null || { bad "openssl pkey"; exit 1; }
    u="$url&cert=$certs/client.crt&key=$t/enc.key"
    printf '%q ' "$dlock" -s "$u" status errors-tls >"$t/run.sh"
    printf '\necho "exit $?"\n' >>"$t/run.sh"
    # On a pty, stdin the terminal; bounded, so a prompt fails, not hangs.
    timeout 20 script -qec "bash '$t/run.sh'" /dev/null </dev/null \
        >"$t/tty.out" 2>&1
    out=$(tr -d '\r' <"$t/tty.out")
    case $out in
    *"Enter PEM"*) bad "on a terminal it asked for a pass phrase: $out" ;;
    *"client key $t/enc.key: it is encrypted"*"exit 69"*) ok "on a terminal: refused, no prompt" ;;
    *) bad "on a terminal: $out" ;;
    esac
    out=$(timeout 20 "$dlock" -s "$u" status errors-tls </dev/null 2>&1)
    rc=$?
    case $out in
    *"Enter PEM"*) bad "without a terminal it asked for a pass phrase: $out" ;;
    *"client key $t/enc.key: it is encrypted"*)
        [ "$rc" = 69 ] && ok "without a terminal: refused (exit 69)" ||
            bad "without a terminal: exit $rc: $out" ;;
    *) bad "without a terminal: exit $rc: $out" ;;
    esac
    # The same key unencrypted works.
    "$dlock" -s "$url&cert=$certs/client.crt&key=$certs/client.key" \
        status errors-tls >/dev/null
    [ $? = 3 ] && ok "the unencrypted key works" ||
        bad "the unencrypted key failed"
    ;;
postgres)
    sql() { "$script" ctl "$dir" sql --super "$1" >/dev/null; }
    "$dlock" -s "$url" status errors-class >/dev/null
    [ $? = 3 ] || bad "status on $url (3: free)"
    sql "DROP ROLE IF EXISTS dl_noperm"
    sql "CREATE ROLE dl_noperm LOGIN PASSWORD 'pw'"
    "$errors" \
        unreachable "$scheme://dlock:dlock-test-pw@127.0.0.1:$port/dlocktest" \
        credentials "$scheme://dlock:wrong-pw@$hostport/dlocktest" \
        credentials "$scheme://dlock@$hostport/dlocktest" \
        permission "$scheme://dl_noperm:pw@$hostport/dlocktest" \
        misconfig "$scheme://dlock:dlock-test-pw@$hostport/no_such_db" || fail=1
    # A role at its CONNECTION LIMIT is refused after its password was
    # taken: "not now" (a connection ending frees it), not a bad password.
    sql "DROP ROLE IF EXISTS dl_full"
    sql "CREATE ROLE dl_full LOGIN PASSWORD 'pw' CONNECTION LIMIT 1"
    sql "GRANT dlock TO dl_full"
    full="$scheme://dl_full:pw@$hostport/dlocktest"
    fifo=$(mktemp -u /tmp/dlock-errors-full.XXXXXX)
    mkfifo "$fifo"
    # psql holds the role's one connection until the fifo is closed.
    psql -X -q "postgresql://dl_full:pw@$hostport/dlocktest" <"$fifo" >/dev/null 2>&1 &
    holder=$!
    exec 9>"$fifo"
    echo "SELECT 1;" >&9
    for _ in $(seq 100); do
        n=$("$script" ctl "$dir" sql --super \
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'dl_full'")
        [ "$n" = 1 ] && break
        sleep 0.1
    done
    [ "$n" = 1 ] || bad "the role's one connection did not show up"
    "$errors" unreachable "$full" || fail=1
    # ...and a waiter waits it out: the limit is lifted a second after it
    # started (a waiter that gave up at once fails here).
    ( exec 9>&-; sleep 1; sql "ALTER ROLE dl_full CONNECTION LIMIT -1" ) &
    lifter=$!
    "$dlock" -s "$full" run -w 20 errors-full -- true ||
        bad "a waiter did not wait out the role's connection limit"
    wait "$lifter"
    exec 9>&-
    wait "$holder" 2>/dev/null
    rm -f "$fifo"
    ;;
mysql)
    sql() { "$script" ctl "$dir" sql --root "$1" >/dev/null; }
    "$dlock" -s "$url" status errors-class >/dev/null
    [ $? = 3 ] || bad "status on $url (3: free)"
    sql "DROP USER IF EXISTS 'dl_noperm'@'%'"
    sql "CREATE USER 'dl_noperm'@'%' IDENTIFIED BY 'pw'"
    "$errors" \
        unreachable "$scheme://dlock:dlock-test-pw@127.0.0.1:$port/dlocktest" \
        credentials "$scheme://dlock:wrong-pw@$hostport/dlocktest" \
        permission "$scheme://dl_noperm:pw@$hostport/dlocktest" \
        misconfig "$scheme://dlock:dlock-test-pw@$hostport/no_such_db" || fail=1
    # release --force of a semaphore slot key or a waiter row's name.
    "$errors" force-derived "$url" || fail=1
    ;;
etcd)
    # The shared server only reads and takes names; anything that changes
    # the server (auth enable is global) is done on a throwaway etcd.
    "$dlock" -s "$url" status errors-class >/dev/null
    [ $? = 3 ] || bad "status on $url (3: free)"
    port2=$(free_port)
    # A URL the store refuses: EINVAL before any connection.
    "$errors" \
        badurl "etcd://" \
        badurl "etcd://127.0.0.1:0" \
        badurl "etcd://127.0.0.1:65536" \
        badurl "etcd://127.0.0.1:x" \
        badurl "etcd://$hostport,,127.0.0.1:$port" \
        badurl "etcd://$hostport," \
        badurl "etcd://,$hostport" \
        badurl "etcd://$hostport,127.0.0.1:" \
        badurl "etcd://$hostport/some/path" \
        badurl "etcd://$hostport?nosuch=1" \
        badurl "etcd://$hostport?cacert=/nonexistent" \
        badurl "etcd://$hostport?timeout=0" \
        badurl "etcd://$hostport?timeout=abc" \
        badurl "etcd://:pw@$hostport" || fail=1
    # The CLI says so with 69 ("its URL is wrong"), naming the problem.
    out=$("$dlock" -s "etcd://$hostport,,127.0.0.1:$port" status errors-class 2>&1)
    rc=$?
    case $rc:$out in
    69:*"empty etcd host"*) ok "dlock: an empty endpoint: exit 69: $out" ;;
    *) bad "dlock: an empty endpoint: exit $rc: $out" ;;
    esac
    # Unreachable: one closed port, and every endpoint closed.
    "$errors" \
        unreachable "etcd://127.0.0.1:$port" \
        unreachable "etcd://127.0.0.1:$port,127.0.0.1:$port2" || fail=1
    out=$("$dlock" -s "etcd://127.0.0.1:$port,127.0.0.1:$port2" status errors-class 2>&1)
    rc=$?
    [ "$rc" = 69 ] && ok "dlock: no endpoint answers: exit 69: $out" ||
        bad "dlock: no endpoint answers: exit $rc: $out"
    # Endpoints are tried in turn: a closed first one is passed over.
    "$dlock" -s "etcd://127.0.0.1:$port,$hostport" run -n errors-ep -- true &&
        ok "a closed first endpoint is passed over" ||
        bad "etcd://127.0.0.1:$port,$hostport failed"
    # A user on a server without auth: refused, not ignored.
    "$errors" misconfig "etcd://dl-pw:right-pw@$hostport" || fail=1

    # release --force of a name spelt as a holder's key (NAME/<lease hex>)
    # or of NAME when NAME/sub is held touches neither.
    t=$(mktemp -d)
    h1= h2=
    own=$t/etcd
    trap 'kill $h1 $h2 2>/dev/null; "$script" stop "$own" >/dev/null 2>&1; rm -rf "$t"' EXIT
    mkfifo "$t/up1" "$t/up2" "$t/go1"
    "$dlock" -s "$url" run -n errx -- sh -c "echo up >'$t/up1'; read _ <'$t/go1'" &
    h1=$!
    "$dlock" -s "$url" run -n errx/sub -- sh -c "echo up >'$t/up2'; exec sleep 60" &
    h2=$!
    read -r _ <"$t/up1"
    read -r _ <"$t/up2"
    key=$("$script" ctl "$dir" etcdctl get --prefix errx/ --keys-only |
        grep -E '^errx/[0-9a-f]+$' | head -1)
    [ -n "$key" ] || bad "no holder key errx/<hex> in etcd"
    out=$("$dlock" -s "$url" release --force "$key" 2>&1)
    rc=$?
    [ -n "$("$script" ctl "$dir" etcdctl get "$key" --keys-only)" ] &&
        ok "release --force $key (exit $rc: $out) left errx's key" ||
        bad "release --force $key (exit $rc: $out) deleted errx's key"
    "$dlock" -s "$url" release --force errx/sub >/dev/null 2>&1 ||
        bad "release --force errx/sub failed"
    [ -z "$("$script" ctl "$dir" etcdctl get --prefix errx/sub/ --keys-only)" ] ||
        bad "release --force errx/sub left errx/sub's key"
    [ -n "$("$script" ctl "$dir" etcdctl get "$key" --keys-only)" ] &&
        ok "release --force errx/sub left $key" ||
        bad "release --force errx/sub deleted $key"
    kill "$h2" 2>/dev/null
    wait "$h2" 2>/dev/null
    h2=
    timeout 10 sh -c "echo go >'$t/go1'" || bad "errx's holder is gone"
    wait "$h1"
    rc=$?
    h1=
    [ "$rc" = 0 ] && ok "errx's holder ended 0 (never lost)" ||
        bad "errx's holder exited $rc"

    # Credentials and permissions: a throwaway etcd with auth enabled.
    mkdir -p "$own"
    own_url=$("$script" start "$own") || { bad "cannot start an etcd in $own"; exit 1; }
    own_hp=${own_url#etcd://}
    ectl() { "$script" ctl "$own" etcdctl --user root:root-pw "$@" >/dev/null; }
    "$script" ctl "$own" etcdctl user add root --new-user-password=root-pw \
        --interactive=false >/dev/null || bad "user add root"
    "$script" ctl "$own" etcdctl user grant-role root root >/dev/null ||
        bad "grant root the root role"
    "$script" ctl "$own" etcdctl auth enable >/dev/null || bad "auth enable"
    ectl user add dl-pw --new-user-password=right-pw --interactive=false
    ectl role add dl-rw
    ectl role grant-permission dl-rw readwrite --prefix=true errors-
    ectl user grant-role dl-pw dl-rw
    ectl user add dl-ro --new-user-password=pw --interactive=false
    ectl role add dl-ro
    ectl role grant-permission dl-ro read --prefix=true errors-
    ectl user grant-role dl-ro dl-ro
    ectl user add dl-none --new-user-password=pw --interactive=false
    "$dlock" -s "etcd://dl-pw:right-pw@$own_hp" run -n errors-auth -- true &&
        ok "the right password works" || bad "etcd://dl-pw:right-pw@ failed"
    "$errors" \
        credentials "etcd://dl-pw:wrong-pw@$own_hp" \
        credentials "etcd://dl-pw@$own_hp" \
        credentials "etcd://no-such-user:pw@$own_hp" \
        credentials "etcd://$own_hp" \
        permission "etcd://dl-ro:pw@$own_hp" \
        permission "etcd://dl-none:pw@$own_hp" || fail=1
    out=$("$dlock" -s "etcd://dl-pw:wrong-pw@$own_hp" status errors-class 2>&1)
    rc=$?
    case $rc:$out in
    *wrong-pw*) bad "the wrong password is in the message: $out" ;;
    69:*) ok "dlock: a wrong password: exit 69: $out" ;;
    *) bad "dlock: a wrong password: exit $rc: $out" ;;
    esac
    # The read-only user reads (status) but may not take a name.
    "$dlock" -s "etcd://dl-ro:pw@$own_hp" status errors-class >/dev/null 2>&1
    [ $? = 3 ] &&
        ok "the read-only user reads" || bad "the read-only user cannot read"
    out=$("$dlock" -s "etcd://dl-ro:pw@$own_hp" run -n errors-class -- true 2>&1)
    rc=$?
    [ "$rc" = 69 ] && ok "dlock: no write permission: exit 69: $out" ||
        bad "dlock: no write permission: exit $rc: $out"
    ;;
esac
exit $fail
