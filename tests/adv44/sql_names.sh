#!/bin/bash
# Issue 44's adversary pass: what the SQL stores send for names that look
# like SQL.  MySQL fills every '?' client-side (dlock__my_bind), PostgreSQL
# inlines three multi-statement texts as E'' literals (dlock__pg_inline);
# a name holding quotes, backslashes, '?', '$1', LIKE wildcards, comment
# openers or a placeholder's spelling must round-trip, stay exclusive and
# touch no other row, in both modes, also when the server reads
# backslashes as plain characters (MariaDB: the global sql_mode with
# NO_BACKSLASH_ESCAPES, then an init_connect SET NAMES gbk, set as root;
# PostgreSQL:
# standard_conforming_strings off for the session, client_encoding SJIS in
# ?options=).
#   sql_names.sh mysql|postgres DLOCK SERVER_SCRIPT URL DIR
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
t=$(mktemp -d /tmp/dlock-adv44-names.XXXXXX)
old_mode=
old_init=
vpid=
cleanup() {
    [ -n "$vpid" ] && kill "$vpid" 2>/dev/null
    if [ -n "$old_mode" ]; then
        "$script" ctl "$dir" sql --root "SET GLOBAL sql_mode = '$old_mode'" \
            >/dev/null 2>&1
    fi
    if [ -n "$old_init" ]; then
        "$script" ctl "$dir" sql --root \
            "SET GLOBAL init_connect = FROM_BASE64('${old_init#x}')" \
            >/dev/null 2>&1
    fi
    rm -rf "$t"
}
trap cleanup EXIT
tag=$$-$RANDOM
pass=0

# sep: how a URL's next option joins it.
sep() { case $1 in *\?*) echo '&' ;; *) echo '?' ;; esac; }

# The names, one per line of a file (a newline cannot be in one here).
cat >"$t/names" <<NAMES
a'b-$tag
a\\b-$tag
a\\'b-$tag
x\\-$tag
'; DELETE FROM shared_locks; -- $tag
q?q?-$tag
\$1\$2\$10-$tag
E'\$1'-$tag
%_!-$tag
/*c-$tag
#h-$tag
x-- c-$tag
{{table}}-$tag
é😀\\'-$tag
中'-$tag
中'; DELETE FROM shared_locks; DELETE FROM adv44_lease; -- $tag
NAMES

# json_field FILE FIELD: a top-level field of a JSON object, as text.
json_field() {
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null
}

# check URL WHAT: every name round-trips in status and history, stays
# exclusive while held, and the victim's lock is still held after.
check() {
    local u=$1 what=$2 name vfence
    # The victim: a lock held through the whole pass by a name no hostile
    # name spells.
    "$dlock" -s "$u" run "victim-$tag" -- sleep 300 &
    vpid=$!
    sleep 1
    "$dlock" -s "$u" status "victim-$tag" --json >"$t/v0" 2>&1
    vfence=$(json_field "$t/v0" fence)
    [ "$(json_field "$t/v0" held)" = True ] ||
        bad "$what: the victim is not held: $(cat "$t/v0")"
    pass=$((pass + 1))
    while IFS= read -r name; do
        name="$name-$pass"
        # shellcheck disable=SC2016
        "$dlock" -s "$u" run --once -n "$name" -- sh -c '
            "$0" -s "$1" status "$2" --json >"$3/in" 2>&1
            "$0" -s "$1" run -n "$2" -- true >"$3/second" 2>&1
            echo $? >"$3/second_rc"' "$dlock" "$u" "$name" "$t" \
            >"$t/out" 2>&1
        rc=$?
        if [ $rc != 0 ]; then
            bad "$what: run '$name' exited $rc: $(cat "$t/out")"
            continue
        fi
        if [ "$(json_field "$t/in" name)" != "$name" ] ||
            [ "$(json_field "$t/in" held)" != True ]; then
            bad "$what: status while held of '$name': $(cat "$t/in")"
        fi
        [ "$(cat "$t/second_rc")" = 1 ] ||
            bad "$what: a second run of '$name' while held exited" \
                "$(cat "$t/second_rc"): $(cat "$t/second")"
        "$dlock" -s "$u" status "$name" --json >"$t/after" 2>&1
        [ "$(json_field "$t/after" held)" = False ] ||
            bad "$what: '$name' still held after its run: $(cat "$t/after")"
        "$dlock" -s "$u" history "$name" --json >"$t/hist" 2>&1 ||
            bad "$what: history of '$name': $(cat "$t/hist")"
        grep -q '"result"' "$t/hist" ||
            bad "$what: no run recorded for '$name': $(cat "$t/hist")"
        # --once: the recorded success skips the next run.
        "$dlock" -s "$u" run --once -n "$name" -- sh -c 'echo ran' \
            >"$t/again" 2>&1
        ! grep -q '^ran$' "$t/again" ||
            bad "$what: --once ran '$name' a second time"
    done <"$t/names"
    "$dlock" -s "$u" status "victim-$tag" --json >"$t/v1" 2>&1
    [ "$(json_field "$t/v1" held)" = True ] &&
        [ "$(json_field "$t/v1" fence)" = "$vfence" ] ||
        bad "$what: the victim changed: $(cat "$t/v0") -> $(cat "$t/v1")"
    kill "$vpid" 2>/dev/null
    wait "$vpid" 2>/dev/null
    vpid=
    ok "$what"
}

case $store in
mysql)
    old_mode=$("$script" ctl "$dir" sql --root "SELECT @@GLOBAL.sql_mode") ||
        { bad "cannot read the server's sql_mode"; exit 1; }
    for m in session lease; do
        u=$url
        [ $m = lease ] && u="$url$(sep "$url")mode=lease&table=adv44_lease"
        check "$u" "mysql $m"
    done
    "$script" ctl "$dir" sql --root \
        "SET GLOBAL sql_mode = CONCAT_WS(',', NULLIF(@@GLOBAL.sql_mode, ''), 'NO_BACKSLASH_ESCAPES')" ||
        { bad "cannot set the global sql_mode"; exit 1; }
    for m in session lease; do
        u=$url
        [ $m = lease ] && u="$url$(sep "$url")mode=lease&table=adv44_lease"
        check "$u" "mysql $m, NO_BACKSLASH_ESCAPES"
    done
    # A server whose init_connect (run for every login without SUPER, as
    # dlock's) or skip-character-set-client-handshake gives the session
    # another client charset than the connector escapes for: GBK reads
    # the escaped 0xAD 0x5C of '中' + '\'' as one character, and the
    # quote then ends the literal (and multi-statements are on).
    "$script" ctl "$dir" sql --root "SET GLOBAL sql_mode = '$old_mode'" ||
        bad "cannot restore the global sql_mode"
    old_mode=
    old_init=x$("$script" ctl "$dir" sql --root \
        "SELECT TO_BASE64(@@GLOBAL.init_connect)") ||
        { bad "cannot read the server's init_connect"; exit 1; }
    [ "$old_init" = xNULL ] && old_init=x
    "$script" ctl "$dir" sql --root "SET GLOBAL init_connect = 'SET NAMES gbk'" ||
        { bad "cannot set the global init_connect"; exit 1; }
    for m in session lease; do
        u=$url
        [ $m = lease ] && u="$url$(sep "$url")mode=lease&table=adv44_lease"
        check "$u" "mysql $m, init_connect SET NAMES gbk"
    done
    ;;
postgres)
    for m in session lease; do
        u=$url
        [ $m = lease ] && u="$url$(sep "$url")mode=lease"
        check "$u" "postgres $m"
        check "$u$(sep "$u")options=-c%20standard_conforming_strings%3Doff" \
            "postgres $m, standard_conforming_strings off"
    done
    # A client_encoding in ?options= (SJIS: 0x5C can be a trailing
    # byte) is overridden by the UTF8 dlock passes after it, so the E''
    # literals of dlock__pg_inline() (lease mode, run_begin) stay whole.
    u="$url$(sep "$url")mode=lease"
    check "$u$(sep "$u")options=-c%20client_encoding%3DSJIS" \
        "postgres lease, options client_encoding SJIS"
    ;;
esac
exit $fail
