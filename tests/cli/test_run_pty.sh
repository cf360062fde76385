#!/bin/sh
# dlock run as the foreground job of a terminal, its lock broken from
# outside: what the command started (a background job, a setsid +
# double-forked daemon, a job that ignores SIGTERM) must be gone when
# dlock exits 75, as outside a terminal (issue 34, item 6).
#
#   test_run_pty.sh DLOCK STORE_URL
#
# The work is tests/cli/pty_run.py (a pseudo-terminal, an interactive
# shell's job control, the pids the programs report through a FIFO).
set -u
DLOCK=$1
STORE=$2
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/dlock-run-pty.XXXXXX)
trap 'rm -rf "$T"' EXIT
command -v python3 >/dev/null || { echo "no python3" >&2; exit 1; }
python3 "$here/pty_run.py" "$DLOCK" "$STORE" "run-pty-$$" "$T"
