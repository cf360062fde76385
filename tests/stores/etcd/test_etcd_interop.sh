#!/bin/bash
# dlock and Debian's `etcdctl lock` (etcd-client 3.4.23) exclude each
# other, both ways (issue 38):
#   test_etcd_interop.sh DLOCK URL
# 1. `etcdctl lock NAME CMD` holds (CMD blocks on a fifo): `dlock run -w 0
#    NAME` exits 1 (not acquired) without running its command; `dlock
#    status` shows a holder that is not dlock (other_client, the key's
#    create revision as fence); once etcdctl lets go, dlock gets it.
# 2. `dlock run NAME CMD` holds: `etcdctl lock NAME` queues (its key
#    under NAME/) and does not run its command until dlock's command has
#    ended and dlock released; then it does, within a bound.
# Sequenced by fifos and by polls of NAME/'s keys; every wait is bounded.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: test_etcd_interop.sh DLOCK URL}" "${2-}" python3

name="interop-$$-a"
mkfifo "$T/held" "$T/go"
# --- 1. etcdctl holds ---------------------------------------------------
timeout 60 etcdctl --endpoints="$EPS" lock "$name" -- \
    sh -c 'echo x >"$0"; read _ <"$1"' "$T/held" "$T/go" >"$T/e.out" 2>&1 &
E=$!
pids="$pids $E"
await "$T/held" 20 || fail "etcdctl lock never ran its command: $(cat "$T/e.out")"
ekey=$(queue "$name" | head -1)
"$DLOCK" -s "$URL" run -w 0 "$name" -- touch "$T/ran" >"$T/d.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && [ ! -e "$T/ran" ]; then
    ok "etcdctl holds: dlock run -w 0 exits 1, its command not run"
else
    fail "etcdctl holds: dlock run -w 0 exited $rc (wanted 1), ran: $([ -e "$T/ran" ] && echo yes || echo no): $(cat "$T/d.out")"
fi
[ "$(nkeys "$name")" = 1 ] && ok "the busy try left no key of its own" ||
    fail "keys under $name/ after the busy try: $(queue "$name" | tr '\n' ' ')"
st=$("$DLOCK" -s "$URL" status "$name" --json 2>&1)
rc=$?
set -- $ekey
erev=${2:-none}
case $st in
*'"held":true'*'"other_client":true'*)
    ok "status --json: held by another client: $st" ;;
*) fail "status --json (exit $rc) does not show a foreign holder: $st" ;;
esac
case $st in
*"\"fence\":\"$erev\""*) ok "status: fence = etcdctl's key's create revision $erev" ;;
*) fail "status: fence is not etcdctl's key's create revision $erev: $st" ;;
esac
st=$("$DLOCK" -s "$URL" status "$name" 2>&1)
case $st in
*"another client"*) ok "status: $st" ;;
*) fail "status does not say 'another client': $st" ;;
esac
echo x >"$T/go"
wait_exit "$E" 100
[ "$rc" = 0 ] && ok "etcdctl lock ended (exit 0)" ||
    fail "etcdctl lock exit $rc: $(cat "$T/e.out")"
until_true "[ \"\$(nkeys $name)\" = 0 ]" 50 ||
    fail "etcdctl's key still there after it ended: $(queue "$name")"
"$DLOCK" -s "$URL" run -w 5 "$name" -- touch "$T/ran" >"$T/d.out" 2>&1
rc=$?
[ "$rc" = 0 ] && [ -e "$T/ran" ] && ok "etcdctl let go: dlock run gets it" ||
    fail "etcdctl let go: dlock run exit $rc: $(cat "$T/d.out")"
rm -f "$T/ran"

# --- 2. dlock holds -----------------------------------------------------
name="interop-$$-b"
: >"$T/order"
"$DLOCK" -s "$URL" run --ttl 10 "$name" -- \
    sh -c 'echo D-start >>"$0"; echo x >"$1"; read _ <"$2"; echo D-end >>"$0"' \
    "$T/order" "$T/held" "$T/go" >"$T/d.out" 2>&1 &
D=$!
pids="$pids $D"
await "$T/held" 20 || fail "dlock run never ran its command: $(cat "$T/d.out")"
timeout 60 etcdctl --endpoints="$EPS" lock "$name" -- \
    sh -c 'echo E >>"$0"' "$T/order" >"$T/e.out" 2>&1 &
E=$!
pids="$pids $E"
if until_true "[ \"\$(nkeys $name)\" = 2 ]" 100; then
    ok "etcdctl lock queued behind dlock: $(queue "$name" | tr '\n' ' ')"
else
    fail "etcdctl's key never appeared under $name/: $(queue "$name" | tr '\n' ' ')"
fi
# etcdctl's own Mutex would have run E at once if it did not see dlock's
# key as the owner; give it a moment it would need (its txn is done).
sleep 0.5
if alive "$E" && ! grep -q E "$T/order"; then
    ok "etcdctl lock blocks while dlock holds"
else
    fail "etcdctl lock did not block: order $(tr '\n' ' ' <"$T/order"), etcdctl: $(cat "$T/e.out")"
fi
t0=$(now_ms)
echo x >"$T/go"
wait_exit "$D" 100
[ "$rc" = 0 ] && ok "dlock run ended (exit 0)" ||
    fail "dlock run exit $rc: $(cat "$T/d.out")"
wait_exit "$E" 100
ms=$(($(now_ms) - t0))
order=$(tr '\n' ' ' <"$T/order")
if [ "$rc" = 0 ] && [ "$order" = "D-start D-end E " ]; then
    ok "etcdctl lock got it after dlock released: $order(${ms} ms after the go)"
else
    fail "etcdctl lock exit $rc, order '$order' (wanted D-start D-end E): $(cat "$T/e.out")"
fi
[ "$rc" = 0 ] && [ "$ms" -le 3000 ] && ok "hand-off to etcdctl in $ms ms (<= 3000)" ||
    fail "hand-off to etcdctl took $ms ms (> 3000) or failed"
until_true "[ \"\$(nkeys $name)\" = 0 ]" 50 &&
    ok "no key left under $name/" ||
    fail "keys left under $name/: $(queue "$name" | tr '\n' ' ')"
finish
