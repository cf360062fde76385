#!/bin/bash
# Issue 34, item 3: a waiter given a deadline keeps trying to reach a
# store that is not up yet, within the deadline (dlock run -w; -w 0
# tries once).  Per store of DLOCK_TEST_{REDIS,MYSQL,POSTGRES}_URL:
#  - `dlock run -w 8` starts while nothing listens on the URL's port;
#    1 s later a forwarder on 127.0.0.1 to the real server comes up: the
#    waiter gets the lock and runs its command (exit 0);
#  - with nothing ever listening, `run -w 3` exits 69 at about the
#    deadline (after 2.5 s, within 4.5 s), not at once;
#  - `run -w 0` still tries once: 69 at once (within 1 s).
#   test_store_down.sh DLOCK
DLOCK=${1:?usage: test_store_down.sh DLOCK}
T=$(mktemp -d)
fwd=
trap '[ -n "$fwd" ] && kill $fwd 2>/dev/null; rm -rf "$T"' EXIT
fails=0 n=0 stores=0

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# URL with host:port replaced by 127.0.0.1:PORT.
via() {
    python3 - "$1" "$2" <<'PY'
import sys, urllib.parse as up
u = up.urlsplit(sys.argv[1])
cred = u.netloc.rpartition("@")[0]
net = (cred + "@" if cred else "") + "127.0.0.1:" + sys.argv[2]
print(up.urlunsplit((u.scheme, net, u.path, u.query, "")))
PY
}
check() { # NAME OK-CONDITION-RESULT DETAIL
    n=$((n + 1))
    if [ "$2" = 0 ]; then
        echo "ok   $1: $3"
    else
        echo "FAIL $1: $3"
        fails=$((fails + 1))
    fi
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

for store in redis mysql postgres; do
    var=DLOCK_TEST_$(echo $store | tr a-z A-Z)_URL
    url=${!var}
    [ -n "$url" ] || continue
    stores=$((stores + 1))
    name=bounds-down-$$-$store

    # Up 1 s after the waiter started.
    port=$(free_port)
    u=$(via "$url" "$port")
    t0=$(now_ms)
    "$DLOCK" -s "$u" run -w 8 "$name" -- true >"$T/out" 2>&1 </dev/null &
    waiter=$!
    sleep 1 # the scenario: the server comes up 1 s later
    rm -f "$T/up"
    mkfifo "$T/up"
    python3 - "$url" "$port" "$T/up" <<'PY' &
import socket, sys, threading, urllib.parse as up
u = up.urlsplit(sys.argv[1])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[2])))
ls.listen(64)
open(sys.argv[3], "w").write("up\n")
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    c, _ = ls.accept()
    s = socket.create_connection((u.hostname, u.port))
    threading.Thread(target=pump, args=(c, s), daemon=True).start()
    threading.Thread(target=pump, args=(s, c), daemon=True).start()
PY
    fwd=$!
    read -r _ <"$T/up"
    wait $waiter
    rc=$?
    ms=$(($(now_ms) - t0))
    [ "$rc" = 0 ]
    check "$store: up 1 s after the waiter started" $? "exit $rc after $ms ms $(head -c 300 "$T/out")"
    kill $fwd 2>/dev/null
    wait $fwd 2>/dev/null
    fwd=

    # Never up: about the deadline.
    port=$(free_port)
    u=$(via "$url" "$port")
    t0=$(now_ms)
    "$DLOCK" -s "$u" run -w 3 "$name" -- true >"$T/out" 2>&1 </dev/null
    rc=$?
    ms=$(($(now_ms) - t0))
    [ "$rc" = 69 ] && [ "$ms" -ge 2500 ] && [ "$ms" -le 4500 ]
    check "$store: never up, -w 3" $? "exit $rc after $ms ms (want 69 after 2500..4500 ms) $(head -c 300 "$T/out")"

    # -w 0: one try.
    t0=$(now_ms)
    "$DLOCK" -s "$u" run -w 0 "$name" -- true >"$T/out" 2>&1 </dev/null
    rc=$?
    ms=$(($(now_ms) - t0))
    [ "$rc" = 69 ] && [ "$ms" -le 1000 ]
    check "$store: never up, -w 0" $? "exit $rc after $ms ms (want 69 within 1000 ms)"
done
if [ "$stores" = 0 ]; then
    echo "SKIP: no DLOCK_TEST_{REDIS,MYSQL,POSTGRES}_URL"
    exit 77
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
