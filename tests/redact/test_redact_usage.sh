#!/bin/sh
# test_redact_usage.sh DLOCK - issue 33 item 8 (adversarial pass): a usage
# error never echoes a password.  A store option put after the command
# (`dlock run --store=URL ...`), a misspelt one (`--stor=URL`), a URL
# given where the command goes, or a URL as a stray argument of `init`:
# each is refused with a message naming the argument, and that name is
# what the redactor shows of it.  No store is reached (the URLs name
# 127.0.0.1 port 1, loopback only, and every case fails before opening).
# Also (R7): a PostgreSQL option that gives a part of the URL twice.
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
# R7, one URL means one thing: a PostgreSQL option naming a part the URL
# already gives (?host= with a host, a %-encoded ?h%6Fst=, ?port=, ?user=,
# ?password=, ?dbname=) is refused (as any open failure: 69) before any
# connection: libpq would take
# the option's value and connect to a host the URL does not show.  All
# addresses are loopback, port 1 (nothing listens).
if "$DLOCK" --version | grep -q postgres; then
    for u in "postgres://u:$M@127.0.0.1:1/d?host=127.0.0.3" \
             "postgres://u:$M@127.0.0.1:1/d?h%6Fst=127.0.0.3" \
             "postgresql://u:$M@127.0.0.1:1,127.0.0.2:1/d?application_name=x&host=127.0.0.3" \
             "postgres://u:$M@127.0.0.1:1/d?port=2" \
             "postgres://u:$M@127.0.0.1,[::1]:1/d?port=2" \
             "postgres://u:$M@127.0.0.1:1/d?user=v" \
             "postgres://u:$M@127.0.0.1:1/d?password=other" \
             "postgres://u:$M@127.0.0.1:1/d?dbname=e"; do
        n=$((n + 1))
        "$DLOCK" -s "$u" status x >"$T/out" 2>&1 </dev/null
        rc=$?
        if [ "$rc" = 0 ] || ! grep -q 'give it once' "$T/out" ||
            grep -q "$M" "$T/out"; then
            echo "FAIL - not refused as a part given twice (rc $rc): $u"
            sed 's/^/    /' "$T/out"
            fails=$((fails + 1))
        fi
    done
    # Not a part given twice: no host in the URL, a socket directory.
    "$DLOCK" -s "postgres://u:$M@/d?host=$T/nosock" status x >"$T/out" 2>&1
    n=$((n + 1))
    if ! grep -q "$T/nosock/.s.PGSQL" "$T/out"; then
        echo "FAIL - ?host= without a host in the URL was not used:"
        sed 's/^/    /' "$T/out"
        fails=$((fails + 1))
    fi
fi
if [ "$fails" -gt 0 ]; then
    echo "redact usage: $fails of $n cases fail"
    exit 1
fi
echo "redact usage: $n cases, no usage error shows the password, no PostgreSQL part given twice"
