#!/bin/sh
# A client that goes silent inside one of dlock's transactions (stopped,
# paused, cut off) must not block the name past its own call deadline:
#   test_mysql_stalled_txn.sh DLOCK_BINARY STORE_URL
#
# The server keeps an open transaction's row locks for as long as the
# connection lives, and it cannot tell a silent client from a slow one.
# Each session of dlock's therefore asks MariaDB to end a transaction
# left idle longer than the client's own deadline (?timeout=): by then
# the client has given up on it anyway (docs/threat-model.md, R13).
#
# A proxy (stall_after.py) forwards A's traffic until A's lock-row INSERT
# has reached the server, then forwards nothing more while it keeps both
# sides open: the server sees a live connection in the middle of a
# transaction.
#   1. A (?timeout=1s) takes a free name and stalls inside its INSERT's
#      transaction: B (direct, -w 8) must get the name.
#   2. Lease mode: H holds; W (?timeout=1s) waits, and its INSERT that
#      meets H's row stalls (InnoDB keeps a shared lock on the row it
#      met): H's release must still be confirmed, and a try-lock after it
#      must get the name.
#   3. Session mode: H holds; W (?timeout=1s, --ttl 60) waits in
#      GET_LOCK; H lets go; W, granted the GET_LOCK, stalls inside its
#      holder row's transaction (insert_row: START TRANSACTION, INSERT,
#      the fence, COMMIT in separate round trips).  C (direct, -w 8)
#      must get the name, with a fence above H's.  Case 1 does not show
#      this in session mode: a free name is taken there in one
#      autocommit statement, so A stalls outside any transaction and B
#      gets the name by A's 3 s lease alone.  Without the server's bound
#      C would wait for W's waiter lease (>= its 60 s ttl).
#   4. Session mode, the library (the Python binding): a run record's
#      packet raises the session's bound to the lock's ttl (a lease-long
#      stop of the holder must not end its GET_LOCK) and sets it back
#      after COMMIT.  A packet that stops midway (here: the run tables
#      missing, and server-mysql.sh's user 'other', who may not create
#      them) must set it back too: else the connection goes back to the
#      pool with a 60 s bound, and a wait for another name on it that is
#      granted and stalls inside its holder row's transaction keeps that
#      name 60 s, not 1 s.  C (-w 8) must get it.  Before the fix C
#      failed after 8 s; with run_begin succeeding, C got it in 1 s.
# Before the fix, B waited on A's row lock (innodb_lock_wait_timeout,
# 50 s) past its -w, and H's DELETE on W's: "could not confirm".
set -u
DLOCK=$1
STORE=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$STORE" ]; then
    echo "FAIL no store URL (DLOCK_TEST_MYSQL_URL)"
    exit 1
fi
# A missing or broken binary would leave the FIFO synchronisation below
# waiting for a command that never started (until ctest's timeout): stop
# here, at once, saying why.
if ! out=$("$DLOCK" --version 2>&1); then
    echo "FAIL the dlock binary '$DLOCK' does not run: ${out:-no output}"
    exit 1
fi
case $STORE in *mode=lease*) lease=1 ;; *) lease=0 ;; esac
T=$(mktemp -d /tmp/dlock-stall.XXXXXX)
proxy=""
pids=""
cleanup() {
    for p in $pids $proxy; do
        kill "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
. "$here/waiter-lib.sh"

# A proxy to the server of STORE that stalls after the lock-row INSERT
# (or after the request holding $1); sets $proxy and $PURL (STORE
# through it, ?timeout=1s).
start_proxy() {
    rm -f "$T/proxy.out"
    python3 "$here/stall_after.py" "$host" "$port" \
        "${1:-(name, connection_id, created}" >"$T/proxy.out" \
        2>"$T/proxy.err" &
    proxy=$!
    until_true "[ -s '$T/proxy.out' ]" 100 || {
        fail "the proxy did not start: $(cat "$T/proxy.err")"
        exit 1
    }
    pport=$(head -n 1 "$T/proxy.out")
    PURL=$(printf '%s' "$STORE" | sed "s/@$host:$port\//@127.0.0.1:$pport\//")
    case $PURL in
        *\?*) PURL="$PURL&timeout=1s" ;;
        *) PURL="$PURL?timeout=1s" ;;
    esac
}
stop_proxy() {
    kill "$proxy" 2>/dev/null
    wait "$proxy" 2>/dev/null
    proxy=""
}
stalled() { grep -q '^stalled' "$T/proxy.out"; }

# --- 1. a free name, its taker silent inside the INSERT's transaction
name="stall-$$-a"
start_proxy
"$DLOCK" -s "$PURL" run -n --ttl 3 "$name" -- true 2>"$T/a_err"
rc=$?
if stalled; then
    ok "A's INSERT reached the server and A went silent (A: exit $rc)"
else
    fail "the proxy never stalled A (exit $rc: $(cat "$T/a_err"))"
fi
if "$DLOCK" -s "$STORE" run -w 8 "$name" -- true 2>"$T/b_err"; then
    ok "B got the name A's silent transaction had touched"
else
    fail "B did not get the name within 8 s: $(cat "$T/b_err")"
fi
stop_proxy

# --- 2. lease mode: a waiter silent after meeting the holder's row
if [ "$lease" = 1 ]; then
    name="stall-$$-w"
    mkfifo "$T/held" "$T/go"
    "$DLOCK" -s "$STORE" run --ttl 30 "$name" -- sh -c \
        'echo x >"$0/held"; read _ <"$0/go"' "$T" 2>"$T/h_err" &
    H=$!
    pids="$pids $H"
    read _ <"$T/held"
    start_proxy
    "$DLOCK" -s "$PURL" run -w 3 "$name" -- true 2>"$T/w_err"
    rc=$?
    if stalled; then
        ok "W's INSERT met H's row and W went silent (W: exit $rc)"
    else
        fail "the proxy never stalled W (exit $rc: $(cat "$T/w_err"))"
    fi
    echo x >"$T/go"
    wait "$H"
    rc=$?
    if [ "$rc" = 0 ] && ! grep -q "could not confirm" "$T/h_err"; then
        ok "H's release was confirmed"
    else
        fail "H's release (exit $rc): $(cat "$T/h_err")"
    fi
    if "$DLOCK" -s "$STORE" run -n "$name" -- true 2>"$T/n_err"; then
        ok "a try-lock got the name after H let go"
    else
        fail "a try-lock after H let go: $(cat "$T/n_err")"
    fi
    stop_proxy
fi

# Session mode on MariaDB's MEMORY table with the fence sequence (what
# session mode creates there): a granted waiter claims with one autocommit
# UPDATE of its waiter row (sql/waiter_claim.sql), no transaction: 3 and 4
# have no holder row's transaction to stall in.  3 then stalls right
# after that UPDATE: W holds with its own short lease, and C takes over
# once it is over.
fast_claim() {
    [ "$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND ((TABLE_NAME = '${1:-shared_locks}' AND ENGINE = 'MEMORY') OR (TABLE_NAME = '${1:-shared_locks}_fseq' AND TABLE_TYPE = 'SEQUENCE'))")" = 2 ]
}

# --- 3. session mode: a granted waiter silent inside its holder row's
# transaction (or, with the one-statement claim, right after it),
# holding the GET_LOCK
if [ "$lease" = 0 ]; then
    name="stall-$$-g"
    rm -f "$T/held" "$T/go"
    mkfifo "$T/held" "$T/go"
    "$DLOCK" -s "$STORE" run --ttl 30 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0/held"; read _ <"$0/go"' "$T" \
        2>"$T/h_err" &
    H=$!
    pids="$pids $H"
    hf=$(cat "$T/held")
    # The holder row's INSERT only (not the waiter row's, nor the
    # one-statement acquire's INSERT ... SELECT); or the one-statement
    # claim, with a lease of 3 s.
    if fast_claim; then
        start_proxy "lock_acquired = 1, fence = LAST_INSERT_ID("
        wttl=3
    else
        start_proxy "pid, full_name) VALUES ("
        wttl=60
    fi
    "$DLOCK" -s "$PURL" run --ttl "$wttl" -w 30 "$name" -- true 2>"$T/w_err" &
    W=$!
    pids="$pids $W"
    if until_true "[ \"\$(getlock_waits \"$name\")\" -ge 1 ]" 100; then
        ok "W waits in GET_LOCK"
    else
        fail "W never waited in GET_LOCK: $(cat "$T/w_err")"
    fi
    echo x >"$T/go"
    wait "$H"
    if until_true stalled 100; then
        ok "W, granted, went silent in its holder row's transaction or claim"
    else
        fail "the proxy never stalled W: $(cat "$T/w_err")"
    fi
    cf=$("$DLOCK" -s "$STORE" run -w 8 "$name" -- sh -c 'echo "$DLOCK_FENCE"' \
        2>"$T/c_err")
    rc=$?
    if [ "$rc" = 0 ] && [ -n "$cf" ] && [ -n "$hf" ] &&
        [ "$(printf '%s\n%s\n' "$hf" "$cf" | sort -n | tail -n 1)" = "$cf" ] &&
        [ "$cf" != "$hf" ]; then
        ok "C got the name from W's silent session, fence $cf > H's $hf"
    else
        fail "C (exit $rc, fence '$cf', H's '$hf'): $(cat "$T/c_err")"
    fi
    kill "$W" 2>/dev/null
    wait "$W" 2>/dev/null
    stop_proxy
fi

# --- 4. session mode, the library: a run record packet that failed
# midway leaves the idle bound where it was, ?timeout=
# With CI=true a case that cannot run is a failure, not a skip.
skip4() {
    if [ "${CI:-}" = true ]; then
        fail "case 4 cannot run: $1"
    else
        echo "skip 4: $1"
    fi
}
lib=$(dirname "$DLOCK")/libdlock.so.0.2
binding=$here/../../../bindings/python
OURL=$(printf '%s' "$STORE" | sed "s|://$user:$pass@|://other:other-pw@|")
if [ "$lease" = 1 ]; then
    :
elif ! command -v python3 >/dev/null || [ ! -f "$lib" ]; then
    skip4 "no python3 or no $lib"
elif "$DLOCK" -s "$OURL" status x >/dev/null 2>&1; [ $? != 3 ]; then # 3: connected, x free
    skip4 "no user 'other' (server-mysql.sh makes it) on this server"
elif fast_claim; then
    # Not a case that cannot run: on this table there is no holder row's
    # transaction after a grant for a wrong bound to keep open.
    echo "skip 4: a granted waiter claims with one autocommit UPDATE here"
else
    # An interpreter loads a sanitized libdlock only with its runtimes
    # first (the libraries it was linked with).
    preload=$(ldd "$lib" | awk '/lib(a|ub)san/ {printf "%s ", $3}')
    tbl="stall$$"
    name=b
    case $STORE in
        *\?*) TSTORE="$STORE&table=$tbl" ;;
        *) TSTORE="$STORE?table=$tbl" ;;
    esac
    rm -f "$T/held" "$T/go"
    mkfifo "$T/held" "$T/go"
    "$DLOCK" -s "$TSTORE" run --ttl 30 "$name" -- sh -c \
        'echo x >"$0/held"; read _ <"$0/go"' "$T" 2>"$T/h_err" &
    H=$!
    pids="$pids $H"
    read _ <"$T/held"
    # H's run record made the tables: without them, 'other' may not.
    sql "DROP TABLE ${tbl}_runs, ${tbl}_runsum"
    start_proxy "pid, full_name) VALUES ("
    PURL=$(printf '%s' "$PURL" | sed "s|://$user:$pass@|://other:other-pw@|")
    PURL="$PURL&table=$tbl"
    LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 DLOCK_LIBRARY="$lib" \
        PYTHONPATH="$binding" python3 - "$PURL" "$name" >"$T/py.out" 2>&1 <<'PY' &
import sys, dlock
st = dlock.Store(sys.argv[1])
a = st.lock("a", ttl=60)
a.acquire()
try:
    a.run_begin()
    print("run_begin succeeded", flush=True)
except dlock.DlockError as e:
    print("run_begin failed:", e, flush=True)
a.release()
b = st.lock(sys.argv[2], ttl=60, wait=30)
try:
    b.acquire()
    b.release()
except dlock.DlockError as e:
    print("W:", e, flush=True)
PY
    W=$!
    pids="$pids $W"
    # (The process list shows a user's own sessions only: as 'other'.)
    if until_true "[ \"\$(user=other; pass=other-pw; getlock_waits $name)\" -ge 1 ]" 150; then
        ok "the library waits in GET_LOCK after its run_begin"
    else
        fail "the library never waited: $(cat "$T/py.out")"
    fi
    case $(cat "$T/py.out") in
        *"run_begin failed"*"may not create"*)
            ok "  its run_begin failed midway ('other' may not create the tables)" ;;
        *) fail "run_begin did not fail as meant: $(cat "$T/py.out")" ;;
    esac
    echo x >"$T/go"
    wait "$H"
    if until_true stalled 100; then
        ok "granted on the pooled connection, it went silent in its holder row's transaction"
    else
        fail "the proxy never stalled the library: $(cat "$T/py.out")"
    fi
    if "$DLOCK" -s "$TSTORE" run -w 8 "$name" -- true 2>"$T/c_err"; then
        ok "C got the name: the failed packet had set the bound back"
    else
        fail "C did not get the name within 8 s (the connection kept a 60 s bound): $(cat "$T/c_err")"
    fi
    kill "$W" 2>/dev/null
    wait "$W" 2>/dev/null
    stop_proxy
fi

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
