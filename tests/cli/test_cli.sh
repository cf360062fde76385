#!/bin/sh
# The dlock command end to end:  test_cli.sh DLOCK_BINARY STORE_URL
# Synchronisation is by FIFOs (a command says "I hold it" by writing to
# one), never by sleeping and hoping.
set -u
DLOCK=$1
STORE=$2
# A missing or broken binary would leave the FIFO synchronisation below
# waiting for a command that never started (until ctest's timeout): stop
# here, at once, saying why.
if ! out=$("$DLOCK" --version 2>&1); then
    echo "FAIL the dlock binary '$DLOCK' does not run: ${out:-no output}"
    exit 1
fi
# DLOCK may be a wrapper (scripts/test.sh runs this suite once more with
# the binary under valgrind).
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-cli.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
n=0
run_id="cli-$$"

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}

# await FIFO WHAT: wait for the line a command writes to FIFO once it
# runs.  Bounded: a command that never starts, or is stopped before it
# writes (a short lease lost under valgrind on a loaded machine), would
# leave a bare read waiting, silent, until ctest's timeout.
await() {
    timeout 120 head -n 1 "$1" >/dev/null && return 0
    fail "$2 never said it runs (nothing on $(basename "$1") in 120 s)"
    return 1
}

# The shortest lease the suite gives: renewed every 0.2 s, which valgrind
# on a loaded machine cannot promise; under it, 3 s (renewed every 1 s).
short_ttl=0.6
[ -n "${DLOCK_UNDER_VALGRIND:-}" ] && short_ttl=3

# hold NAME: start `dlock run NAME` whose command holds until $T/go-NAME is
# written; returns once the command runs (the lock is held).
hold() {
    mkfifo "$T/ready-$1" "$T/go-$1"
    shift_name=$1
    shift
    "$DLOCK" run "$run_id/$shift_name" "$@" -- sh -c "echo x >'$T/ready-$shift_name'; read _ <'$T/go-$shift_name'" &
    holder=$!
    await "$T/ready-$shift_name" "the holder of $shift_name" || kill -KILL "$holder" 2>/dev/null
}
# say_go FIFO: bounded too, since a holder that never started reads nothing.
say_go() { timeout 120 sh -c 'echo go >"$0"' "$1" 2>/dev/null; }
let_go() {
    say_go "$T/go-$1"
    wait "$holder"; holder_rc=$?; rm -f "$T/go-$1" "$T/ready-$1"
}

# --- exit codes -----------------------------------------------------------
"$DLOCK" run "$run_id/a" -- sh -c 'exit 7'
check "child exit code passed through" 7 $?
"$DLOCK" run "$run_id/a" -- sh -c 'kill -KILL $$'
check "death by signal 9 is 137" 137 $?
"$DLOCK" run "$run_id/a" -- /nonexistent/command 2>/dev/null
check "missing command exits 127" 127 $?
"$DLOCK" run "$run_id/a" -- /etc/passwd 2>/dev/null
check "non-executable command exits 126" 126 $?
"$DLOCK" run "$run_id/a" -- no-such-command-$$ 2>/dev/null
check "command not on PATH exits 127" 127 $?
"$DLOCK" run "$run_id/a" 2>/dev/null
check "run without a command is a usage error" 64 $?
"$DLOCK" run "$run_id/a" -w abc -- true 2>/dev/null
check "bad -w is a usage error" 64 $?
err=$("$DLOCK" run "$run_id/a" -w 1000000000 -- true 2>&1)
check "-w over 365 days is a usage error" 64 $?
case $err in *"365 days"*) ok "it names the 365-day maximum" ;; *) fail "-w 1000000000 says: $err" ;; esac
"$DLOCK" bogus 2>/dev/null
check "unknown command is a usage error" 64 $?
"$DLOCK" release "$run_id/a" 2>/dev/null
check "release without --force is refused" 64 $?
for c in run status list release init; do
    "$DLOCK" $c --help >/dev/null
    check "$c --help exits 0" 0 $?
done

# --- child environment ----------------------------------------------------
out=$("$DLOCK" run "$run_id/env" -- sh -c 'echo "$DLOCK_NAME|$DLOCK_FENCE|$DLOCK_STORE"')
case $out in
"$run_id/env|"[1-9]*"|"*) ok "DLOCK_NAME and DLOCK_FENCE in the child's environment" ;;
*) fail "child environment: $out" ;;
esac

# --fence in JSON is a string of the exact digits (a fence may be above
# 2^53, where a JSON number is rounded by JavaScript and jq).
out=$("$DLOCK" run "$run_id/jfence" -- sh -c 'echo "$DLOCK_FENCE|$("$0" -s "$1" status "$DLOCK_NAME" --json)"' "$DLOCK" "$STORE")
case $out in
[1-9]*) f=${out%%|*}
    case $out in
    *'"fence":"'"$f"'"'*) ok "status --json gives the holder's fence as a string, exactly" ;;
    *) fail "status --json fence, want \"$f\": $out" ;; esac ;;
*) fail "status --json inside a holder: $out" ;;
esac

# --- conflicts ------------------------------------------------------------
hold busy
"$DLOCK" run "$run_id/busy" -n -- true
check "-n on a held lock exits 1" 1 $?
"$DLOCK" run "$run_id/busy" -n -E 3 -- true
check "-E 3 on a held lock exits 3" 3 $?
"$DLOCK" run "$run_id/busy" -w 0.2 -- true
check "-w 0.2 on a held lock exits 1" 1 $?
st=$("$DLOCK" status "$run_id/busy" --json)
case $st in
*'"held":true'*"\"pid\":"*) ok "status --json shows the holder" ;;
*) fail "status --json: $st" ;;
esac
ls=$("$DLOCK" list "$run_id/" --json)
case $ls in
*"\"name\":\"$run_id/busy\""*) ok "list --json shows the lock" ;;
*) fail "list --json: $ls" ;;
esac
let_go busy
check "holder exits 0" 0 "$holder_rc"
st=$("$DLOCK" status "$run_id/busy")
case $st in
*": free,"*) ok "status after release says free" ;;
*) fail "status after release: $st" ;;
esac

# --- mutual exclusion: two runs append to one file ------------------------
log=$T/log
for who in A B C; do
    "$DLOCK" run "$run_id/excl" -w 30 -- sh -c "for i in 1 2 3; do echo '+$who' >>'$log'; echo '-$who' >>'$log'; done" &
done
wait
pairs=$(paste -d' ' - - <"$log" | awk '{ if (substr($1,2) != substr($2,2) || substr($1,1,1) != "+") bad++ } END { print NR, bad+0 }')
check "three concurrent runs never overlap" "9 0" "$pairs"
seq=$(awk '{print substr($0,2)}' "$log" | uniq | wc -l)
check "each run's critical section is contiguous" 3 "$seq"

# --- signals --------------------------------------------------------------
mkfifo "$T/sig-ready"
"$DLOCK" run "$run_id/sig" -- sh -c "trap 'echo TERM >$T/sig-got; exit 0' TERM; echo x >$T/sig-ready; while :; do sleep 0.05; done" &
pid=$!
await "$T/sig-ready" "the command of run sig" || kill -KILL $pid
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM to dlock reaches the child (child exits 0)" 0 $rc
check "the child saw SIGTERM" TERM "$(cat "$T/sig-got" 2>/dev/null)"

# --- the command never outlives dlock -----------------------------------
# dies_with SIG NUM: send SIG to `dlock run`; its command must be gone
# afterwards.  The command and dlock are the only writers of a FIFO, so
# its reader sees EOF exactly when both are gone (timeout: the command
# survived, re-parented to init, running without the lock).
dies_with() {
    rm -f "$T/o-ready" "$T/o-eof"
    mkfifo "$T/o-ready" "$T/o-eof"
    timeout 10 cat "$T/o-eof" >/dev/null &
    reader=$!
    "$DLOCK" run "$run_id/orphan-$1" -- sh -c "echo \$\$ >'$T/o-ready'; exec sleep 300" 3>"$T/o-eof" 2>"$T/o-err" &
    pid=$!
    # Bounded: a dlock that fails before running its command never opens
    # the FIFO, and a bare read would wait for it forever.
    cpid=$(timeout 20 cat "$T/o-ready") || true
    if [ -z "$cpid" ]; then
        fail "SIG$1 to dlock: the command never started: $(cat "$T/o-err")"
        kill -KILL "$pid" "$reader" 2>/dev/null
        wait "$pid" "$reader" 2>/dev/null
        return
    fi
    kill -"$1" "$pid"
    wait "$pid" 2>/dev/null
    rc=$?
    wait "$reader"
    if [ $? = 0 ]; then
        ok "SIG$1 to dlock: its command is gone too"
    else
        fail "SIG$1 to dlock: its command (pid $cpid) outlived it"
        kill -KILL "$cpid" 2>/dev/null
    fi
    if [ "$1" != KILL ]; then
        # Caught: passed on to the command (which dies of it), and the lock
        # released by dlock, not left to its lease.
        check "SIG$1 to dlock: passed on, the command's status" $((128 + $2)) $rc
        "$DLOCK" run "$run_id/orphan-$1" -n -- true
        check "SIG$1 to dlock: the lock was released" 0 $?
    fi
}
dies_with KILL 9
dies_with QUIT 3
dies_with USR1 10
dies_with USR2 12
dies_with ALRM 14
dies_with PIPE 13

# A signal to dlock's whole process group (kill -INT -PGID, timeout(1),
# a supervisor) reaches the command once, not once directly and once
# passed on.  perl counts every SIGINT; SIGUSR1, sent to dlock alone and
# passed on after anything dlock passed on before it, asks for the count.
if command -v setsid >/dev/null && command -v perl >/dev/null; then
    rm -f "$T/g-out"
    mkfifo "$T/g-out"
    setsid "$DLOCK" run "$run_id/group" -- perl -e '
        $| = 1; my $n = 0;
        $SIG{INT} = sub { $n++; print "int\n" };
        $SIG{USR1} = sub { print "count $n\n" };
        $SIG{TERM} = sub { exit 0 };
        print "ready $$\n";
        sleep 1 while 1' >"$T/g-out" &
    pid=$!
    exec 7<"$T/g-out"
    read line cpid <&7
    # Not on a terminal: the command has a process group of its own, so a
    # group signal cannot reach it directly as well.
    check "the command leads a process group of its own" "$cpid" \
        "$(ps -o pgid= -p "$cpid" | tr -d ' ')"
    kill -s INT -- "-$pid"
    read line <&7                   # the first "int"
    kill -USR1 "$pid"
    line=
    while read line <&7; do case $line in count*) break ;; esac; done
    check "kill -INT -PGID reaches the command once" "count 1" "$line"
    kill -TERM "$pid"
    wait "$pid"
    exec 7<&-
fi

# A waiter (no command yet) dies of SIGPIPE as of any signal it does not
# catch, 141, on every store: MariaDB's client library used to ignore it
# process-wide.  -v says "waiting" once the store is open.
hold pipewait
mkfifo "$T/pw-err"
"$DLOCK" -v run "$run_id/pipewait" -w 30 -- true 2>"$T/pw-err" &
pid=$!
await "$T/pw-err" "the waiting run" || kill -KILL $pid
kill -PIPE $pid
wait $pid
check "SIGPIPE ends a waiting run with 141" 141 $?
let_go pipewait

# --- a stolen lock stops the command --------------------------------------
mkfifo "$T/steal-ready"
"$DLOCK" run "$run_id/steal" --ttl $short_ttl --grace 5 -- sh -c "trap 'echo TERM >$T/steal-got; exit 0' TERM; echo x >$T/steal-ready; while :; do sleep 0.05; done" 2>"$T/steal-err" &
pid=$!
await "$T/steal-ready" "the command of run steal" || kill -KILL $pid
"$DLOCK" release --force "$run_id/steal" >/dev/null
check "release --force exits 0" 0 $?
wait $pid
check "run exits 75 when its lock is broken" 75 $?
check "the child got SIGTERM on loss" TERM "$(cat "$T/steal-got" 2>/dev/null)"
# Lost, or (when the renewal that would find it broken comes late: a
# busy machine) about to be, as the lease runs out unconfirmed.
grep -Eq "was lost|will be lost" "$T/steal-err"
check "run says the lock was lost" 0 $?

# A child that ignores SIGTERM is killed after the grace period.
mkfifo "$T/stub-ready"
"$DLOCK" run "$run_id/stub" --ttl $short_ttl --grace 0.3 -- sh -c "trap '' TERM; echo x >$T/stub-ready; while :; do sleep 0.05; done" 2>/dev/null &
pid=$!
await "$T/stub-ready" "the command of run stub" || kill -KILL $pid
"$DLOCK" release --force "$run_id/stub" >/dev/null
wait $pid
check "a child ignoring SIGTERM is killed; run exits 75" 75 $?

# --- bad store URLs: exit 69, password never printed ----------------------
for u in 'redis://user:s3cr3tpw@127.0.0.1:1/0' 'postgres://u:s3cr3tpw@127.0.0.1:1/db' \
         'mysql://u:s3cr3tpw@127.0.0.1:1/db' 'nosuch://u:s3cr3tpw@h/x' \
         'sqlite://u:s3cr3tpw@host/x.db' 'not a url s3cr3tpw'; do
    err=$("$DLOCK" -s "$u" status x 2>&1 >/dev/null)
    rc=$?
    check "bad store $(echo "$u" | cut -c1-12)... exits 69" 69 $rc
    case $err in
    *s3cr3tpw*) fail "password printed: $err" ;;
    "") fail "no message for $u" ;;
    *) ok "message without the password" ;;
    esac
done
out=$("$DLOCK" -s "$STORE" run "$run_id/env2" -- sh -c 'echo "$DLOCK_STORE"')
check "DLOCK_STORE in the child is the (redacted) URL" "$("$DLOCK" -s "$STORE" run "$run_id/env3" -- sh -c 'echo "$DLOCK_STORE"')" "$out"

# Passwords in query parameters, and unencoded '/', '?', '#' in one.
for u in 'unix:///nonexistent/redis.sock?password=s3cr3tpw' \
         'redis://127.0.0.1:1/0?password=s3cr3tpw' \
         'postgres://u@127.0.0.1:1/db?password=s3cr3tpw' \
         'redis://u:pa/s3cr3tpw@127.0.0.1:1' 'redis://u:pa?s3cr3tpw@127.0.0.1:1' \
         'mysql://u:pa#s3cr3tpw@127.0.0.1:1/db'; do
    err=$("$DLOCK" -s "$u" status x 2>&1 >/dev/null)
    case $err in
    *s3cr3tpw*) fail "password printed for $(echo "$u" | cut -c1-20)...: $err" ;;
    "") fail "no message for $u" ;;
    *) ok "no password printed for $(echo "$u" | cut -c1-24)..." ;;
    esac
done

# An empty store is a usage error, never a quiet fall-back to the default.
"$DLOCK" -s '' status x 2>/dev/null
check "-s '' exits 64" 64 $?
DLOCK_STORE= "$DLOCK" status x 2>/dev/null
check "DLOCK_STORE='' exits 64" 64 $?

# The store URL from a file, which must not be readable by others when it
# holds a password.
printf '%s\n' "$STORE" >"$T/store-url"
chmod 600 "$T/store-url"
env -u DLOCK_STORE DLOCK_STORE_FILE="$T/store-url" "$DLOCK" status "$run_id/f" >/dev/null
check "DLOCK_STORE_FILE names the store (3: the name is free)" 3 $?
"$DLOCK" --store-file "$T/store-url" status "$run_id/f" >/dev/null
check "--store-file names the store" 3 $?
printf 'redis://u:s3cr3tpw@127.0.0.1:1\n' >"$T/store-pw"
chmod 644 "$T/store-pw"
err=$("$DLOCK" --store-file "$T/store-pw" status x 2>&1 >/dev/null)
check "a store file with a password that others can read exits 64" 64 $?
case $err in *"chmod 600"*) ok "it says chmod 600" ;; *) fail "store file message: $err" ;; esac
case $err in *s3cr3tpw*) fail "store file error printed the password" ;; *) ok "store file error hides the password" ;; esac
"$DLOCK" --store-file "$T/nonexistent" status x 2>/dev/null
check "a missing store file exits 64" 64 $?
# A FIFO is refused at once (opening it for reading used to wait for a
# writer forever); timeout only bounds the old hang.
mkfifo "$T/store-fifo"
err=$(timeout 10 "$DLOCK" --store-file "$T/store-fifo" status x 2>&1 >/dev/null)
check "a FIFO as --store-file exits 64" 64 $?
case $err in *"not a regular file"*) ok "it says not a regular file" ;; *) fail "FIFO store file message: $err" ;; esac
env -u DLOCK_STORE DLOCK_STORE_FILE="$T/store-fifo" timeout 10 "$DLOCK" status x 2>/dev/null
check "a FIFO as DLOCK_STORE_FILE exits 64" 64 $?

# -s with a password: ps (/proc/PID/cmdline) must not show it for the hold.
if [ -z "${DLOCK_UNDER_VALGRIND:-}" ]; then
    cmdline=$("$DLOCK" -s "$STORE?timeout=5s" run "$run_id/ps" -- sh -c 'tr "\0" " " </proc/$PPID/cmdline' 2>/dev/null)
    case $STORE in
    sqlite:*) check "run's cmdline keeps a URL without a password" 1 \
                  "$(printf '%s' "$cmdline" | grep -c -F "$STORE")" ;;
    *)  pw=$(printf '%s' "$STORE" | sed -n 's#^[a-z]*://[^:/@]*:\([^@]*\)@.*#\1#p')
        if [ -n "$pw" ]; then
            case $cmdline in *"$pw"*) fail "ps shows the password: $cmdline" ;;
            *) ok "ps does not show the password given with -s" ;; esac
        fi ;;
    esac
fi

# Numbers: decimal seconds only; a lease renewal could not keep is refused.
for w in 0x10 1e3 inf ' 5' +5 -1 .; do
    "$DLOCK" run "$run_id/num" -w "$w" -- true 2>/dev/null
    check "-w '$w' is a usage error" 64 $?
done
"$DLOCK" run "$run_id/num" --ttl 1ms -- true 2>/dev/null
check "--ttl 1ms is a usage error" 64 $?
"$DLOCK" run "$run_id/num" -w .5 -- true
check "-w .5 is accepted" 0 $?
# The shortest lease allowed is parsed, not refused.  Whether renewal keeps
# a 100 ms lease depends on the machine (under valgrind on a loaded CI host
# it may not, and the run then ends 75, lost): either is not a usage error.
"$DLOCK" run "$run_id/num" --ttl 100ms -- true 2>"$T/ttl100.err"
rc=$?
case $rc in 0|75) rc=ok ;; esac
check "--ttl 100ms is accepted" ok "$rc"

# --- what a store holds is shown escaped, never raw -----------------------
# A row planted by another writer of the SQLite file: a name with a
# terminal escape, a newline and a byte that is not UTF-8, a host that
# would retitle the terminal.  list must print them escaped, --json must
# stay valid UTF-8 JSON, and the name must still be breakable.
case $STORE in sqlite://*)
    if command -v sqlite3 >/dev/null; then
        db=${STORE#sqlite://}
        db=${db%%\?*}
        hex() { printf "$1" | od -An -tx1 | tr -d ' \n'; }
        evil="$run_id/evil\033[31m\n\377"
        exp=$(awk '{ printf "%d", ($1 + 600) * 1000 }' /proc/uptime)
        sqlite3 "$db" "INSERT INTO dlock_locks (name, owner, shared, fence, expires_at, boot_id, acquired_at, host, pid, pid_start, pid_ns) VALUES (CAST(X'$(hex "$evil")' AS TEXT), 'tok', 0, 1, $exp, '$(cat /proc/sys/kernel/random/boot_id)', 0, CAST(X'$(hex 'h\033]0;pwned\007')' AS TEXT), 4242, 1, 'ns')"
        out=$("$DLOCK" list "$run_id/evil")
        case $out in *"$(printf '\033')"*) fail "list printed a raw ESC: $out" ;;
        *'\x1b[31m\x0a\xff'*'h\x1b]0;pwned\x07'*) ok "list escapes the name and host" ;;
        *) fail "list output: $out" ;; esac
        out=$("$DLOCK" list "$run_id/evil" --json)
        if printf '%s' "$out" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1 &&
           ! printf '%s' "$out" | tr -d '\n' | grep -q "$(printf '[\001-\037]')"; then
            ok "list --json stays valid UTF-8 without raw controls"
        else
            fail "list --json: $out"
        fi
        case $out in *'"name_hex":"'"$(hex "$evil")"'"'*) ok "list --json gives the exact bytes in name_hex" ;;
        *) fail "no name_hex: $out" ;; esac
        out=$("$DLOCK" release --force "$(printf "$evil")")
        check "a name that is not UTF-8 can be broken" 0 $?
        check "and is gone" "" "$("$DLOCK" list "$run_id/evil")"
    elif [ "${CI:-}" = true ]; then
        fail "sqlite3 shell missing: cannot plant a hostile row"
    fi ;;
esac

# --- a symbolic link at an explicit store is refused ---------------------
mkdir "$T/links"
printf 'precious\n' >"$T/victim"
ln -s "$T/victim" "$T/links/l.db"
err=$("$DLOCK" -s "sqlite://$T/links/l.db" status x 2>&1 >/dev/null)
check "a link at the database file exits 69" 69 $?
case $err in *"refusing $T/links/l.db: it is a symbolic link"*) ok "it says so" ;;
*) fail "message for a link: $err" ;; esac
ln -s "$T/absent" "$T/links/m.db-wal"
"$DLOCK" -s "sqlite://$T/links/m.db" status x 2>/dev/null
check "a link at the -wal file exits 69" 69 $?
check "the link's target is untouched" "precious" "$(cat "$T/victim")"
check "the dangling link's target was not created" no "$(test -e "$T/absent" && echo yes || echo no)"

# --- the default store is private to each user ----------------------------
# As `nobody` (never root's own default store, which this must not touch),
# and only when nobody's directory does not exist yet, so it is ours to
# make and remove.  Only on an sqlite:// run (cli-sqlite): the default
# store is always SQLite, and the cli-* entries of other stores run beside
# cli-sqlite under `ctest -j`, where two of them would race for that one
# directory.
case $STORE in sqlite://*) default_here=yes ;; *) default_here=no ;; esac
if [ "$default_here" = no ]; then
    echo "skip: the per-user default store (cli-sqlite covers it: it is SQLite whatever -s says)"
elif [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && id nobody >/dev/null 2>&1 &&
   [ -z "${DLOCK_UNDER_VALGRIND:-}" ] && runuser -u nobody -- test -x "$DLOCK" &&
   nobody=$(id -u nobody) && d=/var/tmp/dlock-$nobody && ! [ -e "$d" ] && ! [ -L "$d" ]; then
    as_nobody() { env -u DLOCK_STORE runuser -u nobody -- "$DLOCK" "$@"; }
    case $(as_nobody --help) in *"sqlite://$d/dlock.db"*) ok "nobody's default is $d" ;;
    *) fail "nobody's default store in --help: $(as_nobody --help | grep sqlite)" ;; esac
    as_nobody run "$run_id/default" -- true
    check "nobody uses its default store" 0 $?
    check "its directory is nobody's, mode 700" "700 $nobody" "$(stat -c '%a %u' "$d")"
    check "its file is mode 600" "600 $nobody" "$(stat -c '%a %u' "$d/dlock.db")"
    as_nobody status "$run_id/default" >/dev/null
    check "status on the default store (3: the name is free)" 3 $?
    rm -rf "$d"

    # Someone else got there first: refused, with the reason, left alone.
    mkdir -m 700 "$d"
    err=$(as_nobody run "$run_id/default" -- true 2>&1)
    check "a directory owned by another user exits 69" 69 $?
    case $err in *"refusing $d: owned by uid 0, not by you (uid $nobody)"*) ok "it says whose it is" ;;
    *) fail "message for a foreign directory: $err" ;; esac
    check "and nothing is created in it" "" "$(ls -A "$d")"
    chown nobody "$d" && chmod 1777 "$d"
    err=$(as_nobody run "$run_id/default" -- true 2>&1)
    check "a world-writable directory exits 69" 69 $?
    case $err in *"refusing $d: writable by group or others (mode 1777)"*) ok "it says it is writable" ;;
    *) fail "message for a writable directory: $err" ;; esac
    check "and it is not chmodded" 1777 "$(stat -c %a "$d")"
    rm -rf "$d"
    mkdir -m 700 "$T/elsewhere" && chown nobody "$T/elsewhere" && chmod 755 "$T"
    ln -s "$T/elsewhere" "$d"
    err=$(as_nobody run "$run_id/default" -- true 2>&1)
    check "a symbolic link as the directory exits 69" 69 $?
    case $err in *"refusing $d: it is a symbolic link"*) ok "it says it is a link" ;;
    *) fail "message for a linked directory: $err" ;; esac
    check "nothing is created where it points" "" "$(ls -A "$T/elsewhere")"
    rm -f "$d"
elif [ "${CI:-}" = true ] && [ -z "${DLOCK_UNDER_VALGRIND:-}" ]; then
    fail "CI=true: the per-user default store needs root, runuser, a user nobody and no /var/tmp/dlock-\$(id -u nobody)"
else
    echo "skip: the per-user default store (needs root, runuser and user nobody)"
fi

# --- semaphores (run --limit N) --------------------------------------------
"$DLOCK" run -l 0 "$run_id/sem" -- true 2>/dev/null
check "--limit 0 is a usage error" 64 $?
"$DLOCK" run --limit=x "$run_id/sem" -- true 2>/dev/null
check "--limit x is a usage error" 64 $?
case $STORE in
sqlite://*|redis://*|unix://*|redis-sentinel://*|redis-cluster://*|rediss://*|rediss-sentinel://*|rediss-cluster://*|postgres://*|postgresql://*|mysql://*|mariadb://*)
    # Two holders of a semaphore of 2, each saying so through its FIFO.
    for k in 1 2; do
        mkfifo "$T/sem-ready-$k" "$T/sem-go-$k"
        "$DLOCK" run -l 2 "$run_id/sem" -- sh -c "echo x >'$T/sem-ready-$k'; read _ <'$T/sem-go-$k'" &
        eval "sem_pid_$k=\$!"
        await "$T/sem-ready-$k" "semaphore holder $k" || kill -KILL $!
    done
    out=$("$DLOCK" status "$run_id/sem")
    case $out in *": held by 2 of 2 (semaphore), "*) ok "status shows 2 of 2" ;;
    *) fail "status of a semaphore: $out" ;; esac
    out=$("$DLOCK" list "$run_id/sem" --json)
    case $out in *'"holders":2,'*'"limit":2,'*) ok "list --json has holders and limit" ;;
    *) fail "list --json of a semaphore: $out" ;; esac
    "$DLOCK" run -n --limit 2 "$run_id/sem" -- true
    check "a third holder of 2 is not admitted" 1 $?
    out=$("$DLOCK" run -n "$run_id/sem" -- true 2>&1)
    check "a lock on a held semaphore is a usage error" 64 $?
    case $out in *"limit 2"*) ok "the error names the limit in force" ;;
    *) fail "mismatch message: $out" ;; esac
    say_go "$T/sem-go-1"
    wait "$sem_pid_1"
    check "the first holder exits 0" 0 $?
    out=$("$DLOCK" run -n -l 2 "$run_id/sem" -- sh -c 'echo "$DLOCK_FENCE"')
    case $STORE in
    sqlite://*) check "a freed slot is taken" 3 "$out" ;;
    # Redis fences follow the server's clock in us: only their order is
    # promised.
    *) case $out in [1-9]*) ok "a freed slot is taken" ;;
       *) fail "a freed slot is taken: fence '$out'" ;; esac ;;
    esac
    say_go "$T/sem-go-2"
    wait "$sem_pid_2"
    out=$("$DLOCK" status "$run_id/sem" --json)
    case $out in *'"held":false,'*'"holders":0,'*'"limit":null,'*) ok "a free name has limit null" ;;
    *) fail "status --json of a free semaphore: $out" ;; esac
    "$DLOCK" run -n -l 5 "$run_id/sem" -- true
    check "once free, another limit may be used" 0 $?
    # The limit column and the migration of 0.2 files: SQLite's own.
    if [ "${STORE#sqlite://}" != "$STORE" ]; then
        "$DLOCK" init --print | grep -q '"limit"'
        check "init --print shows the limit column" 0 $?
        "$DLOCK" init --print | grep -q 'CREATE TABLE IF NOT EXISTS dlock_leaders'
        check "init --print shows the leader value table" 0 $?
        # A lock file from dlock 0.2 (no limit column) is migrated on open and
        # its rows read as locks.
        if command -v sqlite3 >/dev/null; then
            old=$T/old.db
            sqlite3 "$old" "CREATE TABLE dlock_locks (name TEXT NOT NULL, owner TEXT NOT NULL, shared INTEGER NOT NULL, fence INTEGER NOT NULL, expires_at INTEGER NOT NULL, boot_id TEXT NOT NULL, acquired_at INTEGER NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, pid_start INTEGER NOT NULL, pid_ns TEXT NOT NULL, PRIMARY KEY (name, owner)) WITHOUT ROWID; CREATE TABLE dlock_fences (name TEXT PRIMARY KEY, fence INTEGER NOT NULL) WITHOUT ROWID; INSERT INTO dlock_fences VALUES ('old', 41);"
            exp=$(awk '{ printf "%d", ($1 + 600) * 1000 }' /proc/uptime)
            sqlite3 "$old" "INSERT INTO dlock_locks VALUES ('old', 'tok', 0, 41, $exp, '$(cat /proc/sys/kernel/random/boot_id)', 0, 'elsewhere', 4242, 1, 'ns')"
            out=$("$DLOCK" -s "sqlite://$old" status old --json)
            case $out in *'"holders":1,'*'"limit":1,'*) ok "a 0.2 file is migrated, its row a lock" ;;
            *) fail "status on a 0.2 file: $out" ;; esac
            "$DLOCK" -s "sqlite://$old" run -n -l 2 old -- true 2>/dev/null
            check "a semaphore on a name a 0.2 row holds is refused" 64 $?
            "$DLOCK" -s "sqlite://$old" release --force old >/dev/null
            out=$("$DLOCK" -s "sqlite://$old" run -n -l 2 old -- sh -c 'echo "$DLOCK_FENCE"')
            check "the migrated file keeps its fences" 42 "$out"
            sqlite3 "$old" .tables | grep -q dlock_leaders
            check "a 0.2 file gains the leader value table" 0 $?
            # Above 2^53 (what 0.2's PostgreSQL fences are): JSON keeps
            # every digit.
            sqlite3 "$old" "UPDATE dlock_fences SET fence = 9007199254740993 WHERE name = 'old'"
            out=$("$DLOCK" -s "sqlite://$old" run -n old -- "$DLOCK" -s "sqlite://$old" status old --json)
            case $out in *'"fence":"9007199254740994"'*) ok "a fence above 2^53 keeps its digits in --json" ;;
            *) fail "a fence above 2^53 in --json: $out" ;; esac
        else
            fail "sqlite3 shell missing: cannot make a 0.2 lock file"
        fi
    fi ;;
*)
    # Semaphores or a clear "not here" (69), per store.
    err=$("$DLOCK" run -n -l 2 "$run_id/sem" -- true 2>&1)
    rc=$?
    case $rc:$err in
    0:*) ok "--limit 2 runs on this store" ;;
    69:*"no semaphores"*) ok "--limit on a store without semaphores exits 69, saying so" ;;
    *) fail "--limit 2: exit $rc: $err" ;;
    esac ;;
esac

# --- init -----------------------------------------------------------------
[ -n "$("$DLOCK" init --print)" ]
check "init --print prints the DDL (or says none is needed)" 0 $?
"$DLOCK" init >/dev/null
check "init exits 0" 0 $?

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
