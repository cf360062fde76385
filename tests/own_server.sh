#!/bin/bash
# Run one ctest entry on a throwaway server (or topology) of its own, so
# that an entry which restarts, kills, fails over or reconfigures its server
# need not run alone (RUN_SERIAL) to keep it from the entries that share
# make test's servers.
#
#   own_server.sh SCRIPT START VAR CMD [ARG...]
#
# SCRIPT is a scripts/server-*.sh and START its start command (start,
# start-cluster, start-tls).  The server is started in a fresh temp dir;
# DLOCK_TEST_<VAR>_URL and DLOCK_TEST_<VAR>_DIR name it (as
# scripts/servers.sh names make test's own) while CMD runs; it is stopped
# and its dir removed when CMD ends, or when this script is stopped (ctest's
# timeout).  The exit status is CMD's (77, ctest's "skipped", included).
# A server that does not start is exit 1 with the script's output (and 77
# outside CI, as a store that cannot be tested is everywhere else).
set -euo pipefail
script=${1:?usage: own_server.sh SCRIPT START VAR CMD [ARG...]}
start=${2:?usage: own_server.sh SCRIPT START VAR CMD [ARG...]}
var=${3:?usage: own_server.sh SCRIPT START VAR CMD [ARG...]}
shift 3
[ $# -gt 0 ] || { echo "own_server.sh: no command" >&2; exit 2; }
# Under scripts/test.sh, in DLOCK_OWN_SERVERS (its temp dir's own/): what
# a SIGKILL of this script leaves running (ctest kills at a timeout), the
# script's own end stops (DIR/script names the server script).
root=${DLOCK_OWN_SERVERS:-/tmp}
mkdir -p "$root"
dir=$(mktemp -d "$root/dlock-own.XXXXXX")
mkdir "$dir/srv"
chmod 755 "$root" "$dir" "$dir/srv" # PostgreSQL runs as its own user (root)
realpath "$script" >"$dir/script"
child=
cleanup() {
    [ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true
    "$script" stop "$dir/srv" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
if ! url=$("$script" "$start" "$dir/srv" 2>"$dir/start.log"); then
    cat "$dir/start.log" >&2
    echo "own_server.sh: $script $start did not start a server" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
export "DLOCK_TEST_${var}_URL=$url" "DLOCK_TEST_${var}_DIR=$dir/srv"
# The URL without its password (never printed).
echo "== own server: $(sed 's#://\([^:@/]*\):[^@/]*@#://\1:***@#' <<<"$url")"
rc=0
"$@" &
child=$!
wait "$child" || rc=$?
child=
exit "$rc"
