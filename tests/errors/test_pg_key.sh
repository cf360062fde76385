#!/bin/bash
# An encrypted TLS client key on postgres:// (?sslkey=, no ?sslpassword=)
# is refused with a clear message, never a prompt: libpq leaves an empty
# sslpassword to OpenSSL's default callback, which asks "Enter PEM pass
# phrase:" on the terminal and waits (issue 34, item 13's PostgreSQL
# twin).  A throwaway server of its own (scripts/server-postgres.sh, then
# ssl = on by ALTER SYSTEM and a reload: the shared test server is left
# alone); `dlock status` runs on a pty (python3 pty, the pty its
# controlling terminal) and with no terminal at all (setsid, </dev/null).
# Controls: the same key with ?sslpassword= and the unencrypted key work.
#   test_pg_key.sh DLOCK SERVER-POSTGRES.SH
DLOCK=${1:?usage: test_pg_key.sh DLOCK SERVER-POSTGRES.SH}
SERVER=${2:?usage: test_pg_key.sh DLOCK SERVER-POSTGRES.SH}
skip() {
    echo "SKIP: $*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
command -v python3 >/dev/null || skip "no python3"
command -v openssl >/dev/null || skip "no openssl"
command -v setsid >/dev/null || skip "no setsid"
T=$(mktemp -d)
chmod 777 "$T"
trap '"$SERVER" stop "$T/pg" >/dev/null 2>&1; rm -rf "$T"' EXIT
mkdir "$T/pg"
chmod 777 "$T/pg"
url=$("$SERVER" start "$T/pg" 2>"$T/server.log") || {
    cat "$T/server.log"
    skip "no PostgreSQL server could be started"
}
. "$(dirname "$SERVER")/server-lib.sh"
make_tls_certs "$T/certs" || exit 1
# The server's key: its own, private to the server's user.
owner=$(stat -c %U "$T/pg")
install -m 600 "$T/certs/server.key" "$T/pg/tls.key"
install -m 644 "$T/certs/server.crt" "$T/pg/tls.crt"
chown "$owner" "$T/pg/tls.key" "$T/pg/tls.crt"
for s in "ALTER SYSTEM SET ssl_cert_file = '$T/pg/tls.crt'" \
    "ALTER SYSTEM SET ssl_key_file = '$T/pg/tls.key'" \
    "ALTER SYSTEM SET ssl = on" "SELECT pg_reload_conf()"; do
    "$SERVER" ctl "$T/pg" sql --super "$s" >/dev/null || exit 1
done
# pg_reload_conf() only signals: wait until a TLS connection works.
plain="$T/plain.key"
install -m 600 "$T/certs/client.key" "$plain"
openssl pkey -in "$plain" -aes256 -passout pass:key-pw -out "$T/enc.key" ||
    exit 1
chmod 600 "$T/enc.key"
base="$url?sslmode=require&sslcert=$T/certs/client.crt&timeout=5s"
for _ in $(seq 50); do
    "$DLOCK" -s "$base&sslkey=$plain" status x >/dev/null 2>&1 </dev/null
    [ $? = 3 ] && break # connected: x is free
    sleep 0.1 # polling the reload: no event to wait on
done

fails=0 n=0
check() { # LABEL RC OUTPUT-FILE
    n=$((n + 1))
    if grep -qi 'pass phrase' "$3"; then
        echo "FAIL $1: asked for a pass phrase: $(tr '\r\n' '  ' <"$3")"
        fails=$((fails + 1))
    elif [ "$2" != 69 ] ||
        ! grep -q "the client key $T/enc.key is encrypted; give ?sslpassword= or an unencrypted key" "$3"; then
        echo "FAIL $1: exit $2, wanted 69 and the clear message: $(tr '\r\n' '  ' <"$3")"
        fails=$((fails + 1))
    else
        echo "ok   $1: $(tr '\r\n' '  ' <"$3")"
    fi
}

enc="$base&sslkey=$T/enc.key"
# On a pty: the child's controlling terminal, as an operator's shell.
# Output until it exits, or 10 s (a prompt waiting for an answer).
python3 - "$DLOCK" "$enc" >"$T/pty.out" <<'PY'
import os, pty, select, sys, time
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
# The pty closed (the child is exiting) or 10 s passed: its status, if
# it ends by then.
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
sys.stdout.write("\nrc=%d\n" % rc)
PY
rc=$(sed -n 's/^rc=//p' "$T/pty.out")
check "on a pty" "$rc" "$T/pty.out"

timeout 10 setsid "$DLOCK" -s "$enc" status x >"$T/none.out" 2>&1 </dev/null
check "no terminal" $? "$T/none.out"
timeout 10 setsid "$DLOCK" -s "$enc&sslpassword=" status x >"$T/empty.out" 2>&1 </dev/null
check "no terminal, ?sslpassword= empty" $? "$T/empty.out"

n=$((n + 1))
out=$("$DLOCK" -s "$enc&sslpassword=key-pw" status x 2>&1 </dev/null)
if [ $? = 3 ]; then # connected: x is free
    echo "ok   control: the encrypted key with ?sslpassword=: $out"
else
    echo "FAIL control: the encrypted key with ?sslpassword= did not work: $out"
    fails=$((fails + 1))
fi
n=$((n + 1))
out=$("$DLOCK" -s "$base&sslkey=$plain" status x 2>&1 </dev/null)
if [ $? = 3 ]; then
    echo "ok   control: the unencrypted key: $out"
else
    echo "FAIL control: the unencrypted key did not work: $out"
    fails=$((fails + 1))
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
