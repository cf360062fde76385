#!/bin/bash
# etcd run records at P FIRST \xff runs|start [/REST]: names that begin
# or end with '/', doubled '/', a name and its parent.  Each name's
# --once is its own (one name's success skips no other), history names
# each, and after all of them `etcdctl lock` of every parent (the
# prefixes of each name up to a '/') is granted at once.
#   adv_b_etcd_names.sh DLOCK URL   (the shared test server, no prefix)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../stores/etcd/lib.sh"

etcd_setup "${1:?usage: adv_b_etcd_names.sh DLOCK URL}" "${2-}"
p="t43an$$"
names=("$p" "$p/" "$p//" "$p/a" "$p/a/" "$p//a" "/$p" "/$p/" "/$p/a" "$p/a/b" "${p}a")
for nm in "${names[@]}"; do
    out=$("$DLOCK" -s "$URL" run --once "$nm" -- echo ran 2>&1)
    [ "$out" = ran ] && ok "'$nm': --once ran" || fail "'$nm': --once did not run: $out"
done
for nm in "${names[@]}"; do
    out=$("$DLOCK" -s "$URL" run --once "$nm" -- echo ran 2>&1)
    [ "$out" != ran ] && ok "'$nm': a second --once skipped" ||
        fail "'$nm': a second --once ran"
    h=$("$DLOCK" -s "$URL" history "$nm" 2>&1)
    [ "$(echo "$h" | grep -c 'exited 0')" = 1 ] && ok "'$nm': history has its one run" ||
        fail "'$nm': history: $(echo "$h" | head -3)"
    echo "$h" | grep -o 'fence [0-9]*' >>"$T/fences"
done
[ "$(sort -u "$T/fences" | wc -l)" = "${#names[@]}" ] &&
    ok "each name's history is its own run (${#names[@]} fences)" ||
    fail "histories share runs: $(sort "$T/fences" | uniq -c | tr '\n' ' ')"
for nm in "${names[@]}"; do
    rest=$nm
    while [[ $rest == */* ]]; do
        rest=${rest%/*}
        timeout 10 etcdctl --endpoints="$EPS" lock "$rest" -- true >/dev/null 2>&1 ||
            fail "etcdctl lock '$rest' (a parent of '$nm') not granted in 10 s"
    done
done
ok "etcdctl lock of every parent came back"
ectl del --prefix -- "$p" >/dev/null
ectl del --prefix -- "/$p" >/dev/null
finish
