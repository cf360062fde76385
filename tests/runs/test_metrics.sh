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
eq("dlock_run_last_exit_status", w, -1)
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

echo "# metrics: $fails failure(s)"
[ $fails -eq 0 ]
