#!/bin/bash
# The fence on etcd is the holder key's create revision, strictly
# increasing across the acquires of one name (issue 38):
#   test_etcd_fence.sh DLOCK URL
# 5 acquires of NAME, with other writes (another key) and an `etcdctl
# lock NAME` between them: in each, DLOCK_FENCE = the create_revision
# etcd shows for the only key under NAME/ (etcdctl get -w json), and =
# `dlock status NAME --json`'s fence; each fence is above the one before.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
etcd_setup "${1:?usage: test_etcd_fence.sh DLOCK URL}" "${2-}" python3
name="fence-$$"
prev=0
export EPS
for r in 1 2 3 4 5; do
    # shellcheck disable=SC2016 # for sh -c
    "$DLOCK" -s "$URL" run -w 5 "$name" -- sh -c \
        'echo "$DLOCK_FENCE" >"$0"; timeout 15 etcdctl --endpoints="$EPS" get "$1/" --prefix -w json >"$0.json"; "$2" -s "$3" status "$1" --json >"$0.st"' \
        "$T/f.$r" "$name" "$DLOCK" "$URL" >"$T/d.$r" 2>&1
    rc=$?
    if [ "$rc" != 0 ]; then
        fail "round $r: dlock run exit $rc: $(cat "$T/d.$r")"
        continue
    fi
    fence=$(cat "$T/f.$r")
    revs=$(python3 -c '
import json, sys
print(" ".join(str(kv["create_revision"]) for kv in json.load(open(sys.argv[1])).get("kvs", [])))' "$T/f.$r.json")
    stf=$(sed -n 's/.*"fence":"\([0-9]*\)".*/\1/p' "$T/f.$r.st")
    if [ "$fence" = "$revs" ] && [ "$stf" = "$fence" ]; then
        ok "round $r: DLOCK_FENCE $fence = the key's create_revision = status's fence"
    else
        fail "round $r: DLOCK_FENCE '$fence', create_revision(s) '$revs', status's fence '$stf'"
    fi
    case $fence in
    '' | *[!0-9]*) fail "round $r: fence '$fence' is not a number" ;;
    *)
        [ "$fence" -gt "$prev" ] && ok "round $r: $fence > $prev" ||
            fail "round $r: fence $fence not above $prev"
        prev=$fence
        ;;
    esac
    # Other writes between acquires: the fence is no counter of its own.
    ectl put "other-$$" "$r" >/dev/null || fail "put other-$$"
    [ "$r" = 3 ] && { timeout 30 etcdctl --endpoints="$EPS" lock "$name" -- true >/dev/null 2>&1 ||
        fail "etcdctl lock $name -- true failed"; }
done
ectl del "other-$$" >/dev/null
finish
