#!/bin/bash
# Issue 46's adversary pass: --replace with a try, and with --max-runtime.
#   replace_maxrt.sh DLOCK STORE_URL
# 1. `--replace -n` (or -w 0) is a usage error: a try can never take over
#    (the holder lets go only after its grace period), yet the request it
#    held for that moment stopped the running job.
# 2. A holder already stopping CMD for its --max-runtime that then sees a
#    --replace request keeps its SIGKILL at the time limit + grace: the
#    step-down used to set SIGKILL a whole grace period later (and record
#    the run lost, exit 75, not timed out, 124).
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-adv46.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
J="adv46-$$-$RANDOM"
ok()   { echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi; }
now_ms() { date +%s%3N; }

# 1.
for w in -n "-w 0"; do
    # shellcheck disable=SC2086
    "$DLOCK" run --replace $w "$J/try" -- true 2>"$T/err1"
    rc=$?
    [ "$rc" = 64 ] && grep -q -- "--replace" "$T/err1" &&
        ok "--replace $w: usage error 64" ||
        fail "--replace $w: exit $rc, $(cat "$T/err1")"
done

# 2. CMD ignores SIGTERM; time limit 1 s, grace 4 s: SIGKILL at ~5 s.  A
# replacer comes at 3 s, within the grace.
cat >"$T/stub.sh" <<'EOF'
#!/bin/sh
trap '' TERM
echo started >"$1"
while :; do sleep 0.1; done
EOF
chmod +x "$T/stub.sh"
t0=$(now_ms)
"$DLOCK" run --replace --max-runtime 1 --grace 4 "$J/rt" -- "$T/stub.sh" "$T/a" \
    2>"$T/err-a" &
a=$!
for _ in $(seq 100); do [ -s "$T/a" ] && break; sleep 0.05; done
sleep 3
"$DLOCK" run --replace -w 30 "$J/rt" -- true 2>"$T/err-b" &
b=$!
timeout 30 tail --pid=$a -f /dev/null
wait $a
rc=$?
took=$(( $(now_ms) - t0 ))
check "timed out, then asked to step down: still 124" 124 "$rc"
[ "$took" -lt 6800 ] && ok "SIGKILL at the time limit + grace ($took ms)" ||
    fail "the holder ended after $took ms: its SIGKILL was due at ~5000 ms"
res=$("$DLOCK" history "$J/rt" --json -n 2 | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r[-1]["result"] if r else "")')
check "recorded as timed out" timedout "$res"
timeout 30 tail --pid=$b -f /dev/null
wait $b
check "the replacer ran after it" 0 "$?"

exit $((fails > 0))
