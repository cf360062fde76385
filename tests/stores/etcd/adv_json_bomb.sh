#!/bin/bash
# JSON that costs json-c fifty times its size (adv_gateway.py on
# 127.0.0.1): 15 MiB of nested empty arrays, under the 16 MiB reply cap,
# would take some 800 MiB of objects.  dlock counts a reply's, a watch
# message's or a value's objects and arrays before json-c builds them
# (ETCD_JSON_CONTAINERS):
#   bomb        an acquire's txn reply of 5 million arrays: a store error
#               (69) that says so;
#   watch-bomb  a waiter's watch message of 5 million arrays: a wake-up
#               (it reads the queue again), and the waiter gives up at its
#               wait's end (1).
# Each `dlock` must peak under LIMIT_MIB of memory (its own ru_maxrss,
# ASan's included: measured 20-40 MiB; json-c's 800 MiB would be far
# over).
#   adv_json_bomb.sh DLOCK
set -u
dlock=$1
here=$(cd "$(dirname "$0")" && pwd)
LIMIT_MIB=300
# ASan keeps up to 256 MiB of freed memory in quarantine, which a waiter's
# watch after watch fills: the limit is for live memory.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
fail=0
gw_pid=
holder=
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv-bomb.XXXXXX")
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
    [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
bad() { echo "FAIL: $*"; fail=1; }

start() {
    python3 "$here/adv_gateway.py" "$1" >"$dir/port" 2>"$dir/gw.err" &
    gw_pid=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.1
    done
    [ -s "$dir/port" ] || { echo "FAIL: the gateway did not start: $(cat "$dir/gw.err")"; exit 1; }
    url="etcd://127.0.0.1:$(cat "$dir/port")?timeout=5s"
}
stop() {
    kill "$gw_pid" 2>/dev/null
    wait "$gw_pid" 2>/dev/null
    gw_pid=
    rm -f "$dir/port"
}
# measured WANT_RC WHAT CMD...: CMD's exit and its peak memory (MiB).
measured() {
    local want=$1 what=$2 out rc mib
    shift 2
    out=$(timeout -k 2 60 python3 -c '
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sys.stdout.write(p.stdout.decode(errors="replace")[-400:])
print("\nrc=%d maxrss_mib=%d" % (p.returncode,
      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024))
' "$@")
    rc=$(printf '%s\n' "$out" | sed -n 's/^rc=\(-*[0-9]*\) .*/\1/p')
    mib=$(printf '%s\n' "$out" | sed -n 's/.* maxrss_mib=\([0-9]*\)$/\1/p')
    if grep -q "runtime error\|Sanitizer" <<<"$out"; then
        bad "$what: $(grep -m1 "runtime error\|Sanitizer" <<<"$out")"
    elif [ "$rc" != "$want" ]; then
        bad "$what: exit ${rc:-none}, wanted $want: $out"
    elif [ -z "$mib" ] || [ "$mib" -gt "$LIMIT_MIB" ]; then
        bad "$what: peaked at ${mib:-?} MiB (limit $LIMIT_MIB)"
    else
        echo "ok   $what: exit $rc, peak $mib MiB"
        last_out=$out
    fi
}

start bomb
last_out=
measured 69 "bomb: an acquire whose txn reply is 5 million arrays" \
    "$dlock" -s "$url" run -n adv-bomb-$$ -- true
[ -z "$last_out" ] || grep -q "objects and arrays" <<<"$last_out" ||
    bad "bomb: the message does not say why: $last_out"
stop

start watch-bomb
mkfifo "$dir/held"
"$dlock" -s "$url" run adv-wbomb-$$ -- sh -c "echo held >'$dir/held'; exec sleep 30" \
    >/dev/null 2>&1 &
holder=$!
read -r _ <"$dir/held"
measured 1 "watch-bomb: a waiter whose watch message is 5 million arrays" \
    "$dlock" -s "$url" run -w 3 adv-wbomb-$$ -- true
exit $fail
