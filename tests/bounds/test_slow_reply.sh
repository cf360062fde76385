#!/bin/bash
# Issue 34, item 1: a server that answers one byte at a time (every 200
# ms: each read succeeds, the answer never ends) does not hold a store
# call: with ?timeout=1s, `dlock status` (the store open) and, once open,
# a status and a try-acquire end within the timeout + LIMIT's margin with
# DLOCK_EUNAVAIL (exit 69).  The proxy (dribble.py) sits on 127.0.0.1 in
# front of the real servers of DLOCK_TEST_{REDIS,MYSQL,POSTGRES}_URL;
# PostgreSQL is the control.
#   test_slow_reply.sh DLOCK BOUNDS-SLOW-REPLY
DLOCK=${1:?usage: test_slow_reply.sh DLOCK BOUNDS-SLOW-REPLY}
PROG=${2:?usage: test_slow_reply.sh DLOCK BOUNDS-SLOW-REPLY}
HERE=$(cd "$(dirname "$0")" && pwd)
# ?timeout=1s: a call's answer is due within it (MariaDB: within its read
# timeout, timeout + one GET_LOCK slice = 2 s); a pooled connection that
# fails is replaced once (the retry-once policy, src/core/pool.h), and the
# new one's first answer is due within the timeout too; + 0.5 s.
LIMIT_MS=3500
T=$(mktemp -d)
proxy=
trap '[ -n "$proxy" ] && kill $proxy 2>/dev/null; rm -rf "$T"' EXIT
fails=0 n=0 stores=0

# URL with host:port replaced by 127.0.0.1:PORT and timeout=1s added.
via() {
    python3 - "$1" "$2" <<'PY'
import sys, urllib.parse as up
u = up.urlsplit(sys.argv[1])
cred = u.netloc.rpartition("@")[0]
net = (cred + "@" if cred else "") + "127.0.0.1:" + sys.argv[2]
q = (u.query + "&" if u.query else "") + "timeout=1s"
if u.scheme != "mysql":
    q += "&connect_timeout=1"
print(up.urlunsplit((u.scheme, net, u.path, q, "")))
PY
}
hostport() {
    python3 -c 'import sys, urllib.parse as up; u = up.urlsplit(sys.argv[1]); print(u.hostname, u.port)' "$1"
}

start_proxy() { # URL MODE
    local hp
    hp=$(hostport "$1")
    rm -f "$T/ports"
    mkfifo "$T/ports"
    # shellcheck disable=SC2086
    python3 "$HERE/dribble.py" $hp 0.2 "$T/ports" "$2" &
    proxy=$!
    read -r pport cport <"$T/ports"
}
stop_proxy() {
    kill "$proxy" 2>/dev/null
    wait "$proxy" 2>/dev/null
    proxy=
}

for store in redis mysql postgres; do
    var=DLOCK_TEST_$(echo $store | tr a-z A-Z)_URL
    url=${!var}
    [ -n "$url" ] || continue
    stores=$((stores + 1))

    # The store open, through the CLI: every answer dribbled.
    start_proxy "$url" all
    n=$((n + 1))
    t0=$(date +%s%N)
    timeout 30 "$DLOCK" -s "$(via "$url" "$pport")" status bounds-slow >"$T/out" 2>&1 </dev/null
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" != 69 ] || [ "$ms" -gt "$LIMIT_MS" ]; then
        echo "FAIL $store status (open): exit $rc after $ms ms (want 69 within $LIMIT_MS ms): $(sed 's/:[^:@/]*@/:***@/' "$T/out")"
        fails=$((fails + 1))
    else
        echo "ok   $store status (open): exit 69 after $ms ms: $(sed 's/:[^:@/]*@/:***@/' "$T/out")"
    fi
    stop_proxy

    # Calls on an open store: dribbling starts after the open.
    start_proxy "$url" fast
    n=$((n + 1))
    timeout 60 "$PROG" "$(via "$url" "$pport")" "$cport" "$LIMIT_MS" >"$T/out" 2>&1
    rc=$?
    sed "s/^/     $store: /" "$T/out"
    if [ "$rc" != 0 ]; then
        echo "FAIL $store: calls after open (exit $rc)"
        fails=$((fails + 1))
    fi
    stop_proxy
done
if [ "$stores" = 0 ]; then
    echo "SKIP: no DLOCK_TEST_{REDIS,MYSQL,POSTGRES}_URL"
    exit 77
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
