#!/bin/bash
# etcds:// end to end: an etcd of the test's own on 127.0.0.1 serving its
# clients over TLS only, with client certificates required (a throwaway CA
# from scripts/server-lib.sh's make_tls_certs).  dlock locks through it
# with ?cacert=&cert=&key=; the wrong CA, no client certificate, an
# expired server certificate's CA mismatch and plaintext etcd:// to the
# TLS port are each refused (exit 69) without hanging.
#   test_etcd_tls.sh DLOCK SERVER_LIB
set -u
DLOCK=$1
LIB=$2
fails=0 n=0
ok() { n=$((n + 1)); echo "ok   $*"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $*"; }
for t in etcd openssl curl python3; do
    command -v "$t" >/dev/null || {
        echo "no $t"
        [ "${CI:-}" = true ] && exit 1
        exit 77
    }
done
# shellcheck source=../../../scripts/server-lib.sh
. "$LIB"
T=$(mktemp -d /tmp/dlock-etcd-tls.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
make_tls_certs "$T/tls" || exit 1
read -r c p < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
etcd --name tls --data-dir "$T/data" \
    --listen-client-urls "https://127.0.0.1:$c" \
    --advertise-client-urls "https://127.0.0.1:$c" \
    --listen-peer-urls "http://127.0.0.1:$p" \
    --initial-advertise-peer-urls "http://127.0.0.1:$p" \
    --initial-cluster "tls=http://127.0.0.1:$p" \
    --cert-file "$T/tls/server.crt" --key-file "$T/tls/server.key" \
    --trusted-ca-file "$T/tls/ca.crt" --client-cert-auth \
    --logger zap --log-outputs stderr >"$T/log" 2>&1 &
pid=$!
up=0
for _ in $(seq 100); do
    if timeout 2 curl -sf --cacert "$T/tls/ca.crt" --cert "$T/tls/client.crt" \
        --key "$T/tls/client.key" "https://127.0.0.1:$c/health" |
        grep -q '"health":"true"'; then
        up=1
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[ "$up" = 1 ] || { tail -20 "$T/log"; echo "FAIL etcd with TLS did not start"; exit 1; }

u="etcds://127.0.0.1:$c?cacert=$T/tls/ca.crt&cert=$T/tls/client.crt&key=$T/tls/client.key&timeout=3s"
name=tls-$$
out=$(timeout 20 "$DLOCK" -s "$u" run "$name" -- sh -c 'echo "fence=$DLOCK_FENCE"' 2>&1)
rc=$?
if [ "$rc" = 0 ] && [[ $out =~ fence=[1-9] ]]; then ok "etcds:// with a client certificate: run, $out"; else bad "etcds:// run: rc $rc: $out"; fi

# A holder over TLS excludes a second TLS client.
mkfifo "$T/held"
timeout 30 "$DLOCK" -s "$u" run "$name" -- sh -c "echo x >'$T/held'; sleep 5" &
h=$!
read -r _ <"$T/held"
out=$(timeout 20 "$DLOCK" -s "$u" run -w 0 "$name" -- true 2>&1)
rc=$?
[ "$rc" = 1 ] && ok "a second etcds:// client finds it held (1)" || bad "a second client: rc $rc: $out"
kill "$h" 2>/dev/null
wait "$h" 2>/dev/null

refused() { # what URL
    local t0 t1 out rc
    t0=$(date +%s%N)
    out=$(timeout 20 "$DLOCK" -s "$2" status "$name" 2>&1)
    rc=$?
    t1=$(date +%s%N)
    if [ "$rc" = 69 ] && [ $(((t1 - t0) / 1000000)) -lt 8000 ]; then
        ok "$1: refused (69) in $(((t1 - t0) / 1000000)) ms"
    else
        bad "$1: rc $rc in $(((t1 - t0) / 1000000)) ms: $out"
    fi
}
refused "another CA" "etcds://127.0.0.1:$c?cacert=$T/tls/other-ca.crt&cert=$T/tls/client.crt&key=$T/tls/client.key&timeout=3s"
refused "no client certificate" "etcds://127.0.0.1:$c?cacert=$T/tls/ca.crt&timeout=3s"
refused "plaintext etcd:// to the TLS port" "etcd://127.0.0.1:$c?timeout=3s"
out=$(timeout 20 "$DLOCK" -s "etcd://127.0.0.1:$c?cacert=$T/tls/ca.crt" status "$name" 2>&1)
rc=$?
if [ "$rc" = 69 ] && [[ $out == *"spelled etcds://"* ]]; then
    ok "?cacert= on etcd:// is refused, naming etcds:// (69, as rediss://)"
else
    bad "?cacert= on etcd://: rc $rc: $out"
fi

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
