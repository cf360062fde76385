#!/bin/bash
# A clock nemesis for the torture harness (its --nemesis command): the
# server's wall clock jumps forward past a lease.
#
#   clock-nemesis.sh FILE TTL_MS
#
# The server runs under libfaketime with FAKETIME_TIMESTAMP_FILE=FILE and
# FAKETIME_NO_CACHE=1, so it reads FILE ("+SECONDS", its offset from real
# time) at every clock call.  Each run adds 1.5..3 x the lease (random) to
# the offset: a forward step, as an NTP step or a VM restored from a
# snapshot makes; the clock never goes back.  The new FILE is renamed into
# place, so that the server never reads half of it.  What was done goes to
# $DLOCK_TORTURE_DIR/nemesis.log (seconds of boot clock).
set -euo pipefail
file=$1 ttl=$2
dir=${DLOCK_TORTURE_DIR:?not run by torture}

old=$(tr -d '+\n' <"$file")
jump=$(awk -v t="$ttl" -v s="$RANDOM$RANDOM" \
    'BEGIN { srand(s); printf "%.3f", t / 1000 * (1.5 + 1.5 * rand()) }')
new=$(awk -v a="$old" -v b="$jump" 'BEGIN { printf "%.3f", a + b }')
echo "+$new" >"$file.tmp"
mv -f "$file.tmp" "$file"
echo "$(cut -d" " -f1 /proc/uptime) server clock +$jump s (offset +$new s)" \
    >>"$dir/nemesis.log"
