#!/bin/bash
# Issue 43 items 14 and 15, against a hostile gateway of the test's own
# (etcd_http_gateway.py on 127.0.0.1):
# 14. A gateway that echoes part of the password in an error message (the
#     second half, the first, a third, reversed, in base64, inside other
#     words) got that part printed: the scrubber hid the whole password
#     only.  None of it may reach dlock's output, at the login or at a
#     later request; etcd's own words ("etcdserver: permission denied")
#     are still shown.
# 15. A gateway that answers the login with Unauthenticated made dlock log
#     in again and again until the deadline, and print "Operation timed
#     out".  One login per call (a second only to renew a token a request
#     was refused for), and the real error shown, at once.
#   etcd_http_auth.sh DLOCK echo|relogin    (item 14 | item 15)
set -u
dlock=$1 part=${2:?usage: etcd_http_auth.sh DLOCK echo|relogin}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || {
    echo "no python3"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv43-auth.XXXXXX")
gw=
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
    [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
fails=0 n=0
ok() { n=$((n + 1)); echo "ok   $*"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $*"; }
pw=Zq7xWv3kPm9tRb2yHc4n
start() { # MODE ARG: the gateway, its port in $port
    [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null
    : >"$dir/log"
    rm -f "$dir/port"
    python3 "$here/etcd_http_gateway.py" "$1" "$2" "$dir/log" >"$dir/port" \
        2>"$dir/gw.err" &
    gw=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.1 # polling the gateway's start: no event to wait on
    done
    [ -s "$dir/port" ] || {
        echo "FAIL the gateway did not start: $(cat "$dir/gw.err")"
        exit 1
    }
    port=$(cat "$dir/port")
}
# run URL: `dlock status x`, bounded; $rc, $ms, $out, $logins.
run() {
    local t0
    : >"$dir/log"
    t0=$(date +%s%N)
    timeout -k 2 30 "$dlock" -s "$1" status x >"$dir/out" 2>&1 </dev/null
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    out=$(tr '\n' ' ' <"$dir/out" | head -c 500)
    logins=$(grep -c /v3/auth/authenticate "$dir/log")
}

# --- 14: fragments of the password echoed ---------------------------------
if [ "$part" = echo ]; then
b64() { printf '%s' "$1" | base64 | tr -d '\n'; }
half2=${pw:10} half1=${pw:0:10} third=${pw:7:7} rev=$(printf '%s' "$pw" | rev)
for mode in echo-login echo-txn; do
    for frag in "$half2" "$half1" "$third" "$rev" "$(b64 "$pw")" \
        "$(b64 "$half2")" "$pw"; do
        for said in "$frag" "etcdserver: bad password ...$frag" \
            "etcdserver: user name not found: u/$frag"; do
            start "$mode" "$said"
            run "etcd://u:$pw@127.0.0.1:$port?timeout=3s"
            if [ "$rc" != 69 ]; then
                bad "$mode, '$said': exit $rc, wanted 69: $out"
            elif grep -qF -- "$frag" "$dir/out"; then
                bad "$mode, '$said': the fragment '$frag' printed: $out"
            elif grep -qF -- "$half1" "$dir/out" || grep -qF -- "$half2" "$dir/out"; then
                bad "$mode, '$said': half of the password printed: $out"
            else
                ok "$mode, '$said': exit 69, not printed: $out"
            fi
        done
    done
done
# etcd's own words are still shown with a password in the URL.
for mode in echo-login echo-txn; do
    start "$mode" "etcdserver: permission denied"
    run "etcd://u:$pw@127.0.0.1:$port?timeout=3s"
    if [ "$rc" = 69 ] && grep -qF "etcdserver: permission denied" "$dir/out"; then
        ok "$mode: etcd's own words shown: $out"
    else
        bad "$mode: etcd's own words: exit $rc: $out"
    fi
done

fi

# Without a password in the URL there is nothing of ours to echo: a
# gateway's words are shown.
if [ "$part" = echo ]; then
    start echo-txn "etcdserver: some words of a newer etcd"
    run "etcd://127.0.0.1:$port?timeout=3s"
    if [ "$rc" = 69 ] && grep -qF "some words of a newer etcd" "$dir/out"; then
        ok "no password: a gateway's words shown: $out"
    else
        bad "no password: exit $rc: $out"
    fi
fi

# --- 15: the login answered Unauthenticated -------------------------------
if [ "$part" = relogin ]; then
start unauth-login -
run "etcd://u:$pw@127.0.0.1:$port?timeout=3s"
if [ "$rc" != 69 ] || [ "$logins" != 1 ] ||
    ! grep -q "invalid auth token" "$dir/out" || grep -qi "timed out" "$dir/out"; then
    bad "the login answered Unauthenticated: exit $rc, $logins logins in $ms ms: $out"
else
    ok "the login answered Unauthenticated: exit 69, 1 login, $ms ms: $out"
fi
# Two endpoints (the same gateway twice): one login each at most.
run "etcd://u:$pw@127.0.0.1:$port,127.0.0.1:$port?timeout=3s"
if [ "$rc" != 69 ] || [ "$logins" -gt 2 ] ||
    ! grep -q "invalid auth token" "$dir/out" || grep -qi "timed out" "$dir/out"; then
    bad "two endpoints, the login answered Unauthenticated: exit $rc, $logins logins in $ms ms: $out"
else
    ok "two endpoints, the login answered Unauthenticated: exit 69, $logins logins, $ms ms: $out"
fi
# Every request but the login refused as Unauthenticated: open's login, one
# more for the refused request, then its real error.
start unauth-ops -
run "etcd://u:$pw@127.0.0.1:$port?timeout=3s"
if [ "$rc" != 69 ] || [ "$logins" -gt 2 ] ||
    ! grep -q "invalid auth token" "$dir/out" || grep -qi "timed out" "$dir/out"; then
    bad "requests refused as Unauthenticated: exit $rc, $logins logins in $ms ms: $out"
else
    ok "requests refused as Unauthenticated: exit 69, $logins logins, $ms ms: $out"
fi
fi
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
