#!/bin/bash
# Test topologies in Linux network namespaces: "hosts" joined by one
# bridge, silent partitions with nftables.  Sourced by bash scripts (root):
#
#   . scripts/netns.sh
#   netns_check              0 if this machine can run it, else says why
#   netns_up TAG N           hosts srv, c1..cN (namespaces dl<TAG>-srv,
#                            dl<TAG>-c1..), each joined by a veth pair to a
#                            bridge in dl<TAG>-hub; addresses in one /24
#                            (NETNS_NET.0/24, 10.77.X) that exists only in
#                            these namespaces; lo up in each.  Installs the
#                            teardown on EXIT, INT and TERM, and first
#                            sweeps what crashed harnesses left behind.
#   netns_addr HOST          the address of srv, c1, ...
#   netns_name HOST          its namespace's name (for /run/netns/NAME)
#   netns_exec HOST CMD...   run CMD inside HOST
#   netns_cut A B            drop every packet between A and B, both ways,
#                            silently (no RST, no ICMP: a pulled cable)
#   netns_heal A B           undo netns_cut A B
#   netns_isolate HOST       cut HOST from every other host
#   netns_heal_all           undo every cut
#   netns_at_exit CMD        run CMD (a string, eval'd) at teardown, before
#                            the namespaces go (last registered runs first)
#   netns_own_dir DIR        remove DIR (under /tmp) with the topology, also
#                            when the sweep removes a dead harness's
#   netns_down [TAG]         stop every process left in the namespaces,
#                            delete them; the EXIT trap calls it
#   netns_sweep              remove the namespaces of harnesses that are
#                            gone (netns_up calls it)
#   netns_use TAG N          use a topology another process made (its
#                            owner tears it down)
#
# Run as a command, for programs that inject faults into a topology that
# their caller made (a torture nemesis):
#   scripts/netns.sh TAG N cut|heal A B
#   scripts/netns.sh TAG N isolate HOST
#   scripts/netns.sh TAG N heal_all
#   scripts/netns.sh TAG N addr HOST
#
# The root namespace gets no address and no route: nothing the tests do
# can reach any address outside their own namespaces.  Each host drops
# what comes in from a cut peer (a set of addresses in its own nftables
# table), so a cut is silent for both ends.  Owners are recorded in
# /run/dlock-netns/TAG (pid and start time of the harness's shell): a
# namespace whose owner is dead is a leftover, and the next netns_up
# removes it (and stops what still runs in it).

NETNS_RUN=/run/dlock-netns
NETNS_TAG=
NETNS_N=0
NETNS_NET=
NETNS_EXIT_CMDS=()

netns__die() {
    echo "netns.sh: $*" >&2
    return 1
}

# netns_check: root, ip, nft, and the kernel lets us make a namespace.
netns_check() {
    [ "$(id -u)" -eq 0 ] || netns__die "needs root" || return 1
    command -v ip >/dev/null || netns__die "no ip (iproute2)" || return 1
    command -v nft >/dev/null ||
        netns__die "no nft (Debian package nftables)" || return 1
    command -v flock >/dev/null || netns__die "no flock" || return 1
    return 0
}

netns_name() {
    echo "dl$NETNS_TAG-$1"
}

# srv is .1, cK is .(10+K).
netns_addr() {
    case $1 in
    srv) echo "$NETNS_NET.1" ;;
    c[0-9]*) echo "$NETNS_NET.$((10 + ${1#c}))" ;;
    *) netns__die "no host $1" ;;
    esac
}

netns_exec() {
    local host=$1
    shift
    ip netns exec "$(netns_name "$host")" "$@"
}

netns_hosts() {
    local i
    echo srv
    for ((i = 1; i <= NETNS_N; i++)); do
        echo "c$i"
    done
}

# The start time of PID (field 22 of /proc/PID/stat), empty if none.
netns__starttime() {
    sed -n 's/^.*) [A-Z] \(.*\)$/\1/p' "/proc/$1/stat" 2>/dev/null |
        cut -d' ' -f19
}

# netns__alive_owner TAG: the harness that made TAG still runs.
netns__alive_owner() {
    local pid start
    read -r pid start <"$NETNS_RUN/$1" 2>/dev/null || return 1
    [ -n "$pid" ] && [ "$(netns__starttime "$pid")" = "$start" ]
}

# netns__kill_in NAMESPACE: TERM every process in it, KILL what is left
# after 5 s; bounded.
netns__kill_in() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086 # a list of pids
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
        [ -n "$pids" ] || return 0
        sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] || return 0
        sleep 0.1
    done
}

# netns__teardown TAG: every namespace of TAG, the directories it owns,
# and its record (line 1 "pid starttime", then one owned directory a line).
netns__teardown() {
    local tag=$1 ns d
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
        case $ns in
        "dl$tag-"*) ;;
        *) continue ;;
        esac
        netns__kill_in "$ns"
        ip netns delete "$ns" 2>/dev/null || true
    done
    if [ -f "$NETNS_RUN/$tag" ]; then
        tail -n +2 "$NETNS_RUN/$tag" | while IFS= read -r d; do
            case $d in
            /tmp/?*) rm -rf -- "$d" ;;
            esac
        done
    fi
    rm -f "$NETNS_RUN/$tag"
}

netns_own_dir() {
    [ -n "$NETNS_TAG" ] || netns__die "no topology" || return 1
    echo "$1" >>"$NETNS_RUN/$NETNS_TAG"
}

# netns_sweep: remove what harnesses that died left (namespaces named
# dl<TAG>-{hub,srv,cK} whose TAG has no live owner).  Under the lock, so
# that a harness between writing its record and making its namespaces is
# never mistaken for a leftover.
netns_sweep() {
    local ns tag f
    mkdir -p "$NETNS_RUN"
    (
        flock -w 30 9 || exit 1
        for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
            [[ $ns =~ ^dl([A-Za-z0-9]+)-(hub|srv|c[0-9]+)$ ]] || continue
            tag=${BASH_REMATCH[1]}
            netns__alive_owner "$tag" && continue
            echo "netns.sh: removing $ns, left by a harness that is gone" >&2
            netns__kill_in "$ns"
            ip netns delete "$ns" 2>/dev/null || true
        done
        for f in "$NETNS_RUN"/*; do
            [ -f "$f" ] || continue
            netns__alive_owner "${f##*/}" || netns__teardown "${f##*/}"
        done
    ) 9>"$NETNS_RUN/.lock"
}

netns__on_exit() {
    local i
    for ((i = ${#NETNS_EXIT_CMDS[@]} - 1; i >= 0; i--)); do
        eval "${NETNS_EXIT_CMDS[$i]}" || true
    done
    NETNS_EXIT_CMDS=()
    netns_down "$NETNS_TAG"
}

netns_at_exit() {
    NETNS_EXIT_CMDS+=("$1")
}

# 10.77.X with X from the tag: two topologies never share a bridge
# anyway; distinct nets make traces easier to tell apart.
netns__net() {
    echo "10.77.$(($(printf %s "$1" | cksum | cut -d' ' -f1) % 250 + 2))"
}

netns_use() {
    [ -e "/run/netns/dl$1-srv" ] || netns__die "no topology $1" || return 1
    NETNS_TAG=$1
    NETNS_N=$2
    NETNS_NET=$(netns__net "$1")
}

netns_up() {
    local tag=$1 n=$2 host ns hub
    [[ $tag =~ ^[A-Za-z0-9]{1,12}$ ]] || netns__die "bad tag '$tag'" ||
        return 1
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] ||
        netns__die "N must be 1..200" || return 1
    netns_check || return 1
    [ -z "$NETNS_TAG" ] || netns__die "already up ($NETNS_TAG)" || return 1
    netns_sweep || return 1
    # Claim the tag (under the sweep's lock) before making anything.
    (
        flock -w 30 9 || exit 1
        if [ -e "$NETNS_RUN/$tag" ]; then
            echo "netns.sh: tag $tag is in use" >&2
            exit 1
        fi
        echo "$$ $(netns__starttime $$)" >"$NETNS_RUN/$tag"
    ) 9>"$NETNS_RUN/.lock" || return 1
    NETNS_TAG=$tag
    NETNS_N=$n
    trap netns__on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    NETNS_NET=$(netns__net "$tag")
    hub=$(netns_name hub)
    ip netns add "$hub" || return 1
    ip -n "$hub" link set lo up
    ip -n "$hub" link add br0 type bridge || return 1
    ip -n "$hub" link set br0 up
    for host in $(netns_hosts); do
        ns=$(netns_name "$host")
        ip netns add "$ns" || return 1
        ip -n "$ns" link set lo up
        # Made in the hub, the peer put straight into the host: no
        # interface ever exists in the root namespace.
        ip -n "$hub" link add "v-$host" type veth peer name eth0 \
            netns "$ns" || return 1
        ip -n "$hub" link set "v-$host" master br0 up
        ip -n "$ns" addr add "$(netns_addr "$host")/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip netns exec "$ns" nft -f - <<'EOF' || return 1
table inet dlnetns {
    set cut {
        type ipv4_addr
    }
    chain in {
        type filter hook prerouting priority -300; policy accept;
        ip saddr @cut drop
    }
}
EOF
    done
}

# netns__set ACTION HOST PEER: add/delete PEER's address in HOST's set.
netns__set() {
    local r
    r=$(netns_exec "$2" nft "$1" element inet dlnetns cut \
        "{ $(netns_addr "$3") }" 2>&1) && return 0
    # Healing what is not cut, or cutting twice, is not an error.
    case $r in
    *"No such file"* | *"File exists"*) return 0 ;;
    esac
    echo "netns.sh: nft $1 in $2: $r" >&2
    return 1
}

netns_cut() {
    netns__set add "$1" "$2" && netns__set add "$2" "$1"
}

netns_heal() {
    netns__set delete "$1" "$2" && netns__set delete "$2" "$1"
}

netns_isolate() {
    local h
    for h in $(netns_hosts); do
        [ "$h" = "$1" ] || netns_cut "$1" "$h" || return 1
    done
}

netns_heal_all() {
    local h
    for h in $(netns_hosts); do
        netns_exec "$h" nft flush set inet dlnetns cut || return 1
    done
}

netns_down() {
    local tag=${1:-$NETNS_TAG}
    [ -n "$tag" ] || return 0
    netns__teardown "$tag"
    if [ "$tag" = "$NETNS_TAG" ]; then
        NETNS_TAG=
        NETNS_N=0
    fi
    return 0
}

# As a command: act on a topology that someone else owns.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    [ $# -ge 3 ] || netns__die "usage: $0 TAG N cut|heal|isolate|heal_all|addr ..." || exit 64
    netns_use "$1" "$2"
    op=$3
    shift 3
    case $op in
    cut | heal | isolate | heal_all | addr) "netns_$op" "$@" ;;
    *) netns__die "unknown command $op" || exit 64 ;;
    esac
fi
