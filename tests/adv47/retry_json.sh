#!/bin/bash
# -v's retry lines while the store is down are warnings (dlock goes on),
# said as they happen.  They were errors: under --json held back to the
# end, where a run whose store came up and whose CMD exited 2 reported
# them as its "error" (and an error object on stderr for CMD's own exit);
# in the journal they were priority err.
#   retry_json.sh DLOCK REDIS_URL
set -u
dlock=$1 url=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
if [ -z "$url" ] || ! command -v socat >/dev/null; then
    echo "no Redis server or socat"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
hp=${url#*://}
hp=${hp#*@}
hp=${hp%%/*}
hp=${hp%%\?*}
t=$(mktemp -d /tmp/dlock-adv47-rj.XXXXXX)
px=
trap '[ -n "$px" ] && kill "$px" 2>/dev/null; rm -rf "$t"' EXIT
# A port nothing listens on, that a forwarder to the server takes 1.5 s on.
for _ in $(seq 20); do
    port=$((20000 + RANDOM % 30000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
down=${url/$hp/127.0.0.1:$port}
(sleep 1.5; exec socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
    "TCP:$hp") &
px=$!
"$dlock" -s "$down" -v run --json -w 10 "adv47-rj-$$" -- sh -c 'exit 2' \
    >"$t/out" 2>"$t/err"
rc=$?
[ $rc -eq 2 ] || bad "exit $rc, not CMD's 2: $(cat "$t/err")"
grep -q '(try 1)' "$t/err" || bad "no retry line on stderr: $(cat "$t/err")"
if python3 - "$t/out" "$t/err" <<'PY'
import json, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert o["result"] == "exited" and o["status"] == 2, o
assert o["error"] is None, o["error"]
for l in open(sys.argv[2]).read().splitlines():
    assert not l.startswith('{"error"'), l
PY
then ok "retries are warnings: the run's error is null, no error object"
else bad "out: $(cat "$t/out") err: $(cat "$t/err")"
fi
exit $fail
