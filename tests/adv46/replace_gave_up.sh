#!/bin/bash
# Issue 46's adversary pass (an open hole, fails until it is fixed):
#   replace_gave_up.sh DLOCK STORE_URL
# A --replace run whose -w ends before the holder has let go (its CMD
# takes its grace period to end) gives up, exit 1; its request had
# already made the holder step down (75).  The job then does not run at
# all: the old run stopped, the new never started.  Either the new run
# must run, or the old one must not be stopped.
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
sleep 5
if [ -s "$T/b" ]; then
    ok "the replacing run ran"
elif kill -0 $a 2>/dev/null; then
    ok "the replacer gave up (exit $rb) and the running job goes on"
else
    wait $a
    fail "the replacer gave up (exit $rb) after its request stopped the running job (exit $?): the job ran nowhere"
fi
exit $((fails > 0))
