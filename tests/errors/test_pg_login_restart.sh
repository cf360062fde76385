#!/bin/bash
# A PostgreSQL server that goes down with our login in flight, after the
# password was taken, answers FATAL 57P01 ("terminating connection due to
# administrator command", a fast shutdown) or 57P02 (a crash of another
# backend): a restart, so the open is DLOCK_EUNAVAIL and `-w` waits it
# out.  A torture run's nemesis met it: a worker's open failed for good
# (torture-postgres-lease-server-faults, CI of stop 52).  A fake server
# (tests/stores/postgres/fake_closes.py: python3 on loopback, a port of
# its own) speaks the protocol up to the password, then says the FATAL;
# the control is 28P01 (the password refused), which must not be retried.
#   test_pg_login_restart.sh DLOCK
DLOCK=${1:?usage: test_pg_login_restart.sh DLOCK}
fake=$(cd "$(dirname "$0")/../stores/postgres" && pwd)/fake_closes.py
skip() {
    echo "SKIP: $*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
command -v python3 >/dev/null || skip "no python3"
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
mkfifo "$T/port"

fails=0 n=0
ok() { n=$((n + 1)); echo "ok $*"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $*"; }
# CODE MESSAGE RETRIED(yes/no)
one() {
    python3 "$fake" "$T/port" "$T/count" "$1" "$2" &
    pid=$!
    read -r port <"$T/port"
    out=$("$DLOCK" -s "postgres://u:pw@127.0.0.1:$port/db?connect_timeout=2" \
        -v run -w 1 x -- true 2>&1)
    rc=$?
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
    tries=$(printf '%s\n' "$out" | grep -c "trying again in")
    [ "$rc" = 69 ] && ok "$1: exit 69" || fail "$1: exit $rc: $out"
    case $out in *"$2"*) ok "  $1: the server's words are told" ;;
    *) fail "  $1: no '$2' in: $out" ;; esac
    if [ "$3" = yes ]; then
        [ "$tries" -ge 2 ] && ok "  $1: a restart, waited out ($tries tries)" ||
            fail "  $1: not retried ($tries): $out"
    else
        [ "$tries" = 0 ] && ok "  $1: a refusal, not retried" ||
            fail "  $1: retried $tries times: $out"
    fi
    case $out in *pw@*) fail "  $1: the password shown" ;; esac
}
one 57P01 "terminating connection due to administrator command" yes
one 57P01 "terminating connection due to unexpected postmaster exit" yes
one 57P02 "terminating connection because of crash of another server process" yes
one 57P03 "the database system is shutting down" yes
one 28P01 'password authentication failed for user "u"' no
echo "$((n - fails))/$n passed"
[ "$fails" = 0 ]
