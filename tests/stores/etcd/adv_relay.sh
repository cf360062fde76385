#!/bin/bash
# adv_relay.sh PROGRAM URL [SKIP]: adv_relay.py (losing the answer to
# the put under NAME/ after SKIP of them) in front of the etcd of URL
# (etcd://127.0.0.1:PORT, one member), then PROGRAM RELAY_URL URL NAME
# (adv_stray_key, adv_move_lost).
set -u
prog=$1 url=$2 skip=${3:-0}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$url" ]; then
    echo "no etcd URL (DLOCK_TEST_ETCD_URL)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
hostport=${url#etcd://}
hostport=${hostport%%\?*}
up=${hostport##*:}
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv-stray.XXXXXX")
relay=
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$relay" ] && kill "$relay" 2>/dev/null && wait "$relay" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
name="adv-stray-$$"
python3 "$here/adv_relay.py" "$up" "$name" "$skip" >"$dir/port" 2>"$dir/relay.err" &
relay=$!
for _ in $(seq 50); do
    [ -s "$dir/port" ] && break
    sleep 0.1
done
if [ ! -s "$dir/port" ]; then
    echo "FAIL: the relay did not start: $(cat "$dir/relay.err")"
    exit 1
fi
timeout -k 2 60 "$prog" "etcd://127.0.0.1:$(cat "$dir/port")?timeout=2s" \
    "$url" "$name"
rc=$?
grep -q dropped "$dir/relay.err" || {
    echo "FAIL: the relay never lost a put's answer (the case did not happen)"
    rc=1
}
exit $rc
