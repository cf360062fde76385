#!/bin/bash
# A split-brain nemesis for the torture harness (its --nemesis command) on
# a topology made by scripts/netns.sh, with a replicated Redis whose nodes
# sit on hosts of their own (scripts/server-redis-sentinel.sh or
# server-redis-cluster.sh started with DLOCK_SERVER_NETNS):
#
#   split-nemesis.sh NETNS_SH TAG N sentinel|cluster TTL_MS SERVER_SH DIR WITH
#
# One fault: wait (<= 60 s) until the topology is whole (a replica that a
# failover can promote); then the master (sentinel: the master; cluster:
# the master of the torture name's slot), and the hosts WITH (a list:
# client hosts, and for Sentinel the one sentinel that sits with the old
# master) are cut off silently from every other host; wait (<= 30 s) until
# the other side has promoted the replica (sentinel: the sentinels there
# name it and it says it is master; cluster: a node there says the replica
# serves the slots and the cluster is ok); keep the split for 0.2..3 x the
# lease more (clients of both sides lock, each on its own master); heal
# every cut and end.  The harness takes the end as the heal.  What was
# done goes to $DLOCK_TORTURE_DIR/nemesis.log (seconds of boot clock).
set -euo pipefail
netns=$1 tag=$2 n=$3 mode=$4 ttl=$5 server=$6 sdir=$7 with=$8
dir=${DLOCK_TORTURE_DIR:?not run by torture}
# wait_for SECONDS CMD...: the server scripts' bounded poll.
# shellcheck source=SCRIPTDIR/../../scripts/server-lib.sh
. "$(dirname "$server")/server-lib.sh"

ctl() { "$netns" "$tag" "$n" "$@"; }
srv() { "$server" ctl "$sdir" "$@"; }
say() { echo "$(cut -d" " -f1 /proc/uptime) $*" >>"$dir/nemesis.log"; }

# host PORT: the netns.sh host (srv, cK) of the node on PORT.
host() {
    local ns
    ns=$(srv where "$1" | cut -d' ' -f1)
    [ -n "$ns" ] || {
        echo "split-nemesis.sh: node $1 is in no namespace" >&2
        return 1
    }
    echo "${ns#"dl$tag-"}"
}

between() {
    awk -v a="$1" -v b="$2" -v s="$RANDOM$RANDOM" \
        'BEGIN { srand(s); printf "%.3f", a + (b - a) * rand() }'
}


# (The promoted_* are called by name: "promoted_$mode".)
# shellcheck disable=SC2317
# Sentinel: every sentinel on side B names NEW, and NEW says it is master.
promoted_sentinel() {
    local s
    [ "$(srv cli "$new" role | head -1)" = master ] || return 1
    for s in "${b_sentinels[@]}"; do
        [ "$(srv cli "$s" sentinel get-master-addr-by-name dlockm | sed -n 2p)" = "$new" ] ||
            return 1
    done
}

# shellcheck disable=SC2317
# Cluster: NEW says it is master, and a node of side B says the cluster
# is ok.
promoted_cluster() {
    [ "$(srv cli "$new" role | head -1 | tr -d '\r')" = master ] || return 1
    srv cli "$witness" cluster info | tr -d '\r' | grep -qx cluster_state:ok
}

case $mode in
sentinel)
    new=$(srv replica-ready) || exit 1
    old=$(srv master) || exit 1
    read -r -a ports <"$sdir/ports"
    b_sentinels=()
    for p in "${ports[@]:2}"; do
        h=$(host "$p")
        case " $with " in *" $h "*) ;; *) b_sentinels+=("$p") ;; esac
    done
    ;;
cluster)
    srv wait-healthy >/dev/null || exit 1
    old=$(srv target) || exit 1
    new=$(srv replica "$old") || exit 1
    witness=$new
    ;;
*)
    echo "split-nemesis.sh: unknown mode $mode" >&2
    exit 64
    ;;
esac

a=("$(host "$old")")
read -r -a more <<<"$with"
a+=("${more[@]}")
b=()
for h in srv $(seq -f 'c%g' 1 "$n"); do
    case " ${a[*]} " in *" $h "*) ;; *) b+=("$h") ;; esac
done
lasts=$(between "$(awk -v t="$ttl" 'BEGIN { print t * 0.2 / 1000 }')" \
    "$(awk -v t="$ttl" 'BEGIN { print t * 3 / 1000 }')")
say "split: master $old (${a[*]}) from replica $new (${b[*]})"
for x in "${a[@]}"; do
    for y in "${b[@]}"; do
        ctl cut "$x" "$y"
    done
done
rc=0
if wait_for 30 "promoted_$mode"; then
    say "promoted $new; split $lasts s more"
    sleep "$lasts" # the fault's length, not a synchronisation
else
    say "replica $new was not promoted within 30 s"
    echo "split-nemesis.sh: replica $new was not promoted within 30 s" >&2
    rc=1
fi
ctl heal_all
say "healed"
exit "$rc"
