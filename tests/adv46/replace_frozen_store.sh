#!/bin/bash
# Issue 46's adversary pass:  replace_frozen_store.sh DLOCK REDIS_URL
# A --replace holder looks for requests with a store call.  That call was
# made in run_supervise()'s own loop: with the store frozen (here a proxy
# SIGSTOPped, its connections open) it took the URL's whole timeout
# (?timeout=10s), and the loop could not stop CMD before the lease end.
# CMD ran on ~10 s under a lock another client had taken 2 s after the
# freeze.  CMD must be gone before anyone else gets the lock, as without
# --replace.
set -u
DLOCK=$1
URL=$2
HERE=$(cd "$(dirname "$0")" && pwd)
case "$URL" in
redis://127.0.0.1:*) rport=${URL#redis://127.0.0.1:}; rport=${rport%%[/?]*} ;;
*) echo "skip: needs a plain redis://127.0.0.1:PORT URL, not $URL"; exit 77 ;;
esac
T=$(mktemp -d /tmp/dlock-adv46f.XXXXXX)
px=
trap '[ -n "$px" ] && kill -CONT $px 2>/dev/null; kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
J="adv46f-$$-$RANDOM"
ok()   { echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }
now_ms() { date +%s%3N; }

for lport in $(shuf -i 30000-39999 -n 20); do
    python3 "$HERE/drop_release.py" "$lport" "$rport" plain >"$T/proxy" 2>&1 &
    px=$!
    for _ in $(seq 50); do grep -q LISTEN "$T/proxy" && break; kill -0 $px 2>/dev/null || break; sleep 0.1; done
    grep -q LISTEN "$T/proxy" && break
    wait $px 2>/dev/null
    px=
done
[ -n "$px" ] || { echo "skip: no proxy port"; exit 77; }
sep='?'
case "$URL" in *\?*) sep='&' ;; esac
PURL="redis://127.0.0.1:$lport${URL#redis://127.0.0.1:$rport}${sep}timeout=10s"

# CMD: a heartbeat (ms) every 50 ms; SIGTERM ignored, so only SIGKILL ends it.
cat >"$T/beat.sh" <<'EOF'
#!/bin/sh
trap '' TERM
while :; do date +%s%3N >"$1.t" && mv -f "$1.t" "$1"; sleep 0.05; done
EOF
chmod +x "$T/beat.sh"
DLOCK_STORE=$PURL "$DLOCK" run --replace --ttl 3 --grace 0.5 "$J" -- "$T/beat.sh" "$T/hb" \
    2>"$T/err-a" &
a=$!
for _ in $(seq 100); do [ -s "$T/hb" ] && break; sleep 0.05; done
sleep 2
tf=$(now_ms)
kill -STOP $px
tb=
for _ in $(seq 150); do
    DLOCK_STORE=$URL "$DLOCK" run -n "$J" -- true 2>/dev/null && { tb=$(now_ms); break; }
    sleep 0.1
done
sleep 0.3
hb=$(cat "$T/hb" 2>/dev/null)
[ -n "$hb" ] || { sleep 0.1; hb=$(cat "$T/hb" 2>/dev/null); }
kill -CONT $px
timeout 30 tail --pid=$a -f /dev/null
wait $a
ra=$?
if [ -z "$tb" ]; then
    fail "nobody else got the lock within 15 s of the freeze"
elif [ "$hb" -lt "$tb" ]; then
    ok "CMD gone ($((hb - tf)) ms after the freeze) before another got the lock ($((tb - tf)) ms)"
else
    fail "CMD ran on $((hb - tb)) ms after another client got the lock ($((tb - tf)) ms after the freeze; last beat at $((hb - tf)) ms)"
fi
[ "$ra" = 75 ] && ok "the holder exits 75" || fail "the holder: exit $ra, $(cat "$T/err-a")"
exit $((fails > 0))
