#!/bin/sh
# test_redact_usage.sh DLOCK - issue 33 item 8 (adversarial pass): a usage
# error never echoes a password.  A store option put after the command
# (`dlock run --store=URL ...`), a misspelt one (`--stor=URL`), a URL
# given where the command goes, or a URL as a stray argument of `init`:
# each is refused with a message naming the argument, and that name is
# what the redactor shows of it.  No store is reached (the URLs name
# 127.0.0.1 port 1, loopback only, and every case fails before opening).
DLOCK=$1
M=Zq9Mark7secret
T=$(mktemp -d /tmp/dlock-redact-usage-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
n=0
check() {
    n=$((n + 1))
    "$DLOCK" "$@" >"$T/out" 2>&1 </dev/null
    rc=$?
    if [ "$rc" != 64 ]; then
        echo "FAIL - expected a usage error (64), got $rc: dlock $*"
        fails=$((fails + 1))
    elif grep -q "$M" "$T/out"; then
        echo "FAIL - password in the output of: dlock $*"
        sed 's/^/    /' "$T/out"
        fails=$((fails + 1))
    fi
}
for u in "postgres://u:$M@127.0.0.1:1/d" "redis://:$M@127.0.0.1:1" \
         "mysql://u:$M@127.0.0.1:1/d" "sqlite://u:$M@$T/x.db" \
         "postgres://u@127.0.0.1:1/d?password=$M" \
         "redis://127.0.0.1:1?sslpassword=$M&x=1"; do
    check --stor="$u" status x
    check --Store "$u" status x     # the URL is then the command
    check -x"$u" status x
    check "$u" status x
    check run --store="$u" x -- true
    check run -s"$u" x -- true
    check status --store="$u" x
    check list --store="$u"
    check release --force --store="$u" x
    check init --store="$u"
    check init "$u"
    check run --ttl "$u" x -- true
    check run --wait="$u" x -- true
    check run -l "$u" x -- true
    check run -E"$u" x -- true
done
if [ "$fails" -gt 0 ]; then
    echo "redact usage: $fails of $n usage errors leak the password"
    exit 1
fi
echo "redact usage: $n usage errors, none shows the password"
