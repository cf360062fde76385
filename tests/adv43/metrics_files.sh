#!/bin/bash
# dlock run --metrics-file PATH in a directory other users can write (a
# 1777 one, as /tmp): what user nobody plants there (PATH as a symbolic
# link, as a 6777 file of its own, as a FIFO; PATH.lock of its own,
# flock'ed, or as a symbolic link; a file where the temporary copy once
# went) must not give root's file a mode nobody chose, change a file of
# root's elsewhere, hang the run or delay it by the 10 s lock wait, and
# never changes the run's exit status (issue 43, items 5 and 6).
#
#   metrics_files.sh DRIVER DLOCK
#
# DRIVER: tests/runs/metrics_driver.c (records one made-up run, exit 0
# when written); DLOCK: the CLI, run here on an SQLite store of its own.
#
# Root only (it acts as nobody and as daemon): 77 when not root, except
# with CI=true.
set -u
DRIVER=$(realpath "$1")
DLOCK=$(realpath "$2")
skip() {
    echo "SKIP: $*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root"
command -v setpriv >/dev/null || skip "no setpriv"
command -v flock >/dev/null || skip "no flock(1)"
id nobody >/dev/null 2>&1 || skip "no user nobody"
T=$(mktemp -d /tmp/dlock-adv-metrics.XXXXXX)
holder=
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
chmod 755 "$T"
D=$T/shared # the directory every user may write, as /tmp
mkdir -m 1777 "$D"
url=sqlite://$T/store.db
nobody_uid=$(id -u nobody)
fails=0
ok() { echo "ok   $*"; }
fail() {
    echo "FAIL $*"
    fails=$((fails + 1))
}
as() { # as USER CMD...: run CMD as USER, no supplementary groups
    local u=$1
    shift
    setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# run PATH: `dlock run` with --metrics-file PATH, CMD exiting 3, under a
# 20 s bound; sets rc, err (its stderr) and ms (its run time).
run() {
    local t0
    t0=$(now_ms)
    err=$(timeout -k 5 20 "$DLOCK" -s "$url" run "mf-$$" --metrics-file "$1" \
        -- sh -c 'exit 3' 2>&1 </dev/null)
    rc=$?
    ms=$(($(now_ms) - t0))
}
# shape FILE: owner, mode in octal, type, as stat shows them
shape() { stat -c '%u %a %F' "$1" 2>/dev/null; }
# no_bad_mode WHAT PATH: PATH is not a root-owned file with setuid,
# setgid or world-write (whatever it points to, if it is a link)
no_bad_mode() {
    local m
    if [ -L "$2" ] || ! [ -e "$2" ]; then
        ok "$1: no root file at the path"
        return
    fi
    m=$(stat -c '%u %a' "$2")
    if [ "${m%% *}" = 0 ] && [ $((0${m#* } & 06002)) != 0 ]; then
        fail "$1: root's file is mode ${m#* } ($(ls -l "$2"))"
    else
        ok "$1: the file there is uid/mode $m"
    fi
}
expect_rc3() { # WHAT: the run's status is CMD's, 3, and it said why
    if [ "$rc" = 3 ]; then ok "$1: exit status 3 (CMD's)"; else fail "$1: exit $rc, want 3: $err"; fi
    case $err in *"metrics file"*"$2"*) ok "$1: says '$2'" ;;
    *) fail "$1: stderr does not say '$2': $err" ;; esac
}
a_file() { # a metrics file of root's elsewhere (0600, a series in it)
    "$DRIVER" "$1" secret ran=1 exited=1 status=0 start_ms=1 end_ms=2 ||
        fail "the driver wrote no $1"
    chmod 600 "$1"
}

# --- Item 5: PATH as a link to nobody's 6777 file, as nobody's 6777 file --
as nobody sh -c "umask 0; : >'$D/n1.own' && chmod 6777 '$D/n1.own' &&
    ln -s '$D/n1.own' '$D/link.prom'"
run "$D/link.prom"
no_bad_mode "a link to nobody's 6777 file" "$D/link.prom"
expect_rc3 "a link to nobody's 6777 file" "symbolic link"
[ -L "$D/link.prom" ] && ok "the link is left as it is" || fail "the link was replaced: $(ls -l "$D/link.prom")"
[ "$(shape "$D/n1.own")" = "$nobody_uid 6777 regular empty file" ] &&
    ok "nobody's file is unchanged" || fail "nobody's file: $(shape "$D/n1.own")"

as nobody sh -c "umask 0; : >'$D/plain.prom' && chmod 6777 '$D/plain.prom'"
run "$D/plain.prom"
no_bad_mode "nobody's own 6777 file" "$D/plain.prom"
expect_rc3 "nobody's own 6777 file" "owned by uid $nobody_uid, not by you (uid 0)"
[ "$(shape "$D/plain.prom")" = "$nobody_uid 6777 regular empty file" ] &&
    ok "nobody's file is left as it is" || fail "nobody's file: $(shape "$D/plain.prom")"

# root's own file, made 6777 (by mistake or by an earlier bug): the mode
# kept never has setuid, setgid or world-write; a plain 0640 is kept.
"$DRIVER" "$D/own.prom" a ran=1 exited=1 status=0 start_ms=1 end_ms=2 &&
    chmod 6777 "$D/own.prom" && run "$D/own.prom"
no_bad_mode "root's own 6777 file, rewritten" "$D/own.prom"
[ "$rc" = 3 ] && ok "root's own file: exit 3" || fail "root's own file: exit $rc: $err"
grep -q 'dlock_run_runs_total{name="a"} 1' "$D/own.prom" &&
    grep -q "dlock_run_runs_total{name=\"mf-$$\"} 1" "$D/own.prom" &&
    ok "root's own file: rewritten, the other name kept" ||
    fail "root's own file: $(cat "$D/own.prom")"
chmod 640 "$D/own.prom" && run "$D/own.prom"
[ "$(shape "$D/own.prom")" = "0 640 regular file" ] && ok "a 0640 file of root's keeps its mode" ||
    fail "a 0640 file of root's: $(shape "$D/own.prom")"

# PATH as a link to a file of root's elsewhere: that file is not changed.
a_file "$T/root.prom"
before=$(sha256sum <"$T/root.prom")$(shape "$T/root.prom")
as nobody ln -s "$T/root.prom" "$D/toroot.prom"
run "$D/toroot.prom"
expect_rc3 "a link to root's file elsewhere" "symbolic link"
[ "$(sha256sum <"$T/root.prom")$(shape "$T/root.prom")" = "$before" ] &&
    ok "root's file elsewhere is unchanged" || fail "root's file elsewhere changed: $(shape "$T/root.prom")"
[ -L "$D/toroot.prom" ] && ok "and the link is left as it is" ||
    fail "the link was replaced by $(shape "$D/toroot.prom") holding: $(head -c 300 "$D/toroot.prom")"

# A FIFO as PATH: no hang (the old fopen() waited for a writer forever).
as nobody mkfifo -m 666 "$D/fifo.prom"
run "$D/fifo.prom"
[ "$rc" != 124 ] && ok "a FIFO as PATH: no hang ($ms ms)" || fail "a FIFO as PATH: hung (killed after 20 s)"
expect_rc3 "a FIFO as PATH" "not a regular file"

# --- Item 6: PATH.lock ------------------------------------------------------
# hold LOCKFILE: nobody takes flock(LOCKFILE) and keeps it (until killed);
# 0 once it holds it, 1 if it could not open or lock it.
hold() {
    local line=
    exec 3< <(exec setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        sh -c 'exec 9<"$1" || exit 1; flock -x 9 || exit 1; echo held; exec sleep 300' sh "$1" 2>/dev/null)
    holder=$!
    read -r -t 30 line <&3
    exec 3<&-
    [ "$line" = held ]
}
unhold() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    holder=
}

# A lock file root made: 0600, nobody can neither open nor hold it.
m=$D/lock.prom
run "$m"
[ "$(shape "$m.lock")" = "0 600 regular empty file" ] && ok "root's PATH.lock is 0600" ||
    fail "root's PATH.lock: $(shape "$m.lock")"
if hold "$m.lock"; then
    fail "nobody holds flock on root's PATH.lock"
else
    ok "nobody cannot open root's PATH.lock to flock it"
fi
run "$m"
echo "     the run after nobody's try: $ms ms (exit $rc)"
[ "$ms" -lt 5000 ] && ok "not delayed by nobody ($ms ms)" || fail "root's run took $ms ms: $err"
[ "$rc" = 3 ] && ok "exit 3" || fail "exit $rc: $err"
unhold
grep -q "dlock_run_runs_total{name=\"mf-$$\"} 2" "$m" && ok "both runs written" ||
    fail "lock.prom: $(cat "$m" 2>&1)"

# A lock file of an older dlock (0644), which nobody opened and holds:
# the next run puts a 0600 one in its place, at once.
chmod 644 "$m.lock"
ino=$(stat -c %i "$m.lock")
if hold "$m.lock"; then
    run "$m"
    echo "     the run while nobody holds an old 0644 PATH.lock: $ms ms (exit $rc)"
    [ "$ms" -lt 5000 ] && ok "nobody's flock on an old PATH.lock: no 10 s wait ($ms ms)" ||
        fail "nobody's flock on an old PATH.lock: the run took $ms ms: $err"
    [ "$rc" = 3 ] && ok "exit 3" || fail "exit $rc: $err"
    [ "$(shape "$m.lock")" = "0 600 regular empty file" ] && [ "$(stat -c %i "$m.lock")" != "$ino" ] &&
        ok "a new 0600 PATH.lock took its place" || fail "the old PATH.lock: $(shape "$m.lock")"
    grep -q "dlock_run_runs_total{name=\"mf-$$\"} 3" "$m" && ok "and the run was written" ||
        fail "lock.prom after the old PATH.lock: $(cat "$m" 2>&1)"
else
    fail "nobody could not hold a 0644 PATH.lock"
fi
unhold
hold "$m.lock" && fail "nobody holds the new PATH.lock" || ok "nobody cannot open the new one"
unhold

# nobody's own PATH.lock, flock'ed: refused at once, not after 10 s.
m=$D/nlock.prom
as nobody sh -c "umask 022; : >'$m.lock'"
if hold "$m.lock"; then
    run "$m"
    echo "     the run while nobody holds its own PATH.lock: $ms ms (exit $rc)"
    [ "$ms" -lt 5000 ] && ok "nobody's held PATH.lock: no 10 s wait ($ms ms)" ||
        fail "nobody's held PATH.lock: the run took $ms ms"
    expect_rc3 "nobody's PATH.lock" "owned by uid $nobody_uid, not by you (uid 0)"
    [ -e "$m" ] && fail "written without the lock: $(shape "$m")" || ok "nothing written without the lock"
else
    fail "nobody could not hold its own $m.lock"
fi
unhold

# PATH.lock as a link to a file of root's (elsewhere) or as a FIFO.
a_file "$T/root2.prom"
before=$(sha256sum <"$T/root2.prom")$(shape "$T/root2.prom")
as nobody ln -s "$T/root2.prom" "$D/llock.prom.lock"
run "$D/llock.prom"
expect_rc3 "PATH.lock as a link" "symbolic link"
[ "$(sha256sum <"$T/root2.prom")$(shape "$T/root2.prom")" = "$before" ] &&
    ok "the file PATH.lock points to is unchanged" || fail "root2.prom changed: $(shape "$T/root2.prom")"
[ "$ms" -lt 5000 ] && ok "PATH.lock as a link: $ms ms" || fail "PATH.lock as a link: $ms ms"
as nobody mkfifo -m 666 "$D/flock.prom.lock"
run "$D/flock.prom"
expect_rc3 "PATH.lock as a FIFO" "not a regular file"

# --- The temporary copy -----------------------------------------------------
# It once was PATH.tmp, which nobody could plant: root unlinked it, but
# another user could not (sticky directory), so each of its writes
# failed.  Here daemon writes its own file while nobody has planted the
# old name, as a file and as a link to daemon's other file.
if id daemon >/dev/null 2>&1; then
    cp "$DRIVER" "$T/driver" && chmod 755 "$T/driver"
    as daemon "$T/driver" "$D/d.prom" other ran=1 exited=1 status=0 start_ms=1 end_ms=2
    as nobody sh -c "umask 0; : >'$D/d.prom.tmp'; ln -s '$D/d.prom' '$D/e.prom.tmp'"
    if err=$(as daemon "$T/driver" "$D/d.prom" x ran=1 exited=1 status=0 start_ms=1 end_ms=2 2>&1); then
        ok "a planted PATH.tmp does not stop daemon's write"
    else
        fail "a planted PATH.tmp stops daemon's write: $err"
    fi
    before=$(sha256sum <"$D/d.prom")
    if err=$(as daemon "$T/driver" "$D/e.prom" x ran=1 exited=1 status=0 start_ms=1 end_ms=2 2>&1); then
        ok "nor does PATH.tmp as a link"
    else
        fail "PATH.tmp as a link stops daemon's write: $err"
    fi
    [ "$(sha256sum <"$D/d.prom")" = "$before" ] && ok "and the file it points to is unchanged" ||
        fail "d.prom changed through the link"
    [ "$(shape "$D/d.prom.tmp")" = "$nobody_uid 666 regular empty file" ] &&
        ok "nobody's file there is left as it is" || fail "d.prom.tmp: $(shape "$D/d.prom.tmp")"
    left=$(find "$D" -name '*.????????????????.tmp')
    [ -z "$left" ] && ok "no temporary copy left behind" || fail "temporary copies left behind: $left"
elif [ "${CI:-}" = true ]; then
    fail "CI=true: no user daemon for the planted PATH.tmp case"
else
    echo "skip: no user daemon (a planted PATH.tmp)"
fi

# A rename over PATH refused with EPERM (what the sticky bit does to a
# user other than root when another user's file took PATH's place after
# the read; injected here with strace): said as such, no copy left.
if command -v strace >/dev/null; then
    err=$(ASAN_OPTIONS=detect_leaks=0 strace -f -o /dev/null -e trace=rename,renameat,renameat2 \
        -e inject=rename,renameat,renameat2:error=EPERM \
        "$DRIVER" "$T/eperm.prom" x ran=1 2>&1)
    case $err in *"cannot rename over it (Operation not permitted): in a directory with the sticky bit"*)
        ok "a rename refused with EPERM says why" ;;
    *) fail "a rename refused with EPERM: $err" ;; esac
    left=$(find "$T" -maxdepth 1 -name 'eperm.prom.*.tmp')
    [ -z "$left" ] && ok "and leaves no copy" || fail "it left $left"
elif [ "${CI:-false}" = true ]; then
    fail "no strace (scripts/deps.sh test installs it): the EPERM case cannot run"
else
    echo "skip: no strace (scripts/deps.sh test installs it)"
fi

echo "$fails failure(s)"
[ "$fails" = 0 ]
