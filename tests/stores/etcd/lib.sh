# shellcheck shell=bash
# Sourced (bash) by the etcd store tests in this directory:
#   . lib.sh; etcd_setup DLOCK URL [need...]
# Sets DLOCK, URL, EPS (etcdctl's --endpoints), T (a temp dir, removed on
# exit), and ok/fail counters; every pid added to $pids is killed (its
# process group first, when it leads one) on exit.  A test that cannot run
# (no URL, no etcdctl, no python3) skips with 77, fails with CI=true.
set -u
pids=""
fails=0
n=0
T=""
ok() {
    n=$((n + 1))
    echo "ok   $1"
}
fail() {
    n=$((n + 1))
    fails=$((fails + 1))
    echo "FAIL $1"
}
skip() {
    echo "SKIP: $1"
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
# shellcheck disable=SC2317 # the EXIT trap calls it
etcd_cleanup() {
    local p
    # TERM first: `timeout` passes it on to etcdctl, dlock to its command
    # (and releases); KILL what is left after 5 s.
    for p in $pids; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in $pids; do
        until_true "! alive $p" 50 || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    [ -n "$T" ] && rm -rf "$T"
}
finish() {
    echo "$fails of $n checks failed"
    [ "$fails" = 0 ] && [ "$n" -gt 0 ]
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# etcd_setup DLOCK URL [COMMAND...]: the commands the test needs.
etcd_setup() {
    DLOCK=$1
    URL=$2
    shift 2
    local c rest
    for c in etcdctl "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "no $c (scripts/deps.sh test)"
    done
    [ -n "$URL" ] || skip "no etcd URL (DLOCK_TEST_ETCD_URL: scripts/test.sh starts one)"
    [ -x "$DLOCK" ] || skip "no dlock binary at $DLOCK"
    # etcd://h1:p1,h2:p2?q -> http://h1:p1,http://h2:p2
    rest=${URL#etcd://}
    rest=${rest%%\?*}
    EPS=$(echo "$rest" | sed 's|[^,][^,]*|http://&|g')
    T=$(mktemp -d /tmp/dlock-etcd-test.XXXXXX)
    trap etcd_cleanup EXIT
    trap 'exit 130' INT TERM
    ectl endpoint health >/dev/null 2>&1 || skip "etcd at $EPS does not answer"
}
# etcdctl against the test's endpoints, bounded.
ectl() {
    timeout 15 etcdctl --endpoints="$EPS" --dial-timeout=3s \
        --command-timeout=5s "$@"
}
# The keys under NAME/, in create-revision order, one "KEY CREATE_REV
# LEASE_HEX" a line (python3 decodes etcdctl's JSON: base64 keys, and
# 64-bit numbers that jq would round).
queue() {
    ectl get "$1/" --prefix -w json | python3 -c '
import base64, json, sys
r = json.load(sys.stdin)
for kv in sorted(r.get("kvs", []), key=lambda kv: int(kv["create_revision"])):
    print(base64.b64decode(kv["key"]).decode(), kv["create_revision"],
          "%x" % int(kv.get("lease", 0)))
'
}
# How many keys NAME/ has.
nkeys() { queue "$1" | wc -l; }
# until_true CMD TENTHS: poll CMD every 0.1 s, at most TENTHS times.
until_true() {
    local i=0
    while [ "$i" -lt "$2" ]; do
        eval "$1" && return 0
        i=$((i + 1))
        sleep 0.1
    done
    return 1
}
# await FIFO SECS: read one line from FIFO, at most SECS (a writer that
# died never blocks the test: the fifo is opened read-write).
await() {
    local fd r
    exec {fd}<>"$1"
    read -r -t "$2" -u "$fd" _
    r=$?
    exec {fd}<&-
    return $r
}
# alive PID: running and not a zombie.
alive() {
    local s
    s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    case $s in Z*) return 1 ;; esac
    return 0
}
# wait_exit PID TENTHS: wait for PID (a child) to end, at most TENTHS;
# sets rc to its status (or 124 if it did not end).
wait_exit() {
    if until_true "! alive $1" "$2"; then
        wait "$1"
        rc=$?
    else
        # shellcheck disable=SC2034 # the callers read rc
        rc=124
    fi
}
