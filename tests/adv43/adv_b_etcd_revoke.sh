#!/bin/bash
# An earlier layout's start record names its lease, and the name's next
# run moved the record and revoked that lease (runs.c revoke_quietly()).
# etcd lets a put name any lease (it checks write permission on the key
# only), so whoever may write P NAME/x \xff start (a role on NAME/, the
# sub-names of NAME) or P NAME \xff start can put there a digits start
# on the lease of another holder's key, listed by LeaseLeases (no
# permission needed).  The revoke, by a user who may write that holder's
# key, then deleted it: the holder still ran its command while a
# contender was granted the name.  Two holders.
#   adv_b_etcd_revoke.sh DLOCK URL   (the shared test server, no prefix)
# For a name with '/' (the old key in the parent's range) and one
# without (the old start in the start key itself): the holder's key
# stays, and a contender with -w 3 is not granted while it runs.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../stores/etcd/lib.sh"

etcd_setup "${1:?usage: adv_b_etcd_revoke.sh DLOCK URL}" "${2-}" python3
ff=$'\xff'
p="t43ab-$$"

for job in "$p-a/b" "$p-n"; do
    victim="$p-v-${job//\//_}"
    mkfifo "$T/up"
    "$DLOCK" -s "$URL" run --ttl 30s "$victim" -- \
        sh -c "echo up >'$T/up'; sleep 25" >"$T/h.out" 2>&1 &
    h=$!
    pids="$pids $h"
    if ! await "$T/up" 20; then
        fail "$job: the holder of $victim never started: $(cat "$T/h.out")"
        rm -f "$T/up"
        continue
    fi
    rm -f "$T/up"
    lease=$(queue "$victim" | awk 'NR == 1 {print $3}')
    [ -n "$lease" ] && [ "$lease" != 0 ] || fail "$job: no lease on $victim's key"
    # The planted earlier-layout start: digits, on the holder's lease.
    ectl put --lease="$lease" -- "$job${ff}start" 7 >/dev/null
    "$DLOCK" -s "$URL" run --once-per 1h "$job" -- true >"$T/j.out" 2>&1
    echo "   $job: dlock run --once-per exit $? ($(head -c 200 "$T/j.out"))"
    left=$(nkeys "$victim")
    [ "$left" = 1 ] && ok "$job: the holder's key of $victim is still there" ||
        fail "$job: the holder's key of $victim is gone ($left keys) while it runs: its lease was revoked by the run of $job"
    start=$(now_ms)
    timeout 20 "$DLOCK" -s "$URL" run -w 3 "$victim" -- true >"$T/c.out" 2>&1
    rc=$?
    if alive "$h"; then
        [ $rc -ne 0 ] && ok "$job: a contender for $victim was not granted while its holder ran (exit $rc)" ||
            fail "$job: a contender was granted $victim in $(($(now_ms) - start)) ms while its holder still ran its command: two holders"
    else
        fail "$job: the holder of $victim ended early: $(cat "$T/h.out")"
    fi
    kill -TERM "$h" 2>/dev/null
    wait_exit "$h" 100
    ectl del --prefix -- "$p" >/dev/null
done
finish
