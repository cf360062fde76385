#!/bin/sh
# `dlock status NAME` tells held from free by its exit status, as
# `systemctl is-active` does (issue 47, trap 6): 0 held, 3 free, 64 usage,
# 69 store unreachable; the same with --json.
#   test_status_exit.sh DLOCK_BINARY STORE_URL
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-status.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
n=0
name="status-exit-$$"

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check WHAT EXPECTED ACTUAL [OUTPUT]
    if [ "$2" = "$3" ]; then ok "$1: exit $3"; else fail "$1: wanted exit $2, got $3: ${4:-}"; fi
}

out=$("$DLOCK" status "$name" 2>&1)
check "a free name" 3 $? "$out"
case $out in *": free"*) ok "it still says free" ;; *) fail "free: $out" ;; esac
out=$("$DLOCK" status "$name" --json 2>&1)
check "a free name, --json" 3 $? "$out"
case $out in *'"held":false'*) ok "--json still prints the object" ;; *) fail "free --json: $out" ;; esac

# Held: a run whose command says so on one FIFO and waits on another.
mkfifo "$T/held" "$T/go"
"$DLOCK" run "$name" -- sh -c 'echo held >"$0"; read x <"$1"' "$T/held" "$T/go" &
holder=$!
if timeout 60 head -n 1 "$T/held" >/dev/null; then
    out=$("$DLOCK" status "$name" 2>&1)
    check "a held name" 0 $? "$out"
    out=$("$DLOCK" status "$name" --json 2>&1)
    check "a held name, --json" 0 $? "$out"
    case $out in *'"held":true'*) ok "--json says held" ;; *) fail "held --json: $out" ;; esac
    # The script idiom the exit status is for.
    if "$DLOCK" status "$name" >/dev/null; then ok "if dlock status NAME: held"; else fail "if dlock status NAME"; fi
else
    fail "the holder never said it holds the lock"
fi
echo go >"$T/go"
wait $holder
check "the holder's run" 0 $?
out=$("$DLOCK" status "$name" 2>&1)
check "free again after the release" 3 $? "$out"

out=$("$DLOCK" status 2>&1)
check "no NAME" 64 $? "$out"
out=$("$DLOCK" status "$name" --bogus 2>&1)
check "an unknown option" 64 $? "$out"
out=$("$DLOCK" status "$name" extra 2>&1)
check "two names" 64 $? "$out"

# The store unreachable: the same scheme, nothing listening (SQLite: a
# directory that cannot be made).
case $STORE in
sqlite:*) dead="sqlite://$T/not-a-dir/x/y.db"; : >"$T/not-a-dir" ;;
*) dead="${STORE%%://*}://127.0.0.1:1" ;;
esac
out=$("$DLOCK" -s "$dead" status "$name" 2>&1)
check "the store unreachable" 69 $? "$out"
out=$("$DLOCK" -s "$dead" status "$name" --json 2>&1)
check "the store unreachable, --json" 69 $? "$out"

echo "$fails of $n checks failed"
[ "$fails" = 0 ]
