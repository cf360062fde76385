#!/bin/bash
# Issue 43, item 8 on Redis: a server whose SCAN cursor never returns to 0
# made `dlock list` run for ever (scan_node() looped until cursor "0").
# A fake Redis on 127.0.0.1 (tests/bounds/fake_redis_hint.py, scan-*
# modes) answers every SCAN with a next cursor: the same key each page, a
# thousand new keys each page, or no key.  `dlock list` must end with a
# clear error (not 0, not killed by the harness's timeout), within its
# ?timeout= (2 s) plus a call, or at 100,000 names.
#   test_redis_scan.sh DLOCK
DLOCK=${1:?usage: test_redis_scan.sh DLOCK}
HERE=$(cd "$(dirname "$0")" && pwd)
FAKE=$HERE/../bounds/fake_redis_hint.py
if ! command -v python3 >/dev/null; then
    echo "SKIP: no python3"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
T=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$T"' EXIT
fails=0
for mode in scan-same scan-new scan-empty; do
    for cmd in "list" "list --json"; do
        rm -f "$T/port"
        mkfifo "$T/port"
        : >"$T/count"
        python3 "$FAKE" 0 "$T/port" "$T/count" "$mode" &
        srv=$!
        read -r port <"$T/port"
        start=$(date +%s%N)
        # shellcheck disable=SC2086
        timeout ${ADV43_TIMEOUT:-60} "$DLOCK" -s "redis://127.0.0.1:$port?timeout=2s" $cmd \
            >"$T/out" 2>"$T/err" </dev/null
        rc=$?
        ms=$((($(date +%s%N) - start) / 1000000))
        kill "$srv" 2>/dev/null
        wait "$srv" 2>/dev/null
        srv=
        pages=$(wc -l <"$T/count")
        if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -ge 128 ]; then
            echo "FAIL: $mode, $cmd: exit $rc after $ms ms and $pages SCANs"
            head -c 300 "$T/err"
            fails=$((fails + 1))
        elif ! grep -Eq "never ends|more than 100000 lock names" "$T/err"; then
            echo "FAIL: $mode, $cmd: exit $rc, unclear message: $(head -c 300 "$T/err")"
            fails=$((fails + 1))
        else
            echo "ok   $mode, $cmd: exit $rc after $ms ms and $pages SCANs: $(head -c 160 "$T/err")"
        fi
    done
done
echo "$fails failure(s)"
[ $fails -eq 0 ]
