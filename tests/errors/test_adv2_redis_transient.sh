#!/bin/bash
# Issue 34 (adversarial pass, adv2): Redis answers that say "not now"
# must be DLOCK_EUNAVAIL (include/dlock.h: retrying may help), or a
# waiter gives up at once instead of waiting out the outage:
#  - NOREPLICAS (min-replicas-to-write not met: a replica restarting, a
#    partition): `dlock run -w` waits until the replicas are back;
#  - "ERR max number of clients reached" (maxclients, server-wide; the
#    answer to whatever is sent first, AUTH included): `dlock run -w`
#    waits until a connection is free, with and without a password.
# Its own redis-server (scripts/server-redis.sh), as the test changes
# server-wide settings.
#   test_adv2_redis_transient.sh DLOCK SERVER_SCRIPT
DLOCK=${1:?usage: test_adv2_redis_transient.sh DLOCK SERVER_SCRIPT}
SCRIPT=${2:?usage: test_adv2_redis_transient.sh DLOCK SERVER_SCRIPT}
command -v redis-server >/dev/null || { echo "no redis-server"; exit 77; }
T=$(mktemp -d)
chmod 777 "$T"
trap '"$SCRIPT" stop "$T" >/dev/null 2>&1; rm -rf "$T"' EXIT
url=$("$SCRIPT" start "$T") || { echo "FAIL: cannot start redis"; exit 1; }
cli() { "$SCRIPT" ctl "$T" cli "$@"; }
fail=0

# NOREPLICAS: the waiter's first try is refused (errorstat counted), then
# the replicas "come back"; the run must get the lock (exit 0).
cli CONFIG SET min-replicas-to-write 1 >/dev/null
"$DLOCK" -s "$url" run adv2-norepl -w 30 -- true >"$T/out" 2>&1 &
pid=$!
for _ in $(seq 300); do
    cli INFO errorstats | grep -q '^errorstat_NOREPLICAS' && break
    kill -0 $pid 2>/dev/null || break
    cli PING >/dev/null # a round trip, no sleep: poll until refused
done
cli CONFIG SET min-replicas-to-write 0 >/dev/null
wait $pid
rc=$?
if [ $rc = 0 ]; then
    echo "ok   NOREPLICAS waited out"
else
    echo "FAIL: NOREPLICAS: dlock run -w 30 exit $rc (want 0): $(cat "$T/out")"
    fail=1
fi

# maxclients: one connection (the holder, python) fills the server; the
# waiter's connection is refused (rejected_connections counted), then the
# holder raises maxclients; the waiter must get in (exit 0).
cli ACL SETUSER adv2 on '>adv2-secret-pw' '~*' '&*' '+@all' >/dev/null
authurl=$(python3 -c 'import sys; u=sys.argv[1]; print(u.replace("redis://","redis://adv2:adv2-secret-pw@",1))' "$url")
for u in "$url" "$authurl"; do
    python3 - "$u" "$DLOCK" "$T/out" <<'PY'
import socket, subprocess, sys, urllib.parse as up
url, dlock, out = sys.argv[1:4]
u = up.urlsplit(url)
s = socket.create_connection((u.hostname, u.port))
f = s.makefile("rb")
def cmd(*a):
    s.sendall(("*%d\r\n" % len(a) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in a)).encode())
    line = f.readline()
    if line.startswith(b"$"):
        n = int(line[1:])
        return f.read(n + 2)[:-2]
    return line
assert cmd("CONFIG", "SET", "maxclients", "1").startswith(b"+OK")
with open(out, "w") as o:
    p = subprocess.Popen([dlock, "-s", url, "run", "adv2-maxcl", "-w", "30", "--", "true"],
                         stdout=o, stderr=subprocess.STDOUT)
    while p.poll() is None:
        info = cmd("INFO", "stats").decode()
        if any(l.startswith("rejected_connections:") and int(l.split(":")[1]) > 0
               for l in info.split("\r\n")):
            break
    cmd("CONFIG", "SET", "maxclients", "10000")
    sys.exit(p.wait())
PY
    rc=$?
    what=$([ "$u" = "$url" ] && echo "no password" || echo "with a password")
    if [ $rc = 0 ]; then
        echo "ok   maxclients ($what) waited out"
    else
        echo "FAIL: maxclients ($what): dlock run -w 30 exit $rc (want 0): $(cat "$T/out")"
        fail=1
    fi
    if grep -q adv2-secret-pw "$T/out"; then
        echo "FAIL: the password is printed: $(cat "$T/out")"
        fail=1
    fi
    cli CONFIG RESETSTAT >/dev/null
done
exit $fail
