#!/bin/bash
# Issue 34, item 7: a hostile Redis's retry hint cannot break the wait
# loop.  A fake Redis on 127.0.0.1 (fake_redis_hint.py) answers every
# acquire "busy, look again in HINT ms" with HINT near INT64_MAX (which
# overflowed `retry + SLICE_MARGIN_MS` in src/core/acquire.c: UBSan's
# abort in a sanitized build, a busy loop of ~30,000 scripts in a release
# build) or negative.  `dlock run -w 2 NAME -- true` must
#   - exit 1 (not acquired in time), with no UBSan report;
#   - end by its deadline + margin, and not before it (it waited);
#   - send few acquire scripts in those 2 s (< MAX_SCRIPTS: no busy loop;
#     a dlock holder is waited on by its lease end and release message, a
#     foreign one polled every 50..250 ms).
#   test_hostile_hint.sh DLOCK
DLOCK=${1:?usage: test_hostile_hint.sh DLOCK}
HERE=$(cd "$(dirname "$0")" && pwd)
WAIT_S=2
MIN_MS=1900      # the wait's deadline (2 s), less the clock's slack
MAX_MS=4000      # the deadline + 2 s of margin
MAX_SCRIPTS=50
if ! command -v python3 >/dev/null; then
    echo "SKIP: no python3"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
T=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$T"' EXIT
# The sanitizers' reports end the process (-fno-sanitize-recover); make
# sure a report is also recognisable in the output.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
fails=0 n=0

# case LABEL HINT [foreign]
case_hint() {
    local label=$1 hint=$2 kind=${3:-dlock} port rc ms scripts start
    n=$((n + 1))
    rm -f "$T/port"
    mkfifo "$T/port"
    : >"$T/count"
    python3 "$HERE/fake_redis_hint.py" "$hint" "$T/port" "$T/count" \
        "$kind" &
    srv=$!
    read -r port <"$T/port"
    start=$(date +%s%N)
    timeout 30 "$DLOCK" -s "redis://127.0.0.1:$port?timeout=2s" \
        run -w "$WAIT_S" hinted -- true >"$T/out" 2>&1 </dev/null
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    srv=
    scripts=$(wc -l <"$T/count")
    if grep -q 'runtime error\|Sanitizer' "$T/out"; then
        echo "FAIL $label: sanitizer report: $(grep -m1 'runtime error\|Sanitizer' "$T/out")"
        fails=$((fails + 1))
    elif [ "$rc" != 1 ]; then
        echo "FAIL $label: exit $rc after $ms ms, wanted 1 (not acquired in time): $(head -3 "$T/out")"
        fails=$((fails + 1))
    elif [ "$ms" -lt "$MIN_MS" ] || [ "$ms" -gt "$MAX_MS" ]; then
        echo "FAIL $label: ended after $ms ms, wanted $MIN_MS..$MAX_MS (-w $WAIT_S)"
        fails=$((fails + 1))
    elif [ "$scripts" -ge "$MAX_SCRIPTS" ]; then
        echo "FAIL $label: $scripts acquire scripts in a $WAIT_S s wait (a busy loop; wanted < $MAX_SCRIPTS)"
        fails=$((fails + 1))
    else
        echo "ok   $label: exit 1 after $ms ms, $scripts acquire scripts"
    fi
}

case_hint "hint INT64_MAX, dlock holder" 9223372036854775807
case_hint "hint INT64_MAX-1, dlock holder" 9223372036854775806
case_hint "hint INT64_MAX, foreign holder" 9223372036854775807 foreign
case_hint "hint INT64_MIN, dlock holder" -9223372036854775808
case_hint "hint -2, foreign holder" -2 foreign
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
