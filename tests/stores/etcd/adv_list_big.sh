#!/bin/bash
# `dlock list` on an etcd store with 5000 names that have run (each with
# DLOCK_RUNS_KEPT = 20 runs kept: a 3 KB run record, as `dlock run` writes
# them) and one held lock.  store.c's list (and runs.c's last_runs) read
# every key under the prefix with its value in one range, and a reply
# over ETCD_REPLY_MAX (16 MiB) is refused: list fails (exit 69, "sent a
# reply over 16777216 bytes") where the other stores list.  It must
# list: exit 0 and name the held lock.
#   adv_list_big.sh DLOCK URL
set -u
dlock=$1 url=$2
if [ -z "$url" ]; then
    echo "no etcd URL (DLOCK_TEST_ETCD_URL)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
hostport=${url#etcd://}
hostport=${hostport%%\?*}
hostport=${hostport%%,*}
prefix="advlist-$$/"
holder=
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
    # Every key under the prefix (a deleterange from prefix to prefix+1).
    python3 - "$hostport" "$prefix" <<'PY'
import base64, json, sys, urllib.request
hp, p = sys.argv[1], sys.argv[2].encode()
end = p[:-1] + bytes([p[-1] + 1])
body = json.dumps({"key": base64.b64encode(p).decode(),
                   "range_end": base64.b64encode(end).decode()}).encode()
urllib.request.urlopen(urllib.request.Request(
    "http://%s/v3/kv/deleterange" % hp, body,
    {"Content-Type": "application/json"}), timeout=30).read()
PY
}
trap cleanup EXIT
python3 - "$hostport" "$prefix" <<'PY' || { echo "FAIL: could not write the run records"; exit 1; }
import base64, json, sys, urllib.request
hp, p = sys.argv[1], sys.argv[2].encode()
run = {"fence": 123456, "host": "worker-host-01.example.internal",
       "pid": 123456, "start": 1795813629956, "end": 1795813633963,
       "result": 1, "status": 0}
doc = json.dumps({"runs": [run] * 20, "ok": run}).encode()
for i in range(5000):
    k = p + b"job-%05d\xffruns" % i
    body = json.dumps({"key": base64.b64encode(k).decode(),
                       "value": base64.b64encode(doc).decode()}).encode()
    urllib.request.urlopen(urllib.request.Request(
        "http://%s/v3/kv/put" % hp, body,
        {"Content-Type": "application/json"}), timeout=30).read()
PY
u="etcd://$hostport?prefix=$prefix"
fifo=$(mktemp -u "${TMPDIR:-/tmp}/adv-list.XXXXXX")
mkfifo "$fifo"
"$dlock" -s "$u" run -n held-one -- sh -c "echo held > $fifo; exec sleep 60" \
    >/dev/null 2>&1 &
holder=$!
if ! timeout 20 head -n1 "$fifo" >/dev/null; then
    rm -f "$fifo"
    echo "FAIL: the holder did not start"
    exit 1
fi
rm -f "$fifo"
out=$(timeout 60 "$dlock" -s "$u" list 2>&1)
rc=$?
if [ "$rc" != 0 ] || ! printf '%s\n' "$out" | grep -q "held-one"; then
    echo "FAIL: list of 5000 names that have run: exit $rc: $(printf '%s' "$out" | tail -n 2)"
    exit 1
fi
echo "ok: list of 5000 names that have run names the held lock"
exit 0
