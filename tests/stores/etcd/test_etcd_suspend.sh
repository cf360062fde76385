#!/bin/bash
# Suspension records on etcd (src/stores/etcd/suspend.c):
#  - records planted with etcdctl at P FIRST \xff suspend [/REST]: not
#    JSON, fields of the wrong type, texts over-long, not UTF-8, with a
#    NUL or an escape sequence, a JSON bomb, a time that is no time: each
#    still suspends (run_begin skips), reads back with "?" for the texts
#    dlock cannot have written, is listed and resumed, without a crash
#    (the test build runs under ASan/UBSan);
#  - a login whose role may only read the prefix (a throwaway etcd with
#    auth on, as tests/errors/errors.sh makes one) reads a suspension but
#    gets DLOCK_ESTORE or DLOCK_EUNAVAIL with a message from suspend and
#    resume, never a silent success, and changes nothing.
#   test_etcd_suspend.sh SUSPEND_TOOL URL SERVER_SCRIPT
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
etcd_setup "$1" "$2" python3
TOOL=$DLOCK
SERVER=$3
base=susp-$$-$(date +%s)

# plant NAME VALUE: put VALUE (raw bytes) at NAME's suspension key.
plant() {
    local first=${1%%/*} rest=
    [ "$first" != "$1" ] && rest=/${1#*/}
    ectl put -- "$first"$'\xff'"suspend$rest" "$2" >/dev/null
}
# shown TEXT: its first 40 bytes, printable ASCII only.
shown() { printf '%s' "${1:0:40}" | LC_ALL=C tr -c '[:print:]' '?'; }
# check NAME BY REASON VALUE: planted VALUE reads back as BY, REASON.
check() {
    if ! plant "$1" "$4"; then
        fail "etcdctl put of $1's record"
        return
    fi
    if "$TOOL" "$URL" planted "$1" "$2" "$3"; then
        ok "planted $1 ($(shown "$4")...): suspends, reads '$2' / '${3:0:20}'"
    else
        fail "planted $1 ($(shown "$4")...)"
    fi
    [ -z "$(ectl get --prefix "${1%%/*}"$'\xff' --keys-only)" ] ||
        fail "$1's record is still there after resume"
}

long_by=$(printf 'x%.0s' $(seq 300))
long_reason=$(printf 'y%.0s' $(seq 1100))
bomb=$(printf '[%.0s' $(seq 70000))
check "$base-notjson" "?" "?" $'not json \xff\xfe'
check "$base-types" "?" "?" '{"by":42,"since_ms":"yesterday","reason":["x"]}'
check "$base-long" "?" "?" "{\"by\":\"$long_by\",\"since_ms\":1,\"reason\":\"$long_reason\"}"
check "$base-utf8" "?" "?" $'{"by":"\xff\xfe","since_ms":-5,"reason":"ok \xc3"}'
check "$base-ctl" "?" "?" '{"by":"\u001b[31mred","since_ms":1,"reason":"a\u0000b"}'
check "$base-bomb" "?" "?" "$bomb"
check "$base-missing" "?" "?" '{}'
check "$base-time/a/b" "x@y" "" '{"by":"x@y","since_ms":1e300,"reason":""}'
check "$base/sub" "ops@bastion" "planned" \
    '{"by":"ops@bastion","since_ms":1700000000000,"reason":"planned"}'

# A reader-only login, on an etcd of the test's own (auth is global).
own=$T/own
mkdir -p "$own"
own_url=$("$SERVER" start "$own") || {
    fail "cannot start an etcd in $own"
    finish
    exit
}
trap '"$SERVER" stop "$own" >/dev/null 2>&1; etcd_cleanup' EXIT
own_hp=${own_url#etcd://}
octl() { "$SERVER" ctl "$own" etcdctl --user root:root-pw "$@" >/dev/null; }
if ! { "$SERVER" ctl "$own" etcdctl user add root --new-user-password=root-pw \
    --interactive=false >/dev/null &&
    "$SERVER" ctl "$own" etcdctl user grant-role root root >/dev/null &&
    "$SERVER" ctl "$own" etcdctl auth enable >/dev/null &&
    octl user add dl-rw --new-user-password=pw --interactive=false &&
    octl role add dl-rw &&
    octl role grant-permission dl-rw readwrite --prefix=true susp- &&
    octl user grant-role dl-rw dl-rw &&
    octl user add dl-ro --new-user-password=pw --interactive=false &&
    octl role add dl-ro &&
    octl role grant-permission dl-ro read --prefix=true susp- &&
    octl user grant-role dl-ro dl-ro; }; then
    fail "auth set-up"
fi
for name in "$base-ro" "$base-ro/job"; do
    if "$TOOL" "etcd://dl-rw:pw@$own_hp" suspend "$name"; then
        ok "the writer suspends $name"
    else
        fail "the writer cannot suspend $name"
    fi
    if "$TOOL" "etcd://dl-ro:pw@$own_hp" readonly "$name"; then
        ok "the reader may read $name's suspension, not write or lift it"
    else
        fail "the reader and $name"
    fi
    "$TOOL" "etcd://dl-rw:pw@$own_hp" resume "$name" ||
        fail "the writer cannot resume $name"
done
finish
