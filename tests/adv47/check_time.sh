#!/bin/bash
# dlock check's clock against a Redis server whose TIME is hostile or
# broken (any digits: an int64's seconds): sec * 1000 overflowed (UBSan:
# signed integer overflow, the check died with no output).  Such an
# answer is no reading; check ends, its JSON whole.
#   check_time.sh DLOCK REDIS_URL
set -u
dlock=$1 url=$2
here=$(cd "$(dirname "$0")" && pwd)
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
if [ -z "$url" ]; then
    echo "no Redis server"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
case $url in redis://*) ;; *) echo "not a plain redis:// URL"; exit 77 ;; esac
hp=${url#redis://}
hp=${hp#*@}
hp=${hp%%/*}
hp=${hp%%\?*}
t=$(mktemp -d /tmp/dlock-adv47-time.XXXXXX)
px=
trap '[ -n "$px" ] && kill "$px" 2>/dev/null; rm -rf "$t"' EXIT
for v in "9223372036854775807 0" "-9223372036854775808 0" \
         "9223372036854775 999999" "253402300800 0" "1 -9223372036854775808"; do
    set -- $v
    rm -f "$t/port"
    python3 "$here/time_proxy.py" "$t/port" "${hp%:*}" "${hp##*:}" "$1" "$2" &
    px=$!
    for _ in $(seq 50); do [ -s "$t/port" ] && break; sleep 0.1; done
    u=${url/$hp/127.0.0.1:$(cat "$t/port")}
    "$dlock" -s "$u" check --json >"$t/out" 2>"$t/err"
    rc=$?
    if python3 - "$t/out" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read())
c = [c for c in d["checks"] if c["name"] == "clock"][0]
assert c["status"] in ("skip", "warn"), c
PY
    then
        [ $rc -eq 0 ] && ! grep -q "runtime error" "$t/err" &&
            ok "TIME $v: no reading, check exits 0" ||
            bad "TIME $v: exit $rc: $(cat "$t/err")"
    else
        bad "TIME $v: exit $rc, out: $(cat "$t/out") err: $(cat "$t/err")"
    fi
    kill "$px" 2>/dev/null
    wait "$px" 2>/dev/null
    px=
done
exit $fail
