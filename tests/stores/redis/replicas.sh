#!/bin/bash
# ?replicas=N: an acquire or a renewal counts only once WAIT says N
# replicas have it.  Against a Sentinel topology (one master, one
# replica):
#   - ?replicas=1 works; ?replicas=2 (one replica) fails: exit 69, the
#     message says how many acknowledged, and the lock is not left held;
#   - the replica frozen (SIGSTOP): an acquire fails the same way;
#   - frozen while a lock is held: its renewals are not acknowledged and
#     the lock is LOST (exit 75) by its lease end, not later.
# Leaves the replica thawed and in sync (ctl replica-ready).
#   replicas.sh DLOCK SERVER_SCRIPT URL DIR
set -u
dlock=$1 script=$2 url=$3 dir=$4
name="replicas-$$"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
q() { case $url in *\?*) echo "$url&$1" ;; *) echo "$url?$1" ;; esac; }

replica=$("$script" ctl "$dir" replica-ready) || { echo "no replica"; exit 1; }
cleanup() {
    "$script" ctl "$dir" thaw "$replica" 2>/dev/null
    "$script" ctl "$dir" replica-ready >/dev/null ||
        echo "warning: the replica is not back in sync"
}
trap cleanup EXIT

out=$("$dlock" -s "$(q replicas=1)" run -n "$name-1" -- echo ran 2>&1)
[ "$out" = ran ] && ok "replicas=1: acquired" || bad "replicas=1: $out"

out=$("$dlock" -s "$(q 'replicas=2&replicas_timeout=200ms')" run -n "$name-2" -- echo ran 2>&1)
rc=$?
case "$rc:$out" in
69:*"1 of the 2 replicas"*) ok "replicas=2 of 1: refused ($out)" ;;
*) bad "replicas=2 of 1: exit $rc: $out" ;;
esac
st=$("$dlock" -s "$url" status "$name-2")
case $st in *": free"*) ok "and let go" ;; *) bad "left held: $st" ;; esac

"$script" ctl "$dir" freeze "$replica"
t0=$(date +%s%N)
out=$("$dlock" -s "$(q 'replicas=1&replicas_timeout=300ms')" run -n "$name-3" -- echo ran 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
case "$rc:$out" in
69:*"0 of the 1 replicas"*) ok "replica frozen: refused in $ms ms" ;;
*) bad "replica frozen: exit $rc: $out" ;;
esac
st=$("$dlock" -s "$url" status "$name-3")
case $st in *": free"*) ok "and let go" ;; *) bad "left held: $st" ;; esac
"$script" ctl "$dir" thaw "$replica"
"$script" ctl "$dir" replica-ready >/dev/null || bad "replica not back"

# Held, then the replica stops acknowledging: LOST within the lease (3 s).
t0=$(date +%s%N)
"$dlock" -s "$(q 'replicas=1&replicas_timeout=300ms')" run --ttl 3 "$name-4" -- \
    sh -c "echo held; sleep 20" >"$dir/replicas.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    grep -q held "$dir/replicas.out" 2>/dev/null && break
    sleep 0.05
done
"$script" ctl "$dir" freeze "$replica"
wait "$pid"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
"$script" ctl "$dir" thaw "$replica"
if [ "$rc" = 75 ] && [ "$ms" -lt 5000 ]; then
    ok "renewals not acknowledged: LOST after $ms ms (lease 3 s)"
else
    bad "renewals not acknowledged: exit $rc after $ms ms: $(cat "$dir/replicas.out")"
fi

out=$("$dlock" -s "$(q replicas=x)" status "$name" 2>&1)
case $out in *"replicas must be"*) ok "replicas=x refused" ;; *) bad "replicas=x: $out" ;; esac
exit $fail
