#!/bin/bash
# issue 43 item 4, a documented limit and its remedy: an etcd user with
# no role at all keeps a dead holder's lease alive (etcd 3.4/3.5 check no
# permission on LeaseLeases or LeaseKeepAlive), so the lock stays held;
# `dlock release --force NAME` by a user who may write the prefix breaks
# it while the hostile keepalive still runs, and a waiting contender gets
# the lock at once (docs/threat-model.md, "lease keepalives"):
#   etcd_keepalive.sh DLOCK
# Starts its own etcd on loopback (scripts/server-etcd.sh), auth enabled:
# root, `dlk` (a role with readwrite on the test's prefix only) and
# `nobody43` (no role), who may neither read the prefix nor revoke a
# holder's lease.  2 rounds: a holder (`dlock run --ttl 2`) killed
# with kill -9, `nobody43` finds its lease with `etcdctl lease list` and
# keeps it alive; a contender (`dlock run -w 20`) waits; 4.5 s after the
# kill (2 s TTL + 1 s rounding + etcd's tick + slack: the key would have
# gone by then) it must still wait and the key still be there (the
# limit: printed, not a failure, should a later etcd check the keepalive),
# then `release --force` and the contender must run its command within
# 3 s, with the hostile keepalive still running.
DLOCK=${1:?usage: etcd_keepalive.sh DLOCK}
here=$(cd "$(dirname "$0")" && pwd)
SCRIPTS=$(cd "$here/../../scripts" && pwd)
. "$here/../stores/etcd/lib.sh"
command -v etcdctl >/dev/null 2>&1 || skip "no etcdctl (scripts/deps.sh test)"
command -v etcd >/dev/null 2>&1 || skip "no etcd (scripts/deps.sh test)"
[ -x "$DLOCK" ] || skip "no dlock binary at $DLOCK"
T=$(mktemp -d /tmp/dlock-etcd-ka.XXXXXX)
S=$(mktemp -d /tmp/dlock-etcd-ka-srv.XXXXXX)
# etcd_cleanup (lib.sh) ends the clients and removes $T; then the server.
trap 'etcd_cleanup; "$SCRIPTS/server-etcd.sh" stop "$S" >/dev/null 2>&1; rm -rf "$S"' EXIT
trap 'exit 130' INT TERM
base=$("$SCRIPTS/server-etcd.sh" start "$S") || skip "cannot start etcd"
hostport=${base#etcd://}
EPS="http://$hostport"
PFX="ka43/"
sctl() { timeout 15 etcdctl --endpoints="$EPS" --dial-timeout=3s \
    --command-timeout=5s "$@"; }
{
    sctl user add root --new-user-password=root-pw --interactive=false &&
    sctl user grant-role root root &&
    sctl auth enable &&
    sctl --user root:root-pw role add dlk43 &&
    sctl --user root:root-pw role grant-permission dlk43 --prefix=true \
        readwrite "$PFX" &&
    sctl --user root:root-pw user add dlk --new-user-password=dlk-pw \
        --interactive=false &&
    sctl --user root:root-pw user grant-role dlk dlk43 &&
    sctl --user root:root-pw user add nobody43 --new-user-password=nb-pw \
        --interactive=false
} >"$T/setup.out" 2>&1 || { fail "etcd auth setup: $(cat "$T/setup.out")"; finish; exit; }
URL="etcd://dlk:dlk-pw@$hostport?prefix=$PFX"
ectl() { sctl --user root:root-pw "$@"; }
# The keys of NAME (under the prefix), one "KEY CREATE_REV LEASE_HEX" a
# line, as lib.sh's queue() (root reads them).
kq() { queue "$PFX$1"; }
mkfifo "$T/held" "$T/got"
# The no-role user's rights: no key of the prefix (refused).
if sctl --user nobody43:nb-pw get "$PFX" --prefix >"$T/nr.out" 2>&1; then
    fail "nobody43 read the prefix: $(cat "$T/nr.out")"
else
    ok "nobody43 may not read the prefix (refused)"
fi
for r in 1 2; do
    name="ka-$$-$r"
    "$DLOCK" -s "$URL" run --ttl 2 "$name" -- \
        sh -c 'echo $$ >"$0"; echo x >"$1"; exec sleep 600' "$T/cmd.$r" \
        "$T/held" >"$T/h.$r" 2>&1 &
    H=$!
    pids="$pids $H"
    await "$T/held" 20 || fail "round $r: the holder never ran: $(cat "$T/h.$r")"
    lease=$(kq "$name" | head -1 | cut -d' ' -f3)
    [ -n "$lease" ] || fail "round $r: no key of the holder's: $(kq "$name")"
    # nobody43 lists every lease, and keeps the holder's alive.
    if sctl --user nobody43:nb-pw lease list 2>&1 | grep -qi "$lease"; then
        ok "round $r: nobody43 lists the holder's lease $lease"
    else
        fail "round $r: nobody43 does not see lease $lease"
    fi
    # It may not revoke it (etcd checks write permission on the keys).
    if sctl --user nobody43:nb-pw lease revoke "$lease" >"$T/rv.$r" 2>&1; then
        fail "round $r: nobody43 revoked the holder's lease: $(cat "$T/rv.$r")"
    elif [ "$(kq "$name" | head -1 | cut -d' ' -f3)" = "$lease" ]; then
        ok "round $r: nobody43 may not revoke it; the holder's key stays"
    else
        fail "round $r: the holder's key went: $(kq "$name" | tr '\n' ' ')"
    fi
    timeout 120 etcdctl --endpoints="$EPS" --user nobody43:nb-pw \
        lease keep-alive "$lease" >"$T/ka.$r" 2>&1 &
    K=$!
    pids="$pids $K"
    until_true "grep -q 'keepalived' \"$T/ka.$r\"" 100 ||
        fail "round $r: nobody43's keepalive: $(head -3 "$T/ka.$r")"
    kill -KILL "$H"
    c=$(cat "$T/cmd.$r" 2>/dev/null)
    [ -n "$c" ] && kill -KILL "$c" 2>/dev/null
    wait "$H" 2>/dev/null
    t0=$(now_ms)
    "$DLOCK" -s "$URL" run -w 20 "$name" -- sh -c 'echo x >"$0"' "$T/got" \
        >"$T/w.$r" 2>&1 &
    W=$!
    pids="$pids $W"
    # Past when the dead holder's key would have gone without nobody43.
    until_true "[ \$((\$(now_ms) - $t0)) -ge 4500 ]" 100
    if alive "$W" && [ "$(kq "$name" | head -1 | cut -d' ' -f3)" = "$lease" ]; then
        echo "     round $r: limit (documented): the dead holder's key is still there 4.5 s after its kill -9, kept by nobody43"
    else
        echo "     round $r: note: the dead holder's key went without the remedy (etcd checks keepalives now? update docs/threat-model.md)"
    fi
    alive "$K" || fail "round $r: nobody43's keepalive ended: $(tail -3 "$T/ka.$r")"
    t1=$(now_ms)
    if "$DLOCK" -s "$URL" release --force "$name" >"$T/f.$r" 2>&1; then
        ok "round $r: release --force by dlk: $(tr '\n' ' ' <"$T/f.$r")"
    else
        fail "round $r: release --force: $(cat "$T/f.$r")"
    fi
    if await "$T/got" 3; then
        ok "round $r: the contender ran its command $(($(now_ms) - t1)) ms after release --force, nobody43's keepalive still running"
    else
        fail "round $r: the contender did not get the lock within 3 s of release --force: $(tr '\n' ' ' <"$T/w.$r")"
    fi
    alive "$K" || fail "round $r: nobody43's keepalive ended before the contender got the lock"
    wait_exit "$W" 100
    [ "$rc" = 0 ] || fail "round $r: the contender exited $rc: $(cat "$T/w.$r")"
    kill "$K" 2>/dev/null
    wait "$K" 2>/dev/null
done
finish
