#!/bin/bash
# A waiter that opens a redis-sentinel:// store while the master is down
# (the sentinels still name it: the failover has not happened yet) waits
# it out within its -w and gets the lock from the new master, as one that
# opened before the outage does, and as redis-cluster:// does (issue 25).
# A try (-n) in the same situation says the store is unreachable (69).
#   sentinel_outage.sh DLOCK SERVER_SCRIPT URL DIR
set -u
dlock=$1 script=$2 url=$3 dir=$4
name="sentinel-outage-$$"
fail=0
say() { echo "$*"; }
bad() { echo "FAIL: $*"; fail=1; }

old=$("$script" ctl "$dir" master) || { echo "no master"; exit 1; }
# kill -9 the master; the script waits for the failover and starts the
# old master again as a replica.
"$script" ctl "$dir" kill-master >"$dir/outage.log" 2>&1 &
ctl=$!
# Until the old master is gone (bounded), without sleeping blind.
for _ in $(seq 1 300); do
    redis-cli -h 127.0.0.1 -p "$old" ping >/dev/null 2>&1 || break
    sleep 0.1
done
if redis-cli -h 127.0.0.1 -p "$old" ping >/dev/null 2>&1; then
    bad "the master on $old did not go away"
fi
# The sentinels react after down-after-milliseconds (1 s): they still
# name the dead master now.
named=$(redis-cli -h 127.0.0.1 -p "$(cut -d' ' -f3 "$dir/ports")" \
    sentinel get-master-addr-by-name dlockm | sed -n 2p)
say "  master $old killed; the sentinels name $named"

"$dlock" -s "$url" run -n "$name-try" -- true 2>"$dir/try.err"
rc=$?
[ "$rc" = 69 ] || [ "$named" != "$old" ] ||
    bad "a try during the outage exited $rc, not 69: $(cat "$dir/try.err")"

t0=$(date +%s%N)
"$dlock" -s "$url" run -w 30 "$name" -- true 2>"$dir/wait.err"
rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
say "  run -w 30 during the outage: exit $rc after $took ms"
[ "$rc" = 0 ] || bad "run -w 30 exited $rc: $(cat "$dir/wait.err")"
wait "$ctl" || bad "kill-master failed: $(cat "$dir/outage.log")"
exit $fail
