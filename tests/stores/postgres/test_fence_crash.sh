#!/bin/bash
# Session mode's fences never repeat across a server crash, whatever the
# server's clock did (issue 33, item 5):
#
#   test_fence_crash.sh DLOCK SERVER_SCRIPT [CASE...]
#
# CASE (default: all):
#   clock   the server starts with its clock an hour ahead (libfaketime),
#           hands out fences, is killed (kill -9 of the postmaster) and
#           comes back, crash recovery and all, on the true clock
#   many    the clock untouched; many fences drawn after the sequence was
#           seeded (setval ahead: 10^13 fences, hours of a clock-based
#           seed), then fences across the point where the durable
#           ceiling must rise; kill -9; again
#   old     a store of dlock 0.2 (its sequence above 2^53, the row ''
#           below it): fences go on rising from where they are, and on
#           after a crash
#   sem     like many, the first fence after the crash drawn by a
#           semaphore's admission (the PL/pgSQL path)
#   preset  a client whose session starts with the session's copy of the
#           ceiling already set (URL ?options=-c dlock.fence_ceiling=...,
#           as PGOPTIONS or ALTER ROLE ... SET would): its fences must
#           still raise the durable ceiling, so none repeats after a crash
# Each case starts a server of its own (scripts/server-postgres.sh, in a
# temporary directory) and stops it.  Every fence must be above every
# fence before it.  Synchronisation: each dlock run has finished before
# the next step (no sleeps).  Without libfaketime the clock case is
# skipped (77), or fails with CI=true.
set -u
usage="usage: test_fence_crash.sh DLOCK SERVER_SCRIPT [CASE...]"
DLOCK=${1:?$usage}
SERVER=${2:?$usage}
shift 2
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clock many old sem preset)
lib=${DLOCK_FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
T=$(mktemp -d /tmp/dlock-fence-crash.XXXXXX)
chmod 755 "$T"
dirs=()
cleanup() {
    local d
    for d in ${dirs[@]+"${dirs[@]}"}; do "$SERVER" stop "$d" >/dev/null 2>&1; done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
skipped=0
ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }

# fence NAME [dlock run options]: the fence of one acquire + release.
fence() {
    local name=$1 f
    shift
    f=$("$DLOCK" -s "$URL" run "$name" -n "$@" -- sh -c 'echo "$DLOCK_FENCE"' \
        2>"$T/err") || { echo "dlock run $name failed: $(cat "$T/err")" >&2; return 1; }
    case $f in ''|*[!0-9]*) echo "no fence: '$f'" >&2; return 1 ;; esac
    echo "$f"
}
sql() { "$SERVER" ctl "$D" sql --super "$1"; }
# draw N LABEL [options]: N fences, each above the highest so far ($hi).
draw() {
    local k=$1 label=$2 i f
    shift 2
    for i in $(seq 1 "$k"); do
        f=$(fence "fc$((i % 3))" "$@") || { fail "$label: no fence"; return 1; }
        # bash arithmetic is signed 64-bit: fences are below 2^63
        if [ -n "$hi" ] && ! [ "$f" -gt "$hi" ]; then
            fail "$label: fence $f is not above $hi, handed out before"
            return 1
        fi
        hi=$f
    done
    ok "$label: $k fences, each above the last (last $hi)"
}
# The server's clock minus ours, in seconds.
skew() { echo $(( $(sql "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint") - $(date +%s) )); }
start() {  # start CASE [env...]: a server of its own
    D=$T/$1
    mkdir -p "$D"
    dirs+=("$D")
    shift
    URL=$(env "$@" "$SERVER" start "$D") || { fail "the server did not start"; return 1; }
    hi=
}
crash() {
    "$SERVER" ctl "$D" crash-restart >/dev/null || { fail "crash-restart failed"; return 1; }
    echo "     (kill -9 of the postmaster, crash recovery)"
}
# The invariant itself: the durable ceiling is above the last fence.
ceiling_above() {
    local r
    r=$(sql "SELECT fence FROM dlock_fences WHERE name = ''")
    if [ -n "$r" ] && [ "$r" -gt "$hi" ]; then
        ok "$1: the durable ceiling $r is above the last fence $hi"
    else
        fail "$1: the row '' says '$r', not above the last fence $hi"
    fi
}

for c in "${cases[@]}"; do
    echo "--- $c"
    case $c in
    clock)
        if [ ! -r "$lib" ]; then
            if [ "${CI:-false}" = true ]; then
                fail "no libfaketime at $lib (package faketime)"
            else
                echo "SKIP clock: no libfaketime at $lib (package faketime)"
                skipped=$((skipped + 1))
            fi
            continue
        fi
        start clock LD_PRELOAD="$lib" FAKETIME=+1h || continue
        s=$(skew)
        if [ "$s" -lt 3000 ]; then
            fail "clock: the server's clock is $s s ahead, not an hour"
            continue
        fi
        echo "     server clock $s s ahead"
        draw 5 "clock, an hour ahead" || continue
        crash || continue
        s=$(skew)
        if [ "$s" -gt 60 ] || [ "$s" -lt -60 ]; then
            fail "clock: after the restart the server's clock is $s s off"
            continue
        fi
        echo "     server clock back ($s s)"
        draw 5 "clock, after the crash, stepped back" || continue
        ;;
    many|sem)
        start "$c" || continue
        draw 2 "$c, fresh store" || continue
        # 10^13 fences drawn since the seed: a seed from the clock (1024
        # per microsecond) catches up with them in 2.7 hours.
        sql "SELECT setval('dlock_fence_seq', $hi + 10000000000000)" >/dev/null
        draw 2 "$c, after 10^13 more" || continue
        ceiling_above "$c"
        # Up to the ceiling: the draws that must raise it.
        # (Never back: with no ceiling above the fences, from the last.)
        r=$(sql "SELECT fence FROM dlock_fences WHERE name = ''")
        to=$((r - 524288 - 3))
        [ "$to" -gt "$hi" ] || to=$hi
        sql "SELECT setval('dlock_fence_seq', $to)" >/dev/null
        hi=$to
        draw 4 "$c, across half a block below the ceiling" || continue
        ceiling_above "$c, raised"
        crash || continue
        if [ "$c" = sem ]; then
            draw 1 "sem, a semaphore first after the crash" --limit 3 || continue
        fi
        draw 3 "$c, after the crash" || continue
        ceiling_above "$c, after the crash"
        ;;
    old)
        start old || continue
        draw 1 "old, the tables made" || continue
        # dlock 0.2's state: the sequence seeded from the clock (above
        # 2^53), the row '' its seed, below the fences drawn since.
        sql "SELECT setval('dlock_fence_seq', 5000000000000000000)" >/dev/null
        sql "UPDATE dlock_fences SET fence = 4999999999999000000 WHERE name = ''" >/dev/null
        hi=5000000000000000000
        draw 3 "old, 0.2's sequence goes on" || continue
        ceiling_above "old"
        crash || continue
        draw 3 "old, after the crash" || continue
        ;;
    preset)
        start preset || continue
        draw 2 "preset, fresh store" || continue
        # Right below the ceiling: the next fences must raise it.
        r=$(sql "SELECT fence FROM dlock_fences WHERE name = ''")
        to=$((r - 3))
        [ "$to" -gt "$hi" ] || to=$hi
        sql "SELECT setval('dlock_fence_seq', $to)" >/dev/null
        hi=$to
        plain=$URL
        case $URL in
        *\?*) URL="$URL&options=-c%20dlock.fence_ceiling%3D9000000000000000000" ;;
        *) URL="$URL?options=-c%20dlock.fence_ceiling%3D9000000000000000000" ;;
        esac
        draw 6 "preset, across the ceiling" || continue
        ceiling_above "preset, raised"
        URL=$plain
        crash || continue
        draw 3 "preset, after the crash" || continue
        ;;
    *)
        fail "unknown case $c"
        ;;
    esac
done
echo "$fails of $n checks failed"
[ "$fails" = 0 ] || exit 1
[ "$n" -gt 0 ] || [ "$skipped" = 0 ] || exit 77
exit 0
