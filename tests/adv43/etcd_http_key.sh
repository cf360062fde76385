#!/bin/bash
# Issue 43 item 7: an encrypted TLS client key on etcds:// (?key=) is
# refused at once with the Redis store's words, never a pass phrase
# prompt.  libcurl hands ?key= to OpenSSL without CURLOPT_KEYPASSWD, so
# OpenSSL's default callback printed "Enter PEM pass phrase:" on the
# terminal and waited there past ?timeout=.  An etcd of the test's own
# serves TLS on 127.0.0.1 with client certificates required; `dlock
# status` runs on a pty (python3 pty.fork: the pty its controlling
# terminal) and with no terminal at all (setsid, </dev/null).  Control:
# the same key unencrypted works.
#   etcd_http_key.sh DLOCK SERVER_LIB
set -u
DLOCK=$1
LIB=$2
fails=0 n=0
ok() { n=$((n + 1)); echo "ok   $*"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $*"; }
for t in etcd openssl curl python3 setsid; do
    command -v "$t" >/dev/null || {
        echo "no $t"
        [ "${CI:-}" = true ] && exit 1
        exit 77
    }
done
# shellcheck source=../../scripts/server-lib.sh
. "$LIB"
T=$(mktemp -d /tmp/dlock-adv43-key.XXXXXX)
pid=
# shellcheck disable=SC2317 # the EXIT trap calls it
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
    sleep 0.1 # polling etcd's start: no event to wait on
done
[ "$up" = 1 ] || {
    tail -20 "$T/log"
    echo "FAIL etcd with TLS did not start"
    exit 1
}
openssl pkey -in "$T/tls/client.key" -aes256 -passout pass:key-pw \
    -out "$T/enc.key" 2>/dev/null || {
    echo "FAIL openssl pkey"
    exit 1
}
# The traditional PEM form too (Proc-Type: 4,ENCRYPTED).
openssl ec -in "$T/tls/client.key" -aes256 -passout pass:key-pw \
    -out "$T/enc-trad.key" 2>/dev/null || {
    echo "FAIL openssl ec"
    exit 1
}
base="etcds://127.0.0.1:$c?cacert=$T/tls/ca.crt&cert=$T/tls/client.crt&timeout=2s"

check() { # LABEL KEY RC MS OUTPUT-FILE
    if grep -qi 'Enter PEM pass phrase' "$5"; then
        bad "$1: asked for a pass phrase: $(tr '\r\n' '  ' <"$5")"
    elif [ "$3" != 69 ] ||
        ! grep -q "cannot use the client key $2: it is encrypted (protected by a pass phrase), and dlock takes no pass phrase" "$5"; then
        bad "$1: exit $3, wanted 69 and the clear message: $(tr '\r\n' '  ' <"$5")"
    elif [ "$4" -gt 5000 ]; then
        bad "$1: refused, but after $4 ms"
    else
        ok "$1: refused in $4 ms: $(tr '\r\n' '  ' <"$5")"
    fi
}

for key in "$T/enc.key" "$T/enc-trad.key"; do
    u="$base&key=$key"
    # On a pty, as an operator's shell: output until it exits, or 10 s (a
    # prompt waiting for an answer).
    python3 - "$DLOCK" "$u" >"$T/pty.out" <<'PY'
import os, pty, select, sys, time
t0 = time.monotonic()
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "-s", sys.argv[2], "status", "x"])
out, end = b"", time.monotonic() + 10
while time.monotonic() < end:
    r, _, _ = select.select([fd], [], [], max(0, end - time.monotonic()))
    if not r:
        break
    try:
        b = os.read(fd, 4096)
    except OSError:
        b = b""
    if not b:
        break
    out += b
done, st = 0, 0
while not done and time.monotonic() < end:
    done, st = os.waitpid(pid, os.WNOHANG)
    if not done:
        time.sleep(0.01)
if not done:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    out += b"\n[still running after 10 s: killed]"
    rc = 124
else:
    rc = os.waitstatus_to_exitcode(st)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.stdout.write("\nrc=%d ms=%d\n" % (rc, (time.monotonic() - t0) * 1000))
PY
    rc=$(sed -n 's/^rc=\([0-9]*\) .*/\1/p' "$T/pty.out")
    ms=$(sed -n 's/^rc=.* ms=//p' "$T/pty.out")
    check "on a pty, $(basename "$key")" "$key" "${rc:-none}" "${ms:-99999}" "$T/pty.out"
    t0=$(date +%s%N)
    timeout 10 setsid "$DLOCK" -s "$u" status x >"$T/none.out" 2>&1 </dev/null
    rc=$?
    check "no terminal, $(basename "$key")" "$key" "$rc" \
        $((($(date +%s%N) - t0) / 1000000)) "$T/none.out"
done
out=$(timeout 20 "$DLOCK" -s "$base&key=$T/tls/client.key" status x 2>&1 </dev/null)
if [ $? = 3 ]; then # connected: x is free
    ok "control: the unencrypted key works: $out"
else
    bad "control: the unencrypted key failed: $out"
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
