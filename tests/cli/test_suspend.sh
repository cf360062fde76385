#!/bin/bash
# dlock suspend / resume (issue 46), across "hosts":
#   test_suspend.sh DLOCK STORE_URL
# Each host is a UTS namespace of its own with its own host name.  hA
# suspends a job while hB runs it (gated by a fifo): hB's run goes on and
# is recorded; every later run on hC skips with exit 0 (or -E), plain,
# --once-per, --limit N alike, and says "suspended by root@hA at T:
# REASON"; status, list, history and metrics (parsed by
# python3-prometheus-client) show it; a second suspend keeps the first;
# hB resumes, and the next run goes ahead.  Bad input is 64.  On SQLite,
# a user who may only read the file cannot lift it.  The same on every
# store (tests/cli/CMakeLists.txt registers it per store).
set -u
DLOCK=$1
STORE=$2
export DLOCK_STORE="$STORE"
py=/usr/bin/python3
T=$(mktemp -d /tmp/dlock-suspend.XXXXXX)
chmod 755 "$T"
holder=""
waiter=""
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    [ -n "$waiter" ] && kill "$waiter" 2>/dev/null
    for h in ${holders:-}; do kill "$h" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
P="susp-$$-$RANDOM"
N="$P/nightly"

ok() { echo "ok   $1"; }
fail() {
    fails=$((fails + 1))
    echo "FAIL $1"
}
check() { # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
has() { # has WHAT FILE PATTERN (grep -E)
    if grep -Eq -- "$3" "$2"; then ok "$1"; else fail "$1: no /$3/ in: $(cat "$2")"; fi
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
if unshare --uts true 2>/dev/null; then
    ns="unshare --uts"
elif unshare -ru --uts true 2>/dev/null; then
    ns="unshare -ru --uts"
else
    missing "cannot unshare a UTS namespace here"
fi
on_host() { # on_host HOST ARGS...: dlock ARGS with HOST as host name
    local h=$1
    shift
    $ns sh -c 'hostname "$0" && exec "$@"' "$h" "$DLOCK" "$@"
}
me=$(id -un)

# --- hB runs the job; hA suspends it meanwhile --------------------------
mkfifo "$T/ready" "$T/gate"
on_host hB run "$N" -- sh -c "echo up >'$T/ready'; read x <'$T/gate'" \
    >"$T/hb.out" 2>&1 &
holder=$!
exec 3<>"$T/ready"
read -t 30 -r up <&3
exec 3<&-
check "hB's run started" up "$up"
on_host hA suspend "$N" --reason "disk full on db2" >"$T/s1" 2>&1
check "suspend exits 0" 0 $?
has "suspend says who, when, why" "$T/s1" \
    "^$N: suspended by $me@hA at 20[0-9-]{8}T[0-9:.]{12}Z: disk full on db2\$"
has "suspend says the running one goes on" "$T/s1" \
    "is held now by hB pid [0-9]+ since .*: that run goes on; the next runs skip"
echo go >"$T/gate"
wait "$holder"
check "hB's run, begun before, ends as its command did" 0 $?
holder=""

# --- every later run skips, on any host -----------------------------------
on_host hC run "$N" -- touch "$T/ran" >"$T/r1" 2>&1
check "a run of a suspended name exits 0" 0 $?
[ -e "$T/ran" ] && fail "the command ran" || ok "the command did not run"
has "the run says 'suspended by USER@HOST at T: REASON'" "$T/r1" \
    "suspended by $me@hA at 20[0-9-]{8}T[0-9:.]{12}Z: disk full on db2"
on_host hC run -E 3 "$N" -- touch "$T/ran" >/dev/null 2>&1
check "-E 3: the skip exits 3" 3 $?
on_host hC run --once-per 1h "$N" -- touch "$T/ran" >/dev/null 2>&1
check "--once-per skips too" 0 $?
on_host hC run --limit 2 "$N" -- touch "$T/ran" >"$T/r2" 2>&1
check "a semaphore run skips too" 0 $?
has "the semaphore run says so" "$T/r2" "suspended by $me@hA"
on_host hC run -q "$N" -- touch "$T/ran" >"$T/r3" 2>&1
[ -s "$T/r3" ] && fail "-q printed: $(cat "$T/r3")" || ok "-q: silent"
[ -e "$T/ran" ] && fail "a skipped command ran" || ok "no skipped command ran"
n_runs=$("$DLOCK" history "$N" --json | "$py" -c '
import json, sys
print(len([r for r in json.load(sys.stdin) if r["result"] != "suspended"]))')
check "the skips recorded no run (hB's only)" 1 "$n_runs"

# --- a semaphore run already waiting when the suspension comes ----------
# (the adversary's F1: a shared or semaphore run read the suspension only
# before its wait).  A semaphore, which every store has (MariaDB has no
# shared locks): two holders fill its 2 places, a third waits.
W="$P/sem"
mkfifo "$T/wready" "$T/wgate" "$T/wlog"
for i in 1 2; do
    "$DLOCK" run --limit 2 "$W" -- sh -c "echo up >'$T/wready'; read x <'$T/wgate'" &
    holders="${holders:-} $!"
done
exec 3<>"$T/wready"
read -t 30 -r up <&3 && read -t 30 -r up2 <&3
exec 3<&-
check "both places are taken" "up up" "$up ${up2:-}"
"$DLOCK" -v run --limit 2 -w 30 "$W" -- touch "$T/sem-ran" 2>"$T/wlog" &
waiter=$!
# Its -v line says it is waiting (after its first look at the suspension).
exec 4<>"$T/wlog"
seen=""
while read -t 30 -r line <&4; do
    case $line in *"waiting for '$W'"*) seen=yes; break ;; esac
done
check "the semaphore run waits" yes "$seen"
"$DLOCK" suspend "$W" --reason "while it waited" >/dev/null
# Both holders let go: a line each, through the gate held open for
# writing until both have read (one may open it only after the other).
exec 5<>"$T/wgate"
printf 'go\ngo\n' >&5
for h in $holders; do wait "$h"; done
exec 5>&-
holders=""
wait "$waiter"
check "the semaphore run that waited exits 0 (skipped)" 0 $?
waiter=""
exec 4<&-
[ -e "$T/sem-ran" ] && fail "the semaphore run's command ran though suspended while it waited" ||
    ok "the semaphore run's command did not run"
"$DLOCK" resume "$W" >/dev/null

# --- a second suspension keeps the first ----------------------------------
on_host hB suspend "$N" --reason "another" >"$T/s2" 2>&1
check "a second suspend exits 0" 0 $?
has "and says it was suspended already, by whom" "$T/s2" \
    "^$N: already suspended by $me@hA at .*: disk full on db2\$"

# --- status, list, history, metrics ----------------------------------------
"$DLOCK" status "$N" >"$T/st"
check "status of the free, suspended name exits 3 (free)" 3 $?
has "status shows the suspension" "$T/st" "^  suspended by $me@hA at .*: disk full on db2"
by=$("$DLOCK" status "$N" --json | "$py" -c '
import json, sys
s = json.load(sys.stdin)["suspended"]
print(s["by"], s["reason"], s["since"][:2], s["since_ms"] > 0)')
check "status --json has the suspension" "$me@hA disk full on db2 20 True" "$by"
"$DLOCK" list "$P/" >"$T/ls"
has "list shows it" "$T/ls" "^  suspended by $me@hA"
"$DLOCK" history "$N" >"$T/h"
check "history's first line is the suspension" \
    "suspended by $me@hA" "$(head -1 "$T/h" | cut -d' ' -f1-3)"
"$DLOCK" history | grep -F "$N: suspended by $me@hA" >/dev/null &&
    ok "history without NAME shows it" || fail "history without NAME: $("$DLOCK" history | grep -F "$P")"
"$DLOCK" suspend "$P/never-ran" >/dev/null
"$DLOCK" list "$P/" --json | "$py" -c '
import json, sys
v = {o["name"]: o for o in json.load(sys.stdin)}
assert v[sys.argv[1]]["suspended"]["reason"] == "disk full on db2", v
assert v[sys.argv[2]]["suspended"]["reason"] == "", v
assert v[sys.argv[2]]["last_run"] is None, v
' "$N" "$P/never-ran" && ok "list --json: both, a name that never ran too" ||
    fail "list --json"
"$DLOCK" metrics "$P/" >"$T/m" 2>"$T/merr"
check "metrics exits 0" 0 $?
if out=$("$py" - "$T/m" "$N" "$P/never-ran" 2>&1 <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, n, never = sys.argv[1:]
fams = {f.name: f for f in text_string_to_metric_families(open(path).read())}
def val(metric, name):
    s = [s for s in fams[metric].samples if s.labels.get("name") == name]
    assert len(s) == 1, (metric, name, s)
    return s[0].value
assert val("dlock_job_suspended", n) == 1
assert val("dlock_job_suspended", never) == 1
assert val("dlock_job_suspended_timestamp_seconds", n) > 1.7e9
EOF
); then ok "metrics: dlock_job_suspended 1 for both"; else fail "metrics: $out"; fi

# --- only a writer lifts it (SQLite: a user who may read the file) -------
case $STORE in
sqlite://*)
    db=${STORE#sqlite://}
    db=${db%%\?*}
    if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 &&
        setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
        chmod o+r "$db" 2>/dev/null
        as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$DLOCK" "$@"; }
        # A planted row whose name is a BLOB is no suspension of that name
        # (F5): not listed as one, and the name runs.
        "$py" - "$db" "$P/blob" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO dlock_suspensions VALUES (CAST(? AS BLOB), 'mallory', 1, 'blob name')", (sys.argv[2],))
c.commit()
PY
        "$DLOCK" list "$P/" | grep -q mallory && fail "a BLOB-named row is listed as a suspension" ||
            ok "a BLOB-named row is not listed as a suspension"
        "$DLOCK" run "$P/blob" -- true
        check "and its name runs" 0 $?
        as_nobody resume "$N" >"$T/ro" 2>&1
        rc=$?
        [ "$rc" != 0 ] && ok "a reader's resume fails (exit $rc: $(head -c 200 "$T/ro"))" ||
            fail "a reader's resume exited 0: $(cat "$T/ro")"
        "$DLOCK" status "$N" --json | grep -q '"suspended":{' &&
            ok "and the suspension stays" || fail "a reader lifted the suspension"
    else
        ok "(not root: no reader to try)"
    fi
    ;;
esac

# --- resume ----------------------------------------------------------------
on_host hB resume "$N" >"$T/u1" 2>&1
check "resume exits 0" 0 $?
has "resume says what it lifted" "$T/u1" \
    "^$N: resumed \(was suspended by $me@hA at .*: disk full on db2\)\$"
on_host hB resume "$N" >"$T/u2" 2>&1
check "a second resume exits 0" 0 $?
has "and says it is not suspended" "$T/u2" "^$N: is not suspended"
on_host hC run "$N" -- touch "$T/ran"
check "after resume the run goes ahead" 0 $?
[ -e "$T/ran" ] && ok "the command ran" || fail "the command did not run"
"$DLOCK" metrics "$P/" | grep -qxF "dlock_job_suspended{name=\"$N\"} 0" &&
    ok "metrics: dlock_job_suspended 0 after resume" ||
    fail "metrics after resume: $("$DLOCK" metrics "$P/" | grep suspended)"
"$DLOCK" resume --json "$P/never-ran" | "$py" -c '
import json, sys
o = json.load(sys.stdin)
assert o["name"] == sys.argv[1] and "@" in o["lifted"]["by"], o
' "$P/never-ran" && ok "resume --json" || fail "resume --json"

# --- bad input ---------------------------------------------------------------
"$DLOCK" suspend "$N" --reason "$(printf 'two\nlines')" >/dev/null 2>"$T/e1"
check "a reason of two lines is 64" 64 $?
has "and says why" "$T/e1" "reason must be at most 1024 bytes of UTF-8 without control"
"$DLOCK" suspend "$N" --reason "$(head -c 1025 /dev/zero | tr '\0' r)" >/dev/null 2>&1
check "a reason of 1025 bytes is 64" 64 $?
"$DLOCK" suspend >/dev/null 2>&1
check "suspend without NAME is 64" 64 $?
"$DLOCK" resume >/dev/null 2>&1
check "resume without NAME is 64" 64 $?
"$DLOCK" status "$N" --json | grep -q '"suspended":null' &&
    ok "no bad input suspended it" || fail "bad input suspended it"

echo "$fails failed"
[ "$fails" = 0 ]
