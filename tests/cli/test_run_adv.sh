#!/bin/bash
# dlock run, its lock broken while CMD runs, where /proc shows nothing
# (a sandbox or chroot without it; here a mount namespace of dlock's
# own, where CMD puts an empty tmpfs on /proc): what CMD started in its own process group, a job that
# ignores SIGTERM, must still be gone when dlock exits 75.  Without /proc
# the subreaper's walk finds no descendants; the process group is still
# there to kill, as dlock did before the walk existed (issue 34, item 6,
# adversarial review).
#
#   test_run_adv.sh DLOCK STORE_URL
#
# STORE_URL: a network store (SQLite refuses to judge leases without
# /proc).
#
# Root only (a mount namespace): 77 when not root, except with CI=true.
set -u
DLOCK=$(realpath "$1")
url=$2
skip() {
    echo "SKIP: $*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root"
command -v unshare >/dev/null || skip "no unshare"
unshare -m true 2>/dev/null || skip "unshare -m refused"
T=$(mktemp -d /tmp/dlock-run-adv.XXXXXX)
stubborn=
cleanup() {
    [ -n "$stubborn" ] && kill -9 "$stubborn" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
name="run-adv-$$"
mkfifo "$T/pids"
cat >"$T/cmd.sh" <<'EOS'
# /proc goes (dlock's mount namespace only) once dlock has started: a
# sanitizer build reads its options from /proc at start.
mount -t tmpfs none /proc || exit 9
# A job in CMD's group that ignores SIGTERM, reporting its pid.
sh -c 'trap "" TERM; echo "$$" >"$1"; while :; do sleep 0.05; done' \
    stubborn "$1" &
wait
EOS
# Not a terminal's job: CMD gets a process group of its own.
# (LeakSanitizer, in a sanitizer build, cannot work without /proc.)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    unshare -m "$DLOCK" -s "$url" run --ttl 3 "$name" -- \
    sh "$T/cmd.sh" "$T/pids" </dev/null 2>"$T/err" &
dpid=$!
exec 8<>"$T/pids"
if ! read -r -t 30 stubborn <&8; then
    echo "FAIL the command did not start: $(cat "$T/err")"
    kill "$dpid" 2>/dev/null
    exit 1
fi
"$DLOCK" -s "$url" release --force "$name" >/dev/null 2>&1 ||
    { echo "FAIL release --force"; fails=$((fails + 1)); }
wait "$dpid"
rc=$?
if [ "$rc" = 75 ]; then
    echo "ok   dlock exited 75"
else
    echo "FAIL dlock exited $rc, not 75: $(cat "$T/err")"
    fails=$((fails + 1))
fi
st=$(sed 's/.*) \(.\).*/\1/' "/proc/$stubborn/stat" 2>/dev/null)
if [ -z "$st" ] || [ "$st" = Z ]; then
    echo "ok   the job that ignores SIGTERM is gone"
    stubborn=
else
    echo "FAIL the job that ignores SIGTERM (pid $stubborn, state $st) runs on after dlock exited"
    fails=$((fails + 1))
fi
[ "$fails" = 0 ]
