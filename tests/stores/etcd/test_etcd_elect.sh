#!/bin/bash
# dlock's election and Debian's `etcdctl elect` (etcd-client 3.4.23)
# elect one leader between them, both ways (issue 45):
#   test_etcd_elect.sh ELECT_TOOL URL
# ELECT_TOOL is tests/stores/etcd/elect_tool.c (a dlock candidate and
# dlock_leader()).
# 1. etcdctl leads: the dlock candidate waits; `dlock_leader()` reports
#    etcdctl's value and its key's create revision as the term; etcdctl
#    killed -9 (and its session's lease revoked: etcdctl elect's lease is
#    60 s, with no flag to shorten it): dlock leads, with a greater term,
#    and `etcdctl elect -l` lists dlock's value.
# 2. dlock leads: etcdctl waits, and leads once dlock resigns; then
#    dlock, waiting behind it, leads when etcdctl resigns (SIGTERM), and
#    an etcdctl behind dlock leads when dlock is killed -9 (its 2 s lease).
# 3. etcd #19597: a dlock candidate waiting behind a leader has its lease
#    revoked; a third candidate (etcdctl) waits behind it.  When the
#    leader resigns, the third leads, and the dlock candidate does NOT
#    say it leads (it re-reads its own key: gone, it queues again); it
#    leads only once the third resigns, with a new key and a greater term.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
TOOL=${1:?usage: test_etcd_elect.sh ELECT_TOOL URL}
etcd_setup "$TOOL" "${2-}" python3

name="elect-$$"
# leads FILE WORD: FILE has a line WORD (etcdctl elect prints its key,
# then its value, once it leads; elect_tool "leader FENCE").
leads() { grep -q "^$2" "$1" 2>/dev/null; }
listed() { timeout 3 etcdctl --endpoints="$EPS" elect -l "$name" 2>/dev/null; }
# A dlock candidate: stdin a fifo (a line resigns), stdout a file.
candidate() { # VAR VALUE TTL_MS
    mkfifo "$T/$1.in"
    "$TOOL" campaign "$URL" "$name" "$2" "$3" <"$T/$1.in" >"$T/$1.out" 2>&1 &
    eval "$1=\$!"
    # shellcheck disable=SC2034 # read through the eval below
    exec {fd}>"$T/$1.in"
    eval "${1}_fd=\$fd"
    pids="$pids $!"
}
ectl_elect() { # VAR VALUE
    etcdctl --endpoints="$EPS" elect "$name" "$2" >"$T/$1.out" 2>&1 &
    eval "$1=\$!"
    pids="$pids $!"
}
fence_of() { sed -n 's/^leader \([0-9]*\).*/\1/p' "$1"; }

# --- 1. etcdctl leads ----------------------------------------------------
ectl_elect E1 e-one
until_true "leads $T/E1.out e-one" 100 || fail "etcdctl elect never led: $(cat "$T/E1.out")"
candidate D1 d-one 5000
until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 || fail "the dlock candidate did not queue: $(queue "$name")"
sleep 0.5 # a candidate that wrongly led would have said so by now
leads "$T/D1.out" leader && fail "dlock leads beside etcdctl: $(cat "$T/D1.out")" ||
    ok "etcdctl leads: the dlock candidate waits"
set -- $(queue "$name" | head -1)
erev=$2 elease=$3
got=$("$TOOL" leader "$URL" "$name")
[ "$got" = "leader $erev e-one" ] && ok "dlock_leader(): etcdctl's value and term: $got" ||
    fail "dlock_leader() = '$got', wanted 'leader $erev e-one'"
kill -KILL "$E1"
ectl lease revoke "$elease" >/dev/null || fail "could not revoke etcdctl's lease $elease"
until_true "leads $T/D1.out leader" 50 || fail "dlock did not lead after etcdctl died: $(cat "$T/D1.out")"
f1=$(fence_of "$T/D1.out")
[ -n "$f1" ] && [ "$f1" -gt "$erev" ] && ok "etcdctl killed -9: dlock leads, term $f1 > $erev" ||
    fail "dlock's term '$f1' is not greater than etcdctl's $erev"
l=$(listed)
case $l in *d-one*) ok "etcdctl elect -l lists dlock's value" ;;
*) fail "etcdctl elect -l: '$l', wanted d-one" ;; esac
case $l in "$name/"*) ok "etcdctl elect -l shows dlock's key NAME/<lease>" ;;
*) fail "etcdctl elect -l: key not under $name/: '$l'" ;; esac

# --- 2. dlock leads; etcdctl waits ---------------------------------------
ectl_elect E2 e-two
until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 || fail "etcdctl did not queue: $(queue "$name")"
sleep 0.5
leads "$T/E2.out" e-two && fail "etcdctl leads beside dlock" || ok "dlock leads: etcdctl waits"
echo resign >&"$D1_fd"
until_true "leads $T/E2.out e-two" 50 || fail "etcdctl did not lead after dlock resigned"
grep -q "^resigned 0" "$T/D1.out" && ok "dlock resigned (0); etcdctl leads" ||
    fail "dlock's resignation: $(cat "$T/D1.out")"
candidate D2 d-two 2000
until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 || fail "dlock did not queue"
kill -TERM "$E2"
until_true "leads $T/D2.out leader" 50 || fail "dlock did not lead after etcdctl resigned: $(cat "$T/D2.out")"
ok "etcdctl resigned (SIGTERM): dlock leads"
ectl_elect E3 e-three
until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 || fail "etcdctl did not queue"
t0=$(now_ms)
kill -KILL "$D2"
until_true "leads $T/E3.out e-three" 100 || fail "etcdctl did not lead after dlock was killed -9"
ok "dlock killed -9: etcdctl leads after $(($(now_ms) - t0)) ms (2 s lease)"

# --- 3. etcd #19597 -------------------------------------------------------
candidate D3 d-three 5000
until_true "[ \"\$(nkeys $name)\" = 2 ]" 100 || fail "dlock did not queue"
ectl_elect E4 e-four
until_true "[ \"\$(nkeys $name)\" = 3 ]" 100 || fail "etcdctl did not queue"
set -- $(queue "$name" | sed -n 2p)
drev=$2 dlease=$3
ectl lease revoke "$dlease" >/dev/null || fail "could not revoke dlock's lease $dlease"
kill -TERM "$E3" # the leader resigns
until_true "leads $T/E4.out e-four" 50 || fail "the third candidate did not lead"
sleep 1 # the dlock candidate was woken: it must have re-read, not claimed
if leads "$T/D3.out" leader; then
    fail "#19597: dlock claims to lead with its key gone: $(cat "$T/D3.out")"
else
    ok "#19597: its lease revoked, the dlock candidate does not claim to lead"
fi
got=$("$TOOL" leader "$URL" "$name")
case $got in "leader "*" e-four") ok "the one leader is etcdctl's: $got" ;;
*) fail "dlock_leader() = '$got', wanted etcdctl's e-four" ;; esac
q=$(queue "$name")
[ "$(echo "$q" | wc -l)" = 2 ] && ! echo "$q" | grep -q "$dlease\$" &&
    ok "the dlock candidate queued again with a new lease" ||
    fail "queue after the revoke: $q (revoked $dlease)"
set -- $(queue "$name" | head -1)
e4rev=$2
kill -TERM "$E4"
until_true "leads $T/D3.out leader" 50 || fail "dlock did not lead after etcdctl resigned"
f3=$(fence_of "$T/D3.out")
[ -n "$f3" ] && [ "$f3" -gt "$e4rev" ] && [ "$f3" -gt "$drev" ] &&
    ok "then dlock leads with a new key: term $f3 > $e4rev" ||
    fail "dlock's term '$f3' vs etcdctl's $e4rev, its revoked key's $drev"
echo resign >&"$D3_fd"
until_true "[ \"\$(nkeys $name)\" = 0 ]" 50 || fail "keys left: $(queue "$name")"
finish
