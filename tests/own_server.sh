#!/bin/bash
# Run one ctest entry on a throwaway server (or topology) of its own, so
# that an entry which restarts, kills, stops, fails over or reconfigures
# its server need not run alone (RUN_SERIAL) to keep it from the entries
# that share make test's servers.
#
#   own_server.sh SCRIPT START VAR CMD [ARG...]
#   own_server.sh --stop-all ROOT   stop every server left in ROOT (what
#                                   scripts/servers.sh does at its end)
#
# SCRIPT is a scripts/server-*.sh and START its start command (start,
# start-cluster, start-tls).  The server is started in a fresh dir;
# DLOCK_TEST_<VAR>_URL and DLOCK_TEST_<VAR>_DIR name it (as
# scripts/servers.sh names make test's own) while CMD runs.  CMD runs in a
# process group of its own with the default signal dispositions; when it
# ends, or this script is stopped (TERM, INT, HUP: ctest's timeout), the
# whole group is ended first (TERM, then KILL after 5 s: no nemesis can
# restart the server after its stop), then the server is stopped and its
# dir removed.  The exit status is CMD's (77, "skipped", included).  A
# server that does not start is 1 with CI=true, else 77, with the script's
# output.
#
# Where: under scripts/test.sh, DLOCK_OWN_SERVERS (its temp dir's own/),
# whose end stops whatever is left there; otherwise /tmp/dlock-own-UID, a
# dir this user owns.  What a SIGKILLed wrapper left (ctest kills at a
# timeout, and the server, a daemon, outlives it) is stopped by the next
# wrapper's start: each dir names its wrapper (pid and start time) and its
# server script.
set -euo pipefail
usage="usage: own_server.sh SCRIPT START VAR CMD [ARG...]"

# proc_start PID: the process's start time (field 22 of /proc/PID/stat),
# empty when there is no such process or it has ended (a zombie: where
# pid 1 is slow to reap, an orphan stays one for seconds).
proc_start() {
    sed -n 's/^[0-9]* (.*) [^ZX] \(.*\)$/\1/p' "/proc/$1/stat" 2>/dev/null |
        cut -d' ' -f19
}

# sweep ROOT EVERY: stop the server of each dir in ROOT and remove the dir:
# every one (EVERY=1), or only those whose wrapper is gone.
sweep() {
    local d opid ostart
    for d in "$1"/dlock-own.*; do
        [ -f "$d/script" ] || continue
        if [ "$2" != 1 ]; then
            [ -f "$d/owner" ] || continue
            read -r opid ostart <"$d/owner" || continue
            [ -n "$opid" ] && [ "$(proc_start "$opid")" = "$ostart" ] && continue
        fi
        "$(cat "$d/script")" stop "$d/srv" >/dev/null 2>&1 || true
        rm -rf "$d"
    done
}

if [ "${1:-}" = --stop-all ]; then
    sweep "${2:?$usage}" 1
    exit 0
fi
script=$(realpath "${1:?$usage}")
start=${2:?$usage}
var=${3:?$usage}
shift 3
[ $# -gt 0 ] || { echo "own_server.sh: no command" >&2; exit 2; }

root=${DLOCK_OWN_SERVERS:-/tmp/dlock-own-$(id -u)}
mkdir -p -m 755 "$root"
if [ -L "$root" ] || [ ! -O "$root" ]; then
    echo "own_server.sh: $root is not a directory of this user's own" >&2
    exit 1
fi
sweep "$root" 0 # the leftovers of wrappers that are gone

dir=$(mktemp -d "$root/dlock-own.XXXXXX")
child=
cleanup() {
    local i
    trap '' TERM INT HUP
    if [ -n "$child" ]; then
        kill -TERM -- "-$child" 2>/dev/null || true
        for i in $(seq 1 500); do
            kill -0 -- "-$child" 2>/dev/null || break
            sleep 0.01
        done
        kill -KILL -- "-$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    "$script" stop "$dir/srv" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP
echo "$$ $(proc_start $$)" >"$dir/owner"
echo "$script" >"$dir/script"
mkdir "$dir/srv"
chmod 755 "$dir" "$dir/srv" # PostgreSQL runs as its own user (root)
if ! url=$("$script" "$start" "$dir/srv" 2>"$dir/start.log"); then
    cat "$dir/start.log" >&2
    echo "own_server.sh: $script $start did not start a server" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
export "DLOCK_TEST_${var}_URL=$url" "DLOCK_TEST_${var}_DIR=$dir/srv"
# The URL without its password (never printed).
echo "== own server: $(sed -E 's#://([^:/@]*):[^@]*@#://\1:***@#' <<<"$url")"
rc=0
# Job control: CMD in a process group of its own, SIGINT and SIGQUIT not
# ignored (as a background job without it would have them).
set -m
"$@" &
child=$!
set +m
wait "$child" || rc=$?
exit "$rc"
