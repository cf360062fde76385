#!/bin/bash
# The SQLite store against what a process cannot see (issue 33, items 2
# and 3): "cannot tell is not dead", and a lease is judged on the clock it
# was written on.
#
#   test_sqlite_proc.sh DLOCK
#
# Every case holds `job` with one `dlock run` (its command says "up" on a
# FIFO and blocks on another until the test lets it go) and runs a
# contender `dlock run -n job` that must (or must not) get it:
#
#   hidepid     the holder is root; the contender is user nobody, in a mount
#               namespace with /proc mounted hidepid=2 (systemd
#               ProtectProc=invisible), so /proc/HOLDER is missing: busy.
#   no-proc     the contender, same user, has an empty /proc: it cannot
#               tell its clock from the host's and refuses the store
#               (exit 69, "mount /proc"), never runs its command.
#   foreign-proc
#               the contender is in the holder's pid namespace but sees the
#               /proc of its parent namespace, with the same pid number in
#               both: /proc/HOLDER there is another process, no proof: busy.
#   kill-9      the holder dies by SIGKILL: a contender that can see /proc
#               takes over at once (the fast path), and so does nobody
#               under hidepid=2 (kill() answers ESRCH: proof).
#   timens+     the contender runs in a time namespace with CLOCK_BOOTTIME
#               one hour ahead: busy.
#   timens-holder+ / timens-holder-
#               the holder runs in a time namespace one hour ahead / with
#               its boot clock near 0 (as far back as the kernel allows);
#               the contender in the initial one: busy.
#   timens-wrap / timens-wrap-holder
#               a contender / a holder in a time namespace whose boot clock
#               is set back past the other's start: /proc shows that start
#               wrapped (huge), which proves nothing: busy.
#   timens-bounded
#               a holder in another pid namespace (lease only, no pid to
#               look at), 1 s lease, killed: contenders an hour ahead and
#               far behind still get it within 10 s (the lease ends for
#               them too).
#
# Root only (mount and time namespaces, setpriv).  Exits 77 (ctest:
# skipped) when the machine cannot run it, except with CI=true, where that
# is a failure.  Synchronisation is by FIFOs, never by sleeping.
set -u
DLOCK_IN=${1:?usage: test_sqlite_proc.sh DLOCK}

cannot() {
    echo "sqlite-proc: cannot run: $*" >&2
    if [ "${CI:-false}" = true ]; then
        exit 1
    fi
    exit 77
}

[ "$(id -u)" = 0 ] || cannot "not root"
for c in unshare setpriv mkfifo mount; do
    command -v "$c" >/dev/null || cannot "no $c"
done
unshare -m sh -c 'mount --make-rprivate / && mount -t proc -o hidepid=2 proc /proc' ||
    cannot "cannot mount /proc with hidepid=2 in a mount namespace"
unshare --time --boottime 3600 true || cannot "no time namespaces"
id nobody >/dev/null 2>&1 || cannot "no user nobody"
nogroup=$(id -gn nobody)

T=$(mktemp -d /tmp/dlock-sqlite-proc.XXXXXX)
holders=()
cleanup() {
    for f in "$T"/go-*; do
        [ -p "$f" ] && echo go 1<>"$f"
    done
    for p in "${holders[@]}"; do
        kill -9 "$p" 2>/dev/null
    done
    wait
    rm -rf "$T"
}
trap cleanup EXIT
# A store every user can write, in a directory nobody can reach.
chmod 0755 "$T"
mkdir "$T/store"
chmod 0777 "$T/store"
cp "$DLOCK_IN" "$T/dlock"
chmod 0755 "$T/dlock"
DLOCK=$T/dlock
URL=sqlite://$T/store/locks.db
: >"$T/store/locks.db"
chmod 0666 "$T/store/locks.db" # SQLite gives -wal and -shm the same mode

fails=0
n=0
ok() {
    n=$((n + 1))
    echo "ok   $1"
}
fail() {
    n=$((n + 1))
    fails=$((fails + 1))
    echo "FAIL $1"
}

# Prefixes that put a command where a case needs it.
as_nobody_hidepid=(unshare -m sh -c 'mount --make-rprivate / &&
    mount -t proc -o hidepid=2 proc /proc && exec "$@"' sh
    setpriv --reuid=nobody --regid="$nogroup" --clear-groups)
no_proc=(unshare -m sh -c 'mount --make-rprivate / &&
    mount -t tmpfs -o size=4k none /proc && exec "$@"' sh)
ahead=(unshare --time --boottime 3600)

# hold TAG TTL [PREFIX...]: start `dlock run job --ttl TTL` under PREFIX;
# returns once its command runs (the lock is held).  $holder is its pid.
hold() {
    local tag=$1 ttl=$2 line fd
    shift 2
    mkfifo -m 0600 "$T/ready-$tag" "$T/go-$tag"
    exec {fd}<>"$T/ready-$tag"
    "$@" "$DLOCK" -s "$URL" run job --ttl "$ttl" -- \
        sh -c "echo up >'$T/ready-$tag'; read _ <'$T/go-$tag'" &
    holder=$!
    holders+=("$holder")
    if ! read -r -t 20 -u "$fd" line || [ "$line" != up ]; then
        exec {fd}<&-
        echo "sqlite-proc: the holder ($tag) did not start" >&2
        exit 1
    fi
    exec {fd}<&-
}

# kill_holder: SIGKILL to the last holder (its command dies with it).
kill_holder() {
    kill -9 "$holder"
    wait "$holder"
} 2>/dev/null

# let_go TAG: the holder's command exits; its dlock releases and exits 0.
let_go() {
    echo go >"$T/go-$1"
    if wait "$holder"; then
        ok "$1: the holder ran to the end and released"
    else
        fail "$1: the holder exited $? (lost its lock?)"
    fi
}

# contend TAG WAIT [PREFIX...]: `dlock run -w WAIT job` under PREFIX; $rc
# its exit status, $ran whether its command ran, $err its stderr file.
contend() {
    local tag=$1 wait=$2
    shift 2
    err=$T/err-$tag
    rm -f "$T/store/ran-$tag"
    "$@" "$DLOCK" -s "$URL" run -w "$wait" job -- \
        sh -c "echo x >'$T/store/ran-$tag'" 2>"$err"
    rc=$?
    if [ -e "$T/store/ran-$tag" ]; then ran=yes; else ran=no; fi
}

expect_busy() { # expect_busy TAG: rc and ran of the last contend
    if [ "$rc" = 1 ] && [ "$ran" = no ]; then
        ok "$1: busy while the holder lives"
    else
        fail "$1: wanted busy (exit 1, command not run), got exit $rc, ran=$ran"
        sed 's/^/    /' "$err"
    fi
}

expect_taken() {
    if [ "$rc" = 0 ] && [ "$ran" = yes ]; then
        ok "$1: taken over"
    else
        fail "$1: wanted the lock (exit 0, command run), got exit $rc, ran=$ran"
        sed 's/^/    /' "$err"
    fi
}

# --- item 2: a /proc entry that is missing is not a death ------------------

hold hidepid 30
# Not vacuous: nobody really cannot see the holder there.
if "${as_nobody_hidepid[@]}" test -e "/proc/$holder"; then
    fail "hidepid: nobody can see /proc/$holder (the case tests nothing)"
fi
contend hidepid 0 "${as_nobody_hidepid[@]}"
expect_busy hidepid
let_go hidepid

hold no-proc 30
if "${no_proc[@]}" test -e /proc/self; then
    fail "no-proc: /proc/self exists (the case tests nothing)"
fi
contend no-proc 0 "${no_proc[@]}"
# LeakSanitizer cannot run without /proc (nor read ASAN_OPTIONS, which a
# sanitizer reads from /proc/self/environ): in a sanitized build it turns
# the exit status into 1 at exit.  The command must not run either way.
if [ "$ran" = no ] && grep -q "mount /proc" "$err" &&
    { [ "$rc" = 69 ] ||
        { [ "$rc" = 1 ] && grep -q "LeakSanitizer has encountered a fatal error" "$err"; }; }; then
    ok "no-proc: refuses the store (exit $rc), command not run"
else
    fail "no-proc: wanted a refusal (exit 69, 'mount /proc'), got exit $rc, ran=$ran"
    sed 's/^/    /' "$err"
fi
let_go no-proc

# A /proc of another pid namespace is not ours, even when our pid reads the
# same in both.  In a private pid namespace A (own /proc), the holder is
# pid 1 of a child namespace B with B's /proc; the contender enters B
# (nsenter -p) but keeps A's /proc and, through B's ns_last_pid, gets the
# same pid number in A and in B.  /proc/1 there is A's init, started
# earlier: not the holder, and no proof of anything.
cat >"$T/foreign.sh" <<'EOS'
set -u
DLOCK=$1 URL=$2 T=$3
# A's init (this shell) must start visibly before the holder: wait (poll)
# until three clock ticks have passed since it started.
read -r stat </proc/self/stat
stat=${stat##*) }
set -- $stat
mine=${20}
while :; do
    read -r up _ </proc/uptime
    now=${up%.*}${up#*.}
    [ "$((10#$now))" -gt "$((mine + 3))" ] && break
done
mkfifo "$T/f-ready" "$T/f-go"
unshare -p -f -m --mount-proc "$DLOCK" -s "$URL" run job --ttl 30 -- \
    sh -c "echo up >'$T/f-ready'; read _ <'$T/f-go'" &
u=$!
read -r _ <"$T/f-ready"
b=$(pgrep -P "$u")
nsenter -t "$b" -p -- bash -c '
    while read -r k a _; do [ "$k" = NSpid: ] && break; done </proc/self/status
    echo "$a" >/proc/sys/kernel/ns_last_pid
    grep NSpid /proc/self/status >"$3/f-nspid"
    "$1" -s "$2" run -w 0 job -- sh -c "echo x >$3/f-ran" 2>"$3/f-err"
    echo $? >"$3/f-rc"' sh "$DLOCK" "$URL" "$T"
echo go >"$T/f-go"
wait "$u"
echo $? >"$T/f-holder"
EOS
if command -v nsenter >/dev/null && command -v pgrep >/dev/null; then
    unshare -p -f -m --mount-proc bash "$T/foreign.sh" "$DLOCK" "$URL" "$T"
    read -r _ a b <"$T/f-nspid"
    if [ "$a" != "$b" ]; then
        fail "foreign-proc: the contender's pids differ ($a, $b): the case tests nothing"
    fi
    rc=$(cat "$T/f-rc") ran=no err=$T/f-err
    [ -e "$T/f-ran" ] && ran=yes
    expect_busy "foreign-proc (another namespace's /proc, same pid number)"
    if [ "$(cat "$T/f-holder")" = 0 ]; then
        ok "foreign-proc: the holder ran to the end and released"
    else
        fail "foreign-proc: the holder exited $(cat "$T/f-holder") (lost its lock?)"
    fi
elif [ "${CI:-false}" = true ]; then
    fail "foreign-proc: no nsenter or pgrep"
else
    echo "skip foreign-proc: no nsenter or pgrep"
fi

# The kill -9 fast path still works: a dead holder is taken at once.
hold kill-9 30
kill_holder
contend kill-9 0
expect_taken kill-9
hold kill-9-hidepid 30
kill_holder
contend kill-9-hidepid 0 "${as_nobody_hidepid[@]}"
expect_taken kill-9-hidepid

# --- item 3: a lease is judged on the clock it was written on -------------

hold timens+ 30
contend timens+ 0 "${ahead[@]}"
expect_busy "timens+ (contender an hour ahead)"
let_go timens+

hold timens-holder+ 30 "${ahead[@]}"
contend timens-holder+ 0
expect_busy "timens-holder+ (holder an hour ahead)"
let_go timens-holder+

# The holder's boot clock as far back as the kernel lets it go (near 0):
# its CLOCK_BOOTTIME + 30 s lies in the reader's past.
up=$(cut -d. -f1 /proc/uptime)
if [ "$up" -gt 3 ]; then
    behind=(unshare --time --boottime "-$((up - 2))")
    hold timens-holder- 30 "${behind[@]}"
    contend timens-holder- 0
    expect_busy "timens-holder- (holder $((up - 2)) s behind)"
    let_go timens-holder-
else
    echo "skip timens-holder-: uptime ${up} s"
    behind=("${ahead[@]}")
fi

# Bounded: a holder nobody can look up (another pid namespace) that died
# frees the name when its lease ends, for contenders on shifted clocks too.
hold timens-bounded 1 unshare -p -f --kill-child --mount-proc
kill_holder
contend timens-bounded-ahead 10 "${ahead[@]}"
expect_taken "timens-bounded (contender an hour ahead, lease of 1 s)"
hold timens-bounded2 1 unshare -p -f --kill-child --mount-proc
kill_holder
contend timens-bounded-behind 10 "${behind[@]}"
expect_taken "timens-bounded (contender behind, lease of 1 s)"

# A clock set back (CRIU restores do it): the kernel adds a negative
# boottime offset to start times in unsigned arithmetic, so a process that
# started before the namespace's zero shows a wrapped, huge starttime.
# That proves nothing.  timens-wrap: the holder started 3 s before a
# contender whose boot clock reads 1 s: busy.  timens-wrap-holder: a
# process older than that namespace enters it (nsenter -T) and then takes
# the lock; it cannot read its own start time, and a contender in the
# initial namespace must not take a wrong one for a reused pid: busy.
if command -v nsenter >/dev/null; then
    hold timens-wrap 30
    mkfifo "$T/late-go" "$T/late-ready" "$T/go-timens-wrap-holder" \
        "$T/ns-ready" "$T/ns-end"
    # The late holder: started now, enters the namespace (made below) once
    # told its member's pid, then waits for the lock.
    sh -c 'read -r ns <"$0"; exec nsenter -T -t "$ns" "$@"' "$T/late-go" \
        "$DLOCK" -s "$URL" run job --ttl 30 -- \
        sh -c "echo up >'$T/late-ready'; read _ <'$T/go-timens-wrap-holder'" &
    late=$!
    holders+=("$late")
    # Poll (nothing to wait on) until 3 s have passed since the holder
    # started (starttime, field 22; comm "dlock" has no spaces).
    read -r _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ hstart _ <"/proc/$holder/stat"
    while read -r up _ </proc/uptime &&
        [ "$((10#${up%.*}${up#*.}))" -lt $((hstart + 300)) ]; do
        sleep 0.1
    done
    up=${up%.*}
    # A namespace whose boot clock reads 1 s now.
    unshare --time --boottime "-$((up - 1))" sh -c \
        "echo \$\$ >'$T/ns-ready'; read _ <'$T/ns-end'" &
    nsh=$!
    holders+=("$nsh")
    read -r nspid <"$T/ns-ready"
    contend timens-wrap 0 nsenter -T -t "$nspid"
    expect_busy "timens-wrap (holder older than the contender's clock zero)"
    echo "$nspid" >"$T/late-go"
    let_go timens-wrap
    holder=$late
    if read -r -t 20 line <"$T/late-ready" && [ "$line" = up ]; then
        contend timens-wrap-holder 0
        expect_busy "timens-wrap-holder (holder older than its own clock zero)"
        let_go timens-wrap-holder
    else
        fail "timens-wrap-holder: the holder did not start"
    fi
    echo end >"$T/ns-end"
    wait "$nsh"
else
    echo "skip timens-wrap: no nsenter"
fi

echo "$((n - fails))/$n passed"
[ "$fails" -eq 0 ]
