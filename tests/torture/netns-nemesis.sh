#!/bin/bash
# A network nemesis for the torture harness (its --nemesis command), on a
# topology made by scripts/netns.sh whose client hosts the workers joined
# (torture --netns dl<TAG>-c --hosts N):
#
#   netns-nemesis.sh NETNS_SH TAG N MODE TTL_MS [SEED [KIND...]]
#
# One fault, lasting 0.2..3 x the lease (random), then healed:
#   holder   cut the host of a worker that holds the lock from the server
#   holder-long  the same, for 2..3 x the lease
#   waiter   cut the host of a worker that is acquiring (queued, or in a
#            native wait) from the server
#   server   cut the server off from every host
#   flap     the holder's link goes down and up every 50..300 ms
#   leader   a replicated store whose servers sit on hosts of their own
#            (an etcd cluster): cut the leader's host off from the other
#            servers' hosts (the majority), for 2..3 x the lease (an
#            election: 1 s); clients still reach every server
#   random   one of KIND... (default: holder waiter server flap), in
#            rounds: each round is a shuffle of the KINDs, so that every
#            kind comes once before any comes again (a run of at least as
#            many faults as KINDs sees every kind)
# The holder and the waiter are found in the workers' logs
# ($DLOCK_TORTURE_DIR, the last line of each worker's newest log; worker i
# is on host c<i % N + 1>); when none is seen within a lease, a random
# host.
#
# A store on several hosts (an etcd cluster): $DLOCK_NEMESIS_SERVERS, the
# servers' hosts (default: srv), from which holder, waiter and flap cut
# their host (a client cut off from the whole cluster), and server
# isolates each; $DLOCK_NEMESIS_CLIENTS, how many of c1..cN the workers
# are on (default N); $DLOCK_NEMESIS_LEADER, a shell command that prints
# the leader's host (for leader).
#
# SEED (a number) fixes what is drawn: the kinds' order, each fault's
# length, the flap's steps, the fallback host (fault K of a run draws from
# SEED and K; the faults of a run are counted in $DLOCK_TORTURE_DIR).
# What it cannot fix: when torture starts each fault, and which worker
# holds or waits then.  Without SEED, bash's $RANDOM (random mode draws a
# seed on its first fault and keeps it for the run).
#
# Each fault, once healed, prints one line to stdout (torture's output):
#   nemesis: fault=K kind=KIND host=HOST start_s=S length_s=L drawn_s=D
# start_s: seconds after $DLOCK_NEMESIS_T0 (boot clock seconds, as
# /proc/uptime; without it, the boot clock itself), length_s: from the
# cut to the heal, both as measured; drawn_s: the length drawn (what a
# SEED replays).  The same goes to
# $DLOCK_TORTURE_DIR/nemesis.log with boot clock times (the workers' logs
# have the boot clock in microseconds).
set -euo pipefail
netns=$1 tag=$2 n=$3 mode=$4 ttl=$5
seed=${6:-}
shift $(($# < 6 ? $# : 6))
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(holder waiter server flap)
dir=${DLOCK_TORTURE_DIR:?not run by torture}
t0=${DLOCK_NEMESIS_T0:-0}
read -r -a servers <<<"${DLOCK_NEMESIS_SERVERS:-srv}"
clients=${DLOCK_NEMESIS_CLIENTS:-$n}

ctl() { "$netns" "$tag" "$n" "$@"; }

die() {
    echo "netns-nemesis.sh: $*" >&2
    exit 64
}

[ -z "$seed" ] || [[ $seed =~ ^[0-9]{1,15}$ ]] || die "SEED must be a number"

# Every draw below is made in this shell, never in a subshell: bash reseeds
# $RANDOM in each subshell, which would undo SEED.
#
# rnd N: R = a number 0..N-1.
rnd() { R=$((((RANDOM << 15) | RANDOM) % $1)); }
# between_ms A B: R = a number A..B.
between_ms() {
    rnd $(($2 - $1 + 1))
    R=$(($1 + R))
}
# s MS: R = MS as seconds with three decimals.
s() { printf -v R '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
# now_ms: R = the wall clock in milliseconds (for the flap's end only).
now_ms() {
    R=${EPOCHREALTIME/./}
    R=$((10#$R / 1000))
}
# up: R = the boot clock, seconds (/proc/uptime).
up() { read -r R _ </proc/uptime; }

# The fault's number in this run, K = 1, 2, ...
k=1
[ ! -f "$dir/nemesis.count" ] || k=$(($(cat "$dir/nemesis.count") + 1))
echo "$k" >"$dir/nemesis.count"

if [ "$mode" = random ]; then
    if [ -z "$seed" ]; then
        [ -f "$dir/nemesis.seed" ] ||
            echo $((((RANDOM << 15) | RANDOM) + 1)) >"$dir/nemesis.seed"
        seed=$(cat "$dir/nemesis.seed")
    fi
    for m in "${kinds[@]}"; do
        case $m in
        holder | holder-long | waiter | server | flap | leader) ;;
        *) die "unknown kind $m" ;;
        esac
    done
    # Round r (0, 1, ...) is a Fisher-Yates shuffle of the kinds, drawn
    # from SEED and r; fault K takes place (K - 1) % kinds of round
    # (K - 1) / kinds.
    nk=${#kinds[@]}
    round=$(((k - 1) / nk))
    RANDOM=$(((seed * 1000003 + round * 7919 + 17) % 2147483647))
    order=("${kinds[@]}")
    for ((i = nk - 1; i > 0; i--)); do
        rnd $((i + 1))
        m=${order[i]} order[i]=${order[R]} order[R]=$m
    done
    mode=${order[(k - 1) % nk]}
fi
# This fault's draws.
[ -z "$seed" ] || RANDOM=$(((seed * 7919 + k * 1000003) % 2147483647))

# pick EVENTS: host = the host of a worker whose last logged event is one
# of EVENTS (a bracket expression), polling for up to a lease.
pick() {
    local events=$1 end f w hosts
    now_ms
    end=$((R + ttl))
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
                hosts+=("c$((10#$w % clients + 1))")
            fi
        done
        if [ ${#hosts[@]} -gt 0 ]; then
            rnd ${#hosts[@]}
            host=${hosts[R]}
            return
        fi
        now_ms
        [ "$R" -lt "$end" ] || break
        sleep 0.01
    done
    rnd "$clients"
    host=c$((R + 1))
}

# cut_servers ACTION HOST: cut (or heal) HOST from every server host.
cut_servers() {
    local s
    for s in "${servers[@]}"; do
        ctl "$1" "$2" "$s"
    done
}

# The fault's length: 0.2..3 x the lease; holder-long: the holder cut
# for 2..3 x the lease, always past it (the partition control: a cut-off
# holder that does not stop must show).
kind=$mode
if [ "$mode" = holder-long ] || [ "$mode" = leader ]; then
    between_ms $((ttl * 2)) $((ttl * 3))
    [ "$mode" = leader ] || mode=holder
else
    between_ms $((ttl / 5)) $((ttl * 3))
fi
lasts_ms=$R
s "$lasts_ms"
lasts=$R

# fault_begin WHAT: note the fault's start; fault_end: its line, once healed.
fault_begin() {
    up
    started=$R
    echo "$started $1 for $lasts s" >>"$dir/nemesis.log"
}
fault_end() {
    up
    awk -v k="$k" -v kind="$kind" -v h="$host" -v t0="$t0" -v a="$started" \
        -v b="$R" -v l="$lasts" 'BEGIN { printf "nemesis: fault=%d kind=%s host=%s start_s=%.2f length_s=%.2f drawn_s=%s\n", k, kind, h, a - t0, b - a, l }'
    echo "$R healed" >>"$dir/nemesis.log"
}

case $mode in
holder | waiter)
    if [ "$mode" = holder ]; then
        pick '[AWRSC]'
    else
        pick 'I'
    fi
    fault_begin "cut $host ($kind)"
    cut_servers cut "$host"
    sleep "$lasts" # the fault's length, not a synchronisation
    cut_servers heal "$host"
    fault_end
    ;;
server)
    host=${servers[*]}
    host=${host// /+}
    fault_begin "isolate $host"
    for s in "${servers[@]}"; do
        ctl isolate "$s"
    done
    sleep "$lasts"
    ctl heal_all
    fault_end
    ;;
leader)
    host=$(sh -c "${DLOCK_NEMESIS_LEADER:?leader: no DLOCK_NEMESIS_LEADER}")
    case " ${servers[*]} " in
    *" $host "*) ;;
    *) die "leader: '$host' is not one of the servers (${servers[*]})" ;;
    esac
    fault_begin "cut leader $host from the other servers"
    for s in "${servers[@]}"; do
        [ "$s" = "$host" ] || ctl cut "$host" "$s"
    done
    sleep "$lasts"
    for s in "${servers[@]}"; do
        [ "$s" = "$host" ] || ctl heal "$host" "$s"
    done
    fault_end
    ;;
flap)
    pick '[AWRSC]'
    fault_begin "flap $host"
    now_ms
    stop=$((R + lasts_ms))
    while now_ms && [ "$R" -lt "$stop" ]; do
        cut_servers cut "$host"
        between_ms 50 300
        s "$R"
        sleep "$R"
        cut_servers heal "$host"
        between_ms 50 300
        s "$R"
        sleep "$R"
    done
    fault_end
    ;;
*)
    die "unknown mode $mode"
    ;;
esac
