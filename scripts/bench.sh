#!/bin/bash
# make bench: dlock-bench on every store compiled in, against throwaway
# servers started the same way the tests start them.
#   scripts/bench.sh BUILD_DIR [dlock-bench options]
#   DLOCK_BENCH_RESULTS=docs/results/bench scripts/bench.sh BUILD_DIR ...
#       also copy this run's JSON into that directory (its old *.json
#       removed first), with run.txt saying which run and when, and remake
#       the docs' tables from them (scripts/tables.py) and the scaling
#       plots (scripts/plots.py: *.svg beside the JSON); commit the lot.
set -euo pipefail
build=${1:?usage: scripts/bench.sh BUILD_DIR}
shift
here=$(cd "$(dirname "$0")" && pwd)
ci=false
# Servers that commit durably, as in production (the tests' PostgreSQL
# skips fsync).
export DLOCK_SERVER_DURABLE=1
. "$here/servers.sh"
out=$here/../bench/results
mkdir -p "$out"
stamp=$tmp/bench-start # servers.sh's directory: its cleanup removes it
touch "$stamp"
# Pinning: the servers (every thread, and the processes they started)
# and dlock-bench on one CPU.  On a VM a wake-up across vCPUs can cost
# more than the work (here ~90 us, against 8 us on one CPU), and which
# one a run gets changes from block to block: pinned, the ratios measure
# the CPU work of client and server, and hold still.
#   DLOCK_BENCH_PIN=CPU  the whole run pinned to CPU
#   (unset)              the uncontended part pinned to CPU 0 first
#                        (bench/results/*-pinned.json), then the run as
#                        the scheduler places it
pin=()
pin_servers() {
    local pinned=() f p q
    # Only the servers benchmarked: the Sentinel and Cluster nodes'
    # background chatter stays off that CPU.
    for f in "$tmp"/{redis,postgres,mysql}/*pid \
        "$tmp"/postgres/data/postmaster.pid "$tmp"/etcd/m*/pid; do
        [ -f "$f" ] || continue
        p=$(head -1 "$f")
        # and what it started already (PostgreSQL's background workers)
        for q in "$p" $(pgrep -P "$p" || true); do
            taskset -a -pc "$1" "$q" >/dev/null 2>&1 && pinned+=("$q")
        done
    done
    pin=(taskset -c "$1")
    echo "== CPU $1 for dlock-bench and ${#pinned[@]} server processes (${pinned[*]})"
}
# What each part of a SQL cycle costs on the same server, as the same
# ratio (bench/floors.c): the least a cycle keeping that part can cost.
floors() {
    case $2 in
    postgres|postgresql|mysql|mariadb)
        "${pin[@]}" "$build/dlock-floors" "$1" --json "$out/$2-floors.json" ;;
    esac
}
# dlock on its-mieger's own table (MyISAM, latin1: its exact DDL plus the
# ALTER of `dlock init --print`), against the same contract floor (the
# MEMORY table dlock creates) and against that floor on such a table.
itsmieger() {
    case $2 in mysql|mariadb) ;; *) return 0 ;; esac
    [ -n "${DLOCK_TEST_MYSQL_DIR:-}" ] || return 0
    "$here/server-mysql.sh" ctl "$DLOCK_TEST_MYSQL_DIR" sql "
        DROP TABLE IF EXISTS its_locks;
        CREATE TABLE its_locks (
          \`name\` varchar(64) NOT NULL,
          \`connection_id\` bigint(20) NOT NULL,
          \`created\` bigint(20) NOT NULL,
          \`ttl\` bigint(20) NOT NULL,
          \`lock_acquired\` tinyint(1) NOT NULL,
          UNIQUE KEY \`its_locks_ix1\` (\`name\`)
        ) ENGINE=MyISAM DEFAULT CHARSET=latin1;
        ALTER TABLE its_locks ADD COLUMN owner CHAR(32) CHARACTER SET ascii
          NULL, ADD COLUMN fence BIGINT UNSIGNED NULL, ADD COLUMN expires_ms
          BIGINT NULL, ADD COLUMN acquired_ms BIGINT NULL, ADD COLUMN host
          VARCHAR(255) CHARACTER SET utf8mb4 NULL, ADD COLUMN pid BIGINT
          NULL, ADD COLUMN full_name VARBINARY(1024) NULL, ADD COLUMN lim
          INT NULL, ADD COLUMN slot INT NULL" || return 0
    echo "== its-mieger's table (MyISAM, latin1), against the MEMORY floor:"
    "${pin[@]}" "$build/dlock-bench" "$1?table=its_locks" --only uncontended \
        --json "$out/$2-itsmieger.json"
    echo "== the same, against the floor on a MyISAM latin1 table:"
    DLOCK_BENCH_FLOOR_ENGINE=myisam "${pin[@]}" "$build/dlock-bench" \
        "$1?table=its_locks" --only uncontended --quick |
        grep -E 'contract floor'
}
# etcd: dlock against etcd's own clients on the same member (etcdctl
# lock, a process per cycle; python3-etcd3gw's Lock, in one process):
# bench/etcd-compare.py; one not installed is reported as skipped.
# Pinned, also against the floor in the shape of etcd's own Mutex (the
# create-if-absent txn with the queue read, a guarded delete: the server's
# share of the recipe), beside the put + delete floor.
etcdcompare() {
    case $1 in etcd://*) ;; *) return 0 ;; esac
    if [ "$2" = -pinned ]; then
        echo "== etcd, against the floor in the Mutex's shape (two txns):"
        DLOCK_BENCH_FLOOR_ENGINE=txn "${pin[@]}" "$build/dlock-bench" "$1" \
            --only uncontended --quick | grep -E 'contract floor' || true
    fi
    "${pin[@]}" /usr/bin/python3 "$here/../bench/etcd-compare.py" "$build" \
        "$1" --json "$out/etcd-compare$2.json" || true
}
# ?mode=lease: durable rows (every acquire and release a durable commit),
# measured against the same floor.
leasemode() {
    case $2 in mysql|mariadb|postgres|postgresql) ;; *) return 0 ;; esac
    case $1 in *'?'*) return 0 ;; esac
    local q=mode=lease
    # MySQL: a table lease mode creates (InnoDB, durable), not session
    # mode's MEMORY one.
    case $2 in mysql|mariadb) q="$q&table=lease_locks" ;; esac
    echo "== ?$q:"
    "${pin[@]}" "$build/dlock-bench" "$1?$q" --only uncontended --quick \
        --json "$out/$2-lease-pinned.json"
}
if [ -n "${DLOCK_BENCH_PIN:-}" ]; then
    pin_servers "$DLOCK_BENCH_PIN"
fi
urls=("sqlite://$tmp/bench.db")
for v in DLOCK_TEST_REDIS_URL DLOCK_TEST_POSTGRES_URL DLOCK_TEST_MYSQL_URL \
    DLOCK_TEST_ETCD_URL; do
    [ -n "${!v:-}" ] && urls+=("${!v}")
done
# Unpinned runs first measure the uncontended cycle pinned to CPU 0, on
# servers that have done nothing else yet (later, autovacuum and other
# background work after the big parts would share that CPU).
if [ -z "${DLOCK_BENCH_PIN:-}" ] && command -v taskset >/dev/null &&
    [ "$(nproc)" -gt 1 ]; then
    pin_servers 0
    for u in "${urls[@]}"; do
        name=$(echo "$u" | sed -E 's#:.*##')
        "${pin[@]}" "$build/dlock-bench" "$u" --only uncontended \
            --json "$out/$name-pinned.json"
        floors "$u" "$name"
        itsmieger "$u" "$name"
        leasemode "$u" "$name"
        case $u in redis://*) PIN="${pin[*]}" "$here/bench-redlock.sh" "$build" "$u" --json "$out/redis-node-redlock-pinned.json" || true ;; esac
        etcdcompare "$u" -pinned
    done
    pin_servers "0-$(($(nproc) - 1))"
    pin=()
    echo "== unpinned again: the run as the scheduler places it"
fi
for u in "${urls[@]}"; do
    name=$(echo "$u" | sed -E 's#:.*##')
    echo
    # Session-bound stores pin a server connection per held lock: hold
    # 1,000 names there, not 10,000 (a server's max_connections).
    # PostgreSQL's auto-renewed try-locks share one session (the mux), so
    # its renewal part holds the full 10,000; MySQL's GET_LOCK cannot
    # (2,000: the test server allows 4,200 connections, a handle half).
    case $name in
    mysql|mariadb|postgres|postgresql) case $u in *mode=lease*) many=() ;; *) many=(--many 1000) ;; esac ;;
    *) many=() ;;
    esac
    case $name in
    mysql|mariadb) case $u in *mode=lease*) ;; *) many+=(--renew 2000) ;; esac ;;
    esac
    # The renewal part holds its locks for DLOCK_BENCH_RENEW_SECONDS
    # (default 60; --quick: 5).
    "${pin[@]}" "$build/dlock-bench" "$u" --json "$out/$name.json" "${many[@]}" "$@"
    if [ -n "${DLOCK_BENCH_PIN:-}" ]; then
        floors "$u" "$name"
        itsmieger "$u" "$name"
    fi
    case $u in redis://*) PIN="${pin[*]}" "$here/bench-redlock.sh" "$build" "$u" --json "$out/redis-node-redlock.json" || true ;; esac
    etcdcompare "$u" ""
done
echo
echo "JSON in bench/results/"
if [ -n "${DLOCK_BENCH_RESULTS:-}" ]; then
    mkdir -p "$DLOCK_BENCH_RESULTS"
    rm -f "$DLOCK_BENCH_RESULTS"/*.json
    # Only this run's files (bench/results/ keeps older ones).
    find "$out" -maxdepth 1 -name '*.json' -newer "$stamp" \
        -exec cp {} "$DLOCK_BENCH_RESULTS"/ \;
    {
        echo "# run: scripts/bench.sh $build $*, dlock $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo '?'), $(nproc) CPUs${DLOCK_BENCH_NOTE:+; $DLOCK_BENCH_NOTE}"
        echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    } >"$DLOCK_BENCH_RESULTS/run.txt"
    python3 "$here/tables.py"
    # The scaling plots (docs/performance.md embeds them), from the same
    # JSON, beside it.
    python3 "$here/plots.py" "$DLOCK_BENCH_RESULTS"
    echo "copied to $DLOCK_BENCH_RESULTS (with run.txt); the docs' tables and plots remade"
fi
