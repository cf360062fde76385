#!/bin/bash
# run -w N on a name held by another client of the server (a PostgreSQL
# session's pg_advisory_lock, not dlock): the "still held" line was
# written straight to stderr, so under --json there was no error object
# (the run's "error" null, stderr a text line) and under --log-format
# json a line that is not JSON.  It is an error as every other one.
#   other_client_json.sh DLOCK URL
set -u
dlock=$1 url=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
if [ -z "$url" ] || ! command -v psql >/dev/null; then
    echo "no PostgreSQL server or psql"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
t=$(mktemp -d /tmp/dlock-adv47-oc.XXXXXX)
sq=
trap '[ -n "$sq" ] && kill "$sq" 2>/dev/null; rm -rf "$t"' EXIT
name=adv47-oc-$$-$RANDOM
"$dlock" -s "$url" init >/dev/null || bad "init"
psql "$url" -Atq -c "select pg_advisory_lock(hashtextextended('$name', 0))" \
    -c "select pg_sleep(60)" >/dev/null 2>&1 &
sq=$!
for _ in $(seq 50); do
    out=$("$dlock" -s "$url" status --json "$name" 2>/dev/null)
    case $out in *'"other_client":true'*) break ;; esac
    sleep 0.2
done
case $out in *'"other_client":true'*) ;; *) bad "the session never held $name: $out"; exit 1 ;; esac

"$dlock" -s "$url" run --json -w 0.3 "$name" true >"$t/out" 2>"$t/err"
rc=$?
[ $rc -eq 1 ] || bad "run --json -w 0.3: exit $rc, not 1"
if python3 - "$t/out" "$t/err" <<'PY'
import json, sys
out = open(sys.argv[1]).read().splitlines()
err = open(sys.argv[2]).read().splitlines()
o = json.loads(out[-1])
assert o["result"] == "busy", o
assert o["error"] is not None and "another client" in o["error"]["message"], o
assert len(err) == 1, err
e = json.loads(err[0])
assert e["error"]["exit_code"] == 1, e
PY
then ok "run --json: the held-by-another-client line is the error object"
else bad "run --json: out: $(cat "$t/out") err: $(cat "$t/err")"
fi

"$dlock" -s "$url" --log-format json run -w 0.3 "$name" true 2>"$t/err"
rc=$?
[ $rc -eq 1 ] || bad "--log-format json run -w 0.3: exit $rc, not 1"
if python3 - "$t/err" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines, "no line"
for l in lines:
    j = json.loads(l)
    assert j["level"] == "err" and "another client" in j["msg"], j
PY
then ok "--log-format json: the line is JSON"
else bad "--log-format json stderr: $(cat "$t/err")"
fi
exit $fail
