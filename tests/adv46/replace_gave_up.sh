#!/bin/bash
# Issue 46's adversary pass:  replace_gave_up.sh DLOCK STORE_URL
# A --replace run whose -w ended before the holder had let go (its CMD
# takes its grace period to end) gave up, exit 1, after its request had
# made the holder step down (75): the job ran nowhere.  -w now bounds
# the wait for the request only; once asked, the new run follows the
# holder that steps down, however long its grace.
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-adv46g.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
J="adv46g-$$-$RANDOM"
ok()   { echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }

cat >"$T/slow.sh" <<'EOF'
#!/bin/sh
# Ends 3 s after SIGTERM (a job that cleans up).
trap 'sleep 3; exit 0' TERM
echo started >"$1"
while :; do sleep 0.1; done
EOF
chmod +x "$T/slow.sh"
"$DLOCK" run --replace --grace 5 "$J" -- "$T/slow.sh" "$T/a" 2>"$T/err-a" &
a=$!
for _ in $(seq 100); do [ -s "$T/a" ] && break; sleep 0.05; done
"$DLOCK" run --replace -w 1.5 "$J" -- sh -c "echo ran >'$T/b'" 2>"$T/err-b"
rb=$?
if [ "$rb" = 0 ] && [ -s "$T/b" ]; then
    ok "the replacing run ran, after the holder's 3 s clean-up"
else
    fail "the replacer exited $rb without running: $(cat "$T/err-b")"
fi
wait $a
ra=$?
[ "$ra" = 75 ] && ok "the replaced run exits 75" || fail "the replaced run exited $ra"
exit $((fails > 0))
