#!/bin/bash
# `dlock check` (issue 47) on one store:
#   test_check.sh KIND DLOCK URL [DIR SERVER_SCRIPT]
# KIND: sqlite, redis, redis-tls, postgres, postgres-tls (a server of its
# own: TLS is turned on here), mysql, etcd.  URL: a working
# store (the test servers' DLOCK_TEST_*_URL; for sqlite a file's URL);
# DIR and SERVER_SCRIPT: the server's directory and scripts/server-*.sh,
# to make logins with a wrong password or no rights.
#
# Every check passes on a good store (exit 0, one line each, in order);
# --json is one JSON object with the same checks; a bad URL exits 64; a
# closed port (SQLite: a file in a missing directory) 69; a wrong password
# 69 saying "authentication"; a login without rights 69 with the server's
# words; a --metrics-file whose directory takes no file 73.
set -u
kind=$1 dlock=$2 url=$3 dir=${4:-} script=${5:-}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
if [ -z "$url" ]; then
    echo "no $kind server (DLOCK_TEST_*_URL)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
t=$(mktemp -d /tmp/dlock-check.XXXXXX)
cleanup() {
    [ -n "${auth_sub:-}" ] && "$script" ctl "$dir" stop-auth "$auth_sub" >/dev/null 2>&1
    [ -n "${tls_sub:-}" ] && "$script" ctl "$dir" stop-tls "$tls_sub" >/dev/null 2>&1
    rm -rf "$t"
}
trap cleanup EXIT
unset DLOCK_STORE DLOCK_STORE_FILE DLOCK_METRICS_FILE

# run URL ARGS...: $out (stdout and stderr), $rc.
run() {
    local u=$1
    shift
    out=$(timeout 60 "$dlock" -s "$u" check "$@" 2>&1)
    rc=$?
}
# expect WHAT RC PATTERN...: the last run exited RC and its output holds
# every PATTERN (an extended regex, case-insensitive).
expect() {
    local what=$1 want=$2 p
    shift 2
    if [ "$rc" != "$want" ]; then
        bad "$what: exit $rc, wanted $want: $out"
        return 1
    fi
    for p in "$@"; do
        if ! printf '%s\n' "$out" | grep -Eqi -- "$p"; then
            bad "$what: no /$p/ in: $out"
            return 1
        fi
    done
    ok "$what"
}
# The URL with its password replaced (scheme://user:PW@...).
with_password() { printf '%s' "$1" | sed -E "s#^([a-z+-]+://[^:/@]*):[^@]*@#\\1:$2@#"; }
# The URL with its port replaced by a closed one.
closed_port() {
    local p
    p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    printf '%s' "$1" | sed -E "s#(@|//)(127\\.0\\.0\\.1|localhost):[0-9]+#\\1\\2:$p#"
}

# --- PostgreSQL over TLS: its own server, TLS turned on here -------------
if [ "$kind" = postgres-tls ]; then
    command -v openssl >/dev/null || { echo "no openssl"; exit 77; }
    data=$dir/data
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=127.0.0.1 \
        -keyout "$data/check.key" -out "$data/check.crt" >/dev/null 2>&1 ||
        { echo "FAIL cannot make a certificate"; exit 1; }
    chmod 600 "$data/check.key"
    [ "$(id -u)" = 0 ] && chown "$(stat -c %u "$data")" "$data/check.key" "$data/check.crt"
    for set in "ssl_cert_file = '$data/check.crt'" "ssl_key_file = '$data/check.key'" "ssl = on"; do
        "$script" ctl "$dir" sql --super "ALTER SYSTEM SET $set" >/dev/null ||
            { echo "FAIL ALTER SYSTEM SET $set"; exit 1; }
    done
    "$script" ctl "$dir" sql --super "SELECT pg_reload_conf()" >/dev/null
    # A new session forks from the postmaster: once one says ssl is on,
    # the postmaster has read the new configuration (bounded).
    for _ in $(seq 100); do
        [ "$("$script" ctl "$dir" sql --super "SHOW ssl")" = on ] && break
        sleep 0.1
    done
    url="$url?sslmode=require"
fi

# --- a good store: every check passes ------------------------------------
run "$url"
printf '%s\n' "$out" | sed 's/^/    | /'
expect "$kind: a good store passes (exit 0)" 0 \
    '^ok +url ' '^ok +connect ' '^(ok|warn) +tls ' '^ok +tables ' \
    '^ok +rights +took, read and gave back the lock dlock-check/' \
    '^(ok|warn|skip) +clock ' '^skip +metrics '
names=$(printf '%s\n' "$out" | awk '{print $2}' | tr '\n' ' ')
[ "$names" = "url connect tls tables rights clock metrics " ] &&
    ok "$kind: the checks in order" || bad "$kind: checks '$names'"
if printf '%s\n' "$out" | grep -q 'dlock-test-pw\|other-pw'; then
    bad "$kind: a password is shown: $out"
fi
case $kind in
sqlite) expect "$kind: the store's clock is this host's" 0 '^ok +clock +skew \+0 ms' ;;
etcd) expect "$kind: the clock says it has seconds only" 0 'whole seconds' ;;
*) expect "$kind: the clock is measured" 0 '^(ok|warn) +clock +(skew|store)' ;;
esac
case $kind in
redis-tls) expect "$kind: TLS, the certificate's days left" 0 \
    '^ok +tls +in use, TLSv1\.[23]; server certificate valid [0-9]+ more days' ;;
postgres-tls) expect "$kind: TLS, the certificate's days left" 0 \
    '^ok +tls +in use, TLSv1\.[23]; server certificate valid (29|30) more days' ;;
postgres | mysql | etcd) expect "$kind: TLS not in use" 0 '^ok +tls +not in use' ;;
esac

# --- --json: one object, the same checks ---------------------------------
mkdir "$t/prom"
out=$(timeout 60 "$dlock" -s "$url" check --json --metrics-file "$t/prom/dlock.prom" 2>"$t/err")
rc=$?
if [ "$rc" = 0 ] && printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [c["name"] for c in d["checks"]]
assert names == ["url", "connect", "tls", "tables", "rights", "clock",
                 "metrics"], names
assert d["ok"] is True and d["exit_code"] == 0, d
for c in d["checks"]:
    assert c["status"] in ("ok", "warn", "skip"), c
    assert isinstance(c["detail"], str) and c["detail"], c
clock = d["checks"][5]
if clock["status"] != "skip":
    assert isinstance(clock["skew_ms"], int), clock
    assert isinstance(clock["rtt_ms"], int), clock
assert d["checks"][6]["status"] == "ok", d["checks"][6]
'; then
    ok "$kind: --json parses, the checks with skew_ms, metrics ok"
else
    bad "$kind: --json (exit $rc): $out $(cat "$t/err")"
fi
[ -z "$(ls -A "$t/prom")" ] && ok "$kind: the metrics check left no file" ||
    bad "$kind: left in the metrics dir: $(ls -A "$t/prom")"

# --- usage and a bad URL: 64 ---------------------------------------------
out=$("$dlock" -s "$url" check --help 2>&1)
rc=$?
expect "$kind: check --help" 0 '^usage: dlock \[-s URL\] check ' 'exit codes'
run "bogus://127.0.0.1/x"
expect "$kind: an unknown scheme is 64" 64 '^FAIL +url +unknown store scheme' \
    '^skip +connect '
run "$url" --no-such-option
expect "$kind: an unknown option is 64" 64 'unexpected argument'
run "$url" --max-skew soon
expect "$kind: a bad --max-skew is 64" 64 'max-skew'

# --- the metrics directory: 73 -------------------------------------------
run "$url" --metrics-file "$t/missing/dlock.prom"
expect "$kind: a missing metrics dir is 73" 73 '^FAIL +metrics .*missing'
: >"$t/afile"
DLOCK_METRICS_FILE="$t/afile/dlock.prom" run "$url"
expect "$kind: DLOCK_METRICS_FILE under a file is 73" 73 \
    '^FAIL +metrics .*not a directory' '^ok +rights '
if [ "$(id -u)" != 0 ]; then
    mkdir "$t/ro" && chmod 555 "$t/ro"
    run "$url" --metrics-file "$t/ro/dlock.prom"
    expect "$kind: a read-only metrics dir is 73" 73 '^FAIL +metrics .*permission denied'
fi

# --- the store unreachable: 69 -------------------------------------------
if [ "$kind" = sqlite ]; then
    run "sqlite://$t/no/such/dir/x.db"
    expect "$kind: a file in a missing directory is 69" 69 '^FAIL +connect ' \
        '^skip +rights '
else
    cu=$(closed_port "$url")
    if [ "$cu" = "$url" ]; then
        bad "$kind: cannot make a closed-port URL of $url"
    else
        run "$cu"
        expect "$kind: a closed port is 69" 69 '^FAIL +connect ' \
            '^skip +tables +not connected'
    fi
fi

# --- a wrong password: 69, "authentication" ------------------------------
wrong_pw() { # URL: a login whose password is wrong
    run "$(with_password "$1" wrong-pw-123)"
    printf '%s\n' "$out" | sed 's/^/    | /'
    expect "$kind: a wrong password is 69, saying authentication" 69 \
        '^FAIL +connect .*authentication failed' '^skip +rights '
    if printf '%s\n' "$out" | grep -qi 'authentication failed.*authentication failed'; then
        bad "$kind: 'authentication failed' twice: $out"
    fi
    if printf '%s\n' "$out" | grep -q 'wrong-pw-123'; then
        bad "$kind: the wrong password is shown: $out"
    fi
}
# A login without rights: 69 with the server's words.
no_rights() { # URL PATTERN
    run "$1"
    printf '%s\n' "$out" | sed 's/^/    | /'
    expect "$kind: a login without rights is 69" 69 '^FAIL +(connect|tables|rights) ' "$2"
}
case $kind in
postgres | postgres-tls)
    wrong_pw "$url"
    "$script" ctl "$dir" sql --super "SET client_min_messages = warning; DROP ROLE IF EXISTS chk_nr; CREATE ROLE chk_nr LOGIN PASSWORD 'nr-pw'" >/dev/null
    no_rights "$(printf '%s' "$url" | sed -E 's#//[^@]*@#//chk_nr:nr-pw@#')" 'permission denied'
    ;;
mysql)
    wrong_pw "$url"
    db=${url##*/}
    db=${db%%\?*}
    "$script" ctl "$dir" sql --root "DROP USER IF EXISTS 'chk_ro'@'127.0.0.1'; CREATE USER 'chk_ro'@'127.0.0.1' IDENTIFIED BY 'ro-pw'; GRANT SELECT ON $db.* TO 'chk_ro'@'127.0.0.1'; FLUSH PRIVILEGES" >/dev/null
    no_rights "$(printf '%s' "$url" | sed -E 's#//[^@]*@#//chk_ro:ro-pw@#')" 'denied'
    ;;
redis)
    auth_sub=check-auth-$$
    aurl=$("$script" ctl "$dir" start-auth "$auth_sub" 'chk-pw-1') || aurl=
    if [ -n "$aurl" ]; then
        run "$aurl"
        expect "$kind: the password-protected server passes" 0 '^ok +rights '
        wrong_pw "$aurl"
    else
        bad "$kind: cannot start a server with requirepass"
    fi
    "$script" ctl "$dir" cli ACL SETUSER chk_nr reset on '>nr-pw' '+@connection' >/dev/null
    no_rights "$(printf '%s' "$url" | sed -E 's#redis://#redis://chk_nr:nr-pw@#')" 'NOPERM|no permissions'
    "$script" ctl "$dir" cli ACL DELUSER chk_nr >/dev/null
    ;;
redis-tls)
    tls_sub=check-exp-$$
    eurl=$("$script" ctl "$dir" start-tls "$tls_sub" expired) || eurl=
    if [ -n "$eurl" ]; then
        run "$eurl"
        printf '%s\n' "$out" | sed 's/^/    | /'
        expect "$kind: an expired server certificate is 69" 69 '^FAIL +connect .*expired'
    else
        bad "$kind: cannot start a server with an expired certificate"
    fi
    ;;
esac

if [ "$fails" -gt 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "all passed"
