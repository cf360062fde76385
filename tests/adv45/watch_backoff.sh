#!/bin/sh
# watch_backoff.sh DLOCK URL: `dlock leader --watch` whose Redis
# subscription breaks now and then (each time after it was back and had
# read the store) subscribes again within ~250 ms each time: its back-off
# used to grow with every break, ever (250 ms, 500, ... 5 s), so after a
# few failovers each later one left it 5 s blind.  Only this watcher's
# subscriber connection is killed (CLIENT KILL ID): others on the server
# are not touched.
set -u
DLOCK=$1
URL=$2
if [ -z "$URL" ]; then
    echo "no redis server (DLOCK_TEST_REDIS_URL)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
command -v ss >/dev/null && command -v redis-cli >/dev/null || {
    echo "no ss or redis-cli"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
hp=${URL#redis://}
hp=${hp%%/*}
hp=${hp%%\?*}
host=${hp%:*} port=${hp##*:}
rc() { redis-cli -h "$host" -p "$port" "$@"; }
T=$(mktemp -d)
wpid=
trap '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# sub_id: the client id of the watcher's subscriber connection, if any.
sub_id() {
    ports=$(ss -tnpH 2>/dev/null | grep "pid=$wpid," | awk '{print $4}' | sed 's/.*://')
    rc client list | while read -r line; do
        case $line in *" sub=1 "*) ;; *) continue ;; esac
        a=${line#* addr=}
        a=${a%% *}
        for p in $ports; do
            [ "${a##*:}" = "$p" ] && { x=${line#id=}; echo "${x%% *}"; }
        done
    done | head -1
}
# wait_sub MS: the subscriber id in $sid within MS ms, else fail.
wait_sub() {
    i=0
    sid=$(sub_id)
    while [ -z "$sid" ]; do
        i=$((i + 20))
        [ "$i" -ge "$1" ] && return 1
        sleep 0.02
        sid=$(sub_id)
    done
}

"$DLOCK" -s "$URL" leader "adv45-backoff-$$" --watch >"$T/out" 2>"$T/err" &
wpid=$!
wait_sub 5000 || fail "the watcher never subscribed: $(cat "$T/err")"
for k in 1 2 3 4 5 6 7; do
    rc client kill id "$sid" >/dev/null
    t0=$(date +%s%N)
    sleep 0.05
    wait_sub 8000 || fail "break $k: no new subscription in 8 s"
    dt=$((($(date +%s%N) - t0) / 1000000))
    echo "break $k: subscribed again after $dt ms"
    [ "$dt" -lt 1500 ] || fail "break $k: subscribed again only after $dt ms (over 1500)"
    # Back and read: the next break is a new outage.
    sleep 0.3
done
grep -c "trying again in 250 ms" "$T/err" | grep -qx 7 ||
    fail "not each back-off 250 ms: $(cat "$T/err")"
echo "ok: each of 7 breaks, apart, backed off 250 ms"
