#!/bin/bash
# Issue 43, item 1: `dlock run --once` must not run a job again that
# succeeded, when the store blinks just as the run ends (an outage the
# store survives: docs/stores/*.md).  The end of the run is recorded
# before the release; a store that is back within the lease must get it.
#
#   once_end.sh DLOCK CASE [ROUNDS [TTL]]
#
# CASE (the server is this test's own, in a temporary directory, stopped
# on exit):
#   etcd            a 3-member cluster (scripts/server-etcd.sh
#                   start-cluster); the job kills -9 the leader member as
#                   its last act and exits 0; this script starts the member
#                   again once the job has said so.  --ttl 3: the record
#                   must get through an election within the lease.
#   postgres-lease  PostgreSQL, ?mode=lease; the job stops the server
#                   (fast shutdown) and exits 0; this script starts it
#                   again, same port.
#   mysql-lease     MariaDB, ?mode=lease&table=...; the same.
#   postgres-lease-gone
#                   what --once does when the end really cannot be
#                   written: as postgres-lease, but the server comes back
#                   only once the first dlock has exited.  It must exit 0
#                   (the command's status) within the lease and a few
#                   seconds, warn that the end is not recorded and that
#                   --once will run it again; then the second --once does
#                   run the job, and history shows the first run
#                   abandoned (docs/semantics.md, dlock(1)).
# Each round (a name of its own): `dlock run --once NAME -- JOB` must exit
# 0, and then `dlock run --once NAME -- touch MARKER` must skip: exit 0,
# no MARKER, the "already ran" line.  ROUNDS defaults to 4, TTL (the
# first run's --ttl, seconds) to 3 on etcd, 10 on the others.  A round
# whose first run lost its lock in the outage (exit 75: the run is not a
# success, and --once rightly runs it again) proves nothing either way:
# it is counted apart, and at least half the rounds must be others.
#
# Exits 77 (ctest: skipped) when the server cannot be started here, except
# with CI=true, where that is a failure.
set -euo pipefail
usage="usage: once_end.sh DLOCK CASE [ROUNDS [TTL]]"
DLOCK=$(realpath "${1:?$usage}")
c=${2:?$usage}
rounds=${3:-4}
here=$(cd "$(dirname "$0")" && pwd)
scripts=$(cd "$here/../../scripts" && pwd)

skip() {
    echo "SKIP: $*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}

T=$(mktemp -d /tmp/dlock-once-end.XXXXXX)
chmod 755 "$T"
srv=$T/srv
mkdir "$srv"
case $c in
etcd)
    server=$scripts/server-etcd.sh
    ttl=${4:-3}
    ;;
postgres-lease | postgres-lease-gone)
    server=$scripts/server-postgres.sh
    ttl=${4:-10}
    ;;
mysql-lease)
    server=$scripts/server-mysql.sh
    ttl=${4:-10}
    ;;
*)
    echo "once_end.sh: no case '$c'" >&2
    exit 2
    ;;
esac
cleanup() {
    "$server" stop "$srv" >/dev/null 2>&1 || true
    [ -n "${DLOCK_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

case $c in
etcd) u=$("$server" start-cluster "$srv" 2>"$T/start.err") ||
    skip "no etcd cluster: $(tail -n3 "$T/start.err")" ;;
postgres-lease*) u="$("$server" start "$srv" 2>"$T/start.err")?mode=lease" ||
    skip "no PostgreSQL server: $(tail -n3 "$T/start.err")" ;;
mysql-lease) u="$("$server" start "$srv" 2>"$T/start.err")?mode=lease&table=once_end_locks" ||
    skip "no MariaDB server: $(tail -n3 "$T/start.err")" ;;
esac
export DLOCK_STORE=$u
if ! timeout 60 "$DLOCK" init >/dev/null 2>"$T/init.err"; then
    echo "FAIL $c: dlock init: $(cat "$T/init.err")"
    exit 1
fi

# The job's last act: the outage.  etcd: kill -9 the leader (its index
# in $1.who first), and go.  The SQL servers: stop it (the stop returns
# once the server is gone).  Then "down" in $1, exit 0.
cat >"$T/job" <<EOF
#!/bin/bash
set -euo pipefail
case $c in
etcd)
    i=\$("$server" ctl "$srv" leader | cut -d' ' -f1)
    echo "\$i" >"\$1.who"
    pid=\$("$server" ctl "$srv" pid "\$i")
    # The last act: dlock records the end as the leader dies.
    kill -KILL "\$pid"
    ;;
*)
    "$server" stop "$srv"
    ;;
esac
echo down >"\$1"
exit 0
EOF
chmod 755 "$T/job"

# until_down FILE PID SECONDS: FILE exists, or PID is gone (a bounded
# poll).
until_down() {
    local end=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$end" ]; do
        [ -e "$1" ] && return 0
        kill -0 "$2" 2>/dev/null || return 0
        sleep 0.02
    done
    return 1
}

# alive PID: runs, and is no zombie.
alive() {
    local st
    st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" \
        2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# back: the store as it was (every member running, the server up).
back() {
    case $c in
    etcd)
        local i p
        for i in 1 2 3; do
            p=$("$server" ctl "$srv" pid "$i" 2>/dev/null) || p=
            # The member the job killed: gone (bounded) before it starts
            # again.
            if [ -n "$p" ] && [ -e "$down.who" ] &&
                [ "$(cat "$down.who")" = "$i" ]; then
                for _ in $(seq 1 500); do
                    alive "$p" || break
                    sleep 0.01
                done
            fi
            if [ -z "$p" ] || ! alive "$p"; then
                "$server" ctl "$srv" start-member "$i" || return 1
            fi
        done
        ;;
    *)
        "$server" ctl "$srv" pid >/dev/null 2>&1 ||
            "$server" ctl "$srv" restart
        ;;
    esac
}

# The end that cannot be written: one round, the server back only after.
if [ "$c" = postgres-lease-gone ]; then
    name="once-end-$c-$$" down=$T/down marker=$T/marker
    t0=$(date +%s%N)
    rc1=0
    timeout -k 5 180 "$DLOCK" run --ttl "$ttl" --once "$name" -- \
        "$T/job" "$down" 2>"$T/err1" || rc1=$?
    took=$((($(date +%s%N) - t0) / 1000000))
    back >"$T/ctl" 2>&1 || {
        echo "FAIL $c: the server did not come back: $(tail -n3 "$T/ctl")"
        exit 1
    }
    fails=0
    if [ "$rc1" = 0 ] && [ "$took" -le $(((ttl + 5) * 1000)) ]; then
        echo "ok   $c: the first run exited 0 (the command's) after ${took} ms (bound $((ttl + 5)) s)"
    else
        fails=$((fails + 1))
        echo "FAIL $c: the first run exited $rc1 after ${took} ms (want 0 within $((ttl + 5)) s): $(tr '\n' '|' <"$T/err1")"
    fi
    if grep -q "the end of the run of '$name' is not recorded: .* (tried for [0-9]* ms) (--once will run it again)" "$T/err1" &&
        grep -q "release of '$name' could not be confirmed" "$T/err1"; then
        echo "ok   $c: it warned that the end is not recorded and --once will run it again"
    else
        fails=$((fails + 1))
        echo "FAIL $c: not the warnings expected: $(tr '\n' '|' <"$T/err1")"
    fi
    rc2=0
    timeout -k 5 120 "$DLOCK" run --once -w 60 "$name" -- touch "$marker" \
        2>"$T/err2" || rc2=$?
    if [ "$rc2" = 0 ] && [ -e "$marker" ]; then
        echo "ok   $c: the second --once ran the job (no success recorded)"
    else
        fails=$((fails + 1))
        echo "FAIL $c: the second --once exited $rc2, job run: $([ -e "$marker" ] && echo yes || echo no): $(tr '\n' '|' <"$T/err2")"
    fi
    h=$(timeout 60 "$DLOCK" history "$name" 2>&1) || true
    if [ "$(printf '%s\n' "$h" | sed -n 2p | cut -d' ' -f1)" = abandoned ] &&
        [[ $(printf '%s\n' "$h" | sed -n 1p) == exit\ 0* || $(printf '%s\n' "$h" | sed -n 1p) == exited\ 0* ]]; then
        echo "ok   $c: history: the second run exited 0, the first is abandoned"
    else
        fails=$((fails + 1))
        echo "FAIL $c: history is not (exit 0, abandoned): $(printf '%s' "$h" | tr '\n' '|')"
    fi
    [ "$fails" = 0 ]
    exit
fi

fails=0 reran=0 lost=0
for r in $(seq 1 "$rounds"); do
    name="once-end-$c-$r-$$"
    down=$T/down-$r marker=$T/marker-$r
    timeout -k 5 180 "$DLOCK" run --ttl "$ttl" --once "$name" -- \
        "$T/job" "$down" >"$T/out1-$r" 2>"$T/err1-$r" &
    pid=$!
    if ! until_down "$down" "$pid" 60; then
        echo "FAIL $c round $r: the job did not bring the store down: $(tail -n3 "$T/err1-$r")"
        wait "$pid" || true
        exit 1
    fi
    # The store comes back while dlock records the end.
    if ! back >"$T/ctl-$r" 2>&1; then
        echo "FAIL $c round $r: the store did not come back: $(tail -n3 "$T/ctl-$r")"
        wait "$pid" || true
        exit 1
    fi
    rc1=0
    wait "$pid" || rc1=$?
    if [ "$rc1" = 75 ]; then
        lost=$((lost + 1))
        echo "--   $c round $r: the first run lost its lock in the outage (exit 75): not counted"
        continue
    fi
    if [ "$rc1" != 0 ]; then
        fails=$((fails + 1))
        echo "FAIL $c round $r: the first run exited $rc1 (want 0): $(tail -n3 "$T/err1-$r")"
        continue
    fi
    rc2=0
    timeout -k 5 120 "$DLOCK" run --once -w 60 "$name" -- touch "$marker" \
        2>"$T/err2-$r" || rc2=$?
    if [ -e "$marker" ]; then
        reran=$((reran + 1))
        fails=$((fails + 1))
        echo "FAIL $c round $r: the second --once ran the job again (exit $rc2); the first said: $(tr '\n' '|' <"$T/err1-$r")"
    elif [ "$rc2" = 0 ] && grep -q "'$name' already ran at .*exit 0)" "$T/err2-$r"; then
        echo "ok   $c round $r: the second --once skipped (exit 0)"
    else
        fails=$((fails + 1))
        echo "FAIL $c round $r: the second --once exited $rc2 without the skip line: $(tr '\n' '|' <"$T/err2-$r")"
    fi
done
echo "$c (--ttl $ttl): the job ran again in $reran of $((rounds - lost)) rounds ($lost more lost the lock)"
if [ $((lost * 2)) -gt "$rounds" ]; then
    echo "FAIL $c: $lost of $rounds first runs lost their lock: too few rounds tell"
    fails=$((fails + 1))
fi
[ "$fails" = 0 ]
