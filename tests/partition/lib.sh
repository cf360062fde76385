# shellcheck shell=bash
# Sourced by the partition tests: a topology of N client hosts and a server
# host (scripts/netns.sh), and the stores' servers on the server host.
#
#   partition_cannot MSG       77 (skipped), or 1 with CI=true
#   partition_cases DLOCK      the cases DLOCK can test: redis, postgres,
#                              postgres-lease, mysql, mysql-lease (not
#                              etcd: its cluster needs hosts of its own,
#                              name it: partition_begin W etcd)
#   partition_up N             the topology (tag p<pid>), a temp dir $T,
#                              all torn down on exit
#   partition_url CASE         start CASE's server on srv (once per store),
#                              set PARTITION_URL to the URL clients use (from
#                              a client host); not in a subshell: the server
#                              is stopped at exit.  PARTITION_SERVER_ENV
#                              (VAR=VALUE words) goes into the server
#                              script's environment (libfaketime)
#   partition_server STORE ARGS...
#                              scripts/server-STORE.sh ARGS on srv, with the
#                              addresses partition_url starts it with (srv's
#                              own, the clients' /24): e.g. ctl DIR restart
#   etcd (a CASE)              a 3-member cluster (scripts/server-etcd.sh
#                              start-cluster), members on srv and on two
#                              hosts after the clients' (partition_begin
#                              makes them: c<W+1>, c<W+2>); partition_url
#                              also sets PARTITION_SERVER_DIR and
#                              PARTITION_SERVER_HOSTS ("srv cX cY")
#   partition_now_ms           milliseconds (bash 5's EPOCHREALTIME: every
#                              namespace shares the clock)

partition_scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)
# shellcheck source=SCRIPTDIR/../../scripts/netns.sh
. "$partition_scripts/netns.sh"

partition_cannot() {
    echo "partition: cannot run: $*" >&2
    if [ "${CI:-false}" = true ]; then
        exit 1
    fi
    exit 77
}

partition_cases() {
    local schemes s
    schemes=$("$1" --version)
    for s in redis postgres mysql; do
        case ",${schemes#*: }" in
        *"$s"*)
            echo "$s"
            [ "$s" = redis ] || echo "$s-lease"
            ;;
        esac
    done
}

partition_up() {
    netns_check || partition_cannot "no network namespaces with nftables"
    netns_up "p$$" "$1" || partition_cannot "netns_up failed"
    T=$(mktemp -d /tmp/dlock-partition.XXXXXX)
    netns_own_dir "$T"
    chmod 755 "$T"
}

# partition_begin WORKERS [CASE...]: the cases (those given, or every
# networked store), the namespaces up, and the tallies (fails, summary)
# at zero.
partition_begin() {
    local workers=$1
    shift
    cases=("$@")
    if [ ${#cases[@]} -eq 0 ]; then
        mapfile -t cases < <(partition_cases "$DLOCK")
    fi
    [ ${#cases[@]} -gt 0 ] || partition_cannot "no networked store in $DLOCK"
    partition_workers=$workers
    case " ${cases[*]} " in
    *" etcd "*)
        partition_scheme etcd || partition_cannot "no etcd:// in $DLOCK"
        command -v etcd >/dev/null || partition_cannot "no etcd (etcd-server)"
        partition_up $((workers + 2))
        ;;
    *) partition_up "$workers" ;;
    esac
    fails=0
    summary=()
}

# partition_scheme SCHEME: DLOCK has it compiled in.
partition_scheme() {
    case ",$("$DLOCK" --version)" in
    *"$1"*) return 0 ;;
    esac
    return 1
}

# The etcd cluster: members on srv, c<W+1>, c<W+2> (W: partition_begin's
# workers).
partition_etcd() {
    local dir=$T/server-etcd h where=
    # shellcheck disable=SC2034 # for the caller
    PARTITION_SERVER_DIR=$dir
    PARTITION_SERVER_HOSTS="srv c$((partition_workers + 1)) c$((partition_workers + 2))"
    if [ -z "${partition_urls[etcd]:-}" ]; then
        mkdir -p "$dir"
        for h in $PARTITION_SERVER_HOSTS; do
            where="$where $(netns_name "$h"):$(netns_addr "$h")"
        done
        netns_at_exit "'$partition_scripts/server-etcd.sh' stop '$dir' >/dev/null 2>&1"
        partition_urls[etcd]=$(DLOCK_SERVER_NETNS="${where# }" timeout 120 \
            "$partition_scripts/server-etcd.sh" start-cluster "$dir") || return 1
    fi
    PARTITION_URL=${partition_urls[etcd]}
}

declare -A partition_urls
PARTITION_SERVER_ENV=()
partition_url() {
    local c=$1 store=${1%-lease} dir u
    [ "$c" != etcd ] || {
        partition_etcd
        return
    }
    dir=$T/server-$store
    if [ -z "${partition_urls[$store]:-}" ]; then
        [ -x "$partition_scripts/server-$store.sh" ] || return 1
        mkdir -p "$dir"
        chmod 777 "$dir"
        netns_at_exit "ip netns exec '$(netns_name srv)' '$partition_scripts/server-$store.sh' stop '$dir' >/dev/null 2>&1"
        partition_urls[$store]=$(partition_server "$store" start "$dir") ||
            return 1
    fi
    u=${partition_urls[$store]}
    if [ "$c" != "$store" ]; then
        case $u in
        *\?*) u="$u&mode=lease" ;;
        *) u="$u?mode=lease" ;;
        esac
        # MariaDB: lease mode on a table of its own (it refuses session
        # mode's MEMORY table, whose rows a restart forgets).
        [ "$store" != mysql ] || u="$u&table=lease_locks"
    fi
    # shellcheck disable=SC2034 # for the caller
    PARTITION_URL=$u
}

partition_server() {
    local store=$1
    shift
    netns_exec srv \
        env ${PARTITION_SERVER_ENV[@]+"${PARTITION_SERVER_ENV[@]}"} \
        DLOCK_SERVER_HOST="$(netns_addr srv)" \
        DLOCK_SERVER_CLIENTS="$NETNS_NET.0/24" \
        "$partition_scripts/server-$store.sh" "$@"
}

partition_now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}
