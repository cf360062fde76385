#!/bin/bash
# `dlock release --force NAME` on etcd deletes the holder's key, and the
# holder (dlock run --ttl 3) finds out at its next renewal: exit 75 (lock
# lost), its command signalled, a message that says so (issue 38):
#   test_etcd_force.sh DLOCK URL
# Also: a lock held by `etcdctl lock` is broken the same way (its key
# deleted), and status says "not held" after each.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: test_etcd_force.sh DLOCK URL}" "${2-}" python3

name="force-$$"
mkfifo "$T/held"
"$DLOCK" -s "$URL" run --ttl 3 "$name" -- \
    sh -c 'echo $$ >"$0"; echo x >"$1"; exec sleep 30' "$T/cmdpid" "$T/held" \
    >"$T/h.out" 2>&1 &
H=$!
pids="$pids $H"
await "$T/held" 20 || fail "the holder never ran its command: $(cat "$T/h.out")"
[ "$(nkeys "$name")" = 1 ] || fail "holder's key: $(queue "$name" | tr '\n' ' ')"
t0=$(now_ms)
"$DLOCK" -s "$URL" release --force "$name" >"$T/f.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "release --force exit 0: $(cat "$T/f.out")" ||
    fail "release --force exit $rc: $(cat "$T/f.out")"
[ "$(nkeys "$name")" = 0 ] && ok "the holder's key is gone at once" ||
    fail "keys after release --force: $(queue "$name" | tr '\n' ' ')"
st=$("$DLOCK" -s "$URL" status "$name" --json 2>&1)
case $st in *'"held":false'*) ok "status after --force: not held" ;;
*) fail "status after --force: $st" ;; esac
wait_exit "$H" 100
ms=$(($(now_ms) - t0))
if [ "$rc" = 75 ]; then
    ok "the holder exits 75 (lost) $ms ms after release --force"
else
    fail "the holder exited $rc after $ms ms (wanted 75): $(cat "$T/h.out")"
fi
# A renewal every ttl/3 (1 s), then SIGTERM to the command at once.
[ "$ms" -le 4000 ] && ok "LOST within 4000 ms ($ms)" ||
    fail "LOST took $ms ms (> 4000)"
grep -qi 'lost' "$T/h.out" && ok "it says: $(tr '\n' ' ' <"$T/h.out")" ||
    fail "no 'lost' in the holder's message: $(cat "$T/h.out")"
cmd=$(cat "$T/cmdpid" 2>/dev/null)
[ -n "$cmd" ] && ! alive "$cmd" && ok "its command ($cmd) is gone" ||
    fail "its command ($cmd) still runs"

# A foreign holder (etcdctl lock).
name="force-$$-e"
timeout 60 etcdctl --endpoints="$EPS" lock "$name" -- \
    sh -c 'echo x >"$0"; exec sleep 30' "$T/held" >"$T/e.out" 2>&1 &
E=$!
pids="$pids $E"
await "$T/held" 20 || fail "etcdctl lock never ran its command: $(cat "$T/e.out")"
"$DLOCK" -s "$URL" release --force "$name" >"$T/f.out" 2>&1
rc=$?
[ "$rc" = 0 ] && [ "$(nkeys "$name")" = 0 ] &&
    ok "release --force deletes etcdctl's key" ||
    fail "release --force on etcdctl's lock: exit $rc, keys $(queue "$name" | tr '\n' ' '): $(cat "$T/f.out")"
"$DLOCK" -s "$URL" run -w 0 "$name" -- true >"$T/d.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "dlock gets a lock broken from etcdctl" ||
    fail "dlock run -w 0 after --force: exit $rc: $(cat "$T/d.out")"
kill -TERM "$E" # timeout passes it on to etcdctl
wait_exit "$E" 100
[ "$rc" != 124 ] || fail "etcdctl lock did not end on SIGTERM"
finish
