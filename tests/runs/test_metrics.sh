#!/bin/bash
# dlock run --metrics-file: the Prometheus text file for node_exporter's
# textfile collector (src/cli/metrics.c), parsed by a real parser
# (python3-prometheus-client's text_string_to_metric_families).
#   tests/runs/test_metrics.sh DRIVER DLOCK_CLI URL
# DRIVER (tests/runs/metrics_driver.c) records made-up runs; DLOCK_CLI's
# `dlock run` records real ones: a success, a failure, a --once-per skip,
# a lock lost to `dlock release --force`, two names in one file.
set -euo pipefail

driver=$1
dlock=$2
url=$3
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

if ! "$py" -c 'import prometheus_client.parser' 2>/dev/null; then
    echo "FAIL $py cannot import prometheus_client (Debian: python3-prometheus-client; scripts/deps.sh test)"
    exit 1
fi

# check FILE PYTHON-ASSERTIONS: parse FILE, run the assertions with
# v(metric, name) -> value (None when absent), fams (the parsed families)
# and names(metric) -> the set of name labels of metric.
check() {
    local file=$1 what=$2 code=$3 out
    if out=$("$py" - "$file" "$code" 2>&1 <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1], encoding="utf-8").read()
fams = {}
for f in text_string_to_metric_families(text):
    assert f.name not in fams, "family %s twice" % f.name
    fams[f.name] = f
def v(metric, name):
    base = metric[:-6] if metric.endswith("_total") else metric
    f = fams.get(base)
    if f is None:
        return None
    for s in f.samples:
        if s.name == metric and s.labels == {"name": name}:
            return s.value
    return None
def names(metric):
    base = metric[:-6] if metric.endswith("_total") else metric
    f = fams.get(base)
    return set() if f is None else {s.labels["name"] for s in f.samples if s.name == metric}
def eq(metric, name, want):
    got = v(metric, name)
    assert got == want, "%s{name=%r} = %r, want %r" % (metric, name, got, want)
exec(sys.argv[2])
EOF
    ); then
        ok "$what"
    else
        fail "$what: $out"
        sed 's/^/    | /' "$file"
    fi
}

# --- The writer alone, through the driver --------------------------------
m=$tmp/drv/dlock.prom
mkdir -p "$tmp/drv"
"$driver" "$m" nightly ran=1 exited=1 status=0 start_ms=1700000000000 \
    end_ms=1700000002500 waited_ms=250
check "$m" "driver: a success" '
eq("dlock_run_last_start_timestamp_seconds", "nightly", 1700000000.0)
eq("dlock_run_last_end_timestamp_seconds", "nightly", 1700000002.5)
eq("dlock_run_last_success_timestamp_seconds", "nightly", 1700000002.5)
eq("dlock_run_last_duration_seconds", "nightly", 2.5)
eq("dlock_run_last_exit_status", "nightly", 0)
eq("dlock_run_last_signal", "nightly", 0)
eq("dlock_run_last_lost", "nightly", 0)
eq("dlock_run_last_wait_seconds", "nightly", 0.25)
eq("dlock_run_runs_total", "nightly", 1)
eq("dlock_run_failures_total", "nightly", 0)
eq("dlock_run_skipped_total", "nightly", 0)
eq("dlock_run_lost_total", "nightly", 0)
eq("dlock_run_not_run_total", "nightly", 0)
assert fams["dlock_run_runs"].type == "counter"
assert fams["dlock_run_last_exit_status"].type == "gauge"
assert fams["dlock_run_last_exit_status"].documentation
'
mode=$(stat -c %a "$m")
[ "$mode" = 644 ] && ok "driver: a new file is mode 644 (the collector's user reads it)" \
    || fail "driver: a new file is mode $mode"
chmod 640 "$m"
"$driver" "$m" nightly ran=1 exited=1 status=3 start_ms=1700000100000 \
    end_ms=1700000100100
check "$m" "driver: a failure keeps the last success, counts a failure" '
eq("dlock_run_last_success_timestamp_seconds", "nightly", 1700000002.5)
eq("dlock_run_last_start_timestamp_seconds", "nightly", 1700000100.0)
eq("dlock_run_last_exit_status", "nightly", 3)
eq("dlock_run_last_duration_seconds", "nightly", 0.1)
eq("dlock_run_runs_total", "nightly", 2)
eq("dlock_run_failures_total", "nightly", 1)
'
mode=$(stat -c %a "$m")
[ "$mode" = 640 ] && ok "driver: the file keeps its mode" || fail "driver: mode $mode after a rewrite"

# A name that needs escaping, beside the first: both kept.
weird=$'we"ird\\na\nme'
"$driver" "$m" "$weird" skipped=1 end_ms=1700000200000
"$driver" "$m" nightly ran=1 signaled=1 sig=9 lost=1 start_ms=1700000300000 \
    end_ms=1700000301000
"$driver" "$m" nightly end_ms=1700000400000
check "$m" "driver: two names, escaping, a lost run, a skip, a not-run" '
w = "we\"ird\\na\nme"
assert names("dlock_run_runs_total") == {"nightly", w}, names("dlock_run_runs_total")
eq("dlock_run_skipped_total", w, 1)
eq("dlock_run_runs_total", w, 0)
eq("dlock_run_last_success_timestamp_seconds", w, 0)
# Never ran: no exit status series (-1 would say "died of a signal").
assert w not in names("dlock_run_last_exit_status"), names("dlock_run_last_exit_status")
eq("dlock_run_last_attempt_timestamp_seconds", w, 1700000200.0)
eq("dlock_run_last_signal", "nightly", 9)
eq("dlock_run_last_exit_status", "nightly", -1)
eq("dlock_run_last_lost", "nightly", 1)
eq("dlock_run_lost_total", "nightly", 1)
eq("dlock_run_failures_total", "nightly", 2)
eq("dlock_run_runs_total", "nightly", 3)
eq("dlock_run_not_run_total", "nightly", 1)
eq("dlock_run_last_attempt_timestamp_seconds", "nightly", 1700000400.0)
eq("dlock_run_last_start_timestamp_seconds", "nightly", 1700000300.0)
eq("dlock_run_last_success_timestamp_seconds", "nightly", 1700000002.5)
'
[ ! -e "$m.tmp" ] && ok "driver: no temporary file left" || fail "driver: $m.tmp left behind"

# A file dlock did not write is refused, not overwritten.
f=$tmp/drv/other.prom
printf 'node_foo 1\n' >"$f"
if "$driver" "$f" x ran=1 exited=1 2>"$tmp/err"; then
    fail "driver: overwrote a file that was not its own"
elif [ "$(cat "$f")" = "node_foo 1" ] && grep -q "line 1 is not one dlock run writes" "$tmp/err"; then
    ok "driver: a foreign file is left as it is ($(cat "$tmp/err"))"
else
    fail "driver: foreign file: $(cat "$f") / $(cat "$tmp/err")"
fi
for bad in 'dlock_run_runs_total{name="a"} 1 1700000000000' \
           'dlock_run_runs_total{name="a",job="b"} 1' \
           'dlock_run_runs_total{name="a\q"} 1' 'dlock_run_runs_total{name="a"} x' \
           'dlock_run_runs_total{name="a"} 1'$'\n''dlock_run_runs_total{name="a"} 2'; do
    printf '%s\n' "$bad" >"$f"
    if "$driver" "$f" x ran=1 exited=1 2>/dev/null || [ "$(cat "$f")" != "$bad" ]; then
        fail "driver: rewrote a file holding: $bad"
    fi
done
ok "driver: lines with a timestamp, another label, a bad escape, a bad value, a duplicate: refused"
# An unknown dlock_run_ family (a newer dlock's) is kept.
printf 'dlock_run_future_thing{name="a"} 7\n' >"$f"
"$driver" "$f" a ran=1 exited=1 status=0 start_ms=1000 end_ms=2000
check "$f" "driver: a dlock_run_ family this version does not know is kept" '
assert fams["dlock_run_future_thing"].samples[0].value == 7
eq("dlock_run_runs_total", "a", 1)
'
if "$driver" "$tmp/nodir/x.prom" a ran=1 2>"$tmp/err"; then
    fail "driver: wrote into a missing directory?"
else
    ok "driver: a missing directory is said: $(cat "$tmp/err")"
fi

# 20 writers at once on 3 names: every write lands, the file always parses.
c=$tmp/drv/conc.prom
pids=()
for i in $(seq 1 20); do
    "$driver" "$c" "job$((i % 3))" ran=1 exited=1 status=$((i % 2)) \
        start_ms=$((1700000000000 + i)) end_ms=$((1700000001000 + i)) &
    pids+=($!)
done
# Meanwhile the file, whenever it exists, is whole.
reader_fail=0
for _ in $(seq 1 30); do
    if [ -e "$c" ] && ! "$py" -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
list(text_string_to_metric_families(open(sys.argv[1]).read()))' "$c" 2>/dev/null; then
        reader_fail=1
    fi
done
for p in "${pids[@]}"; do wait "$p" || reader_fail=2; done
[ $reader_fail = 0 ] && ok "driver: 20 parallel writers all succeeded; every read parsed" \
    || fail "driver: concurrent writers: $reader_fail"
check "$c" "driver: 20 parallel writers on 3 names: no series lost, counters add up" '
assert names("dlock_run_runs_total") == {"job0", "job1", "job2"}
total = sum(v("dlock_run_runs_total", n) for n in ("job0", "job1", "job2"))
assert total == 20, total
fails = sum(v("dlock_run_failures_total", n) for n in ("job0", "job1", "job2"))
assert fails == 10, fails
eq("dlock_run_runs_total", "job0", 6)
eq("dlock_run_runs_total", "job1", 7)
eq("dlock_run_runs_total", "job2", 7)
'

# --- dlock run --metrics-file ---------------------------------------------
# grep reads it all: -q would quit at the match, and under pipefail the
# help's writer killed by SIGPIPE would read as a failure.
if ! "$dlock" run --help 2>&1 | grep -- --metrics-file >/dev/null; then
    fail "dlock run has no --metrics-file (the CLI of issue 35 is not in this build)"
    echo "# metrics: $fails failure(s)"
    exit 1
fi
d=$tmp/cli
mkdir -p "$d"
m=$d/jobs.prom
p=metrics-$$-$RANDOM
before=$(date +%s)
run() { "$dlock" -s "$url" run "$@"; }
rc=0; run "$p-a" --metrics-file "$m" -- true || rc=$?
[ $rc = 0 ] || fail "run a success: exit $rc"
rc=0; run "$p-a" --metrics-file="$m" -- sh -c 'exit 3' || rc=$?
[ $rc = 3 ] || fail "run a failure: exit $rc"
# The environment variable; --once-per: the second run is skipped.
rc=0; DLOCK_METRICS_FILE=$m run "$p-b" --once-per 1h -- true || rc=$?
[ $rc = 0 ] || fail "once-per first run: exit $rc"
rc=0; DLOCK_METRICS_FILE=$m run "$p-b" --once-per 1h -- sh -c 'echo ran >"$0"' "$d/b-ran" 2>"$d/b.err" || rc=$?
[ $rc = 0 ] && [ ! -e "$d/b-ran" ] || fail "once-per second run: exit $rc, ran: $(ls "$d")"
# A lock broken from outside while CMD runs: LOST (exit 75), CMD SIGTERMed.
mkfifo "$d/up"
run "$p-c" --ttl 3 --metrics-file "$m" -- sh -c 'echo up >"$0"; exec sleep 60' "$d/up" 2>"$d/c.err" &
pid=$!
exec 3<>"$d/up"   # opened read-write: does not block, unlike <
if ! read -t 60 -r _ <&3; then
    fail "lost run: CMD never started ($(cat "$d/c.err"))"
fi
exec 3<&-
"$dlock" -s "$url" release --force "$p-c" >/dev/null
rc=0; wait $pid || rc=$?
[ $rc = 75 ] || fail "lost run: exit $rc ($(cat "$d/c.err"))"
# A CMD that does not exist: not run.
rc=0; run "$p-d" --metrics-file "$m" -- "$d/no-such-cmd" 2>/dev/null || rc=$?
[ $rc = 127 ] || fail "missing CMD: exit $rc"
check "$m" "dlock run: a success, a failure, a --once-per skip, a lost run, a missing CMD, four names in one file" "
p = '$p'
before = $before
import time
now = time.time()
assert names('dlock_run_runs_total') == {p + '-a', p + '-b', p + '-c', p + '-d'}, names('dlock_run_runs_total')
a = p + '-a'
eq('dlock_run_runs_total', a, 2)
eq('dlock_run_failures_total', a, 1)
eq('dlock_run_last_exit_status', a, 3)
eq('dlock_run_last_signal', a, 0)
eq('dlock_run_last_lost', a, 0)
s = v('dlock_run_last_success_timestamp_seconds', a)
st = v('dlock_run_last_start_timestamp_seconds', a)
assert before - 1 <= s <= st <= now + 1, (before, s, st, now)
assert 0 <= v('dlock_run_last_duration_seconds', a) < 30
assert 0 <= v('dlock_run_last_wait_seconds', a) < 30
b = p + '-b'
eq('dlock_run_runs_total', b, 1)
eq('dlock_run_skipped_total', b, 1)
eq('dlock_run_failures_total', b, 0)
eq('dlock_run_last_exit_status', b, 0)
assert v('dlock_run_last_attempt_timestamp_seconds', b) >= v('dlock_run_last_start_timestamp_seconds', b)
c = p + '-c'
eq('dlock_run_runs_total', c, 1)
eq('dlock_run_lost_total', c, 1)
eq('dlock_run_last_lost', c, 1)
eq('dlock_run_failures_total', c, 1)
eq('dlock_run_last_signal', c, 15)
eq('dlock_run_last_exit_status', c, -1)
eq('dlock_run_last_success_timestamp_seconds', c, 0)
d = p + '-d'
eq('dlock_run_runs_total', d, 0)
eq('dlock_run_not_run_total', d, 1)
assert d not in names('dlock_run_last_exit_status'), names('dlock_run_last_exit_status')
"
# A metrics file that cannot be written is said, and the run's status
# stays CMD's.
rc=0; run "$p-e" --metrics-file "$d/no-dir/x.prom" -- sh -c 'exit 4' 2>"$d/e.err" || rc=$?
[ $rc = 4 ] && grep -q "metrics file $d/no-dir/x.prom" "$d/e.err" \
    && ok "dlock run: an unwritable metrics file is said; the exit status stays CMD's ($rc)" \
    || fail "dlock run: unwritable metrics file: exit $rc, $(cat "$d/e.err")"

# Ten dlock runs at once on three names, all into one file.
c=$d/conc.prom
pids=()
for i in $(seq 1 10); do
    run "$p-x$((i % 3))" -w 60 --metrics-file "$c" -- true &
    pids+=($!)
done
bad=0
for q in "${pids[@]}"; do wait "$q" || bad=1; done
[ $bad = 0 ] || fail "dlock run: parallel runs failed"
check "$c" "dlock run: 10 parallel runs on 3 names into one file: all counted" "
p = '$p'
assert sum(v('dlock_run_runs_total', p + '-x%d' % i) for i in range(3)) == 10
eq('dlock_run_runs_total', p + '-x0', 3)
"

echo "# metrics: $fails failure(s)"
[ $fails -eq 0 ]
