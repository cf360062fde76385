#!/bin/sh
# pg_value_race.sh DLOCK SERVER_SCRIPT URL DIR: on PostgreSQL in lease
# mode, a leader's value statement that took its snapshot while it still
# owned the lock, and reached dlock_leaders' row only after the lock was
# broken (dlock release --force) and the next leader had written its own
# value, must not write over the next term's record, and must not report
# success (the deposed candidate campaigns again, behind B).
# The delay is a BEFORE INSERT trigger (it fires after the statement's
# snapshot and its ownership check, before the conflict with the row):
# pg_sleep for the one value this test names.
set -u
dlock=$1 script=$2 url=$3 dir=$4
if [ -z "$url" ] || [ -z "$dir" ]; then
    echo "no postgres server (DLOCK_TEST_POSTGRES_URL/_DIR)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
case $url in *\?*) u="$url&mode=lease" ;; *) u="$url?mode=lease" ;; esac
t=$(mktemp -d /tmp/dlock-adv45-pg.XXXXXX)
tag=$$
name="adv45-pg-race-$tag"
sql() { "$script" ctl "$dir" sql "$*"; }
apid= bpid=
cleanup() {
    [ -n "$apid" ] && kill "$apid" 2>/dev/null
    [ -n "$bpid" ] && kill "$bpid" 2>/dev/null
    sql "DROP TRIGGER IF EXISTS adv45_slow_$tag ON dlock_leaders" >/dev/null 2>&1
    sql "DROP FUNCTION IF EXISTS adv45_slow_$tag()" >/dev/null 2>&1
    rm -rf "$t"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# dlock_leaders exists once anyone published.
"$dlock" -s "$u" elect "$name-init" --value x -- true || fail "first elect"
sql "CREATE FUNCTION adv45_slow_$tag() RETURNS trigger LANGUAGE plpgsql AS
\$\$ BEGIN IF NEW.value = 'slow-$tag' THEN PERFORM pg_sleep(4); END IF;
RETURN NEW; END \$\$" || fail "create function"
sql "CREATE TRIGGER adv45_slow_$tag BEFORE INSERT ON dlock_leaders FOR EACH
ROW EXECUTE FUNCTION adv45_slow_$tag()" || fail "create trigger"

# A: its value statement sleeps in the trigger.
"$dlock" -s "$u" elect "$name" --ttl 30 --value "slow-$tag" -- \
    sh -c "echo A-led >>$t/led; sleep 30" >"$t/a.out" 2>"$t/a.err" &
apid=$!
i=0
until [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%dlock_leaders%'")" -ge 1 ] 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -ge 100 ] && fail "A's value statement never reached the trigger"
    sleep 0.05
done
"$dlock" -s "$u" release --force "$name" || fail "release --force"
# B: takes over and publishes its value while A's statement sleeps.
"$dlock" -s "$u" elect "$name" --ttl 30 --value "b-$tag" -- \
    sh -c "echo B-led >>$t/led; sleep 30" >"$t/b.out" 2>"$t/b.err" &
bpid=$!
i=0
until grep -qs B-led "$t/led"; do
    i=$((i + 1))
    [ "$i" -ge 60 ] && fail "B never led"
    sleep 0.05
done
# A's statement ends (the trigger's 4 s): it must find itself deposed
# (and campaign again, behind B), leaving B's record alone.
i=0
while [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%dlock_leaders%'")" -ge 1 ] 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -ge 200 ] && fail "A's value statement still sleeps after 10 s"
    sleep 0.05
done
out=$("$dlock" -s "$u" leader "$name" --json) || fail "leader: $out"
case $out in
*"\"value\":\"b-$tag\""*) echo "ok: B's value stays: $out" ;;
*) fail "B leads but its value is gone: $out" ;;
esac
grep -qs A-led "$t/led" && fail "the deposed A ran CMD while B leads"
echo "ok: the deposed A did not lead"
