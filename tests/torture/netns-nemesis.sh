#!/bin/bash
# A network nemesis for the torture harness (its --nemesis command), on a
# topology made by scripts/netns.sh whose client hosts the workers joined
# (torture --netns dl<TAG>-c --hosts N):
#
#   netns-nemesis.sh NETNS_SH TAG N MODE TTL_MS
#
# One fault, lasting 0.2..3 x the lease (random), then healed:
#   holder   cut the host of a worker that holds the lock from the server
#   holder-long  the same, for 2..3 x the lease
#   waiter   cut the host of a worker that is acquiring (queued, or in a
#            native wait) from the server
#   server   cut the server off from every host
#   flap     the holder's link goes down and up every 50..300 ms
# The holder and the waiter are found in the workers' logs
# ($DLOCK_TORTURE_DIR, the last line of each worker's newest log; worker i
# is on host c<i % N + 1>); when none is seen within a lease, a random
# host.  What was done goes to $DLOCK_TORTURE_DIR/nemesis.log (times: seconds
# of boot clock, as the workers' logs in microseconds).
set -euo pipefail
netns=$1 tag=$2 n=$3 mode=$4 ttl=$5
dir=${DLOCK_TORTURE_DIR:?not run by torture}

ctl() { "$netns" "$tag" "$n" "$@"; }

# seconds A..B, random (awk's rand seeded from bash's $RANDOM).
between() {
    awk -v a="$1" -v b="$2" -v s="$RANDOM$RANDOM" \
        'BEGIN { srand(s); printf "%.3f", a + (b - a) * rand() }'
}

# pick EVENTS: the host of a worker whose last logged event is one of
# EVENTS (a bracket expression), polling for up to a lease.
pick() {
    local events=$1 end f w host hosts i
    end=$(($(date +%s%N) / 1000000 + ttl))
    while :; do
        hosts=()
        for f in "$dir"/w*-*.log; do
            [ -f "$f" ] || continue
            w=${f##*/w}
            w=${w%%-*}
            # Only the newest generation of each worker speaks for it.
            [ "$f" = "$(find "$dir" -maxdepth 1 -name "w$w-*.log" |
                sort | tail -n1)" ] || continue
            if tail -n1 "$f" | grep -q "^[0-9]* $events"; then
                hosts+=("c$((10#$w % n + 1))")
            fi
        done
        if [ ${#hosts[@]} -gt 0 ]; then
            echo "${hosts[RANDOM % ${#hosts[@]}]}"
            return
        fi
        [ $(($(date +%s%N) / 1000000)) -lt "$end" ] || break
        sleep 0.01
    done
    i=$((RANDOM % n + 1))
    echo "c$i"
}

lasts=$(between "$(awk -v t="$ttl" 'BEGIN { print t * 0.2 / 1000 }')" \
    "$(awk -v t="$ttl" 'BEGIN { print t * 3 / 1000 }')")
# holder-long: the holder cut for 2..3 x the lease, always past it (the
# partition control: a cut-off holder that does not stop must show).
if [ "$mode" = holder-long ]; then
    lasts=$(between "$(awk -v t="$ttl" 'BEGIN { print t * 2 / 1000 }')" \
        "$(awk -v t="$ttl" 'BEGIN { print t * 3 / 1000 }')")
    mode=holder
fi
case $mode in
holder | waiter)
    if [ "$mode" = holder ]; then
        host=$(pick '[AWRSC]')
    else
        host=$(pick 'I')
    fi
    echo "$(cut -d" " -f1 /proc/uptime) cut $host ($mode) for $lasts s" >>"$dir/nemesis.log"
    ctl cut "$host" srv
    sleep "$lasts" # the fault's length, not a synchronisation
    ctl heal "$host" srv
    ;;
server)
    echo "$(cut -d" " -f1 /proc/uptime) isolate srv for $lasts s" >>"$dir/nemesis.log"
    ctl isolate srv
    sleep "$lasts"
    ctl heal_all
    ;;
flap)
    host=$(pick '[AWRSC]')
    echo "$(cut -d" " -f1 /proc/uptime) flap $host for $lasts s" >>"$dir/nemesis.log"
    end=$(($(date +%s%N) / 1000000 + 10#${lasts/./}))
    while [ $(($(date +%s%N) / 1000000)) -lt "$end" ]; do
        ctl cut "$host" srv
        sleep "$(between 0.05 0.3)"
        ctl heal "$host" srv
        sleep "$(between 0.05 0.3)"
    done
    ;;
*)
    echo "netns-nemesis.sh: unknown mode $mode" >&2
    exit 64
    ;;
esac
