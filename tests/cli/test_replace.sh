#!/bin/bash
# dlock run --replace (issue 46), a CronJob's concurrencyPolicy: Replace:
#   test_replace.sh DLOCK STORE_URL
# A new run takes NAME over from the running one: the old one stops its
# CMD and exits 75, the new CMD starts only once the old CMD is gone (or,
# the old holder frozen by SIGSTOP, at its lease's end), with a greater
# fence.  Synchronisation by FIFOs; every wait is bounded.
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-replace.XXXXXX)
export T
trap 'kill -CONT $(jobs -p) 2>/dev/null; kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
J="replace-$$-$RANDOM"

ok()   { echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
now_ms() { date +%s%3N; }

# job.sh ID: "+ID FENCE" to the log as it starts (and "!" if an earlier
# job's CMD is still running then: neither gone nor stopped), "ID PID" to
# the ready FIFO, then waits; SIGTERM ends it with "-ID".
cat >"$T/job.sh" <<'EOF'
#!/bin/bash
id=$1
for p in $(cat "$T/pids" 2>/dev/null); do
    st=$(sed 's/.*) \(.\).*/\1/' /proc/$p/stat 2>/dev/null)
    case "$st" in ""|Z|T|t) ;; *) echo "! $id started while pid $p ran ($st)" >>"$T/log" ;; esac
done
echo $$ >>"$T/pids"
echo "+$id $DLOCK_FENCE" >>"$T/log"
trap 'echo "-$id" >>"$T/log"; kill $pid 2>/dev/null; exit 143' TERM
timeout 60 sh -c 'echo "$0 $1" >"$T/ready"' "$id" "$$"
sleep 300 &
pid=$!
wait $pid
EOF
chmod +x "$T/job.sh"
mkfifo "$T/ready"
ready() { # ready: the next job's "ID PID" into $rid $rpid (60 s at most)
    read -r rid rpid < <(timeout 60 head -n 1 "$T/ready")
}
fence_of() { sed -n "s/^+$1 //p" "$T/log"; }

# 1. A running holder that can be reached steps down.
"$DLOCK" run --replace --ttl 6 --grace 2 "$J" -- "$T/job.sh" H 2>"$T/err-h" &
h=$!
ready
check "the first run's CMD starts" H "${rid:-}"
"$DLOCK" run --replace --ttl 6 "$J" -- "$T/job.sh" R 2>"$T/err-r" &
r=$!
ready
check "the replacing run's CMD starts" R "${rid:-}"
timeout 60 tail --pid=$h -f /dev/null
wait $h
check "the replaced run exits 75" 75 "$?"
grep -q "taken over by a --replace run" "$T/err-h" && ok "it says why" ||
    fail "no take-over line: $(cat "$T/err-h")"
order=$(grep -n -E '^(-H|\+R)' "$T/log" | cut -d: -f2 | cut -c1-2 | tr '\n' ' ')
check "the old CMD ended before the new one started" "-H +R " "$order"
fh=$(fence_of H) fr=$(fence_of R)
[ -n "$fh" ] && [ -n "$fr" ] && [ "$fr" -gt "$fh" ] &&
    ok "the new fence is greater ($fh < $fr)" || fail "fences: old '$fh', new '$fr'"
"$DLOCK" history "$J" --json -n 2 | python3 -c '
import json, sys
r = json.load(sys.stdin)
sys.exit(0 if len(r) == 2 and r[1]["result"] == "lost" else 1)' &&
    ok "the replaced run is recorded lost" || fail "history: $("$DLOCK" history "$J")"
kill -TERM $r
wait $r

# 2. A frozen holder (SIGSTOP, dlock and CMD): the new CMD starts no
# sooner than the old lease ends, while the old CMD stays stopped.
: >"$T/log"
"$DLOCK" run --replace --ttl 3 "$J" -- "$T/job.sh" F 2>"$T/err-f" &
f=$!
ready
check "the run to freeze starts" F "${rid:-}"
fpid=$rpid
t_s=$(now_ms)
left=$("$DLOCK" status "$J" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["ttl_ms"])')
kill -STOP $f $fpid
"$DLOCK" run --replace --ttl 6 "$J" -- "$T/job.sh" N 2>"$T/err-n" &
n=$!
ready
t_n=$(now_ms)
check "the replacing run's CMD starts" N "${rid:-}"
if [ -n "$left" ] && [ $((t_n - t_s)) -ge $((left - 250)) ]; then
    ok "not before the frozen holder's lease ended ($((t_n - t_s)) ms, lease $left ms left)"
else
    fail "the new CMD started $((t_n - t_s)) ms after a lease of $left ms left"
fi
grep -q '^!' "$T/log" && fail "overlap: $(grep '^!' "$T/log")" ||
    ok "the old CMD was stopped as the new one started"
kill -CONT $f $fpid
timeout 60 tail --pid=$f -f /dev/null
wait $f
check "the frozen run, woken, exits 75" 75 "$?"
kill -TERM $n
wait $n

# 3. Usage.
"$DLOCK" run --replace --once-per 1h "$J" -- true 2>/dev/null
check "--replace with --once-per: usage error" 64 "$?"
"$DLOCK" run --replace -S "$J" -- true 2>/dev/null
check "--replace with --shared: usage error" 64 "$?"

exit $((fails > 0))
