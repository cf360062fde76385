#!/bin/bash
# dlock elect and dlock leader end to end:  test_elect.sh DLOCK STORE_URL
# The same on every store (tests/CMakeLists.txt registers it per store).
# Synchronisation is by FIFOs: a leader's CMD writes its id to $T/ready
# when it starts, and ends when its $T/go-ID is written (or on SIGTERM).
# Every wait is bounded.  Each leader's CMD appends "+ID TERM" when it
# starts and "-ID" when it ends to $T/log; check_log asserts that no two
# leaders' CMDs overlapped.
set -u
DLOCK=$1
STORE=$2
if ! out=$("$DLOCK" --version 2>&1); then
    echo "FAIL the dlock binary '$DLOCK' does not run: ${out:-no output}"
    exit 1
fi
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-elect.XXXXXX)
export T
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
n=0
P="el-$$-$RANDOM"

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
now_ms() { date +%s%3N; }

# The leaders' command: leader.sh ID.  Says it runs (the ready FIFO: "ID
# TERM PID"), then waits for go-ID; SIGTERM ends it too.
cat >"$T/leader.sh" <<'EOF'
#!/bin/sh
id=$1
# An earlier leader's command still alive (not a zombie) as this one
# starts is an overlap, whatever the log says.
for p in $(cat "$T/pids" 2>/dev/null); do
    st=$(sed 's/.*) \(.\).*/\1/' /proc/$p/stat 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && echo "! $id started while pid $p ran" >>"$T/log"
done
echo $$ >>"$T/pids"
echo "+$id $DLOCK_FENCE" >>"$T/log"
pid=
trap 'echo "-$id" >>"$T/log"; [ -n "$pid" ] && kill $pid 2>/dev/null; exit 143' TERM
timeout 120 sh -c 'echo "$0 $1 $2 $3" >"$T/ready"' "$id" "$DLOCK_FENCE" "$$" "$DLOCK_LEADER_VALUE"
timeout 300 cat "$T/go-$id" >/dev/null &
pid=$!
wait $pid
echo "-$id" >>"$T/log"
EOF
chmod +x "$T/leader.sh"
mkfifo "$T/ready"

# next_leader WHAT: the next leader's "ID TERM PID VALUE" into $leader
# (and $lid, $lterm, $lpid), within 60 s.
next_leader() {
    leader=$(timeout 60 head -n 1 "$T/ready")
    if [ -z "$leader" ]; then
        fail "$1: no leader's command started within 60 s"
        lid= lterm=0 lpid=
        return 1
    fi
    set -- $leader
    lid=$1 lterm=$2 lpid=$3
    return 0
}
# took WHAT ID BOUND PREV: the next leader is ID (""), within BOUND ms of
# $t0, with a term above PREV; the time it took is printed.
took() {
    next_leader "$1" || return 1
    dt=$(($(now_ms) - t0))
    echo "     $1: $dt ms"
    [ -z "$2" ] || check "$1: $2 leads" "$2" "$lid"
    if [ "$dt" -lt "$3" ]; then ok "$1: within $3 ms ($dt ms)"; else fail "$1: took $dt ms (over $3)"; fi
    if [ "$lterm" -gt "$4" ]; then ok "$1: a greater term ($4 -> $lterm)"; else fail "$1: term $4 -> $lterm"; fi
}
say_go() { timeout 60 sh -c 'echo go >"$0"' "$T/go-$1" 2>/dev/null; }

# candidate ID NAME [elect options]: start `dlock elect NAME` with --value
# ID, its pid in cand_ID, its stderr in $T/err-ID.
candidate() {
    local id=$1 name=$2
    shift 2
    [ -p "$T/go-$id" ] || mkfifo "$T/go-$id"
    # NOHUP=1: started with SIGHUP ignored, as nohup does.
    (
        [ -n "${NOHUP:-}" ] && trap '' HUP
        exec "$DLOCK" elect "$P/$name" --value "$id" "$@" -- "$T/leader.sh" "$id" 2>"$T/err-$id"
    ) &
    eval "cand_$id=$!"
}
# finish ID: wait for candidate ID's dlock (bounded); its exit code in $rc.
finish() {
    local pid
    eval "pid=\$cand_$1"
    for _ in $(seq 600); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        fail "candidate $1 still running after 60 s"
        kill -KILL "$pid"
    fi
    wait "$pid"
    rc=$?
}
# check_log WHAT: no "+ID" while another ID's "+" has no "-" yet.
check_log() {
    local cur= bad=
    while read -r l rest; do
        case $l in
        !) bad="$rest" ;;
        +*) [ -n "$cur" ] && bad="${l#+} started while ${cur} led"; cur=${l#+} ;;
        -*) [ "${l#-}" = "$cur" ] && cur= ;;
        esac
    done <"$T/log"
    if [ -z "$bad" ]; then ok "$1: one leader at a time"; else fail "$1: $bad"; fi
    : >"$T/log"
    : >"$T/pids"
}
: >"$T/log"

# --- leader, no leader, values, exit codes ----------------------------------
out=$("$DLOCK" leader "$P/none")
check "leader with no leader exits 1" 1 $?
case $out in *"no leader"*) ok "it says so" ;; *) fail "leader, none: $out" ;; esac
out=$("$DLOCK" leader "$P/none" --json)
case $out in *'"held":false'*'"value":null'*) ok "leader --json, none: held false, value null" ;;
*) fail "leader --json, none: $out" ;; esac
"$DLOCK" elect "$P/x" -- sh -c 'exit 7'
check "elect passes CMD's exit status on" 7 $?
"$DLOCK" elect "$P/x" 2>/dev/null
check "elect without CMD is a usage error" 64 $?
"$DLOCK" elect "$P/x" --priority 1001 -- true 2>/dev/null
check "--priority 1001 is a usage error" 64 $?
"$DLOCK" elect "$P/x" --health-fails 0 -- true 2>/dev/null
check "--health-fails 0 is a usage error" 64 $?
"$DLOCK" elect "$P/$(printf '%01000d' 0)" --priority 2 -- true 2>/dev/null
check "a NAME too long for its priority marker is a usage error" 64 $?
"$DLOCK" elect "$P/x" --bogus -- true 2>/dev/null
check "an unknown option is a usage error" 64 $?
for c in elect leader; do
    "$DLOCK" $c --help >/dev/null
    check "$c --help exits 0" 0 $?
done
"$DLOCK" elect --help | grep -q -- '--health-cmd'
check "elect --help lists --health-cmd" 0 $?
out=$("$DLOCK" elect "$P/env" --value 'v 1' -- sh -c 'echo "$DLOCK_NAME|$DLOCK_FENCE|$DLOCK_LEADER_VALUE|$("$0" -s "$1" leader "$DLOCK_NAME")|$("$0" -s "$1" leader "$DLOCK_NAME" --json)"' "$DLOCK" "$STORE")
case $out in
"$P/env|"[1-9]*"|v 1|$P/env: led by "*" pid "*", term "*", value 'v 1'|{"*) ok "CMD gets DLOCK_NAME, DLOCK_FENCE, DLOCK_LEADER_VALUE; leader shows it" ;;
*) fail "elect environment / leader: $out" ;;
esac
f=$(echo "$out" | cut -d'|' -f2)
case $out in *'"fence":"'"$f"'"'*'"value":"v 1"'*) ok "leader --json: the term as a string, the value" ;;
*) fail "leader --json inside the leader (term $f): $out" ;; esac
case $out in *'"held":true'*'"host":'*'"pid":'*'"since":'*) ok "leader --json: held, host, pid, since" ;;
*) fail "leader --json fields: $out" ;; esac
# A value from the store is printed escaped.
out=$("$DLOCK" elect "$P/esc" --value "$(printf 'a\033[2Jb')" -- "$DLOCK" -s "$STORE" leader "$P/esc")
case $out in *"value 'a\\x1b[2Jb'"*) ok "a control in the value is printed escaped" ;;
*) fail "escaped value: $(printf '%s' "$out" | od -c | head -3)" ;; esac
# A name with no leader after one resigned.
"$DLOCK" leader "$P/env" >/dev/null
check "leader after the leader's CMD exited: none, exit 1" 1 $?
# Metrics: a 0/1 leader gauge, transitions, the term.
M=$T/m.prom
"$DLOCK" elect "$P/met" --metrics-file "$M" -- sh -c 'grep -q "^dlock_run_leader{name=\"$DLOCK_NAME\"} 1$" "$0" && echo "$DLOCK_FENCE"' "$M" >"$T/met.out"
check "the metrics file says leader 1 while CMD runs" 0 $?
mf=$(cat "$T/met.out")
grep -q "^dlock_run_leader{name=\"$P/met\"} 0$" "$M" && grep -q "^dlock_run_leader_transitions_total{name=\"$P/met\"} 2$" "$M" &&
    awk -v k="dlock_run_leader_term{name=\"$P/met\"}" -v f="$mf" '$1 == k { found = ($2 + 0 == f + 0) } END { exit !found }' "$M"
check "after: leader 0, 2 transitions, the term $mf" 0 $?

# --- three candidates; resign on CMD exit: the next at once ----------------
for id in a b c; do candidate $id three --ttl 20; done
next_leader "three" || true
prev=$lterm terms=$lterm order=$lid
for k in 1 2; do
    t0=$(now_ms)
    say_go "$lid"
    took "takeover after resign $k (ttl 20 s)" "" 5000 "$prev" || break
    prev=$lterm order="$order $lid"
done
say_go "$lid"
for id in a b c; do
    finish $id
    check "candidate $id exits 0 (its CMD's status) after leading" 0 "$rc"
done
check_log "three candidates"

# --- kill -9 of the leader ---------------------------------------------------
ttl=3
for id in d e; do candidate $id kill --ttl $ttl; done
next_leader "kill -9" || true
first=$lid fterm=$lterm fpid=$lpid
eval "victim=\$cand_$first"
kill -KILL "$victim"
t0=$(now_ms)
# Its CMD dies with it (PR_SET_PDEATHSIG), unable to write its "-": the
# next leader's command checks that it is gone (the "!" lines).
echo "-$first" >>"$T/log"
took "takeover after kill -9 (ttl $ttl s)" "" $((ttl * 1000 + 5000)) "$fterm"
say_go "$lid"
finish "$lid"
check "the new leader exits 0" 0 "$rc"
wait "$victim" 2>/dev/null
# The killed leader's command dies by PR_SET_PDEATHSIG as dlock dies,
# not before: a store that frees a dead process's lock at once (SQLite
# on the same host) may let the next command start the few ms before
# the old one is gone.  Measured and said, not asserted; that it is gone
# is.
for _ in $(seq 40); do kill -0 "$fpid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$fpid" 2>/dev/null
check "the killed leader's CMD died with it" 1 $?
grep '^!' "$T/log" | sed 's/^! /     note, kill -9: /'
: >"$T/log"; : >"$T/pids"

# --- SIGSTOP of the leader (and its CMD) past its lease ----------------------
for id in f g; do candidate $id stop --ttl $ttl --grace 0.5; done
next_leader "SIGSTOP" || true
first=$lid fterm=$lterm fpid=$lpid
eval "victim=\$cand_$first"
kill -STOP "$victim" "$fpid"
t0=$(now_ms)
took "takeover after SIGSTOP (ttl $ttl s)" "" $((ttl * 1000 + 5000)) "$fterm"
# Continued: its lease is over, so it stops its CMD and exits 75.
kill -CONT "$victim" "$fpid"
finish "$first"
check "the stopped leader, continued, exits 75" 75 "$rc"
grep -q "^-$first" "$T/log"
check "its CMD was stopped (SIGTERM)" 0 $?
kill -0 "$fpid" 2>/dev/null
check "its CMD is gone" 1 $?
say_go "$lid"
finish "$lid"
check "the new leader exits 0" 0 "$rc"
# The two overlapped in wall time only while the old one was frozen (what
# only the term guards against): not checked with check_log.
: >"$T/log"; : >"$T/pids"

# --- priority: a leader yields to a higher candidate -------------------------
NOHUP=1 candidate h prio --ttl 20 --health-interval 0.2
next_leader "priority" || true
check "the priority-1 candidate leads" h "$lid"
hterm=$lterm
candidate i prio --ttl 20 --health-interval 0.2 --priority 5
t0=$(now_ms)
took "priority step-down (--health-interval 0.2)" i 10000 "$hterm"
grep -q "yielding" "$T/err-h"
check "the one that yielded says so" 0 $?
eval "kill -0 \$cand_h"
check "the one that yielded campaigns again (still running)" 0 $?
# Campaigning again it still ignores the SIGHUP it was started without.
eval "kill -HUP \$cand_h"
say_go i
next_leader "priority, after the higher one resigned" || true
check "the lower one leads again, CMD afresh (a SIGHUP ignored at start still ignored)" h "$lid"
say_go h
finish i
check "the priority-5 candidate exits 0" 0 "$rc"
finish h
check "the priority-1 candidate exits 0" 0 "$rc"
check_log "priority"
# Priority 0 never leads: not even with no leader at all.
"$DLOCK" elect "$P/p0" --priority 0 -w 0.5 -- sh -c 'echo ran >"$0"' "$T/p0" 2>/dev/null
check "priority 0 with -w 0.5 and no leader: not elected, exit 1" 1 $?
[ -e "$T/p0" ]
check "priority 0 never ran CMD" 1 $?
"$DLOCK" elect "$P/p0" --priority 0 -- true &
p0=$!
# Once it is dlock (exec'd), not bash's child before the exec.
for _ in $(seq 100); do grep -q elect /proc/$p0/cmdline 2>/dev/null && break; sleep 0.02; done
kill -TERM $p0
wait $p0
check "priority 0 ends by a signal: 143" 143 $?

# --- health checks ----------------------------------------------------------
candidate j health --ttl 20 --health-cmd "test ! -e '$T/sick'" --health-interval 0.2 --health-fails 2
next_leader "health" || true
check "the checked candidate leads" j "$lid"
jterm=$lterm
candidate k health --ttl 20
touch "$T/sick"
t0=$(now_ms)
took "health step-down (2 x 0.2 s checks, ttl 20 s)" k 10000 "$jterm"
finish j
check "the unhealthy leader resigns with 75" 75 "$rc"
grep -q "health check" "$T/err-j"
check "it says why" 0 $?
say_go k
finish k
check "the next exits 0" 0 "$rc"
check_log "health checks"

# --- leader --watch ------------------------------------------------------------
mkfifo "$T/watch"
"$DLOCK" leader "$P/watch" --watch >"$T/watch" 2>"$T/watch.err" &
wpid=$!
exec 3<"$T/watch"
read_watch() { # read_watch WHAT: the next line into $wline, its time in $wt
    if read -r -t 30 wline <&3; then wt=$(now_ms); return 0; fi
    fail "leader --watch printed nothing in 30 s ($1)"
    wline= wt=$(now_ms)
    return 1
}
read_watch "at start"
case $wline in *"no leader"*) ok "watch: first line, no leader" ;; *) fail "watch first line: $wline" ;; esac
candidate w1 watch --ttl 20
next_leader "watch"
tc=$(now_ms)
read_watch "a leader came"
# A store that publishes the value just after the grant may show the
# leader without it first: that is a change too.
case $wline in *"no value"*) read_watch "the value came" ;; esac
echo "     watch latency, a leader came: $((wt - tc)) ms"
case $wline in *"value 'w1'"*"") ok "watch: the new leader's line, with its value" ;; *) fail "watch line: $wline" ;; esac
case $wline in *"term $lterm,"*) ok "watch: with its term" ;; *) fail "watch line, term $lterm: $wline" ;; esac
tc=$(now_ms)
say_go w1
read_watch "the leader resigned"
echo "     watch latency, the leader resigned: $((wt - tc)) ms"
case $wline in *"no leader"*) ok "watch: no leader after the resign" ;; *) fail "watch after resign: $wline" ;; esac
if [ $((wt - tc)) -lt 15000 ]; then ok "watch latency within a sanity bound"; else fail "watch latency $((wt - tc)) ms"; fi
finish w1
kill -TERM $wpid
wait $wpid
check "leader --watch ends with 143 on SIGTERM" 143 $?
exec 3<&-
# --json: one object per line.
"$DLOCK" leader "$P/watch" --watch --json >"$T/watch" 2>/dev/null &
wpid=$!
exec 3<"$T/watch"
read_watch "--json"
case $wline in '{'*'"held":false'*'}') ok "watch --json: one object per line" ;; *) fail "watch --json: $wline" ;; esac
kill -INT $wpid
wait $wpid
check "leader --watch ends with 130 on SIGINT" 130 $?
exec 3<&-

# --- a signal during the campaign leaves nothing behind ----------------------
candidate l sig --ttl 20 --priority 5
next_leader "signal" || true
candidate m sig --ttl 20 --priority 3
# m campaigns (its marker held) once the marker list shows two.
for _ in $(seq 200); do
    [ "$("$DLOCK" list "dlock.candidates/$P/sig/" 2>/dev/null | grep -c ': held')" = 2 ] && break
    sleep 0.05
done
check "both candidates' markers are held" 2 "$("$DLOCK" list "dlock.candidates/$P/sig/" | grep -c ': held')"
eval "kill -TERM \$cand_m"
finish m
check "a signal during the campaign ends it with 143" 143 "$rc"
out=$("$DLOCK" list "dlock.candidates/$P/sig/")
case $out in *"/sig/5/"*) ok "the leader's marker is held" ;; *) fail "markers: $out" ;; esac
case $out in *"/sig/3/"*": held"*) fail "the withdrawn candidate's marker is left: $out" ;; *) ok "the withdrawn candidate's marker is gone" ;; esac
out=$("$DLOCK" status "$P/sig" --json)
case $out in *'"held":true'*'"pid":'"$(eval echo \$cand_l)"[,}]*) ok "NAME held by the leader only" ;; *) fail "status after the withdrawn candidate: $out" ;; esac
say_go l
finish l
check "the leader exits 0" 0 "$rc"
out=$("$DLOCK" status "$P/sig" --json)
case $out in *'"held":false'*) ok "then NAME is free" ;; *) fail "status at the end: $out" ;; esac
"$DLOCK" list "dlock.candidates/$P/sig/" | grep -q ': held'
check "no marker is left" 1 $?

echo "$((n - fails))/$n passed"
[ "$fails" -eq 0 ]
