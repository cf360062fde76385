#!/bin/bash
# A hostile etcd gateway (fake_etcd.py on 127.0.0.1, in front of the
# test's etcd: its /v3/maintenance/status is real, so open succeeds) that
# answers garbage JSON, half a chunk then silence, HTTP 500, nothing (a
# hang), or another cluster_id, on every later request ("all") or only on
# the lock's txn ("txn"): `dlock -s 'etcd://127.0.0.1:PORT?timeout=1s'
# run -w 0 NAME -- true` and `status NAME` end within the timeout + slack
# with exit 69 (store failing: never 0, never 1 = busy), a message naming
# etcd, and the command not run.  A keepalive answered 200 without a TTL
# (a dead lease) makes a `run --ttl 3` holder exit 75 (LOST) by its first
# renewal (issue 38).
#   test_etcd_hostile.sh DLOCK URL
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: test_etcd_hostile.sh DLOCK URL}" "${2-}" python3
MAX_MS=3000 # ?timeout=1s, one endpoint: the timeout + 2 s
up=${EPS%%,*}
srv=""
times=""

start_fake() {
    rm -f "$T/port"
    mkfifo "$T/port"
    python3 "$here/fake_etcd.py" "$1" "$2" "$up" "$T/port" 2>"$T/fake.err" &
    srv=$!
    pids="$pids $srv"
    port=""
    exec {fd}<>"$T/port"
    read -r -t 10 -u "$fd" port
    exec {fd}<&-
    [ -n "$port" ] || fail "$1/$2: the fake gateway did not start: $(cat "$T/fake.err")"
}
stop_fake() {
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
}
# check LABEL WANT_RC ARGS...: dlock ARGS against the fake, bounded.
check() {
    local label=$1 want=$2 t0 ms
    shift 2
    rm -f "$T/ran"
    t0=$(now_ms)
    timeout 10 "$DLOCK" -s "etcd://127.0.0.1:$port?timeout=1s" "$@" \
        >"$T/out" 2>&1 </dev/null
    rc=$?
    ms=$(($(now_ms) - t0))
    times="$times $label=$ms"
    msg=$(tr '\n' ' ' <"$T/out")
    if [ "$rc" != "$want" ]; then
        fail "$label: exit $rc after $ms ms, wanted $want: $msg"
    elif [ "$ms" -gt "$MAX_MS" ]; then
        fail "$label: ended after $ms ms (> $MAX_MS): $msg"
    elif [ -e "$T/ran" ]; then
        fail "$label: the command ran"
    elif [ "$want" = 69 ] && ! grep -qi etcd "$T/out"; then
        fail "$label: no message naming etcd: $msg"
    else
        ok "$label: exit $rc after $ms ms: $msg"
    fi
}
for mode in garbage half 500 hang cluster; do
    for where in all txn; do
        [ "$mode" = cluster ] && [ "$where" = txn ] && continue
        start_fake "$mode" "$where"
        [ -n "$port" ] || continue
        check "$mode/$where run" 69 run -w 0 "hostile-$$" -- touch "$T/ran"
        [ "$where" = all ] &&
            check "$mode/$where status" 69 status "hostile-$$"
        stop_fake
    done
done
# A dead lease: keepalive 200 without a TTL.
start_fake deadlease keepalive
if [ -n "$port" ]; then
    check "deadlease run --ttl 3" 75 run -w 0 --ttl 3 "hostile-$$" -- \
        sh -c 'touch "$0.held"; exec sleep 20' "$T/ran"
    [ -e "$T/ran.held" ] || fail "deadlease: the holder never ran its command"
    grep -qi lost "$T/out" && ok "deadlease: the message says lost" ||
        fail "deadlease: no 'lost' in: $(cat "$T/out")"
    stop_fake
fi
until_true "[ \"\$(nkeys hostile-$$)\" = 0 ]" 50 ||
    fail "keys left under hostile-$$/: $(queue "hostile-$$" | tr '\n' ' ')"
echo "     ms:$times"
finish
