#!/bin/bash
# dlock metrics [PREFIX] and dlock history without NAME (issue 46):
#   test_fleet.sh DLOCK STORE_URL
# Runs recorded by two "hosts" (each in a UTS namespace of its own with
# its own host name), a name held by a background `dlock run` gated by a
# fifo, a name with `"` and `\`: `dlock metrics` parsed by a real parser
# (python3-prometheus-client), checked value by value, and by `promtool
# check metrics`; a store that is down or frozen: exit 69 and one line.
# The same on every store (tests/CMakeLists.txt registers it per store).
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
py=/usr/bin/python3
T=$(mktemp -d /tmp/dlock-fleet.XXXXXX)
holder=""
frozen=""
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    [ -n "$frozen" ] && kill "$frozen" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
P="fleet-$$-$RANDOM"

ok() { echo "ok   $1"; }
fail() {
    fails=$((fails + 1))
    echo "FAIL $1"
}
check() { # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
missing() { # missing WHAT: a failure in CI, a skip (77) elsewhere
    if [ "${CI:-}" = true ]; then
        echo "FAIL $1"
        exit 1
    fi
    echo "SKIP $1"
    exit 77
}

"$py" -c 'import prometheus_client.parser' 2>/dev/null ||
    missing "$py cannot import prometheus_client (python3-prometheus-client; scripts/deps.sh test)"
command -v promtool >/dev/null ||
    missing "no promtool (Debian: prometheus; scripts/deps.sh test)"
# A host of its own: a UTS namespace (root; else a user namespace too).
if unshare --uts true 2>/dev/null; then
    ns="unshare --uts"
elif unshare -ru --uts true 2>/dev/null; then
    ns="unshare -ru --uts"
else
    missing "cannot unshare a UTS namespace here"
fi
on_host() { # on_host HOST dlock ARGS...: dlock run with HOST as host name
    local h=$1
    shift
    $ns sh -c 'hostname "$0" && exec "$@"' "$h" "$DLOCK" "$@"
}

# --- Runs on two hosts ----------------------------------------------------
odd="$P/q\"u\\o'te"
t0=$(date +%s)
on_host hA run "$P/a" -- true || fail "hA: $P/a did not run"
on_host hB run "$P/a" -- sh -c 'exit 3'
check "hB's failing run exits 3" 3 $?
on_host hB run "$P/b" -- true || fail "hB: $P/b did not run"
on_host hA run "$odd" -- true || fail "hA: the odd name did not run"
# The held one: a dlock run whose CMD says it started, then waits on
# the gate.
mkfifo "$T/ready" "$T/gate"
on_host hC run "$P/held" -- sh -c "echo up >'$T/ready'; read x <'$T/gate'" &
holder=$!
# Opened read-write: no wait for a writer; the read itself is bounded.
exec 3<>"$T/ready"
read -t 30 -r up <&3
exec 3<&-
check "the holder's CMD runs" up "$up"
t1=$(($(date +%s) + 1))

"$DLOCK" metrics "$P/" >"$T/m" 2>"$T/err"
check "dlock metrics PREFIX exits 0" 0 $?
[ -s "$T/err" ] && fail "stderr not empty: $(cat "$T/err")"
fence_held=$("$DLOCK" status "$P/held" --json | "$py" -c \
    'import json,sys; print(json.load(sys.stdin)["fence"])')
succ_a=$("$DLOCK" history "$P/a" --json | "$py" -c '
import json, sys
print([r for r in json.load(sys.stdin) if r["status"] == 0][0]["end_ms"])')

if out=$("$py" - "$T/m" "$P" "$odd" "$t0" "$t1" "$fence_held" "$succ_a" 2>&1 <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, P, odd, t0, t1, fence_held, succ_a = sys.argv[1:]
t0, t1 = int(t0) - 5, int(t1) + 5  # the store's clock: a few s of slack
fams = {}
for f in text_string_to_metric_families(open(path, encoding="utf-8").read()):
    assert f.name not in fams, "family %s twice" % f.name
    assert f.type == "gauge", "%s is a %s" % (f.name, f.type)
    assert f.documentation, "%s has no HELP" % f.name
    fams[f.name] = f
def series(metric, name):
    return [s for s in fams["dlock_job_" + metric].samples
            if s.labels.get("name") == name]
def one(metric, name):
    s = series(metric, name)
    assert len(s) == 1, "%s{name=%r}: %d series" % (metric, name, len(s))
    return s[0]
def eq(metric, name, want, host=None):
    s = one(metric, name)
    assert s.value == want, "%s{name=%r} = %r, want %r" % (metric, name, s.value, want)
    if host is not None:
        assert s.labels.get("host") == host, "%s{name=%r} host %r, want %r" % (
            metric, name, s.labels.get("host"), host)
def plausible(metric, name, host):
    s = one(metric, name)
    assert t0 <= s.value <= t1, "%s{name=%r} = %r, not in [%d, %d]" % (
        metric, name, s.value, t0, t1)
    assert s.labels.get("host") == host, "%s{name=%r}: host %r" % (metric, name, s.labels)
names = {s.labels["name"] for s in fams["dlock_job_running"].samples}
want = {P + "/a", P + "/b", P + "/held", odd}
assert names == want, "names %r, want %r" % (names, want)
# a: hA succeeded, then hB exited 3.
plausible("last_start_timestamp_seconds", P + "/a", "hB")
plausible("last_end_timestamp_seconds", P + "/a", "hB")
eq("last_exit_status", P + "/a", 3, "hB")
eq("last_success_timestamp_seconds", P + "/a", int(succ_a) / 1000, "hA")
assert one("last_result", P + "/a").labels["result"] == "exited"
assert one("last_start_timestamp_seconds", P + "/a").value <= \
    one("last_end_timestamp_seconds", P + "/a").value, "a ended before it started"
eq("running", P + "/a", 0)
eq("holders", P + "/a", 0)
eq("last_exit_status", P + "/b", 0, "hB")
eq("last_success_timestamp_seconds", P + "/b",
   one("last_end_timestamp_seconds", P + "/b").value, "hB")
# The odd name, its label read back as it was written.
eq("last_exit_status", odd, 0, "hA")
# held: running on hC, no end, no exit status, no success yet.
eq("running", P + "/held", 1)
eq("holders", P + "/held", 1)
eq("fence", P + "/held", int(fence_held))
plausible("last_start_timestamp_seconds", P + "/held", "hC")
assert one("last_result", P + "/held").labels["result"] == "running"
for m in ("last_end_timestamp_seconds", "last_exit_status",
          "last_success_timestamp_seconds"):
    assert series(m, P + "/held") == [], "%s for a running name" % m
ok = fams["dlock_metrics_scrape_ok"].samples
assert len(ok) == 1 and ok[0].value == 1, "scrape_ok %r" % ok
EOF
); then
    ok "metrics parsed: hosts, times, exit status, success, holders, fence, escaping"
else
    fail "metrics: $out"
    sed 's/^/    | /' "$T/m"
fi
if out=$(promtool check metrics <"$T/m" 2>&1); then
    ok "promtool check metrics: clean"
else
    fail "promtool check metrics: $out"
fi
grep -q 'name="'"$P"'/q\\"u\\\\o'"'"'te"' "$T/m" &&
    ok "the odd name escaped as the textfile writer does" ||
    fail "the odd name's label: $(grep -F "$P/q" "$T/m" | head -1)"

# No name under the prefix: scrape_ok alone.
"$DLOCK" metrics "$P-none/" >"$T/m0" 2>"$T/err0"
check "no name under PREFIX: exit 0" 0 $?
check "... only scrape_ok among the samples" "dlock_metrics_scrape_ok 1" "$(grep -v '^#' "$T/m0")"
check "... nothing on stderr" "" "$(cat "$T/err0")"

# --- history without NAME ---------------------------------------------------
"$DLOCK" history >"$T/h" 2>"$T/herr"
check "history without NAME exits 0" 0 $?
grep -F "$P/" "$T/h" | sed 's/: .*//' >"$T/hn"
# The text escapes a backslash (cli_print_safe()).
printf '%s\n' "$P/a" "$P/b" "$P/held" "${odd//\\/\\\\}" | LC_ALL=C sort >"$T/hw"
check "history: one line per name, sorted" "$(cat "$T/hw")" "$(cat "$T/hn")"
grep -qF "$P/a: exited 3 on host hB" "$T/h" &&
    ok "history: NAME and the last run, as history NAME says it" ||
    fail "history: $(grep -F "$P/a" "$T/h")"
"$DLOCK" history --json | "$py" -c '
import json, sys
rows = [r for r in json.load(sys.stdin) if r["name"].startswith(sys.argv[1] + "/")]
names = [r["name"] for r in rows]
assert names == sorted(names) and len(names) == 4, names
a = [r for r in rows if r["name"] == sys.argv[1] + "/a"][0]
assert (a["host"], a["result"], a["status"]) == ("hB", "exited", 3), a
' "$P" && ok "history --json without NAME: the last runs" ||
    fail "history --json without NAME"
"$DLOCK" history -n 2 >/dev/null 2>"$T/nerr"
check "history -n without NAME: a usage error" 64 $?

# --- A name with a terminal escape: exact into a pipe, '?' on a terminal ---
esc="$P/esc$(printf '\033]0;pwned\007')"
"$DLOCK" run "$esc" -- true || fail "the name with an escape did not run"
"$DLOCK" metrics "$P/esc" >"$T/me"
grep -q "$(printf '\033]0;pwned\007')" "$T/me" &&
    ok "into a pipe the label is the name, byte for byte" ||
    fail "the name's escape is not in the piped text: $(grep -v '^#' "$T/me" | head -2)"
if out=$("$py" - "$DLOCK" "$P/esc" 2>&1 <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "metrics", sys.argv[2]])
out = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 0, st
assert b"/esc?]0;pwned?" in out, out
assert b"\x1b" not in out and b"\x07" not in out, out
EOF
); then
    ok "on a terminal the name's control bytes are '?'"
else
    fail "on a terminal: $out"
fi

# The holder ends; then the name is free with its run exited 0.
timeout 10 sh -c 'echo go >"$1"' sh "$T/gate" || {
    fail "the holder's CMD did not read the gate"
    kill "$holder"
}
wait "$holder"
check "the holder exits 0" 0 $?
holder=""
"$DLOCK" metrics "$P/held" >"$T/m2"
grep -qx "dlock_job_running{name=\"$P/held\"} 0" "$T/m2" &&
    grep -q "^dlock_job_last_exit_status{name=\"$P/held\",host=\"hC\"} 0$" "$T/m2" &&
    ok "after the run: not running, exit 0" ||
    fail "after the run: $(grep -v '^#' "$T/m2")"

# --- Records planted by hand (SQLite: the file is there to write) ----------
case $STORE in
sqlite://*)
    db=${STORE#sqlite://}
    db=${db%%\?*}
    "$py" - "$db" "$P" <<'EOF' || fail "could not plant run records"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
P = sys.argv[2]
ins = ("INSERT INTO dlock_runs (name,fence,host,pid,start_ms,end_ms,result,"
       "status) VALUES (CAST(? AS TEXT), ?, CAST(? AS TEXT), 1, ?, ?, 1, 0)")
# A host that is not UTF-8, with a quote, a backslash and a control;
# times no clock gives.
db.execute(ins, ((P + "/planted").encode(), 5, b'h\xff"\\\x01x',
                 -9000000000000000000, 9000000000000000000))
# A name that is not UTF-8: no lock name.
db.execute(ins, ((P + "/bad").encode() + b"\xff", 6, b"h", 1, 2))
# Each with its summary row, as every run's begin writes one: the last
# runs are read through them.
sm = ("INSERT INTO dlock_run_names (name, last_start, last_fence) "
      "VALUES (CAST(? AS TEXT), 0, ?)")
db.execute(sm, ((P + "/planted").encode(), 5))
db.execute(sm, ((P + "/bad").encode() + b"\xff", 6))
db.commit()
EOF
    "$DLOCK" metrics "$P/" >"$T/mp" 2>"$T/errp"
    check "planted records: dlock metrics exits 0" 0 $?
    if out=$(promtool check metrics <"$T/mp" 2>&1); then
        ok "planted records: promtool clean"
    else
        fail "planted records: promtool: $out"
    fi
    if out=$("$py" - "$T/mp" "$P" 2>&1 <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, P = sys.argv[1:]
fams = {f.name: f for f in
        text_string_to_metric_families(open(path, encoding="utf-8").read())}
names = {s.labels["name"] for f in fams.values() for s in f.samples
         if "name" in s.labels}
assert P + "/planted" in names, names
assert not any("bad" in n for n in names), names
res = [s for s in fams["dlock_job_last_result"].samples
       if s.labels["name"] == P + "/planted"]
assert len(res) == 1 and res[0].labels["host"] == 'h?"\\?x', res
for m in ("dlock_job_last_start_timestamp_seconds",
          "dlock_job_last_end_timestamp_seconds"):
    assert not [s for s in fams[m].samples
                if s.labels["name"] == P + "/planted"], m + ": a planted time"
EOF
    ); then
        ok "planted records: the host's bad byte is ?, no planted time, no non-UTF-8 name"
    else
        fail "planted records: $out"
        sed 's/^/    | /' "$T/mp"
    fi
    ;;
esac

# --- A store that is down, one that never answers ---------------------------
case $STORE in
sqlite:*) down="sqlite:///proc/no-such-dir/x.db" ;;
*) down=$(echo "$STORE" | sed -E 's#^([a-z+]+://([^@/]*@)?[^:/]+):[0-9]+#\1:1#') ;;
esac
timeout 30 "$DLOCK" -s "$down" metrics >"$T/dm" 2>"$T/derr"
check "a store that is down: exit 69" 69 $?
check "... one line on stderr" 1 "$(wc -l <"$T/derr")"
grep -qx 'dlock_metrics_scrape_ok 0' "$T/dm" &&
    grep -qx 'dlock_metrics_scrape_error{error="unavailable"} 1' "$T/dm" &&
    ok "... scrape_ok 0 and the error series on stdout" ||
    fail "... stdout: $(cat "$T/dm")"
promtool check metrics <"$T/dm" >/dev/null 2>&1 &&
    ok "... promtool: clean" || fail "... promtool: $(promtool check metrics <"$T/dm" 2>&1)"
case $STORE in
sqlite:*) ;;
*)
    # A listener that accepts and never answers: -w 1 gives up.
    "$py" -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
c = []
while True:
    c.append(s.accept())
' >"$T/port" &
    frozen=$!
    for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
    port=$(cat "$T/port")
    mute=$(echo "$STORE" | sed -E 's#^([a-z+]+://([^@/]*@)?[^:/]+):[0-9]+#\1:'"$port"'#')
    s0=$(date +%s%3N)
    timeout 30 "$DLOCK" -s "$mute" metrics -w 1 >/dev/null 2>"$T/ferr"
    rc=$?
    took=$(($(date +%s%3N) - s0))
    check "a store that never answers, -w 1: exit 69" 69 "$rc"
    [ "$took" -lt 5000 ] && ok "... within $took ms" || fail "... took $took ms"
    check "... one line on stderr" 1 "$(wc -l <"$T/ferr")"
    ;;
esac
pw=$(echo "$STORE" | sed -nE 's#^[a-z+]+://[^:@/]*:([^@/]+)@.*#\1#p')
if [ -n "$pw" ] && grep -qF "$pw" "$T/derr" "$T/dm" "$T/ferr" 2>/dev/null; then
    fail "the URL's password in the output: $(cat "$T/derr")"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
