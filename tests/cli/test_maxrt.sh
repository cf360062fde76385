#!/bin/bash
# dlock run --max-runtime (issue 46):  test_maxrt.sh DLOCK STORE_URL
# A CMD that outlives its time limit is stopped as on a loss (SIGTERM,
# SIGKILL after --grace, its whole process tree), the run is recorded as
# timed out and dlock exits 124, as timeout(1) does.  The same on every
# store (tests/CMakeLists.txt registers it per store).
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-maxrt.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
P="maxrt-$$-$RANDOM"

ok()   { echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
alive() { # alive PID: running (not gone, not a zombie)
    local st
    st=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}
# last_run NAME: the newest record's "result status" (history --json).
last_run() {
    "$DLOCK" history "$1" --json -n 1 | python3 -c '
import json, sys
rows = json.load(sys.stdin)
r = rows[0] if rows else {}
print(r.get("result"), r.get("status"))'
}

# 1. A CMD that ignores SIGTERM, and a child of it that does too: both
# gone once dlock has exited, 124, recorded as timed out after SIGKILL.
cat >"$T/stubborn.sh" <<'EOF'
#!/bin/sh
trap '' TERM
sleep 300 &
echo "$$ $!" >"$1"
wait
EOF
chmod +x "$T/stubborn.sh"
t0=$(date +%s%3N)
timeout 60 "$DLOCK" run "$P/stubborn" --max-runtime 500ms --grace 0.5 \
    -- "$T/stubborn.sh" "$T/pids" 2>"$T/err1"
rc=$?
took=$(( $(date +%s%3N) - t0 ))
check "a CMD ignoring SIGTERM past --max-runtime: exit 124" 124 "$rc"
grep -q "max-runtime" "$T/err1" && ok "the stop is said on stderr" ||
    fail "no line about --max-runtime on stderr: $(cat "$T/err1")"
read -r p1 p2 <"$T/pids"
if alive "$p1" || alive "$p2"; then
    fail "CMD ($p1) or its child ($p2) outlived dlock"
else
    ok "CMD and the child it started are gone when dlock exits"
fi
[ "$took" -ge 900 ] && ok "not stopped before --max-runtime + --grace ($took ms)" ||
    fail "stopped after $took ms, before 500 ms + the 500 ms grace"
check "recorded as timed out, killed (128+9)" "timedout 137" "$(last_run "$P/stubborn")"

# 2. A CMD that ends on SIGTERM: 124, recorded with 143.
timeout 60 "$DLOCK" run "$P/polite" --max-runtime 0.3 -- sleep 300 2>/dev/null
check "a CMD ending on SIGTERM: exit 124" 124 "$?"
check "recorded as timed out, 128+15" "timedout 143" "$(last_run "$P/polite")"

# 3. In time: CMD's own status, a plain record.
timeout 60 "$DLOCK" run "$P/quick" --max-runtime 1h -- sh -c 'exit 3'
check "a CMD ending in time: its own status" 3 "$?"
check "recorded as exited" "exited 3" "$(last_run "$P/quick")"

# 4. A timed-out run is no success: --once runs it again.
timeout 60 "$DLOCK" run "$P/once" --once --max-runtime 0.2 -- sleep 300 2>/dev/null
check "--once with a time limit: 124" 124 "$?"
timeout 60 "$DLOCK" run "$P/once" --once -- true
check "the next --once runs (a timed-out run did not succeed)" "exited 0" \
    "$(last_run "$P/once")"

# 5. Usage: a limit of 0 or not a duration.
for bad in 0 0s -1 x 1y ""; do
    "$DLOCK" run "$P/bad" --max-runtime "$bad" -- true 2>"$T/err5"
    rc=$?
    [ "$rc" = 64 ] && grep -q "max-runtime" "$T/err5" &&
        ok "--max-runtime '$bad': usage error 64" ||
        fail "--max-runtime '$bad': exit $rc, $(cat "$T/err5")"
done
"$DLOCK" run --help | grep -q -- "--max-runtime DURATION" &&
    ok "--help lists --max-runtime" || fail "--help lacks --max-runtime"

exit $((fails > 0))
