#!/bin/sh
# A waiter that hangs while it waits must not block the name past its own
# lease (issue 33, item 6):
#   test_mysql_waiter_hang.sh DLOCK_BINARY STORE_URL
#
# H holds NAME (its command blocks on a FIFO this script feeds).  W runs
# `run -w 60 --ttl 3 NAME` and waits; once W's wait is visible on the
# server, W is stopped (SIGSTOP).  H lets go: in session mode the server
# grants the GET_LOCK to W's session, and W, stopped, never writes its
# row.  C (`run -w 12 NAME`) must get the lock all the same, once W's
# lease (3 s) is over, with a fence above H's; W, continued while C holds,
# must not run its command while C holds (it gets the lock after C, with
# a larger fence, or gives up).  Then the same with `release --force`: a
# waiter granted and stopped is broken by it (KILL), and a try-lock right
# after gets the name.
#
# In lease mode (?mode=lease) a waiter holds nothing on the server while it
# waits: the same scenario must pass there too.
#
# Synchronisation: FIFOs, and polls of the server's process list (W's
# GET_LOCK wait) or of W's -v line; no sleep stands for an event.
set -u
DLOCK=$1
STORE=$2
if [ -z "$STORE" ]; then
    echo "FAIL no store URL (DLOCK_TEST_MYSQL_URL)"
    exit 1
fi
case $STORE in *mode=lease*) lease=1 ;; *) lease=0 ;; esac
T=$(mktemp -d /tmp/dlock-whang.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do
        kill -CONT "$p" 2>/dev/null
        kill "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
. "$(dirname "$0")/waiter-lib.sh"

# A waiter W of NAME, stopped while it waits.  Sets $W.
start_stopped_waiter() {
    name=$1
    tag=$2
    "$DLOCK" -s "$STORE" -v run -w 60 --ttl 3 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/w_fence.$1"; if [ -e "$0/c_done.$1" ]; then echo after; else echo during; fi >"$0/W_RAN.$1"' \
        "$T" "$tag" >"$T/w_out.$tag" 2>"$T/w_err.$tag" &
    W=$!
    pids="$pids $W"
    if [ "$lease" = 1 ]; then
        # Lease mode: nothing on the server; its -v line says it waits.
        until_true "grep -q . '$T/w_err.$tag'" 300 ||
            fail "$tag: W never said it waits"
    else
        until_true "[ \"\$(getlock_waits '$name')\" = 1 ]" 300 ||
            fail "$tag: W's GET_LOCK wait never showed on the server"
    fi
    kill -STOP "$W"
}

# A holder H of NAME whose command blocks on FIFO go.$tag.  Sets $H.
start_holder() {
    name=$1
    tag=$2
    mkfifo "$T/held.$tag" "$T/go.$tag"
    "$DLOCK" -s "$STORE" run --ttl 30 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/h_fence.$1"; echo x >"$0/held.$1"; read _ <"$0/go.$1"' \
        "$T" "$tag" 2>"$T/h_err.$tag" &
    H=$!
    pids="$pids $H"
    read _ <"$T/held.$tag"
}

# H holds NAME, W waits and is stopped, H lets go: in session mode the
# server then grants the GET_LOCK to W's stopped session (checked: W's
# wait slice may have ended just before H let go, then all again under a
# new name).  Sets $name, $W.
W_SESSION=0
hang_waiter() {
    for try in 1 2 3; do
        name="$1-$$-$try"
        start_holder "$name" "$2"
        start_stopped_waiter "$name" "$2"
        echo x >"$T/go.$2" # H lets go
        wait "$H"
        rc=$?
        [ "$rc" = 0 ] || fail "$2: H exited $rc: $(cat "$T/h_err.$2")"
        if [ "$lease" = 1 ]; then
            return 0
        fi
        used=$(sql "SELECT IFNULL(IS_USED_LOCK('$name'), 0)")
        if [ "$used" != 0 ]; then
            echo "     $2: W's stopped session $used was granted the GET_LOCK"
            W_SESSION=$used
            return 0
        fi
        echo "     $2: W's wait slice ended before H let go: again"
        kill -CONT "$W"
        kill "$W"
        wait "$W"
        rm -f "$T/held.$2" "$T/go.$2"
    done
    fail "$2: W's stopped session was never granted the GET_LOCK"
}

# --- 1. a contender gets the name once the stopped waiter's lease is over
hang_waiter whang c
mkfifo "$T/c_held" "$T/c_go"
"$DLOCK" -s "$STORE" run -w 12 "$name" -- sh -c \
    'echo "$DLOCK_FENCE" >"$0/c_fence"; echo x >"$0/c_held"; read _ <"$0/c_go"; touch "$0/c_done.c"' \
    "$T" 2>"$T/c_err" &
C=$!
pids="$pids $C"
# C holds (or gave up: then the FIFO is never opened for writing).
( read _ <"$T/c_held"; echo held >"$T/c_state" ) &
reader=$!
until_true "[ -e '$T/c_state' ] || ! kill -0 $C 2>/dev/null" 200
if [ -e "$T/c_state" ]; then
    ok "C got the lock while W, granted and stopped, hung"
    hf=$(cat "$T/h_fence.c")
    cf=$(cat "$T/c_fence")
    if [ "$cf" -gt "$hf" ] 2>/dev/null; then
        ok "C's fence $cf is above H's $hf"
    else
        fail "C's fence '$cf' is not above H's '$hf'"
    fi
    if [ "$lease" = 0 ]; then
        gone=$(sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $W_SESSION")
        if [ "$gone" = 0 ]; then
            ok "W's granted session $W_SESSION was fenced off (KILLed)"
        else
            fail "W's granted session $W_SESSION still exists while C holds"
        fi
    fi
    # W goes on while C holds: it must not run its command now.
    kill -CONT "$W"
    if [ "$lease" = 1 ]; then
        until_true "! kill -0 $W 2>/dev/null || grep -q . '$T/w_out.c' || [ -e '$T/W_RAN.c' ]" 30
    else
        until_true "! kill -0 $W 2>/dev/null || [ \"\$(getlock_waits '$name')\" = 1 ] || [ -e '$T/W_RAN.c' ]" 300
    fi
    if [ -e "$T/W_RAN.c" ]; then
        fail "W ran its command while C held the lock"
    else
        ok "W, continued, did not run its command while C held"
    fi
    echo x >"$T/c_go"
else
    kill "$reader" 2>/dev/null
    kill -CONT "$W"
    fail "C did not get the lock within 12 s: $(cat "$T/c_err")"
fi
wait "$C"
rc=$?
[ "$rc" = 0 ] || fail "C exited $rc: $(cat "$T/c_err")"
wait "$W"
rc=$?
if [ "$rc" = 0 ]; then
    wf=$(cat "$T/w_fence.c" 2>/dev/null)
    cf=$(cat "$T/c_fence" 2>/dev/null)
    if [ "$(cat "$T/W_RAN.c")" = after ] && [ "$wf" -gt "$cf" ] 2>/dev/null; then
        ok "W got the lock after C, with a larger fence ($wf > $cf): $(grep -v "^dlock: waiting" "$T/w_err.c" | tail -n 2 | tr "\n" " ")"
    else
        fail "W ran with fence '$wf' ('$(cat "$T/W_RAN.c")' C, C's fence '$cf')"
    fi
else
    if [ -e "$T/W_RAN.c" ]; then
        fail "W exited $rc but ran its command"
    else
        ok "W gave up (exit $rc): $(tail -n 1 "$T/w_err.c")"
    fi
fi

# --- 2. release --force breaks a waiter granted and stopped
hang_waiter whang-force f
if [ "$lease" = 0 ]; then
    # status: held by W (its wait's lease) while that lasts, then free
    # (the next acquire fences W off), never "another client (not dlock)".
    st=$("$DLOCK" -s "$STORE" status "$name" 2>&1)
    case $st in
        *"held by"*" pid $W "*) ok "status while W's lease lasts: $st" ;;
        *) fail "status while W's lease lasts: $st" ;;
    esac
    if until_true "\"\$DLOCK\" -s \"\$STORE\" status \"\$name\" 2>&1 | grep -q ': free'" 100; then
        ok "status once W's lease is over: free"
    else
        fail "status once W's lease is over: $("$DLOCK" -s "$STORE" status "$name" 2>&1)"
    fi
fi
out=$("$DLOCK" -s "$STORE" release --force "$name" 2>&1)
rc=$?
if [ "$lease" = 1 ]; then
    # Nothing is held: nothing to break.
    ok "release --force on a lease-mode name nobody holds: exit $rc ($out)"
fi
if "$DLOCK" -s "$STORE" run -n "$name" -- true 2>"$T/n_err"; then
    ok "a try-lock got the name after release --force ($out)"
else
    fail "a try-lock after release --force ($out) failed: $(cat "$T/n_err")"
fi
touch "$T/c_done.f"
kill -CONT "$W"
wait "$W"
rc=$?
if [ "$rc" = 0 ] && [ "$(cat "$T/W_RAN.f")" != after ]; then
    fail "W ran its command before the try-lock was over"
else
    ok "W after release --force: exit $rc"
fi

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
