#!/bin/bash
# etcd over IPv6 loopback: an etcd of the test's own on [::1] only.  dlock
# locks through etcd://[::1]:PORT, and through a host list whose first
# entry is a bracketed IPv6 address nobody listens on ([::1]:DEAD, then
# [::1]:PORT: the second answers); a second client finds the lock held.
# An IPv6 address without brackets in a list is refused (69) with a
# message that says to bracket it (69: "its URL is wrong", dlock.1).
#   test_etcd_ipv6.sh DLOCK
set -u
DLOCK=$1
fails=0
ok() { echo "ok   $*"; }
bad() { fails=$((fails + 1)); echo "FAIL $*"; }
skip() {
    echo "$*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
for t in etcd curl python3; do
    command -v "$t" >/dev/null || skip "no $t"
done
python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' \
    2>/dev/null || skip "no IPv6 loopback (::1) here"
T=$(mktemp -d /tmp/dlock-etcd-ipv6.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
# Three free ports on ::1: client, peer, and one nobody listens on.
read -r c p dead < <(python3 -c '
import socket
s = [socket.socket(socket.AF_INET6) for _ in range(3)]
for x in s: x.bind(("::1", 0))
print(*[x.getsockname()[1] for x in s])')
etcd --name v6 --data-dir "$T/data" \
    --listen-client-urls "http://[::1]:$c" \
    --advertise-client-urls "http://[::1]:$c" \
    --listen-peer-urls "http://[::1]:$p" \
    --initial-advertise-peer-urls "http://[::1]:$p" \
    --initial-cluster "v6=http://[::1]:$p" \
    --logger zap --log-outputs stderr >"$T/log" 2>&1 &
pid=$!
up=0
for _ in $(seq 100); do
    if timeout 2 curl -sf "http://[::1]:$c/health" | grep -q '"health":"true"'; then
        up=1
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[ "$up" = 1 ] || { tail -20 "$T/log"; echo "FAIL etcd on [::1] did not start"; exit 1; }

name=v6-$$
for u in "etcd://[::1]:$c" "etcd://[::1]:$dead,[::1]:$c?timeout=3s"; do
    out=$(timeout 20 "$DLOCK" -s "$u" run "$name" -- sh -c 'echo "fence=$DLOCK_FENCE"' 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && [[ $out =~ fence=[1-9] ]]; then ok "$u: run, $out"; else bad "$u: rc $rc: $out"; fi
done

# A holder through the list excludes a client of the single address.
mkfifo "$T/held"
timeout 30 "$DLOCK" -s "etcd://[::1]:$dead,[::1]:$c" run "$name" -- sh -c "echo x >'$T/held'; sleep 5" &
h=$!
read -r _ <"$T/held"
out=$(timeout 20 "$DLOCK" -s "etcd://[::1]:$c" run -w 0 "$name" -- true 2>&1)
rc=$?
[ "$rc" = 1 ] && ok "a second client finds it held (1)" || bad "a second client: rc $rc: $out"
kill "$h" 2>/dev/null
wait "$h" 2>/dev/null

out=$(timeout 20 "$DLOCK" -s "etcd://[::1]:$dead,::1:$c" status "$name" 2>&1)
rc=$?
if [ "$rc" = 69 ] && [[ $out == *brackets* ]]; then ok "unbracketed IPv6 in a list: 69, $out"; else bad "unbracketed IPv6 in a list: rc $rc: $out"; fi
[ "$fails" = 0 ]
