#!/bin/bash
# Issue 43 items 3 and 17: who holds a name on MariaDB and PostgreSQL when
# it is not dlock, as the server reports it.
#   sql_squat.sh mysql|postgres DLOCK SERVER_SCRIPT URL DIR
#
# A login with no rights on dlock's database or table (MariaDB: USAGE
# only; PostgreSQL: a role refused on dlock_held) takes the name's key
# itself: GET_LOCK(name) / pg_advisory_lock(hashtextextended(name, 0)).
# Session mode then waits for it like for any peer client (interop by
# design, docs/security.md); what must hold is that `status`, the `-v`
# wait message and the --once-per skip line name that session (its
# connection id or backend pid always; its login and client address
# where dlock's login may see them), that they name ?mode=lease, and
# that ?mode=lease is not blocked by it.  MariaDB also: a row of
# its-mieger/mysql-shared-locks' PHP library is "another client", with
# its connection id, created and ttl (item 17), and a dlock deployment
# in another database of the same server blocks the name (documented).
set -u
store=$1 dlock=$2 script=$3 url=$4 dir=$5
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }

if [ -z "$url" ] || [ -z "$dir" ]; then
    echo "no $store server (DLOCK_TEST_*_URL/_DIR)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
port=$(cat "$dir/port")
t=$(mktemp -d /tmp/dlock-sql-squat.XXXXXX)
sq_pid=
cleanup() {
    [ -n "$sq_pid" ] && kill "$sq_pid" 2>/dev/null
    [ -d "$t/own-mysql" ] && "$script" stop "$t/own-mysql" >/dev/null 2>&1
    rm -rf "$t"
}
trap cleanup EXIT
name=sqsq-$$-$RANDOM

# expect WHAT TEXT PATTERN...: TEXT holds every PATTERN (a glob).
expect() {
    local what=$1 text=$2 p
    shift 2
    for p in "$@"; do
        # shellcheck disable=SC2053
        if [[ $text != *$p* ]]; then
            bad "$what: no '$p' in: $text"
            return 1
        fi
    done
    ok "$what"
}

# The squatter: a client on a coprocess; `say SQL` sends one statement,
# `hear` reads one line of its answer (bounded).
say() { printf '%s\n' "$1" >&"${SQ[1]}"; }
hear() { local l; IFS= read -r -t 20 l <&"${SQ[0]}" && printf '%s\n' "$l"; }
# The squatter's end: its input closed, its session gone.
sq_end() {
    local p=$sq_pid
    eval "exec ${SQ[1]}>&-"
    wait "$p" 2>/dev/null
    sq_pid=
}

# What every mode and store must show of a squatter SID (its session id,
# "session N": a connection id or backend pid) and WHO (its login as the status shows it,
# or "" where this login may not see it), for the name.
check_shown() {
    local u=$1 sid=$2 who=$3 out rc
    out=$("$dlock" -s "$u" status "$name" 2>&1)
    expect "status names the squatter ($sid${who:+, $who})" "$out" \
        "held by another client (not dlock)" "$sid" "$who" "?mode=lease"
    out=$("$dlock" -s "$u" status --json "$name" 2>&1)
    expect "status --json carries the squatter" "$out" '"other_client":true' \
        "\"client_id\":${sid##* }"
    out=$("$dlock" -s "$u" -v run -w 1 "$name" -- true 2>&1)
    rc=$?
    [ "$rc" != 0 ] || bad "run -w 1 ran past the squatter"
    expect "the -v wait message names the squatter" "$out" \
        "waiting for '$name': held by another client (not dlock)" "$sid" \
        "$who" "?mode=lease"
    out=$("$dlock" -s "$u" run --once-per 1h "$name" -- \
        echo must-not-run 2>&1)
    rc=$?
    [[ $out != *must-not-run* ]] || bad "--once-per ran past the squatter"
    [ "$rc" = 0 ] || bad "--once-per skip exited $rc"
    expect "the --once-per skip line names the squatter" "$out" \
        "'$name' is held now by another client (not dlock)" "$sid" "$who" \
        "?mode=lease"
}

case $store in
mysql)
    root() { "$script" ctl "$dir" sql --root "$1"; }
    my() { # my USER PW: a client of USER, unbuffered, one line per row
        mysql --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -u"$1" \
            -p"$2" --connect-timeout=5 -N -B -n ${3+"$3"}
    }
    command -v mysql >/dev/null || { echo "no mysql client"; exit 77; }
    root "DROP USER IF EXISTS 'sq_squat'@'127.0.0.1';
          DROP USER IF EXISTS 'sq_seer'@'127.0.0.1';
          CREATE USER 'sq_squat'@'127.0.0.1' IDENTIFIED BY 'sq-pw';
          CREATE USER 'sq_seer'@'127.0.0.1' IDENTIFIED BY 'sq-pw';
          GRANT ALL ON dlocktest.* TO 'sq_seer'@'127.0.0.1';
          GRANT PROCESS ON *.* TO 'sq_seer'@'127.0.0.1';
          CREATE DATABASE IF NOT EXISTS sq_other;
          GRANT ALL ON sq_other.* TO 'dlock'@'127.0.0.1';
          FLUSH PRIVILEGES;" >/dev/null || { bad "could not make the users"; exit 1; }
    "$dlock" -s "$url" status "$name" >/dev/null
    [ $? = 3 ] || bad "status on $url (3: free)"
    # USAGE only: it may not even read dlock's table.
    if echo "SELECT 1 FROM dlocktest.shared_locks LIMIT 1" |
        my sq_squat sq-pw >/dev/null 2>&1; then
        bad "sq_squat can read dlock's table"
    fi
    coproc SQ { my sq_squat sq-pw 2>&1; }
    sq_pid=$SQ_PID
    say "SELECT CONNECTION_ID(), GET_LOCK('$name', 0);"
    read -r cid got < <(hear)
    [ "${got:-}" = 1 ] || { bad "the squatter did not get GET_LOCK: $cid ${got:-}"; exit 1; }
    ok "a USAGE-only login holds GET_LOCK('$name') (connection $cid)"
    # dlock's login has no PROCESS privilege: the server shows it the
    # connection id only.  One with PROCESS sees login and address.
    check_shown "$url" "session $cid" ""
    seer="mysql://sq_seer:sq-pw@127.0.0.1:$port/dlocktest"
    check_shown "$seer" "session $cid" "user 'sq_squat' from 127.0.0.1:"
    out=$("$dlock" -s "$url?mode=lease&table=sq_lease" run -w 0 "$name" -- \
        echo lease-ran 2>&1)
    expect "?mode=lease is not blocked by the squatter" "$out" lease-ran
    sq_end

    # Another database of the same server: its dlock holds the name for
    # this one too (GET_LOCK keys are server-wide), shown as a client
    # that is not dlock, with its session.
    other="mysql://dlock:dlock-test-pw@127.0.0.1:$port/sq_other"
    mkfifo "$t/go"
    "$dlock" -s "$other" run "$name" -- sh -c 'echo held; read -r _; exit 0' \
        <"$t/go" >"$t/other.out" 2>&1 &
    other_pid=$!
    exec 4>"$t/go"
    for _ in $(seq 100); do
        grep -q held "$t/other.out" 2>/dev/null && break
        sleep 0.1
    done
    out=$("$dlock" -s "$url" status "$name" 2>&1)
    expect "a dlock of another database is shown as a client that is not dlock" \
        "$out" "held by another client (not dlock)" "session "
    exec 4>&-
    wait "$other_pid" || bad "the other database's run failed: $(cat "$t/other.out")"

    # Item 17: a holder row of its-mieger's PHP library (its exact SQL),
    # in dlock's table: another client, with its connection id, created
    # and ttl.
    coproc SQ { my dlock dlock-test-pw dlocktest 2>&1; }
    sq_pid=$SQ_PID
    say "INSERT INTO shared_locks (name, created, ttl, connection_id, lock_acquired) VALUES ('$name', unix_timestamp(), 600, connection_id(), false);
SELECT GET_LOCK('$name', 0);
UPDATE shared_locks SET lock_acquired = true WHERE name = '$name' AND connection_id = connection_id();
SELECT CONNECTION_ID();"
    hear >/dev/null
    cid=$(hear)
    out=$("$dlock" -s "$url" status "$name" 2>&1)
    expect "an its-mieger row is another client, with its connection, created and ttl" \
        "$out" "held by another client (not dlock)" "session $cid" \
        "since " "lease " "ms left"
    [[ $out != *"pid 0"* ]] || bad "status still says pid 0: $out"
    out=$("$dlock" -s "$url" status --json "$name" 2>&1)
    expect "its-mieger in --json: other_client, since, ttl" "$out" \
        '"other_client":true' "\"client_id\":$cid" '"since_ms":1' '"ttl_ms":'
    say "DELETE FROM shared_locks WHERE name = '$name' AND connection_id = connection_id();
DO RELEASE_LOCK('$name');"
    sq_end

    # The fence sequence's seed lock, taken by the first fence drawn
    # after a server start, is a GET_LOCK key too: on a server of our own
    # (a fresh one is unseeded, no restart of the shared one), a
    # USAGE-only login holding it makes the run fail (69), naming its
    # session; once it lets go the run goes ahead.
    own=$t/own-mysql
    mkdir -p "$own"
    chmod 755 "$t" # as root the server runs as mysql
    if own_url=$("$script" start "$own" 2>"$t/own.err"); then
        oport=$(cat "$own/port")
        "$script" ctl "$own" sql --root "CREATE USER 'sq_squat'@'127.0.0.1' IDENTIFIED BY 'sq-pw'; FLUSH PRIVILEGES;" >/dev/null
        port=$oport
        coproc SQ { my sq_squat sq-pw 2>&1; }
        sq_pid=$SQ_PID
        say "SELECT CONNECTION_ID(), GET_LOCK('dlock-seed:shared_locks', 0);"
        read -r cid got < <(hear)
        [ "${got:-}" = 1 ] || bad "the squatter did not get the seed lock: $cid ${got:-}"
        out=$("$dlock" -s "$own_url?timeout=1s" run "$name" -- echo seed-ran 2>&1)
        rc=$?
        [ "$rc" = 69 ] || bad "a run past a held seed lock exited $rc: $out"
        expect "a held seed lock is named with its session" "$out" \
            "seed lock 'dlock-seed:shared_locks' (session $cid)" \
            "any login of the server may take"
        sq_end
        out=$("$dlock" -s "$own_url" run "$name" -- echo seed-ran 2>&1)
        expect "once the seed lock is let go, the run goes ahead" "$out" seed-ran
        "$script" stop "$own" >/dev/null 2>&1
    else
        bad "could not start a server of our own: $(tail -n 5 "$t/own.err")"
    fi
    ;;
postgres)
    psql=$(cat "$dir/bindir" 2>/dev/null)/psql
    [ -x "$psql" ] || psql=psql
    pg() { "$psql" -X -q -At -v ON_ERROR_STOP=1 "postgresql://$1@127.0.0.1:$port/dlocktest"; }
    "$script" ctl "$dir" sql --super "DROP ROLE IF EXISTS sq_squat" >/dev/null 2>&1
    "$script" ctl "$dir" sql --super "DROP ROLE IF EXISTS sq_seer" >/dev/null 2>&1
    "$script" ctl "$dir" sql --super "CREATE ROLE sq_squat LOGIN PASSWORD 'sq-pw'" >/dev/null &&
    "$script" ctl "$dir" sql --super "CREATE ROLE sq_seer LOGIN PASSWORD 'sq-pw' IN ROLE dlock, pg_read_all_stats" >/dev/null ||
        { bad "could not make the roles"; exit 1; }
    "$dlock" -s "$url" status "$name" >/dev/null
    [ $? = 3 ] || bad "status on $url (3: free)"
    "$dlock" -s "$url" run "$name" -- true || bad "a first run on $url"
    if echo "SELECT 1 FROM dlock_held LIMIT 1" | pg sq_squat:sq-pw >/dev/null 2>&1; then
        bad "sq_squat can read dlock's table"
    fi
    coproc SQ { pg sq_squat:sq-pw 2>&1; }
    sq_pid=$SQ_PID
    say "SELECT pg_backend_pid(), pg_advisory_lock(hashtextextended('$name', 0)) IS NOT NULL;"
    IFS='|' read -r bpid got < <(hear)
    [ "${got:-}" = t ] || { bad "the squatter did not get the key: $bpid ${got:-}"; exit 1; }
    ok "a role with no rights on dlock_held holds the key (pid $bpid)"
    # dlock's role sees the login, not the address; pg_read_all_stats
    # sees both.
    check_shown "$url" "session $bpid" "user 'sq_squat'"
    seer="postgres://sq_seer:sq-pw@127.0.0.1:$port/dlocktest"
    check_shown "$seer" "session $bpid" "user 'sq_squat' from 127.0.0.1:"
    out=$("$dlock" -s "$url?mode=lease" run -w 0 "$name" -- echo lease-ran 2>&1)
    expect "?mode=lease is not blocked by the squatter" "$out" lease-ran
    sq_end
    # The login is the server's text: a role named with terminal escapes
    # is printed escaped.
    esc=$'sq_esc\e]0;owned'
    "$script" ctl "$dir" sql --super "DROP ROLE IF EXISTS \"$esc\"" >/dev/null 2>&1
    "$script" ctl "$dir" sql --super "CREATE ROLE \"$esc\" LOGIN PASSWORD 'sq-pw'" >/dev/null ||
        bad "could not make the role with escapes"
    coproc SQ { pg 'sq_esc%1B%5D0%3Bowned%07:sq-pw' 2>&1; }
    sq_pid=$SQ_PID
    say "SELECT pg_backend_pid(), pg_advisory_lock(hashtextextended('$name', 0)) IS NOT NULL;"
    IFS='|' read -r bpid got < <(hear)
    out=$("$dlock" -s "$url" status "$name" 2>&1; "$dlock" -s "$url" run \
        --once-per 1h "$name" -- true 2>&1)
    if [[ $out == *$'\e'* || $out == *$'\a'* ]]; then
        bad "a login's escapes reached the terminal raw: $(printf %q "$out")"
    else
        expect "a login with terminal escapes is printed escaped" "$out" \
            "user 'sq_esc" "x1b]0;owned" "x07'" "session $bpid"
    fi
    ;;
*)
    echo "usage: $0 mysql|postgres DLOCK SERVER_SCRIPT URL DIR" >&2
    exit 2
    ;;
esac
[ -n "$sq_pid" ] && sq_end
[ $fail = 0 ] && echo "all ok"
exit $fail
