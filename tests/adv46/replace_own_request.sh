#!/bin/bash
# Issue 46's adversary pass:  replace_own_request.sh DLOCK REDIS_URL
# A --replace run that has taken NAME over lets go of its request
# (dlock.replace/NAME); when that release fails (its command lost on a
# connection that broke: a proxy drops it), the request stays until its
# lease ends.  The new holder must not take its own leftover request for
# a newer run's and step down (it did: "taken over by a --replace run"
# naming its own pid, exit 75, the job then running nowhere).
set -u
DLOCK=$1
URL=$2
HERE=$(cd "$(dirname "$0")" && pwd)
case "$URL" in
redis://127.0.0.1:*) rport=${URL#redis://127.0.0.1:}; rport=${rport%%[/?]*} ;;
*) echo "skip: needs a plain redis://127.0.0.1:PORT URL, not $URL"; exit 77 ;;
esac
T=$(mktemp -d /tmp/dlock-adv46o.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
J="adv46o-$$-$RANDOM"
ok()   { echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }

for lport in $(shuf -i 30000-39999 -n 20); do
    python3 "$HERE/drop_release.py" "$lport" "$rport" >"$T/proxy" 2>&1 &
    px=$!
    for _ in $(seq 50); do grep -q LISTEN "$T/proxy" && break; kill -0 $px 2>/dev/null || break; sleep 0.1; done
    grep -q LISTEN "$T/proxy" && break
    wait $px 2>/dev/null
done
grep -q LISTEN "$T/proxy" || { echo "skip: no proxy port"; exit 77; }
PURL="redis://127.0.0.1:$lport${URL#redis://127.0.0.1:$rport}"

# The running holder, straight to the server.
DLOCK_STORE=$URL "$DLOCK" run --replace --grace 1 "$J" -- sleep 100 2>"$T/err-a" &
a=$!
for _ in $(seq 100); do
    DLOCK_STORE=$URL "$DLOCK" status "$J" 2>/dev/null | grep -q "held" && break
    sleep 0.1
done
# The replacer, through the proxy: its request's release is dropped.
DLOCK_STORE=$PURL timeout 60 "$DLOCK" run --replace -w 20 "$J" -- sleep 4 2>"$T/err-b"
rb=$?
wait $a
ra=$?
grep -q DROPPED "$T/proxy" && ok "the request's release was dropped" ||
    fail "the proxy dropped nothing (the test did not test): $(cat "$T/proxy")"
[ "$ra" = 75 ] && ok "the old run stepped down (75)" || fail "the old run: exit $ra"
[ "$rb" = 0 ] && ok "the new run ran its CMD to the end (0)" ||
    fail "the new run: exit $rb, $(cat "$T/err-b")"
exit $((fails > 0))
