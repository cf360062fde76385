#!/bin/bash
# OPEN (registered DISABLED in cli.cmake): docs/cli.md promises that
# run --json's object "is the last line" of stdout, but a CMD whose
# output does not end in a newline (printf abc) gets the object glued to
# its last line: `tail -n1 | jq` reads "abc{...}", not JSON.
#   json_last_line.sh DLOCK URL
set -u
dlock=$1 url=$2
export DLOCK_STORE=$url
last=$("$dlock" run --json adv47-ll printf abc | tail -n1)
if printf '%s' "$last" | python3 -c 'import json,sys; json.load(sys.stdin)' 2>/dev/null; then
    echo "ok   the last line is the object"
    exit 0
fi
echo "FAIL: the last line is not JSON: $last"
exit 1
