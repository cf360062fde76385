#!/bin/bash
# The front page's 30-second tour, run exactly as README.md writes it:
#
#   tests/docs/tour.sh BUILD_DIR README.md
#
# It runs in a directory of its own whose build/ is BUILD_DIR (the tour
# starts with export PATH="$PWD/build:$PATH", as after `make demo`), on a
# store of its own (DLOCK_STORE), and checks what each step says it does.
set -u
build=$(cd "${1:?usage: tour.sh BUILD_DIR README.md}" && pwd)
readme=${2:?usage: tour.sh BUILD_DIR README.md}
dir=$(mktemp -d /tmp/dlock-tour.XXXXXX)
trap 'rm -rf "$dir"' EXIT
ln -s "$build" "$dir/build"
awk '/^## 30-second tour/ { f = 1 }
     f && /^```sh/ { g = 1; next }
     g && /^```/ { exit }
     g' "$readme" >"$dir/tour.sh"
[ -s "$dir/tour.sh" ] || { echo "FAIL: no sh block after '## 30-second tour' in $readme"; exit 1; }
cd "$dir" || exit 1
out=$(DLOCK_STORE="sqlite://$dir/tour.db" timeout 60 bash tour.sh 2>&1)
rc=$?
echo "$out"
fail=0
expect() {
    if printf '%s\n' "$out" | grep -qE -- "$1"; then
        echo "PASS $2"
    else
        echo "FAIL $2 (no line matching '$1')"
        fail=1
    fi
}
expect '^backing up, fence [0-9]+$' "a plain run runs its command with DLOCK_FENCE"
expect '^exit 1$' "-n on a held lock exits 1 at once"
expect '^exit 0$' "-w 2 -E 0 gives up quietly"
expect '^backup: held by .* pid [0-9]+ since ' "status names the holder"
expect '"name":"backup","held":true' "list --json shows the held lock"
expect "^backup: broken \(1 holder removed\)" "release --force breaks it"
expect "lock 'backup' was lost; stopping the command" "the broken holder stops its command"
# The last exit line is the broken holder's (wait $pid): 75, as the
# tour promises (a bare `wait` said 0).
last=$(printf '%s\n' "$out" | grep -E '^exit [0-9]+$' | tail -n 1)
if [ "$last" = "exit 75" ]; then
    echo "PASS the broken holder's dlock exits 75"
else
    echo "FAIL the broken holder's dlock: '$last', not 'exit 75'"
    fail=1
fi
if printf '%s\n' "$out" | grep -qE '^exit [0-9]+$' &&
    [ "$(printf '%s\n' "$out" | grep -E '^exit [0-9]+$' | sed -n 3p)" = "exit 0" ]; then
    echo "PASS status of a held lock exits 0"
else
    echo "FAIL status of a held lock: $(printf '%s\n' "$out" | grep -E '^exit [0-9]+$' | tr '\n' ' ')"
    fail=1
fi
expect "^dlock: run: 'report' already ran at " "--once-per skips the second run"
expect '^exited 0 on host ' "history shows the run"
expect '^dlock_job_last_exit_status\{name="report",host="[^"]+"\} 0$' "metrics shows the run's exit status"
expect '^dlock_metrics_scrape_ok 1$' "metrics says the store was read"
expect "^dlock: run: 'report' is suspended by [^ ]+@[^ ]+ at [0-9T:.Z-]+: db2 in maintenance" "a suspended job's run skips and says who, when, why"
expect '^report: resumed \(was suspended by ' "resume says what it lifted"
expect '^stopped: exit 124$' "--max-runtime stops the command, exit 124"
if [ $rc -ne 0 ]; then echo "FAIL the tour exited $rc"; fail=1; fi
exit $fail
