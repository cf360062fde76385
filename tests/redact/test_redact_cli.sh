#!/bin/sh
# test_redact_cli.sh DLOCK PROP [COUNT [SEED]] - issue 33 items 7, 8: for
# random store URLs with a marker password (test_redact_prop --gen), on
# every scheme, no output of dlock(1) holds the marker: stderr and stdout
# of status, status --json, list, list --json, run (and the child's
# environment, `env`), with the URL given by -s and by DLOCK_STORE; and
# /proc/PID/cmdline of dlock while it runs a command with two -s.
# Everything runs under `unshare -n` (no network: no name leaves the
# machine; loopback only).  Root is needed for that: skipped (77) when not
# root, a failure with CI=true.
DLOCK=$1
PROP=$2
COUNT=${3:-300}
SEED=${4:-${DLOCK_SEED:-33}}

skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $1 (CI=true: a missing capability fails)"
        exit 1
    fi
    echo "SKIP: $1"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root: cannot unshare -n"
unshare -n true 2>/dev/null || skip "unshare -n does not work here"

T=$(mktemp -d /tmp/dlock-redact-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
echo "redact cli: seed=$SEED urls=$COUNT (DLOCK_SEED=$SEED to repeat)"
"$PROP" --gen "$COUNT" "$SEED" "$T" >"$T/urls" || exit 1
leaks=0
n=0
ran=0
tab=$(printf '\t')
while IFS="$tab" read -r url m1 m2; do
    n=$((n + 1))
    out="$T/out"
    : >"$out"
    # The URL reaches a server only where one answers (sqlite: always);
    # `env` is the child either way.
    for how in s env; do
        for cmd in "status n" "status n --json" "list" "list --json" \
                   "run -n n -- env"; do
            if [ $how = s ]; then
                # shellcheck disable=SC2086
                unshare -n "$DLOCK" -s "$url" $cmd >>"$out" 2>&1 </dev/null
            else
                # shellcheck disable=SC2086
                DLOCK_STORE="$url" unshare -n "$DLOCK" $cmd >>"$out" 2>&1 </dev/null
            fi
            [ $? = 0 ] && [ "${cmd#run}" != "$cmd" ] && ran=$((ran + 1))
        done
    done
    # What ps shows while dlock holds: its cmdline, with the URL given
    # twice (every -s is hidden, not only the last).
    unshare -n "$DLOCK" -s "$url" -s "$url" run -n n -- \
        sh -c 'tr "\0" " " </proc/$PPID/cmdline; echo' >>"$out" 2>&1 </dev/null
    unshare -n "$DLOCK" --store="$url" -s"$url" run -n n -- \
        sh -c 'tr "\0" " " </proc/$PPID/cmdline; echo' >>"$out" 2>&1 </dev/null
    if grep -q -e "$m1" -e "$m2" "$out"; then
        leaks=$((leaks + 1))
        if [ $leaks -le 10 ]; then
            echo "LEAK: $url"
            grep -e "$m1" -e "$m2" "$out" | head -3 | sed 's/^/    /'
        fi
    fi
done <"$T/urls"
echo "redact cli: $n urls, $ran runs acquired, $leaks leaking"
[ $n -eq "$COUNT" ] || { echo "FAIL: read $n of $COUNT urls"; exit 1; }
# The property must have met stores that work (sqlite), not only refusals.
[ $ran -gt 0 ] || { echo "FAIL: no run acquired: nothing reached a store"; exit 1; }
[ $leaks -eq 0 ] || { echo "FAIL: $leaks urls leaked their password"; exit 1; }
echo "PASS"
