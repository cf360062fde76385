#!/bin/bash
# A release cut off after the command ended (issue 34, item 16): the
# command ran whole under the lock, so `dlock run` exits with the
# command's own status and warns that the release could not be confirmed;
# 75 ("lost") would make a wrapper that reruns on 75 rerun a finished job.
#
#   test_run_release_cut.sh DLOCK [CASE...]
#
# CASE: redis, postgres, postgres-lease, mysql, mysql-lease (default:
# every one compiled into DLOCK).  Per case, in network namespaces
# (tests/partition/lib.sh, scripts/netns.sh): the store's server on host
# srv; host c1 runs `dlock run --ttl 10 NAME -- CMD` (URL ?timeout=1s, so
# the cut-off release ends soon); CMD says it runs, waits for a FIFO;
# c1 is cut off from srv (nftables drop: no reset, no ICMP); CMD is let
# go and exits 3.  dlock must exit 3 and say "could not be confirmed".
# After the heal, the lock is free again within its lease (a run from c1
# with -w 30 gets it).
#
# Root only.  Exits 77 (ctest: skipped) when the machine cannot run it,
# except with CI=true, where that is a failure.
set -euo pipefail
DLOCK=$(realpath "${1:?usage: test_run_release_cut.sh DLOCK [CASE...]}")
shift
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../partition/lib.sh
. "$here/../partition/lib.sh"
partition_begin 1 "$@"

ok() { echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }

run_case() {
    local c=$1 u d name rc rc2
    partition_url "$c" || {
        fail "$c: its server did not start in the namespace"
        return
    }
    u=$PARTITION_URL
    case $u in
    *\?*) u="$u&timeout=1s" ;;
    *) u="$u?timeout=1s" ;;
    esac
    d=$T/$c
    mkdir -p "$d"
    mkfifo "$d/ready" "$d/go"
    name="release-cut-$c-$$"
    # Bounded by timeout(1) (today's code ends within seconds too).
    rc=0
    timeout -k 5 60 ip netns exec "$(netns_name c1)" \
        "$DLOCK" -s "$u" run "$name" --ttl 10 -- \
        sh -c 'echo x >"$1"; read _ <"$2"; exit 3' sh "$d/ready" "$d/go" \
        2>"$d/err" &
    local pid=$!
    # The FIFO opened read-write: no hang if dlock fails before CMD runs.
    exec 8<>"$d/ready"
    if ! read -r -t 30 _ <&8; then
        fail "$c: the command did not start within 30 s: $(cat "$d/err")"
        exec 8<&-
        kill "$pid" 2>/dev/null || true
        wait "$pid" || true
        return
    fi
    exec 8<&-
    netns_cut c1 srv
    echo go >"$d/go"
    wait "$pid" || rc=$?
    netns_heal c1 srv
    if [ "$rc" = 3 ]; then
        ok "$c: a release cut off after the command ended exits with the command's status (3)"
    else
        fail "$c: dlock exited $rc, not the command's 3: $(tail -n3 "$d/err")"
    fi
    if grep -q "warning: .*release of '$name' could not be confirmed" "$d/err"; then
        ok "$c: it warns that the release could not be confirmed"
    else
        fail "$c: no warning that the release could not be confirmed: $(tail -n3 "$d/err")"
    fi
    # The lock goes by itself (the lease; a session store's session).
    rc2=0
    timeout -k 5 60 ip netns exec "$(netns_name c1)" \
        "$DLOCK" -s "$u" run "$name" -w 30 -- true 2>"$d/err2" || rc2=$?
    if [ "$rc2" = 0 ]; then
        ok "$c: after the heal the lock is free again within its lease"
    else
        fail "$c: after the heal, a run exited $rc2: $(tail -n3 "$d/err2")"
    fi
}

for c in "${cases[@]}"; do
    case $c in
    redis | postgres | postgres-lease | mysql | mysql-lease) ;;
    *)
        echo "release-cut: unknown case $c" >&2
        exit 64
        ;;
    esac
    echo "--- $c"
    run_case "$c"
done
echo "$fails check(s) failed"
[ "$fails" = 0 ]
