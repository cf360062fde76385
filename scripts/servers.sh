# Sourced by test.sh and bench.sh: start a throwaway server for every
# network store compiled into $build, export DLOCK_TEST_<STORE>_URL, and
# stop them all on exit (and DLOCK_TEST_MYSQL_LEASE_URL: the same
# MariaDB in lease mode; DLOCK_TEST_ETCD_CLUSTER_URL: a 3-member etcd).
# Needs: build, here, ci; tier (optional: quick starts no Sentinel,
# Cluster or TLS topology, nor the etcd cluster: only the long tier's
# entries use them); sets: tmp, problems.
tmp=$(mktemp -d /tmp/dlock-test.XXXXXX)
chmod 755 "$tmp"
export DLOCK_OWN_SERVERS=$tmp/own  # tests/own_server.sh
started=()
cleanup() {
    local s
    # SCRIPT or SCRIPT:DIR (the TLS Redis: server-redis.sh in redis-tls;
    # the etcd cluster: server-etcd.sh in etcd-cluster).
    for s in "${started[@]}"; do
        "$here/server-${s%%:*}.sh" stop "$tmp/${s#*:}" >/dev/null 2>&1 || true
    done
    # What an entry's own server (tests/own_server.sh) left when the entry
    # was killed.
    "$here/../tests/own_server.sh" --stop-all "$tmp/own" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

schemes=$("$build/dlock" --version)
echo "== $schemes"
problems=0
for store in redis postgres mysql etcd; do
    upper=$(echo "$store" | tr a-z A-Z)
    if [ ! -f "$here/../src/stores/$store.c" ] &&
       [ ! -d "$here/../src/stores/$store" ]; then
        echo "== $store: not implemented yet"
        continue
    fi
    case $schemes in
    *"$store"*) ;;
    *)
        echo "== $store: not compiled in (client library missing?)"
        if [ "$ci" = true ]; then problems=$((problems + 1)); fi
        continue ;;
    esac
    if [ ! -x "$here/server-$store.sh" ]; then
        echo "== $store: no scripts/server-$store.sh to start a server"
        problems=$((problems + 1))
        continue
    fi
    mkdir -p "$tmp/$store"
    chmod 777 "$tmp/$store"
    started+=("$store")
    if url=$("$here/server-$store.sh" start "$tmp/$store"); then
        echo "== $store: $(echo "$url" | sed -E 's#://([^:/@]*):[^@]*@#://\1:***@#')"
        export "DLOCK_TEST_${upper}_URL=$url" "DLOCK_TEST_${upper}_DIR=$tmp/$store"
        # MariaDB's lease mode, on a table of its own (InnoDB: lease mode
        # refuses session mode's MEMORY table), for every *-mysql-lease
        # entry: the query is added here once, not in each entry.
        if [ "$store" = mysql ]; then
            case $url in *\?*) q='&' ;; *) q='?' ;; esac
            export "DLOCK_TEST_MYSQL_LEASE_URL=$url${q}mode=lease&table=lease_locks"
        fi
    else
        echo "== $store: the server did not start"
        problems=$((problems + 1))
    fi
done

if [ "${tier:-}" = quick ]; then
    echo "== quick tier: no Sentinel, Cluster or TLS topologies (make test-long)"
    topologies=
else
    topologies=$schemes
fi

# Redis beyond one server: a Sentinel topology (master, replica, three
# sentinels), when the redis store is compiled in (and a cluster, once
# scripts/server-redis-cluster.sh exists).
case ",$topologies," in
*redis-sentinel*)
    for topo in redis-sentinel redis-cluster; do
        [ -x "$here/server-$topo.sh" ] || continue
        upper=$(echo "$topo" | tr a-z- A-Z_)
        mkdir -p "$tmp/$topo"
        started+=("$topo")
        if url=$("$here/server-$topo.sh" start "$tmp/$topo"); then
            echo "== $topo: $url"
            export "DLOCK_TEST_${upper}_URL=$url" \
                "DLOCK_TEST_${upper}_DIR=$tmp/$topo"
        else
            echo "== $topo: the servers did not start"
            problems=$((problems + 1))
        fi
    done
    ;;
esac

# etcd beyond one member: a 3-member cluster on loopback (static initial
# cluster), when the etcd store is compiled in: DLOCK_TEST_ETCD_CLUSTER_URL
# (etcd://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3) and _DIR, for the
# contract, CLI and torture suites (scripts/server-etcd.sh ctl DIR
# kill-leader, restart I, pause I...).
case ",$topologies," in
*etcd*)
    if [ -x "$here/server-etcd.sh" ]; then
        mkdir -p "$tmp/etcd-cluster"
        started+=("etcd:etcd-cluster")
        if url=$("$here/server-etcd.sh" start-cluster "$tmp/etcd-cluster"); then
            echo "== etcd-cluster: $url"
            export "DLOCK_TEST_ETCD_CLUSTER_URL=$url" \
                "DLOCK_TEST_ETCD_CLUSTER_DIR=$tmp/etcd-cluster"
        else
            echo "== etcd-cluster: the servers did not start"
            problems=$((problems + 1))
        fi
    fi
    ;;
esac

# Redis over TLS (rediss://, rediss-sentinel://, rediss-cluster://): the
# same three, TLS only, each with a throwaway CA and certificates (their
# scripts' start-tls), for the contract, CLI and TLS suites:
# DLOCK_TEST_REDIS_TLS_URL, DLOCK_TEST_REDIS_SENTINEL_TLS_URL,
# DLOCK_TEST_REDIS_CLUSTER_TLS_URL (and _DIR).
case ",$topologies," in
*rediss*)
    for topo in redis redis-sentinel redis-cluster; do
        [ -x "$here/server-$topo.sh" ] || continue
        upper=$(echo "$topo" | tr a-z- A-Z_)_TLS
        mkdir -p "$tmp/$topo-tls"
        started+=("$topo:$topo-tls")
        if url=$("$here/server-$topo.sh" start-tls "$tmp/$topo-tls"); then
            echo "== $topo-tls: $url"
            export "DLOCK_TEST_${upper}_URL=$url" \
                "DLOCK_TEST_${upper}_DIR=$tmp/$topo-tls"
        else
            echo "== $topo-tls: the servers did not start"
            problems=$((problems + 1))
        fi
    done
    ;;
esac
