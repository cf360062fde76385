#!/bin/bash
# Self-test of scripts/server-etcd.sh (issue 38): one member and a
# 3-member cluster start on loopback and answer etcdctl put/get and the v3
# JSON gateway (POST /v3/kv/range) on every member; `ctl kill-leader`
# leaves a new leader and all three members healthy; `stop` leaves no etcd
# process of theirs behind.
#   test_server_script.sh [SERVER_SCRIPT]
# 77 (skipped) without etcd, etcdctl or curl; 1 then with CI=true.
set -u
here=$(cd "$(dirname "$0")" && pwd)
script=${1:-$here/../../../scripts/server-etcd.sh}
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}

for c in etcd etcdctl curl; do
    command -v "$c" >/dev/null && continue
    echo "test_server_script: no $c (scripts/deps.sh test)"
    [ "${CI:-false}" = true ] && exit 1
    exit 77
done

T=$(mktemp -d /tmp/dlock-etcd-selftest.XXXXXX)
pids=()
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    "$script" stop "$T/one" >/dev/null 2>&1
    "$script" stop "$T/three" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$T/one" "$T/three"

# check URL: put/get through etcdctl and a range over the gateway on
# each member of URL (etcd://h1:p1,h2:p2...).
check() {
    local url=$1 ep key val got
    key=selftest-$$-$RANDOM
    val=v$RANDOM
    for ep in $(echo "${url#etcd://}" | tr , ' '); do
        timeout 10 etcdctl --endpoints "$ep" put "$key" "$val" >/dev/null ||
            bad "etcdctl put on $ep"
        got=$(timeout 10 etcdctl --endpoints "$ep" get --print-value-only "$key")
        [ "$got" = "$val" ] || bad "etcdctl get on $ep: '$got', not '$val'"
        # Keys and values are base64 over the gateway.
        got=$(curl -sf --max-time 10 -X POST "http://$ep/v3/kv/range" \
            -d "{\"key\":\"$(printf %s "$key" | base64)\"}")
        case $got in
        *"\"value\":\"$(printf %s "$val" | base64)\""*) ;;
        *) bad "POST /v3/kv/range on $ep: $got" ;;
        esac
    done
}

# the etcd processes DIR's members run (their pid files).
member_pids() {
    local f
    for f in "$1"/m*/pid; do [ -f "$f" ] && cat "$f"; done
}

t0=$(date +%s%N)
url1=$("$script" start "$T/one") || bad "start (one member)"
echo "single member: $url1 ($((($(date +%s%N) - t0) / 1000000)) ms)"
case $url1 in
etcd://127.0.0.1:[0-9]*) ;;
*) bad "start printed '$url1', not etcd://127.0.0.1:PORT" ;;
esac
[ "$(cat "$T/one/url" 2>/dev/null)" = "$url1" ] || bad "DIR/url is not the URL"
check "$url1"

t0=$(date +%s%N)
url3=$("$script" start-cluster "$T/three") || bad "start-cluster"
echo "cluster: $url3 ($((($(date +%s%N) - t0) / 1000000)) ms)"
[[ "$url3" =~ ^etcd://127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$ ]] ||
    bad "start-cluster printed '$url3'"
check "$url3"
n=$(timeout 10 etcdctl --endpoints "${url3#etcd://}" member list | wc -l)
[ "$n" = 3 ] || bad "member list: $n members, not 3"

mapfile -t pids < <(member_pids "$T/one"; member_pids "$T/three")
[ ${#pids[@]} = 4 ] || bad "${#pids[@]} pid files, not 4"

old=$("$script" ctl "$T/three" leader | cut -d' ' -f1) || bad "ctl leader"
oldpid=$("$script" ctl "$T/three" pid "$old")
echo "leader: m$old (pid $oldpid)"
t0=$(date +%s%N)
"$script" ctl "$T/three" kill-leader || bad "ctl kill-leader"
echo "kill-leader returned after $((($(date +%s%N) - t0) / 1000000)) ms"
new=$("$script" ctl "$T/three" leader | cut -d' ' -f1) || bad "no leader after kill-leader"
echo "leader now: m$new"
newpid=$("$script" ctl "$T/three" pid "$old")
[ "$newpid" != "$oldpid" ] || bad "m$old was not restarted (pid $oldpid)"
pids+=("$newpid")
if ps -o stat= -p "$oldpid" | grep -qv '^Z'; then
    bad "the killed leader $oldpid still runs"
fi
# All three healthy, each on its own (a linearizable read through it).
for i in 1 2 3; do
    u=$("$script" ctl "$T/three" url "$i")
    timeout 10 etcdctl --endpoints "$u" endpoint health >/dev/null 2>&1 ||
        bad "m$i is not healthy after kill-leader"
done
# The same leader seen by every member (-w fields: exact 64-bit ids).
leaders=$(for i in 1 2 3; do
    timeout 10 etcdctl --endpoints "$("$script" ctl "$T/three" url "$i")" \
        endpoint status -w fields | sed -n 's/^"Leader" : //p'
done | sort -u)
if [ "$(echo "$leaders" | wc -l)" != 1 ] || [ "$leaders" = 0 ]; then
    bad "the members name different leaders: $leaders"
fi
# The data survived (the killed member rejoined with its data).
check "$url3"

"$script" stop "$T/one" || bad "stop (one member)"
"$script" stop "$T/three" || bad "stop (cluster)"
# No etcd process of ours left (a zombie awaiting its reaping is gone).
left=
for p in "${pids[@]}"; do
    if pgrep -x etcd | grep -qx "$p" &&
        ps -o stat= -p "$p" | grep -qv '^Z'; then
        left="$left $p"
    fi
done
[ -z "$left" ] || bad "etcd processes left behind:$left"
ls "$T"/one/m*/pid "$T"/three/m*/pid >/dev/null 2>&1 && bad "pid files left behind"
"$script" stop "$T/three" || bad "a second stop failed"

[ "$fail" = 0 ] && echo "PASS"
exit $fail
