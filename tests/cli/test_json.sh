#!/bin/sh
# Machine output of every command (issue 47, the etcdctl and journald
# habits):  test_json.sh DLOCK_BINARY STORE_URL
# - --json on run, elect, release, init (and status, list, history,
#   leader): one JSON object, parsed by python3 and its fields checked;
# - with --json an error is one JSON object on stderr;
# - one time format everywhere: RFC 3339, milliseconds, Z (run under a
#   TZ east of UTC, where a local time would show +0530);
# - journald: syslog priority prefixes when JOURNAL_STREAM names stderr,
#   none when it names another file;
# - --log-format=json / DLOCK_LOG_FORMAT=json: each stderr line an object.
# Synchronisation by FIFOs, never by sleeping.
set -u
DLOCK=$1
STORE=$2
if ! out=$("$DLOCK" --version 2>&1); then
    echo "FAIL the dlock binary '$DLOCK' does not run: ${out:-no output}"
    exit 1
fi
export DLOCK_STORE="$STORE"
# A local time would show here as +0530: every time must be UTC, Z.
export TZ=Asia/Kolkata
unset DLOCK_LOG_FORMAT JOURNAL_STREAM DLOCK_METRICS_FILE
T=$(mktemp -d /tmp/dlock-json.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
n=0
id="json-$$"

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
# Everything dlock printed, for the time-format check at the end.
keep() { cat "$@" >>"$T/all" 2>/dev/null; }

# jcheck NAME FILE CODE: FILE's last line (or all of it, an array) parsed
# as JSON into d, its lines into lines, then CODE (python3 asserts) run.
jcheck() {
    keep "$2"
    if why=$(python3 - "$2" "$3" 2>&1 <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
lines = text.splitlines()
assert lines, "no output"
# An array (list, history) is the whole output; else the last line.
d = json.loads(text) if text.startswith("[") else json.loads(lines[-1])
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
exec(sys.argv[2])
EOF
    ); then ok "$1"; else fail "$1: $why; output: $(head -c 600 "$2")"; fi
}

await() {
    timeout 120 head -n 1 "$1" >/dev/null && return 0
    fail "$2 never said it runs (nothing on $(basename "$1") in 120 s)"
    return 1
}
# hold NAME [OPTION...]: `dlock run` holds NAME until $T/go-NAME is
# written (its stdout in $T/holder.out).
hold() {
    h=$1
    shift
    mkfifo "$T/ready-$h" "$T/go-$h"
    "$DLOCK" run "$id/$h" "$@" -- sh -c "echo x >'$T/ready-$h'; read _ <'$T/go-$h'" \
        >"$T/holder.out" 2>"$T/holder.err" &
    holder=$!
    await "$T/ready-$h" "the holder of $h" || kill -KILL "$holder" 2>/dev/null
}
let_go() {
    timeout 120 sh -c 'echo go >"$0"' "$T/go-$1" 2>/dev/null
    wait "$holder"; holder_rc=$?; rm -f "$T/go-$1" "$T/ready-$1"
}

# --- run --json ------------------------------------------------------------
"$DLOCK" run "$id/r" --json -- sh -c 'echo from-cmd; exit 7' >"$T/o" 2>"$T/e"
check "run --json: CMD's status is the exit" 7 $?
check "run --json: CMD's own output comes first" from-cmd "$(head -n 1 "$T/o")"
check "run --json: nothing on stderr" "" "$(cat "$T/e")"
jcheck "run --json: one object after CMD's output" "$T/o" '
assert len(lines) == 2, lines
assert d["name"].endswith("/r") and d["command"] == "run"
assert d["acquired"] is True and d["ran"] is True and d["skipped"] is False
assert isinstance(d["fence"], str) and d["fence"].isdigit(), d["fence"]
assert d["result"] == "exited" and d["status"] == 7 and d["exit_code"] == 7
assert d["signal"] is None and d["error"] is None
assert TS.match(d["start"]) and TS.match(d["end"]), (d["start"], d["end"])
assert d["end_ms"] >= d["start_ms"] > 0 and d["waited_ms"] >= 0
assert isinstance(d["pid"], int)'

"$DLOCK" run "$id/r" --json -- sh -c 'kill -TERM $$' >"$T/o" 2>"$T/e"
check "run --json: killed by SIGTERM exits 143" 143 $?
jcheck "run --json: signaled, signal 15" "$T/o" '
assert d["result"] == "signaled" and d["signal"] == 15 and d["status"] is None
assert d["exit_code"] == 143'

"$DLOCK" run "$id/r" --json -- /nonexistent/cmd-$$ >"$T/o" 2>"$T/e"
check "run --json: a missing CMD exits 127" 127 $?
jcheck "run --json: a missing CMD is an error, not run" "$T/o" '
assert d["ran"] is False and d["result"] == "error" and d["exit_code"] == 127
assert d["error"]["exit_code"] == 127 and "cannot run" in d["error"]["message"]'
jcheck "run --json: the error is one object on stderr too" "$T/e" '
assert len(lines) == 1, lines
assert d["error"]["exit_code"] == 127 and d["error"]["code"] is None'

hold busy --json
"$DLOCK" run "$id/busy" -n --json -- true >"$T/o" 2>"$T/e"
check "run -n --json on a busy lock exits 1" 1 $?
jcheck "run -n --json: busy, not acquired, no fence" "$T/o" '
assert d["acquired"] is False and d["fence"] is None and d["ran"] is False
assert d["result"] == "busy" and d["exit_code"] == 1 and d["start"] is None'
"$DLOCK" release --force "$id/busy" --json >"$T/o" 2>"$T/e"
check "release --force --json exits 0" 0 $?
jcheck "release --force --json: {name, removed: 1}" "$T/o" '
assert d == {"name": d["name"], "removed": 1} and d["name"].endswith("/busy")'
let_go busy
check "the broken holder exits 75" 75 "$holder_rc"
jcheck "run --json of the broken holder: lost, exit 75" "$T/holder.out" '
assert d["result"] == "lost" and d["exit_code"] == 75 and d["ran"] is True
assert d["error"]["exit_code"] == 75 and "lost" in d["error"]["message"]'
"$DLOCK" release --force "$id/never" --json >"$T/o" 2>"$T/e"
jcheck "release --force --json of a lock never held: removed 0" "$T/o" '
assert d["removed"] == 0'
"$DLOCK" release "$id/busy" --json >"$T/o" 2>"$T/e"
check "release --json without --force is a usage error" 64 $?
check "release --json without --force: stdout empty" "" "$(cat "$T/o")"
jcheck "release --json without --force: the error as JSON" "$T/e" '
assert len(lines) == 1 and d["error"]["exit_code"] == 64
assert "--force" in d["error"]["message"]'

"$DLOCK" run "$id/once" --once --json -- true >"$T/o" 2>"$T/e"
"$DLOCK" run "$id/once" --once --json -- true >"$T/o" 2>"$T/e"
check "run --once --json the second time exits 0" 0 $?
jcheck "run --once --json: skipped" "$T/o" '
assert d["skipped"] is True and d["ran"] is False and d["result"] == "skipped"'
keep "$T/e"

"$DLOCK" elect "$id/el" --json -- true >"$T/o" 2>"$T/e"
check "elect --json exits with CMD's status" 0 $?
jcheck "elect --json: command elect, led (acquired), term as fence" "$T/o" '
assert d["command"] == "elect" and d["acquired"] is True
assert d["fence"].isdigit() and d["result"] == "exited"'

# --- the other commands ----------------------------------------------------
"$DLOCK" init --json >"$T/o" 2>"$T/e"
check "init --json exits 0" 0 $?
jcheck "init --json: {url, ready}, no password" "$T/o" '
assert d["ready"] is True and "url" in d
assert not re.search(r"://[^/@]*:[^/@*]+@", d["url"]), d["url"]'
"$DLOCK" init --print --json >"$T/o" 2>"$T/e"
rc=$?
if [ $rc -eq 0 ]; then
    jcheck "init --print --json: {url, ddl}" "$T/o" '
assert isinstance(d["ddl"], str) and d["url"]'
else
    # A store without DDL (Redis, etcd): the error as JSON.
    jcheck "init --print --json without DDL: the error as JSON ($rc)" "$T/e" '
assert d["error"]["exit_code"] != 0'
fi

hold st
"$DLOCK" status "$id/st" >"$T/o" 2>"$T/e"
keep "$T/o"
case $(cat "$T/o") in
*" since "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z*)
    ok "status: since in RFC 3339 UTC with ms" ;;
*) fail "status: since is not RFC 3339 UTC with ms: $(cat "$T/o")" ;;
esac
"$DLOCK" status "$id/st" --json >"$T/o" 2>"$T/e"
jcheck "status --json: held" "$T/o" 'assert d["held"] is True'
"$DLOCK" -v run "$id/st" -w 0.3 -- true >"$T/o" 2>"$T/e"
keep "$T/e"
case $(cat "$T/e") in
*"since "*Z*) ok "-v's waiting line: since in UTC" ;;
*) fail "-v's waiting line: $(cat "$T/e")" ;;
esac
let_go st
"$DLOCK" list "$id/" --json >"$T/o" 2>"$T/e"
jcheck "list --json: an array" "$T/o" '
assert isinstance(d, list) and d'
"$DLOCK" history "$id/r" --json >"$T/o" 2>"$T/e"
jcheck "history --json: times in RFC 3339 Z" "$T/o" '
assert d and all(TS.match(r["start"]) for r in d)'
"$DLOCK" history "$id/r" >"$T/o" 2>"$T/e"
keep "$T/o"

# --- errors under --json ---------------------------------------------------
for cmd in "status --json --bogus" "list --json --bogus" "history x --json --bogus" \
    "leader --json --bogus" "release --json --bogus" "init --json --bogus" \
    "run x --json --bogus -- true" "elect x --json --bogus -- true" \
    "status --json" "history --json -n 2" "run --json"; do
    # shellcheck disable=SC2086
    "$DLOCK" $cmd >"$T/o" 2>"$T/e"
    rc=$?
    check "$cmd: usage error" 64 $rc
    check "$cmd: nothing on stdout" "" "$(cat "$T/o")"
    jcheck "$cmd: one JSON error object on stderr" "$T/e" '
assert len(lines) == 1, lines
e = d["error"]
assert e["exit_code"] == 64 and e["code"] is None and e["message"]'
done
bad="sqlite://$T/no/such/dir/x.db"
"$DLOCK" -s "$bad" status x --json >"$T/o" 2>"$T/e"
rc=$?
check "an unusable store under --json exits 69" 69 $rc
jcheck "an unusable store: the library's code by name" "$T/e" '
assert len(lines) == 1
assert d["error"]["exit_code"] == 69 and d["error"]["code"].startswith("DLOCK_E")'

# --- journald priorities ---------------------------------------------------
: >"$T/j"
js=$(stat -c '%d:%i' "$T/j")
JOURNAL_STREAM=$js "$DLOCK" -v run "$id/j" -- true 2>>"$T/j"
JOURNAL_STREAM=$js "$DLOCK" -s "$bad" status x 2>>"$T/j"
JOURNAL_STREAM=$js "$DLOCK" run "$id/once" --once -- true 2>>"$T/j"
keep "$T/j"
case $(sed -n 1p "$T/j") in "<7>dlock: run: acquired"*) ok "journal: -v's line is <7> debug" ;;
*) fail "journal: -v's line: $(cat "$T/j")" ;; esac
case $(sed -n 2p "$T/j") in "<3>dlock: cannot open the store"*) ok "journal: an error is <3>" ;;
*) fail "journal: the error line: $(cat "$T/j")" ;; esac
case $(sed -n 3p "$T/j") in "<5>dlock: run: "*"already ran"*) ok "journal: a skip is <5> notice" ;;
*) fail "journal: the skip line: $(cat "$T/j")" ;; esac
: >"$T/j2"
JOURNAL_STREAM=1:$(stat -c %i "$T/j2") "$DLOCK" -v run "$id/j" -- true 2>>"$T/j2"
JOURNAL_STREAM=$js "$DLOCK" -s "$bad" status x 2>>"$T/j2"
JOURNAL_STREAM=garbage "$DLOCK" -s "$bad" status x 2>>"$T/j2"
"$DLOCK" -s "$bad" status x 2>>"$T/j2"
keep "$T/j2"
if [ "$(grep -c '^dlock: ' "$T/j2")" = 4 ] && ! grep -q '^<' "$T/j2"; then
    ok "journal: no prefixes when JOURNAL_STREAM names another file (or none)"
else
    fail "journal: prefixes where stderr is not the journal: $(cat "$T/j2")"
fi
JOURNAL_STREAM=$js "$DLOCK" -s "$bad" status x --json 2>"$T/j"
rc=$?
case $(cat "$T/j") in '<3>{"error":'*) ok "journal: the --json error object is <3>" ;;
*) fail "journal: the --json error: $(cat "$T/j")" ;; esac

# --- --log-format=json -----------------------------------------------------
"$DLOCK" --log-format=json -v run "$id/lf" -- true 2>"$T/e"
"$DLOCK" --log-format json -s "$bad" status "$id/lf" 2>>"$T/e"
DLOCK_LOG_FORMAT=json "$DLOCK" run "$id/once" --once -- true 2>>"$T/e"
DLOCK_LOG_FORMAT=json "$DLOCK" status 2>>"$T/e"
jcheck "--log-format=json: every stderr line an object" "$T/e" '
ds = [json.loads(l) for l in lines]
assert len(ds) == 4, lines
for x in ds:
    assert TS.match(x["ts"]) and isinstance(x["pid"], int) and x["msg"], x
assert [x["level"] for x in ds] == ["debug", "err", "notice", "err"], ds
assert ds[0]["cmd"] == "run" and ds[0]["name"].endswith("/lf")
assert ds[1]["cmd"] == "status" and "cannot open the store" in ds[1]["msg"]
assert "NAME is missing" in ds[3]["msg"]'
"$DLOCK" --log-format=json -s "$bad" status x --json 2>"$T/e"
jcheck "--log-format=json with --json: the error is a log line with error" "$T/e" '
assert len(lines) == 1
assert d["level"] == "err" and d["error"]["exit_code"] == 69'
"$DLOCK" --log-format=xml status x >/dev/null 2>"$T/e"
check "--log-format=xml is a usage error" 64 $?
DLOCK_LOG_FORMAT=yaml "$DLOCK" status x >/dev/null 2>"$T/e"
check "DLOCK_LOG_FORMAT=yaml is a usage error" 64 $?
"$DLOCK" status x --log-format=json >/dev/null 2>"$T/e"
check "--log-format after the command is a usage error" 64 $?
case $(cat "$T/e") in *"global option"*) ok "it says --log-format is a global option" ;;
*) fail "--log-format after the command says: $(cat "$T/e")" ;; esac

# --- one time format in everything printed ---------------------------------
if grep -Eq '[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([+-][0-9]{2}:?[0-9]{2}|[^.0-9Z])' "$T/all"; then
    fail "a time not in RFC 3339 UTC with ms: $(grep -E '[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([+-][0-9]{2}:?[0-9]{2}|[^.0-9Z])' "$T/all" | head -3)"
elif grep -q '+0000\|+0530\|+05:30' "$T/all"; then
    fail "a local offset in the output: $(grep '+0000\|+0530\|+05:30' "$T/all" | head -3)"
elif ! grep -Eq 'T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z' "$T/all"; then
    fail "no times seen at all in the output"
else
    ok "every time shown is RFC 3339 UTC with ms, no local offset"
fi

echo "$((n - fails))/$n passed"
[ "$fails" -eq 0 ]
