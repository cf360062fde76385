#!/bin/bash
# An `etcdctl elect` peer whose proposal reads as a dlock semaphore's
# holder record ('{"dlock":1,"limit":3}': a proposal is any bytes) leads
# NAME: a dlock candidate waits behind it (not elected in time: 1), as
# etcdctl would, and leads once the peer resigns.  It once failed at once
# with "held with limit 3; this acquire asked limit 1" (64): any peer
# could keep dlock's candidates from campaigning at all.
#   adv45b_record_peer.sh DLOCK URL
set -u
dlock=$1
url=${2:-}
[ -n "$url" ] || { echo "skip: no DLOCK_TEST_ETCD_URL"; exit 77; }
command -v etcdctl >/dev/null || { echo "skip: no etcdctl"; exit 77; }
eps=${url#etcd://}
eps=${eps%%\?*}
export ETCDCTL_API=3
fail=0
peer=
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv45b-peer.XXXXXX")
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$peer" ] && kill -INT "$peer" 2>/dev/null && wait "$peer" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
bad() { echo "FAIL: $*"; fail=1; }
n="adv45b-peer-$$"

etcdctl --endpoints="$eps" elect "$n" '{"dlock":1,"limit":3}' >"$dir/peer" 2>&1 &
peer=$!
for _ in $(seq 100); do
    grep -q '^{"dlock":1' "$dir/peer" && break
    sleep 0.1
done
grep -q '^{"dlock":1' "$dir/peer" || { bad "etcdctl elect did not lead: $(cat "$dir/peer")"; exit 1; }

timeout -k 2 20 "$dlock" -s "$url" elect -w 2 "$n" --value mine -- echo led >"$dir/out" 2>&1
rc=$?
if [ "$rc" != 1 ] || grep -q led "$dir/out"; then
    bad "behind the peer: exit $rc (want 1, not elected in time): $(cat "$dir/out")"
else
    echo "ok   behind the peer: exit 1"
fi

kill -INT "$peer" 2>/dev/null # etcdctl resigns on SIGINT
wait "$peer" 2>/dev/null
peer=
timeout -k 2 20 "$dlock" -s "$url" elect -w 10 "$n" --value mine -- echo led >"$dir/out" 2>&1
rc=$?
if [ "$rc" != 0 ] || ! grep -q '^led$' "$dir/out"; then
    bad "after the peer resigned: exit $rc: $(cat "$dir/out")"
else
    echo "ok   after the peer resigned: led"
fi
exit $fail
