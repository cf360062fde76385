#!/bin/bash
# A server whose wall clock jumps forward past a lease (issue 24):
#
#   test_clock_server_jump.sh TORTURE DLOCK [CASE...]
#
# CASE as in test_cli_partition.sh (redis, postgres, postgres-lease, mysql,
# mysql-lease; default: every store compiled into DLOCK).  The store's
# server runs on host srv under libfaketime (FAKETIME_TIMESTAMP_FILE,
# FAKETIME_NO_CACHE: it reads its offset from a file at every clock call;
# its monotonic clock is left alone: a wall clock step, as NTP makes).
# Four torture workers on client hosts c1..c4, fenced counter, 1 s leases,
# holds up to 400 ms; the nemesis (tests/torture/clock-nemesis.sh) moves
# the server's clock forward by 1.5..3 leases at random moments.
#
# A server that keeps leases on its wall clock (Redis's PX expiry, the SQL
# stores' lease rows and a waiter's judgement of a holder by the server's
# now()) ends a holder's lease early, while the holder still counts its
# own: overlap is expected, measured and reported (torture
# --overlap-expected); lost fenced updates, crashes, no progress fail.
# Redis cannot be tested so on Debian 12: redis-server 7.0.15 (linked
# with libjemalloc) does not start under libfaketime 0.9.10 (jemalloc's
# init calls clock_gettime() inside libfaketime's: "Cannot recover from
# unexpected recursive calls to clock_gettime()"), whatever FAKETIME_*
# or MALLOC_CONF say; the case fails with "did not start".
# $DLOCK_TORTURE_SECONDS sets each run's length (default 15: no jump in
# the last 5 s).  One line per case for the README table:
#   SUMMARY store=CASE fault=server-clock-jump result=PASS|FAIL <torture's summary>
# Root only; 77 (skipped) where the machine cannot, 1 with CI=true.
set -euo pipefail
usage="usage: test_clock_server_jump.sh TORTURE DLOCK [CASE...]"
TORTURE=$(realpath "${1:?$usage}")
DLOCK=$(realpath "${2:?$usage}")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
nemesis=$here/../torture/clock-nemesis.sh
workers=4
ttl=1000
secs=${DLOCK_TORTURE_SECONDS:-15}
lib=${DLOCK_FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1}

# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
[ -r "$lib" ] || partition_cannot "no libfaketime at $lib (package faketime)"
# libfaketime 0.9.10 gives each process that loads it without
# FAKETIME_SHARED a semaphore and a shared memory object of its own,
# /dev/shm/sem.faketime_sem_PID and faketime_shm_PID (mode 0600), and
# removes them at a normal exit only: a process killed (a torture worker,
# a server) leaves them.  Started by root, the server script makes root's
# pair; PostgreSQL's processes (user postgres) cannot open it and each
# makes its own, by its pid: one whose pid is that of a dead root process
# whose pair is still there cannot, and exits (libfaketime: "sem_open
# failed and recreation attempts failed: Permission denied"; CI once).
# So the pairs of processes that are gone are removed first: by
# libfaketime's own naming, nobody can use them any more.
faketime_tidy() {
    local f pid
    for f in /dev/shm/sem.faketime_sem_* /dev/shm/faketime_shm_*; do
        [ -e "$f" ] || continue
        pid=${f##*_}
        case $pid in *[!0-9]* | '') continue ;; esac
        [ -d "/proc/$pid" ] || rm -f "$f"
    done
}
partition_begin "$workers" "$@"
for c in "${cases[@]}"; do
    faketime_tidy
    # One clock per server: the lease mode runs on the same server, whose
    # clock stays where the session mode's run left it (ahead).
    clock=$T/faketime-${c%-lease}
    [ -f "$clock" ] || echo "+0" >"$clock"
    chmod 644 "$clock"
    PARTITION_SERVER_ENV=(LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$clock"
        FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
    if ! partition_url "$c"; then
        echo "FAIL $c: the ${c%-lease} server did not start under libfaketime"
        fails=$((fails + 1))
        summary+=("SUMMARY store=$c fault=server-clock-jump result=FAIL (no server)")
        continue
    fi
    echo "--- $c, server clock jumps ($PARTITION_URL)"
    rc=0
    timeout -k 10 $((secs * 4 + 60)) "$TORTURE" "$PARTITION_URL" \
        --workers "$workers" --seconds "$secs" \
        --workload fenced --fault none --ttl "$ttl" --hold 400 \
        --netns "$(netns_name c)" --hosts "$workers" --overlap-expected \
        --nemesis "'$nemesis' '$clock' $ttl" \
        --every 1500 --quiet 5000 >"$T/out" 2>&1 || rc=$?
    cat "$T/out"
    echo "server clock now $(cat "$clock") s ahead"
    line=$(grep '^summary: ' "$T/out" | cut -d' ' -f2-) || line="(no summary)"
    result=PASS
    if [ "$rc" != 0 ]; then
        result=FAIL
        fails=$((fails + 1))
    fi
    summary+=("SUMMARY store=$c fault=server-clock-jump result=$result $line")
done
echo
printf '%s\n' "${summary[@]}"
echo "server clock jumps: $fails run(s) failed"
[ "$fails" = 0 ]
