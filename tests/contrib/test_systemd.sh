#!/bin/sh
# The systemd pair in contrib/systemd/ (a .service and its .timer) as an
# admin would install it: `systemd-analyze verify` has no complaint (any
# line it prints fails, "Unknown key" included, which it exits 0 on), the
# rules of docs/scheduling.md hold (OnCalendar='s interval is the
# service's --once-per PERIOD; RandomizedDelaySec= under PERIOD/2;
# Persistent=true, Type=oneshot, KillMode=mixed), and the ExecStart= line,
# with this build's dlock, a store file of its own and a stand-in CMD,
# runs the job once and skips the second start with exit 0.
#   tests/contrib/test_systemd.sh DLOCK UNIT_DIR
# systemd-analyze missing: skipped (77), with CI=true a failure.
set -u
dlock=$1 units=$2
fail() { echo "FAIL: $*"; exit 1; }
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "systemd-analyze missing (Debian package systemd)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
case $dlock in /*) ;; *) dlock=$(pwd)/$dlock ;; esac
tmp=$(mktemp -d /tmp/dlock-systemd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

set -- "$units"/*.timer
{ [ $# = 1 ] && [ -f "$1" ]; } || fail "want one .timer in $units, found: $*"
timer=$1 name=$(basename "$1" .timer)
service=$units/$name.service
[ -f "$service" ] || fail "no $name.service beside $name.timer"

# verify loads the service's ExecStart binary: this build's dlock stands
# in for /usr/bin/dlock.  --man=no: Documentation=man:dlock(1) needs no
# installed page.
mkdir "$tmp/u"
sed "s#/usr/bin/dlock #$dlock #" "$service" >"$tmp/u/$name.service"
cp "$timer" "$tmp/u/"
out=$(cd "$tmp/u" && systemd-analyze verify --man=no "$name.timer" \
    "$name.service" 2>&1)
rc=$?
{ [ $rc = 0 ] && [ -z "$out" ]; } || fail "systemd-analyze verify (exit $rc): $out"

value() { sed -n "s/^$1=//p" "$2" | tail -1; }
usec() { systemd-analyze timespan "$1" | sed -n 's/^ *μs: //p'; }
exec_start=$(value ExecStart "$service")
period=$(printf '%s\n' "$exec_start" | sed -n 's/.* --once-per \([^ ]*\) .*/\1/p')
[ -n "$period" ] || fail "ExecStart= has no --once-per PERIOD: $exec_start"
p_us=$(usec "$period")
d_us=$(usec "$(value RandomizedDelaySec "$timer")")
{ [ -n "$p_us" ] && [ -n "$d_us" ]; } || fail "cannot read PERIOD or the delay"
[ $((d_us * 2)) -lt "$p_us" ] ||
    fail "RandomizedDelaySec= ($d_us us) is not under PERIOD/2 ($period)"
[ "$(value Persistent "$timer")" = true ] || fail "Persistent=true is missing"
[ "$(value Type "$service")" = oneshot ] || fail "Type=oneshot is missing"
# SIGTERM to dlock alone, which stops CMD, records the end and releases.
[ "$(value KillMode "$service")" = mixed ] || fail "KillMode=mixed is missing"
# The calendar's interval is the period, where two elapses tell it.
cal=$(TZ=UTC systemd-analyze calendar --iterations=2 \
    "$(value OnCalendar "$timer")") || fail "OnCalendar=: $cal"
t1=$(printf '%s\n' "$cal" | sed -n 's/^ *Next elapse: //p')
t2=$(printf '%s\n' "$cal" | sed -n 's/^ *Iter. #2: //p')
gap=$(($(date -u -d "$t2" +%s) - $(date -u -d "$t1" +%s)))
[ $((gap * 1000000)) = "$p_us" ] ||
    fail "OnCalendar= fires every $gap s, --once-per says $period"

# The ExecStart= line itself: two starts, one run, the second a skip
# (exit 0, so the unit does not fail).  Its words hold no quotes.
printf 'sqlite://%s/s.db\n' "$tmp" >"$tmp/store.url"
chmod 600 "$tmp/store.url"
printf '#!/bin/sh\necho ran >>"%s/ran"\n' "$tmp" >"$tmp/job"
chmod 755 "$tmp/job"
set -f
# shellcheck disable=SC2086 # the unit's words, split as systemd does
set -- $exec_start
set +f
[ "$1" = /usr/bin/dlock ] || fail "ExecStart= does not run /usr/bin/dlock"
shift
args=""
found_file=0
for a in "$@"; do
    case $a in /etc/dlock/store.url) a=$tmp/store.url found_file=1 ;; esac
    args="$args $a"
done
[ $found_file = 1 ] || fail "ExecStart= has no --store-file /etc/dlock/store.url"
cmd=${exec_start##* -- }
[ "$cmd" != "$exec_start" ] || fail "ExecStart= has no '-- CMD'"
args=${args% "$cmd"}
for i in 1 2; do
    # shellcheck disable=SC2086
    "$dlock" $args "$tmp/job" 2>"$tmp/err$i"
    rc=$?
    [ $rc = 0 ] || fail "start $i exited $rc: $(cat "$tmp/err$i")"
done
[ "$(cat "$tmp/ran")" = ran ] || fail "CMD ran $(wc -l <"$tmp/ran") times"
grep -q "already ran" "$tmp/err2" || fail "no skip line: $(cat "$tmp/err2")"
echo "ok: $name.service + $name.timer (every $period, delay under half)"
