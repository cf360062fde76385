#!/bin/bash
# Runs kept per name on etcd (dlock_keep_runs(), src/stores/etcd/runs.c):
#  - a name keeps up to the store's cap (500: its runs are one value that
#    each run rewrites whole): keep 501 or 10,000 is DLOCK_EINVAL with a
#    message naming the cap; 520 runs with keep 500 leave exactly 500,
#    the newest first, and the value stays under etcd's request limit;
#  - a keep key planted with what dlock cannot have written (0, -1, a
#    huge number, 501, 10,000, a string, a fraction, not JSON, not an
#    object) reads as the default (20) and the runs keep to it, never
#    sized by it (the test build runs under ASan/UBSan).
#   test_etcd_keep.sh KEEP_TOOL URL
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
etcd_setup "$1" "$2"
TOOL=$DLOCK
base=keep-$$-$(date +%s)

if "$TOOL" "$URL" fill "$base-fill"; then
    ok "fill: the cap holds, more refused"
else
    fail "fill"
fi
# The one value they are, read back: under etcd's --max-request-bytes
# (1.5 MiB) with room (a typical host: some 75 KB).
size=$(ectl get --print-value-only -- "$base-fill"$'\xff'runs | wc -c)
if [ "$size" -gt 1000 ] && [ "$size" -lt 1048576 ]; then
    ok "500 runs are one value of $size bytes"
else
    fail "500 runs are one value of $size bytes"
fi
if "$TOOL" "$URL" lower "$base-fill"; then
    ok "lowered: the newest stay"
else
    fail "lower"
fi

# plant NAME VALUE: put VALUE (raw bytes) at NAME's keep key.
plant() {
    local first=${1%%/*} rest=
    [ "$first" != "$1" ] && rest=/${1#*/}
    ectl put -- "$first"$'\xff'"keep$rest" "$2" >/dev/null
}
i=0
for v in '{"keep":0}' '{"keep":-1}' '{"keep":100000000000000000000000}' \
    '{"keep":501}' '{"keep":10000}' '{"keep":"5"}' '{"keep":5.5}' \
    '{"keep":null}' $'not json \xff' '[5]' '5' '{}'; do
    i=$((i + 1))
    name=$base-planted-$i
    [ $((i % 2)) = 0 ] && name=$base/planted/$i
    if ! plant "$name" "$v"; then
        fail "etcdctl put of $name's keep key"
        continue
    fi
    if "$TOOL" "$URL" planted "$name"; then
        ok "planted $(printf '%s' "$v" | LC_ALL=C tr -c '[:print:]' '?'): the default"
    else
        fail "planted $v"
    fi
done
finish
