#!/bin/bash
# Redis over TLS (rediss://), what must fail and how: each refusal exits
# 69 (the store cannot be opened: DLOCK_EUNAVAIL for the server's
# certificate, DLOCK_EINVAL for a bad URL) with a message that says why,
# and nothing ever falls back to plaintext.
#   tls.sh DLOCK SERVER_SCRIPT URL DIR
# URL, DIR: a server of `server-redis.sh start-tls` (its certificates in
# DIR/tls-certs); the script starts two more in DIR: one with an expired
# certificate, one that requires client certificates.
set -u
dlock=$1 script=$2 url=$3 dir=$4
certs=$dir/tls-certs
port=$(cat "$dir/port")
ca="cacert=$certs/ca.crt"
name="tls-$$"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# expect RC PATTERN URL: `dlock status` exits RC (3: connected, the name
# free), its message has PATTERN.
expect() {
    local rc=$1 pat=$2 u=$3 out got
    out=$("$dlock" -s "$u" status "$name" 2>&1)
    got=$?
    if [ "$got" != "$rc" ]; then
        bad "$u: exit $got, not $rc: $out"
    elif ! printf '%s' "$out" | grep -q -- "$pat"; then
        bad "$u: no '$pat' in: $out"
    else
        echo "ok   $rc $pat"
    fi
}

sub=$(mktemp -d "$dir/variants.XXXXXX")
rel=${sub#"$dir"/}
cleanup() {
    "$script" ctl "$dir" stop-tls "$rel/expired" >/dev/null 2>&1
    "$script" ctl "$dir" stop-tls "$rel/auth" >/dev/null 2>&1
    rm -rf "$sub"
}
trap cleanup EXIT
expired=$("$script" ctl "$dir" start-tls "$rel/expired" expired) ||
    { echo "cannot start the expired-certificate server"; exit 1; }
auth=$("$script" ctl "$dir" start-tls "$rel/auth" clientauth) ||
    { echo "cannot start the client-certificate server"; exit 1; }

# What works: the address and the names of the certificate.
expect 3 "free" "$url"
expect 3 "free" "rediss://localhost:$port?$ca"
expect 3 "free" "rediss://127.0.0.1:$port?$ca&sni=localhost"
"$dlock" -s "$url" run -n "$name" -- true || bad "run over TLS failed"

# The server's certificate: another CA, expired, another name.
expect 69 "certificate was refused: self-signed certificate in certificate chain" \
    "rediss://127.0.0.1:$port?cacert=$certs/other-ca.crt"
expect 69 "certificate was refused: certificate has expired" "$expired"
expect 69 "certificate was refused: hostname mismatch" \
    "rediss://127.0.0.1:$port?$ca&sni=other.example"
# Without ?cacert= the system's CAs, which never signed the test CA.
expect 69 "certificate was refused" "rediss://127.0.0.1:$port"

# A server that requires a client certificate.
expect 69 "wants\? a client certificate" "$auth"
expect 3 "free" "$auth&cert=$certs/client.crt&key=$certs/client.key"
expect 69 "alert unknown ca\|refuse the client certificate" \
    "$auth&cert=$certs/other-ca.crt&key=$certs/other-ca.key"

# Never plaintext: redis:// to the TLS port, rediss:// to a plaintext one
# (the unix socket of the same server is plaintext; a TCP one is needed:
# the client's ClientHello meets a server waiting for a command).
expect 69 "does not answer like a Redis server" "redis://127.0.0.1:$port"

# Bad URLs: one spelling of TLS, TLS parameters only with it, files.
expect 69 "TLS is spelled rediss://" "redis://127.0.0.1:$port?tls=1"
expect 69 "TLS is spelled rediss://" "rediss://127.0.0.1:$port?$ca&tls=0"
expect 69 "is for TLS, which is spelled rediss://" \
    "redis://127.0.0.1:$port?$ca"
expect 69 "No such file or directory" \
    "rediss://127.0.0.1:$port?cacert=$dir/no-such-ca.crt"
expect 69 "go together" "$auth&cert=$certs/client.crt"
expect 69 "key values mismatch" \
    "$auth&cert=$certs/client.crt&key=$certs/server.key"
expect 69 "is for TLS" "unix://$dir/redis.sock?$ca"

exit $fail
