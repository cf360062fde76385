#!/bin/bash
# The etcd store's run records (issue 43, items 2 and 13):
#   etcd_runs.sh DLOCK records URL   (the shared test server)
#     - no key dlock leaves behind lies in another name's queue range:
#       after `dlock run NAME/x` (plain, --once, --once-per), `etcdctl
#       lock NAME` gets the lock at once, and NAME/ holds no key;
#     - records the previous version left at P NAME \xff runs|start are
#       still read (a --once success is not lost, an old start still
#       counts) and moved out of the parent's range;
#     - an ok record dlock cannot read means the job runs (--once);
#     - history times are the store's clock: dlock under libfaketime,
#       400 days behind, still records the server's time.
#   etcd_runs.sh DLOCK auth SCRIPTS  (a throwaway etcd with auth on)
#     - an authenticated user with no role lists the leases and keeps
#       every one of them alive (etcd 3.4 checks no permission there):
#       --once-per still runs once the period has passed.
#   etcd_runs.sh DLOCK leader SCRIPTS  (a throwaway 3-member cluster)
#     - leader changes (the leader restarted) neither restart the period
#       (the run after it goes ahead once it has passed) nor shorten it
#       (a run right after a start, with a leader change in between,
#       skips).
# Every wait is bounded; waits for time to pass poll the clock.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../stores/etcd/lib.sh"

DLOCK=${1:?usage: etcd_runs.sh DLOCK records|auth|leader URL|SCRIPTS}
mode=${2:?mode}
arg=${3-}

# put_raw KEY VALUE [LEASE_HEX]: etcdctl put of a key with raw bytes.
put_raw() {
    ectl put ${3:+--lease="$3"} -- "$1" "$2" >/dev/null
}
# keys_under PFX: the keys under PFX (raw, one a line, \xff as is).
keys_under() {
    ectl get --prefix --keys-only -- "$1" | sed '/^$/d'
}
# wait_s SECS: let SECS of wall-clock time pass (a bounded poll).
wait_s() {
    local until=$(($(date +%s%N) / 1000000 + $1 * 1000))
    while [ "$(now_ms)" -lt "$until" ]; do sleep 0.2; done
}

records() {
    local p="t43r-$$" name rc out hist real start ff lease
    URL="$arg"
    etcd_setup "$DLOCK" "$URL" python3
    ff=$'\xff'

    # --- item 13: nothing under a parent name --------------------------
    name="$p-e13"
    "$DLOCK" -s "$URL" run "$name/x" -- true || fail "dlock run $name/x"
    "$DLOCK" -s "$URL" run --once "$name/y" -- true || fail "dlock run --once"
    "$DLOCK" -s "$URL" run --once-per 1h "$name/z" -- true ||
        fail "dlock run --once-per"
    out=$(keys_under "$name/" | cat -v)
    [ -z "$out" ] && ok "no key left under $name/ after runs of $name/x,y,z" ||
        fail "keys dlock left under $name/: $(echo "$out" | tr '\n' ' ')"
    timeout 10 etcdctl --endpoints="$EPS" lock "$name" -- true >"$T/l.out" 2>&1
    rc=$?
    [ "$rc" = 0 ] && ok "etcdctl lock $name gets it at once" ||
        fail "etcdctl lock $name: exit $rc (124: still waiting after 10 s): $(cat "$T/l.out")"
    "$DLOCK" -s "$URL" run --once "$name/y" -- touch "$T/y2" 2>/dev/null
    [ ! -e "$T/y2" ] && ok "--once still sees its success" ||
        fail "--once ran $name/y again"
    "$DLOCK" -s "$URL" history "$name/x" | grep -q exited &&
        ok "history finds the records" || fail "history of $name/x: none"
    out=$("$DLOCK" -s "$URL" list "$name/" 2>&1)
    case $out in
    *"$name/x"*"last run"*"$name/y"*"last run"*"$name/z"*"last run"*)
        ok "list finds each name's last run" ;;
    *) fail "list misses some of $name/x,y,z's last runs: $out" ;;
    esac

    # --- item 13: the previous version's records -------------------------
    name="$p-old"
    put_raw "$name/a${ff}runs" '{"runs":[{"fence":7,"host":"oldhost","pid":1,"start":1000,"end":2000,"result":1,"status":0}],"ok":{"fence":7,"host":"oldhost","pid":1,"start":1000,"end":2000,"result":1,"status":0}}'
    "$DLOCK" -s "$URL" run --once "$name/a" -- touch "$T/a" 2>"$T/a.err"
    rc=$?
    [ "$rc" = 0 ] && [ ! -e "$T/a" ] &&
        ok "an old layout's --once success still counts: $(cat "$T/a.err")" ||
        fail "old --once record: exit $rc, ran: $([ -e "$T/a" ] && echo yes || echo no)"
    out=$(keys_under "$name/" | cat -v)
    [ -z "$out" ] && ok "the old records left $name/" ||
        fail "old records still under $name/: $out"
    "$DLOCK" -s "$URL" run --once "$name/a" -- touch "$T/a" 2>/dev/null
    [ ! -e "$T/a" ] && ok "and still count once moved" ||
        fail "--once ran after the old record moved"
    "$DLOCK" -s "$URL" history "$name/a" | grep -q oldhost &&
        ok "history keeps the old runs" || fail "history lost the old runs"
    lease=$(ectl lease grant 3600 | awk '{print $2}')
    put_raw "$name/b${ff}start" 99 "$lease"
    "$DLOCK" -s "$URL" run --once-per 1h "$name/b" -- touch "$T/b" 2>/dev/null
    rc=$?
    [ "$rc" = 0 ] && [ ! -e "$T/b" ] &&
        ok "an old layout's start (a second ago) still counts" ||
        fail "old start: exit $rc, ran: $([ -e "$T/b" ] && echo yes || echo no)"
    "$DLOCK" -s "$URL" run --once-per 1h "$name/b" -- touch "$T/b" 2>/dev/null
    [ ! -e "$T/b" ] && ok "and still counts once moved" ||
        fail "--once-per ran after the old start moved"
    out=$(keys_under "$name/" | cat -v)
    [ -z "$out" ] && ok "the old start left $name/" ||
        fail "old start still under $name/: $out"
    timeout 10 etcdctl --endpoints="$EPS" lock "$name" -- true >/dev/null 2>&1 &&
        ok "etcdctl lock $name gets it" || fail "etcdctl lock $name waits"
    # The earlier layout's start of a name without '/': the same key,
    # rewritten in place (no lease any more).
    name="$p-oldc"
    lease=$(ectl lease grant 3600 | awk '{print $2}')
    put_raw "$name${ff}start" 98 "$lease"
    "$DLOCK" -s "$URL" run --once-per 1h "$name" -- touch "$T/c" 2>/dev/null
    "$DLOCK" -s "$URL" run --once-per 1h "$name" -- touch "$T/c" 2>/dev/null
    out=$(ectl get -w json -- "$name${ff}start" | python3 -c '
import base64, json, sys
kv = json.load(sys.stdin)["kvs"][0]
print(kv.get("lease", 0), base64.b64decode(kv["value"]).decode())')
    case $out in
    '0 {"fence":98,"at":'*)
        [ ! -e "$T/c" ] && ok "an old start in place counts, and is rewritten: $out" ||
            fail "an old start in place: the job ran" ;;
    *) fail "the old start in place was not rewritten: $out (ran: $([ -e "$T/c" ] && echo yes || echo no))" ;;
    esac

    # --- item 2: an ok record dlock cannot read means the job runs ---------
    local i=0 bad
    for bad in '{"ok":{}}' '{"ok":{"fence":"x","result":"exited"}}' \
        '{"runs":[],"ok":{"fence":3,"result":1,"status":"zero"}}' \
        '{"ok":{"fence":-4,"result":1,"status":0}}' '{"ok":{"fence":3,"result":2,"status":0}}'; do
        i=$((i + 1))
        name="$p-bad$i"
        # Where both layouts keep it (a name without '/'), and for a
        # name with one, where each does.
        put_raw "$name${ff}runs" "$bad"
        [ "$i" = 5 ] && name="$p-bad$i/s" &&
            put_raw "$name${ff}runs" "$bad" &&
            put_raw "$p-bad$i${ff}runs/s" "$bad"
        rm -f "$T/ran"
        "$DLOCK" -s "$URL" run --once "$name" -- touch "$T/ran" 2>"$T/o.err"
        rc=$?
        [ "$rc" = 0 ] && [ -e "$T/ran" ] &&
            ok "unreadable ok record $bad: --once runs" ||
            fail "unreadable ok record $bad: exit $rc, not run: $(cat "$T/o.err")"
        rm -f "$T/ran"
        "$DLOCK" -s "$URL" run --once "$name" -- touch "$T/ran" 2>/dev/null
        [ ! -e "$T/ran" ] && ok "then its own success counts" ||
            fail "--once ran again after a success over $bad"
        ectl del -- "$name${ff}runs" >/dev/null
    done

    # --- item 2: history times are the store's clock ---------------------
    local lib
    lib=$(find /usr/lib -path '*/faketime/libfaketimeMT.so.1' 2>/dev/null | head -n1)
    if [ -z "$lib" ]; then
        [ "${CI:-}" = true ] && fail "no libfaketime (faketime)" ||
            echo "SKIP the clock case: no libfaketime"
    else
        name="$p-clock"
        real=$(date +%s)
        env LD_PRELOAD="$lib" FAKETIME=-400d FAKETIME_DONT_FAKE_MONOTONIC=1 \
            ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
            "$DLOCK" -s "$URL" run "$name" -- sh -c 'date +%s >"$0"' "$T/fake" ||
            fail "dlock run under libfaketime"
        hist=$("$DLOCK" -s "$URL" history "$name" --json)
        start=$(echo "$hist" | python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["start_ms"]//1000, r["end_ms"]//1000)')
        set -- $start
        if [ $(($(cat "$T/fake") + 300 * 86400)) -lt "$real" ] &&
            [ "${1:-0}" -ge $((real - 60)) ] && [ "${1:-0}" -le $((real + 60)) ] &&
            [ "${2:-0}" -ge "${1:-0}" ] && [ "${2:-0}" -le $((real + 60)) ]; then
            ok "history: start $1, end $2 on the server's clock (now $real; the host's said $(cat "$T/fake"))"
        else
            fail "history times are not the server's: start ${1:-?} end ${2:-?}, now $real, the host's clock $(cat "$T/fake"): $hist"
        fi
    fi
    ectl del --prefix -- "$p" >/dev/null
}

# own_server start|start-cluster: a throwaway etcd (SCRIPTS/server-etcd.sh),
# stopped and removed on exit.
own_server() {
    script="$arg/server-etcd.sh"
    [ -x "$script" ] || skip "no $script"
    command -v etcd >/dev/null 2>&1 || skip "no etcd (scripts/deps.sh test)"
    srv=$(mktemp -d /tmp/dlock-etcd-runs-srv.XXXXXX)
    trap '"$script" stop "$srv" >/dev/null 2>&1; rm -rf "$srv"' EXIT
    URL=$("$script" "$1" "$srv") || { echo "FAIL cannot start etcd"; exit 1; }
    etcd_setup "$DLOCK" "$URL" python3
    trap 'etcd_cleanup; "$script" stop "$srv" >/dev/null 2>&1; rm -rf "$srv"' EXIT
}

auth() {
    local hp rc n_ka=0 ran=0 i t0
    own_server start
    hp=${URL#etcd://}
    ectl user add root --new-user-password=root-pw --interactive=false >/dev/null &&
        ectl user grant-role root root >/dev/null &&
        ectl auth enable >/dev/null || { fail "auth enable"; return; }
    ra() { ectl --user root:root-pw "$@" >/dev/null; }
    ra user add dl --new-user-password=dl-pw --interactive=false
    ra role add dl
    ra role grant-permission dl readwrite --prefix=true t43/
    ra user grant-role dl dl
    ra user add nobody43 --new-user-password=n-pw --interactive=false
    U="etcd://dl:dl-pw@$hp?prefix=t43/"
    "$DLOCK" -s "$U" run --once-per 6s job -- touch "$T/ran1" ||
        fail "the first --once-per run"
    [ -e "$T/ran1" ] && ok "the first run ran" || fail "the first run did not run"
    # The user with no role keeps every lease alive, every 0.3 s.
    (
        while :; do
            for l in $(ectl --user nobody43:n-pw lease list 2>/dev/null |
                sed -n 's/^\([0-9a-f]\{8,\}\)$/\1/p'); do
                ectl --user nobody43:n-pw lease keep-alive --once "$l" \
                    >/dev/null 2>&1 && echo "$l" >>"$T/kept"
            done
            sleep 0.3
        done
    ) &
    pids="$pids $!"
    "$DLOCK" -s "$U" run --once-per 6s job -- touch "$T/early" 2>/dev/null
    [ ! -e "$T/early" ] && ok "a run within the period skips" ||
        fail "a run within the period ran"
    # Past the period (3 s) by more than the clocks' slack: it must run.
    t0=$(now_ms)
    wait_s 6
    for i in $(seq 1 20); do
        "$DLOCK" -s "$U" run --once-per 6s job -- touch "$T/ran2" 2>"$T/e"
        [ -e "$T/ran2" ] && { ran=1; break; }
        wait_s 1
    done
    n_ka=$(sort -u "$T/kept" 2>/dev/null | wc -l)
    [ "$ran" = 1 ] &&
        ok "the job ran again $((($(now_ms) - t0) / 1000 + 0)) s after the wait began, though a user with no role kept $n_ka leases alive" ||
        fail "the job never ran again in 26 s ($n_ka leases kept alive by a user with no role): $(cat "$T/e")"
}

leader() {
    local r i rc l
    own_server start-cluster
    # Three rounds: start; a leader change; a run right away must skip (a
    # period never short); past the period, the leader restarted just
    # before the decision: it must run (a leader change does not restart
    # the period).
    "$DLOCK" -s "$URL" run --once-per 20s job -- true ||
        fail "the first run"
    for r in 1 2 3; do
        l=$("$script" ctl "$srv" leader | awk '{print $1}')
        "$script" ctl "$srv" restart "$l" >/dev/null || fail "restart $l"
        rm -f "$T/short"
        "$DLOCK" -s "$URL" run --once-per 20s job -- touch "$T/short" 2>"$T/e"
        rc=$?
        [ "$rc" = 0 ] && [ ! -e "$T/short" ] &&
            ok "round $r: right after a leader change, within the period: skip" ||
            fail "round $r: within the period after a leader change: exit $rc, ran: $([ -e "$T/short" ] && echo yes || echo no): $(cat "$T/e")"
        wait_s 13
        l=$("$script" ctl "$srv" leader | awk '{print $1}')
        "$script" ctl "$srv" restart "$l" >/dev/null || fail "restart $l"
        rm -f "$T/ran"
        for i in 1 2 3 4 5; do
            "$DLOCK" -s "$URL" run --once-per 20s job -- touch "$T/ran" 2>"$T/e"
            rc=$?
            [ -e "$T/ran" ] && break
            [ "$rc" = 0 ] || wait_s 1 # an election still under way: again
            [ "$rc" = 0 ] && break
        done
        [ -e "$T/ran" ] &&
            ok "round $r: 13 s after the start (period 20 s), the leader just restarted: it runs" ||
            fail "round $r: 13 s after the start, the leader just restarted: not run (exit $rc): $(cat "$T/e")"
    done
}

case $mode in
records) records ;;
auth) auth ;;
leader) leader ;;
*) echo "usage: etcd_runs.sh DLOCK records|auth|leader URL|SCRIPTS" >&2; exit 64 ;;
esac
finish
