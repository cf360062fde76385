#!/bin/bash
# dlock run --once / --once-per under faults (issue 35, "the same under the
# fault harness"): a holder cut off from its store mid-run, and a restart
# of the store mid-run.  What dlock(1) ("Once per period, once until
# success, and the record of each run"), docs/semantics.md and the stores'
# "Run records" sections promise must hold.
#
#   test_once_faults.sh DLOCK [CASE...]
#
# CASE: redis, postgres, postgres-lease, mysql, mysql-lease (default:
# every one compiled into DLOCK).  Per case, in network namespaces
# (tests/partition/lib.sh, scripts/netns.sh), the store's server on host
# srv, hosts c1 and c2:
#
# 1. --once-per, holder cut off.  c1 runs `dlock run --ttl 2 --once-per
#    60s NAME -- CMD`; CMD appends "start c1 FENCE" to a log file on this
#    host's side (not the store), then blocks on a FIFO nobody opens (it
#    would append "end c1" if it ever went on).  c1 is cut off from srv
#    (nftables drop: no reset, no ICMP); c2 at once starts `dlock run
#    --once-per 60s -w 30 NAME -- CMD2`.  c1's dlock must stop CMD and exit
#    75 within the lease + 2 s of the cut; c2 gets the lock once c1's lease
#    is over, and must skip (the period's run started): exit 0, no CMD2,
#    the "already ran" line naming c1's run (its fence).  After the heal,
#    `dlock history` shows c1's run as docs/semantics.md says: RUNNING (its
#    holder could not record its end, and a skip begins no run), until the
#    next run that goes ahead (a plain run here) marks it ABANDONED.
# 2. --once, holder cut off.  The same with --once: no success was
#    recorded, so c2 runs CMD2, and only after c1's CMD is dead; history:
#    c1's run ABANDONED, c2's exited 0; a third --once skips.
# 3. --once-per, the store restarted mid-run (scripts/server-STORE.sh ctl
#    DIR restart).  c1 (--ttl 6): Redis, and PostgreSQL's and MariaDB's
#    session mode lose the lock at the restart: exit 75, CMD stopped.
#    Lease mode keeps its rows: the run goes on (c1 still runs a lease + 2 s
#    after the restart; let go, CMD ends, exit 0).  Then: PostgreSQL and
#    MariaDB keep the record (history names c1's run) and a --once-per of
#    the same period skips; Redis (scripts/server-redis.sh: no RDB, no AOF)
#    forgets it, as docs/stores/redis.md says: history is empty and the
#    --once-per runs at once.
#
# "CMD never ran in two places at once": CMD holds a FIFO open for writing
# (fd 4) while it lives; a watcher reading it appends "dead c1" to the log
# at its EOF, so a "start c2" before "dead c1" in the log is an overlap.
#
# Root only.  Exits 77 (ctest: skipped) when the machine cannot run it,
# except with CI=true, where that is a failure.
set -euo pipefail
DLOCK=$(realpath "${1:?usage: test_once_faults.sh DLOCK [CASE...]}")
shift
here=$(cd "$(dirname "$0")" && pwd)
ttl=2                   # the cut-off holder's lease, seconds
exit_bound=$((ttl + 2)) # its dlock must be gone by then after the cut
ttl3=6                  # the holder's lease across the restart
# shellcheck source=SCRIPTDIR/../partition/lib.sh
. "$here/../partition/lib.sh"
partition_begin 2 "$@"

ok() { echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }

# until_grep PATTERN FILE SECONDS: FILE has a line matching PATTERN.
until_grep() {
    local end=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$end" ]; do
        grep -q -- "$1" "$2" 2>/dev/null && return 0
        sleep 0.02
    done
    return 1
}

# line_no PATTERN FILE: the number of the first line matching, or 999999.
line_no() {
    local n
    n=$(grep -n -m1 -- "$1" "$2" 2>/dev/null | cut -d: -f1)
    echo "${n:-999999}"
}

# The command that is cut off: alive while fd 4 (the FIFO) is open.
# shellcheck disable=SC2016 # for sh -c
CMD1='exec 4>"$3"; echo "start $2 $DLOCK_FENCE" >>"$1"; read _ <"$4"; echo "end $2" >>"$1"'
# The second host's command: says it ran, ends.
# shellcheck disable=SC2016 # for sh -c
CMD2='echo "start $2 $DLOCK_FENCE" >>"$1"'

# start_holder HOST TTL ARGS...: `dlock run --ttl TTL ARGS -- CMD1` on HOST
# in the background (pid in $hpid), its watcher (pid in $wpid); waits for
# CMD1's "start" line, sets $f1 to its fence.  d, u, log set by the caller.
start_holder() {
    local host=$1 t=$2
    shift 2
    mkfifo "$d/alive" "$d/go"
    # The watcher: "dead HOST" once every writer of the FIFO is gone.
    (timeout 300 cat "$d/alive" >/dev/null && echo "dead $host" >>"$log") &
    wpid=$!
    timeout -k 5 120 ip netns exec "$(netns_name "$host")" \
        "$DLOCK" -s "$u" run --ttl "$t" "$@" -- \
        sh -c "$CMD1" sh "$log" "$host" "$d/alive" "$d/go" \
        2>"$d/err-$host" &
    hpid=$!
    if ! until_grep "^start $host " "$log" 30; then
        fail "$c: $host's command did not start within 30 s: $(cat "$d/err-$host")"
        kill "$hpid" 2>/dev/null || true
        # Let the watcher go (it waits for a writer that never came).
        # shellcheck disable=SC2016 # for sh -c
        timeout 2 sh -c ': >"$1"' sh "$d/alive" || true
        wait "$hpid" "$wpid" 2>/dev/null || true
        return 1
    fi
    f1=$(sed -n "s/^start $host \([0-9]*\)$/\1/p" "$log")
}

# on HOST ARGS...: dlock ARGS on HOST (bounded), stdout to the caller.
on() {
    local host=$1
    shift
    timeout -k 5 60 ip netns exec "$(netns_name "$host")" "$DLOCK" -s "$u" "$@"
}

# The history line of fence F (dlock history NAME, from c2), or empty.
history_of() {
    on c2 history "$1" 2>"$d/err-history" | grep -- ", fence $2\$" || true
}

# cut_off ONCE_FLAGS...: scenarios 1 and 2 up to c2's end; sets rc1, rc2,
# took (ms from the cut to c1's dlock's exit).
cut_off() {
    local t_cut pid2
    start_holder c1 "$ttl" "$@" "$name" || return 1
    netns_cut c1 srv
    t_cut=$(partition_now_ms)
    timeout -k 5 120 ip netns exec "$(netns_name c2)" \
        "$DLOCK" -s "$u" run "$@" -w 30 "$name" -- \
        sh -c "$CMD2" sh "$log" c2 2>"$d/err-c2" &
    pid2=$!
    rc1=0
    wait "$hpid" || rc1=$?
    took=$(($(partition_now_ms) - t_cut))
    rc2=0
    wait "$pid2" || rc2=$?
    # The watcher ends with CMD (timeout(1) bounds it).
    wait "$wpid" || true
    netns_heal c1 srv
    if [ "$rc1" = 75 ] && [ "$took" -le $((exit_bound * 1000)) ]; then
        ok "$c: cut-off c1 stopped CMD and exited 75, ${took} ms after the cut (bound ${exit_bound} s)"
    else
        fail "$c: cut-off c1 exited $rc1 ${took} ms after the cut (want 75 within ${exit_bound} s): $(tail -n3 "$d/err-c1")"
    fi
    if grep -q '^dead c1$' "$log" && ! grep -q '^end c1$' "$log"; then
        ok "$c: c1's CMD was stopped (never went on)"
    else
        fail "$c: c1's CMD was not stopped as it should: $(tr '\n' '|' <"$log")"
    fi
}

case_once_per_cut() {
    name="faults-per-$c-$$"
    d=$T/$c-per
    log=$d/log
    mkdir -p "$d"
    : >"$log"
    cut_off --once-per 60s || return 0
    if [ "$rc2" = 0 ] && ! grep -q '^start c2' "$log" &&
        grep -q "dlock: run: '$name' already ran at .* (fence $f1;" "$d/err-c2"; then
        ok "$c: --once-per: c2 skipped (exit 0) naming c1's run (fence $f1)"
    else
        fail "$c: --once-per: c2 exited $rc2, log: $(tr '\n' '|' <"$log") stderr: $(tail -n3 "$d/err-c2")"
    fi
    # docs/semantics.md: a holder that could not record its end leaves its
    # record RUNNING until the next run that goes ahead marks it ABANDONED
    # (a skip begins nothing).
    local h
    h=$(history_of "$name" "$f1")
    if [[ $h == running\ * ]]; then
        ok "$c: after the heal, history shows c1's run as running (no end recorded, no run begun since)"
    else
        fail "$c: after the heal, c1's run in history: '$h' (want running): $(cat "$d/err-history")"
    fi
    if on c2 run "$name" -- true 2>"$d/err-plain"; then
        h=$(history_of "$name" "$f1")
        if [[ $h == abandoned\ * ]]; then
            ok "$c: the next run that went ahead marked c1's run abandoned"
        else
            fail "$c: after the next run, c1's run in history: '$h' (want abandoned)"
        fi
    else
        fail "$c: a plain run after the heal failed: $(tail -n3 "$d/err-plain")"
    fi
}

case_once_cut() {
    name="faults-once-$c-$$"
    d=$T/$c-once
    log=$d/log
    mkdir -p "$d"
    : >"$log"
    cut_off --once || return 0
    local dead start2 h f2
    dead=$(line_no '^dead c1$' "$log")
    start2=$(line_no '^start c2' "$log")
    if [ "$rc2" = 0 ] && [ "$start2" != 999999 ] && [ "$dead" -lt "$start2" ]; then
        ok "$c: --once: c2 ran CMD again, after c1's CMD was dead"
    else
        fail "$c: --once: c2 exited $rc2, log (dead c1 must come before start c2): $(tr '\n' '|' <"$log") stderr: $(tail -n3 "$d/err-c2")"
    fi
    h=$(history_of "$name" "$f1")
    if [[ $h == abandoned\ * ]]; then
        ok "$c: --once: history shows c1's run abandoned"
    else
        fail "$c: --once: c1's run in history: '$h' (want abandoned): $(cat "$d/err-history")"
    fi
    f2=$(sed -n 's/^start c2 \([0-9]*\)$/\1/p' "$log")
    h=$(history_of "$name" "${f2:-none}")
    if [[ $h == exited\ 0\ * ]]; then
        ok "$c: --once: history shows c2's run exited 0"
    else
        fail "$c: --once: c2's run in history: '$h' (want exited 0)"
    fi
    rc2=0
    on c1 run --once "$name" -- sh -c "$CMD2" sh "$log" c1again \
        2>"$d/err-again" || rc2=$?
    if [ "$rc2" = 0 ] && ! grep -q '^start c1again' "$log" &&
        grep -q "already ran at .* (fence $f2; exit 0)" "$d/err-again"; then
        ok "$c: --once: after the success, a third run skipped"
    else
        fail "$c: --once: a third run exited $rc2: $(tail -n3 "$d/err-again")"
    fi
}

case_restart() {
    local store=${c%-lease} t_r left rc h all
    name="faults-restart-$c-$$"
    d=$T/$c-restart
    log=$d/log
    mkdir -p "$d"
    : >"$log"
    start_holder c1 "$ttl3" --once-per 60s "$name" || return 0
    # The same addresses as partition_url started it with.
    partition_server "$store" ctl "$T/server-$store" restart >/dev/null
    t_r=$(partition_now_ms)
    rc1=0
    if [ "$c" = "$store" ]; then
        # Redis (no persistence), session mode: the lock is gone.
        wait "$hpid" || rc1=$?
        wait "$wpid" || true
        if [ "$rc1" = 75 ] && grep -q '^dead c1$' "$log" && ! grep -q '^end c1$' "$log"; then
            ok "$c: restart: c1's run was lost (75, CMD stopped), $(($(partition_now_ms) - t_r)) ms after the restart"
        else
            fail "$c: restart: c1 exited $rc1 (want 75, CMD stopped): $(tail -n3 "$d/err-c1")"
        fi
    else
        # Lease mode: the row outlives the restart, the holder renews it.
        left=$(((ttl3 + 2) * 1000 + t_r - $(partition_now_ms)))
        if [ "$left" -gt 0 ] && ! until_grep '^dead c1$' "$log" $(((left + 999) / 1000)) &&
            kill -0 "$hpid" 2>/dev/null; then
            ok "$c: restart: c1's run went on (still running $((ttl3 + 2)) s after it)"
        else
            fail "$c: restart: c1's run ended: $(tail -n3 "$d/err-c1")"
        fi
        echo go >"$d/go"
        wait "$hpid" || rc1=$?
        wait "$wpid" || true
        if [ "$rc1" = 0 ] && grep -q '^end c1$' "$log"; then
            ok "$c: restart: c1's CMD ended and dlock exited 0"
        else
            fail "$c: restart: c1 exited $rc1 after CMD was let go: $(tail -n3 "$d/err-c1")"
        fi
    fi
    h=$(history_of "$name" "$f1")
    all=$(on c2 history "$name" 2>&1) || all="(exit $?) $all"
    rc=0
    on c2 run --once-per 60s -w 30 "$name" -- sh -c "$CMD2" sh "$log" c2 \
        2>"$d/err-c2" || rc=$?
    if [ "$store" = redis ]; then
        if [ -z "$all" ]; then
            ok "$c: restart: Redis without persistence forgot the records (history empty)"
        else
            fail "$c: restart: Redis history after the restart: '$all'"
        fi
        if [ "$rc" = 0 ] && grep -q '^start c2' "$log"; then
            ok "$c: restart: --once-per ran again at once (the last start forgotten)"
        else
            fail "$c: restart: --once-per exited $rc, log: $(tr '\n' '|' <"$log")"
        fi
    else
        if [ -n "$h" ]; then
            ok "$c: restart: the record survived: $h"
        else
            fail "$c: restart: c1's run (fence $f1) is not in history: $(cat "$d/err-history")"
        fi
        if [ "$rc" = 0 ] && ! grep -q '^start c2' "$log" &&
            grep -q "already ran at .* (fence $f1;" "$d/err-c2"; then
            ok "$c: restart: --once-per of the same period skipped, naming c1's run"
        else
            fail "$c: restart: --once-per exited $rc, log: $(tr '\n' '|' <"$log") stderr: $(tail -n3 "$d/err-c2")"
        fi
    fi
}

for c in "${cases[@]}"; do
    case $c in
    redis | postgres | postgres-lease | mysql | mysql-lease) ;;
    *)
        echo "once-faults: unknown case $c" >&2
        exit 64
        ;;
    esac
    echo "--- $c"
    partition_url "$c" || {
        fail "$c: its server did not start in the namespace"
        continue
    }
    u=$PARTITION_URL
    case_once_per_cut
    case_once_cut
    case_restart
done
echo "$fails check(s) failed"
[ "$fails" = 0 ]
