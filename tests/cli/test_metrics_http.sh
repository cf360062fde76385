#!/bin/bash
# `dlock metrics --listen` (src/cli/metrics_http.c) on one store:
#   test_metrics_http.sh scrape KIND DLOCK URL PROMETHEUS_SCRIPT
#   test_metrics_http.sh bounds DLOCK URL
#   test_metrics_http.sh restart DLOCK SERVER_SCRIPT
# scrape: records two runs under a prefix of this test's own, serves them
# on 127.0.0.1:0 (the port read from the start line through a fifo),
# parses /metrics with python3-prometheus-client's parser and checks the
# values against `dlock history --json`; 404 and 405; `promtool check
# metrics`; the same store at a closed port is a 503 with the error
# series, promptly; a real Prometheus (scripts/server-prometheus.sh)
# scraping it has the start time of the record.
# bounds (one store is enough: the HTTP side does not depend on it): a
# slow loris does not block a scrape and is cut after the connection
# timeout (10 s); connections above the per-address limit are refused
# while another address still scrapes; a huge request is refused; bad and
# busy addresses exit 64 before serving; SIGTERM and SIGINT exit 0.
# restart (SERVER_SCRIPT: scripts/server-redis.sh): a store server of the
# test's own frozen (SIGSTOP) or stopped under a serving dlock is a 503
# with the error series in seconds, and thawed or started again a 200;
# each change said once on stderr.
set -u
mode=$1
shift
if [ "$mode" = scrape ]; then
    kind=$1 dlock=$2 url=$3 prom_script=$4
elif [ "$mode" = restart ]; then
    kind=redis dlock=$1 url=own srv_script=$2
else
    kind=sqlite dlock=$1 url=$2
fi
py=/usr/bin/python3
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() {
    echo "$*"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
[ -n "$url" ] || skip "no $kind server (DLOCK_TEST_*_URL)"
"$py" -c 'import prometheus_client.parser' 2>/dev/null ||
    skip "$py cannot import prometheus_client (python3-prometheus-client)"
if "$dlock" -s "sqlite:///nonexistent/x.db" metrics --listen '!' 2>&1 |
    grep -q "without libmicrohttpd"; then
    skip "dlock was built without libmicrohttpd"
fi
t=$(mktemp -d /tmp/dlock-mhttp.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    [ -d "$t/prom" ] && "$prom_script" stop "$t/prom" >/dev/null 2>&1
    [ -d "$t/store" ] && "$srv_script" stop "$t/store" >/dev/null 2>&1
    rm -rf "$t"
}
trap cleanup EXIT
unset DLOCK_STORE DLOCK_STORE_FILE DLOCK_METRICS_FILE

# serve TAG URL ARGS...: start `dlock -s URL metrics ARGS... --listen
# $listen` (default 127.0.0.1:0); $srv (its pid) and $port from its start
# line, read through a fifo (<= 30 s); the rest of its stderr goes to
# $t/TAG.err.
serve() {
    local tag=$1 u=$2 line
    shift 2
    mkfifo "$t/$tag.fifo"
    "$dlock" -s "$u" metrics "$@" --listen "${listen:-127.0.0.1:0}" 2>"$t/$tag.fifo" &
    srv=$!
    pids+=("$srv")
    exec 3<"$t/$tag.fifo"
    port=
    # Warnings (a store down now) may come first.
    while read -r -t 30 -u 3 line; do
        port=$(sed -n 's|.* at http://.*:\([0-9]*\)/metrics$|\1|p' <<<"$line")
        [ -n "$port" ] && break
        echo "$line" >>"$t/$tag.head"
    done
    cat <&3 >"$t/$tag.err" &
    exec 3<&-
    [ -n "$port" ] || { bad "$tag: no start line (got '${line:-}')"; return 1; }
}

# stop_srv [SIGS]: SIGTERM (or each of SIGS, back to back: a second one
# while it stops must not make it 143), exit 0 within 10 s.
stop_srv() {
    local sig=${1:-TERM} i rc s
    for s in $sig; do kill "-$s" "$srv"; done
    for i in $(seq 1 100); do
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.1
    done
    wait "$srv"
    rc=$?
    [ "$rc" = 0 ] && ok "SIG$sig: exit 0" || bad "SIG$sig: exit $rc"
}

# get PATH [CURL ARGS]: $code and $t/body.
get() {
    local p=$1
    shift
    code=$(curl -s --max-time 20 -o "$t/body" -w '%{http_code}' "$@" \
        "http://127.0.0.1:$port$p")
}

# check_down WHAT: the last get (started at $t0) was a prompt 503 whose
# body is the error series.
check_down() {
    if [ "$code" = 503 ] && [ $((SECONDS - t0)) -le 8 ] &&
        "$py" - "$t/body" <<'EOF'; then
import sys
from prometheus_client.parser import text_string_to_metric_families
v = {(s.name, tuple(sorted(s.labels.items()))): s.value
     for f in text_string_to_metric_families(open(sys.argv[1]).read())
     for s in f.samples}
assert v[("dlock_metrics_scrape_ok", ())] == 0
assert v[("dlock_metrics_scrape_error", (("error", "unavailable"),))] == 1
EOF
        ok "$1: 503 with the error series in $((SECONDS - t0)) s"
    else
        bad "$1: $code in $((SECONDS - t0)) s: $(head -c 300 "$t/body")"
    fi
}

scrape_mode() {
    local pre="mh$$x$RANDOM-" rc
    # Two runs under the prefix: a success and a failure.
    "$dlock" -s "$url" run "${pre}nightly" -- true ||
        bad "run ${pre}nightly"
    "$dlock" -s "$url" run "${pre}broken" -- sh -c 'exit 3'
    [ $? = 3 ] || bad "run ${pre}broken: not exit 3"
    "$dlock" -s "$url" history "${pre}nightly" --json >"$t/hist.json" ||
        bad "history --json"
    serve up "$url" "$pre" || return

    get /metrics
    [ "$code" = 200 ] && ok "GET /metrics: 200" || bad "GET /metrics: $code"
    if out=$("$py" - "$t/body" "$t/hist.json" "$pre" 2>&1 <<'EOF'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
run = json.load(open(sys.argv[2]))[0]
pre = sys.argv[3]
v = {}
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        v[(s.name, s.labels.get("name"))] = s.value
def val(m, n):
    return v.get((m, pre + n))
start = val("dlock_job_last_start_timestamp_seconds", "nightly")
assert start is not None and abs(start - run["start_ms"] / 1000) < 0.002, start
assert val("dlock_job_last_success_timestamp_seconds", "nightly") is not None
assert val("dlock_job_last_exit_status", "broken") == 3, val("dlock_job_last_exit_status", "broken")
assert val("dlock_job_running", "nightly") == 0
names = {k[1] for k in v if k[1] is not None}
assert names == {pre + "nightly", pre + "broken"}, names
assert v.get(("dlock_metrics_scrape_ok", None)) == 1
EOF
    ); then
        ok "the scrape parses, values as recorded"
    else
        bad "the scrape: $out"
    fi
    if command -v promtool >/dev/null; then
        if out=$(promtool check metrics <"$t/body" 2>&1); then
            ok "promtool check metrics"
        else
            bad "promtool check metrics: $out"
        fi
    else
        skip "no promtool (Debian: prometheus)"
    fi
    get /
    [ "$code" = 200 ] && grep -q /metrics "$t/body" && ok "GET /: a pointer" ||
        bad "GET /: $code"
    get /nothing
    [ "$code" = 404 ] && ok "GET /nothing: 404" || bad "GET /nothing: $code"
    get /metrics -X POST -d x=1
    [ "$code" = 405 ] && ok "POST /metrics: 405" || bad "POST: $code"
    get /metrics -I
    [ "$code" = 200 ] && ok "HEAD /metrics: 200" || bad "HEAD: $code"

    # A real Prometheus scraping it: the series appears, with the
    # record's value (bounded: 30 s).
    if command -v prometheus >/dev/null; then
        mkdir "$t/prom"
        if purl=$("$prom_script" start "$t/prom" "127.0.0.1:$port"); then
            local q="dlock_job_last_start_timestamp_seconds{name=\"${pre}nightly\"}" end=$((SECONDS + 30)) got=
            while [ "$SECONDS" -lt "$end" ]; do
                got=$(curl -s --max-time 5 -G "$purl/api/v1/query" \
                    --data-urlencode "query=$q" | "$py" -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null)
                [ -n "$got" ] && break
                sleep 0.2
            done
            if [ -n "$got" ] && "$py" -c '
import json, sys
run = json.load(open(sys.argv[1]))[0]
sys.exit(abs(float(sys.argv[2]) - run["start_ms"] / 1000) >= 0.002)' \
                "$t/hist.json" "$got"; then
                ok "Prometheus scraped it: $got"
            else
                bad "Prometheus: no or wrong series ('$got'): $(tail -3 "$t/prom/prometheus.log")"
            fi
            "$prom_script" stop "$t/prom"
        else
            bad "scripts/server-prometheus.sh start failed"
        fi
    else
        skip "no prometheus (Debian: prometheus)"
    fi
    stop_srv TERM

    # The store down (its port closed; SQLite: a file that cannot be
    # made): a 503 whose body is the error series, within the open's
    # bound (-w 3), on each scrape.
    local down
    if [ "$kind" = sqlite ]; then
        down="sqlite:///nonexistent-dlock-dir/x.db"
    else
        down=$(sed -E 's#^([a-z+]+://([^@/]*@)?)[^/:?]+(:[0-9]+)?#\1127.0.0.1:1#' <<<"$url")
    fi
    serve down "$down" -w 3 "$pre" || return
    local i t0
    for i in 1 2; do
        t0=$SECONDS
        get /metrics
        check_down "store down, scrape $i"
    done
    stop_srv "INT TERM"
}

bounds_mode() {
    local rc out
    # Bad and busy addresses: 64 before serving.
    for a in bogus 127.0.0.1 127.0.0.1:99999 ::1:80 '[::1]' '[]:9188' 1.2.3:80 \
        localhost:9188 127.0.0.1:-1; do
        out=$(timeout 20 "$dlock" -s "$url" metrics --listen "$a" 2>&1)
        rc=$?
        [ "$rc" = 64 ] && grep -q "listen" <<<"$out" &&
            ok "--listen '$a': 64" || bad "--listen '$a': $rc: $out"
    done
    serve up "$url" || return
    out=$(timeout 20 "$dlock" -s "$url" metrics --listen "127.0.0.1:$port" 2>&1)
    rc=$?
    [ "$rc" = 64 ] && grep -q "already in use" <<<"$out" &&
        ok "a busy address: 64, said" || bad "a busy address: $rc: $out"
    if out=$("$py" - "$port" 2>&1 <<'EOF'
import http.client, socket, sys, time
port = int(sys.argv[1])

def scrape(src="127.0.0.1"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5,
                                   source_address=(src, 0))
    c.request("GET", "/metrics")
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body

def idle(src):
    s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                 source_address=(src, 0))
    return s

def refused(s):
    # A connection over the limit is accepted and closed at once.
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        return s.recv(100) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True

# A slow loris: half a request, then nothing.  A scrape beside it works.
loris = idle("127.0.0.1")
loris.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
t0 = time.monotonic()
st, _ = scrape()
assert st == 200, "scrape beside a slow loris: %d" % st
assert time.monotonic() - t0 < 3, "the scrape beside a loris was slow"
print("ok   a scrape beside a slow loris: 200")

# Per address: 8 connections; the 9th is refused, another address still
# scrapes.
# The server accepts in the order of the connects: the 9th is counted
# after the 8 before it.
held = [idle("127.0.0.1") for _ in range(7)]  # + the loris: 8
extra = idle("127.0.0.1")
assert refused(extra), "a 9th connection from one address was served"
print("ok   the 9th connection from one address: refused")
st, _ = scrape("127.0.0.2")
assert st == 200, "scrape from another address: %d" % st
print("ok   another address still scrapes: 200")

# A request larger than the connection's memory: refused, not buffered.
s = idle("127.0.0.3")
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 +
          b"\r\n\r\n")
reply = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            break
        reply += b
except ConnectionResetError:
    pass
assert not reply.startswith(b"HTTP/1.1 200"), reply[:60]
print("ok   a 64 KiB header: refused (%s)" % reply[:12].decode(errors="replace"))
s.close()

# The loris is cut after the connection timeout (10 s).
loris.settimeout(20)
try:
    got = loris.recv(100)
except ConnectionResetError:
    got = b""
dt = time.monotonic() - t0
assert 8 <= dt <= 16, "the slow loris was cut after %.1f s" % dt
print("ok   the slow loris is cut after %.1f s (%r)" % (dt, got[:12]))
# The idle ones too (opened just after it): each gets its end.
for h in held:
    h.settimeout(10)
    try:
        assert h.recv(100) == b""
    except ConnectionResetError:
        pass
    h.close()
print("ok   the idle connections are cut too")
# (From another address: when the server has counted the closes is not
# for this side to see.)
st, _ = scrape("127.0.0.4")
assert st == 200
print("ok   a scrape after: 200")
EOF
    ); then
        echo "$out"
    else
        bad "bounds: $out"
    fi
    stop_srv TERM
    # [::1] where this machine has IPv6 loopback.
    if "$py" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
        listen='[::1]:0' serve v6 "$url" || return
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://[::1]:$port/metrics")
        [ "$code" = 200 ] && ok "[::1]:0: 200" || bad "[::1]:0: '$code'"
        stop_srv TERM
    fi
}

restart_mode() {
    command -v redis-server >/dev/null || skip "no redis-server"
    mkdir "$t/store"
    url=$("$srv_script" start "$t/store") || { bad "$srv_script start"; return; }
    url="$url/?timeout=1"
    "$dlock" -s "$url" run mhr-job -- true || bad "run mhr-job"
    serve up "$url" -w 2 || return
    get /metrics
    [ "$code" = 200 ] && ok "store up: 200" || bad "store up: $code"
    # Frozen (SIGSTOP): the scrape is a 503 within the URL's ?timeout=
    # (1 s here) and the open's -w 2, never a hang.
    local i t0 n rpid
    rpid=$(cat "$t/store/redis.pid")
    kill -STOP "$rpid"
    # Within a second of a read the last answer comes again (the answer
    # cache): the frozen store is not asked, so it is a 200 at once.
    get /metrics
    [ "$code" = 200 ] && ok "within 1 s of a read: the last answer, the store not asked" ||
        bad "a scrape right after a read: $code"
    # Past the cache's second (CACHE_MS in metrics_http.c), each scrape
    # below reads the store: the waits are that second, not a sync.
    sleep 1.1
    t0=$SECONDS
    get /metrics
    kill -CONT "$rpid"
    check_down "store frozen"
    sleep 1.1
    get /metrics
    [ "$code" = 200 ] && ok "store thawed: 200" || bad "store thawed: $code"
    "$srv_script" stop "$t/store"
    for i in 1 2; do
        sleep 1.1
        t0=$SECONDS
        get /metrics
        check_down "store stopped, scrape $i"
    done
    "$srv_script" ctl "$t/store" restart || { bad "restart"; return; }
    sleep 1.1
    get /metrics
    [ "$code" = 200 ] && grep -q '^dlock_metrics_scrape_ok 1$' "$t/body" &&
        ok "store started again: 200" || bad "store started again: $code"
    stop_srv TERM
    n=$(grep -c "cannot" "$t/up.err")
    [ "$n" = 2 ] && ok "each failure said once (frozen, stopped)" ||
        bad "the failure said $n times: $(cat "$t/up.err")"
    grep -q "can be read again" "$t/up.err" && ok "the recovery said" ||
        bad "the recovery not said: $(cat "$t/up.err")"
}

case $mode in
scrape) scrape_mode ;;
bounds) bounds_mode ;;
restart) restart_mode ;;
*) echo "usage: $0 scrape|bounds ..." >&2; exit 64 ;;
esac
if [ "$fails" != 0 ]; then
    for f in "$t"/*.head "$t"/*.err; do
        [ -s "$f" ] && { echo "--- ${f##*/}"; tail -n 30 "$f"; }
    done
fi
[ "$fails" = 0 ] && echo "all passed" || echo "$fails failed"
[ "$fails" = 0 ]
