#!/bin/bash
# Run the tests of BUILD_DIR against throwaway servers:
#   scripts/test.sh BUILD_DIR quick       the quick tier (make test): every
#                                         store, every public behaviour,
#                                         ctest -j$JOBS (default 2)
#   scripts/test.sh BUILD_DIR long        the long tier (make test-long):
#                                         torture, partitions, clocks, the
#                                         Redis topologies and TLS, valgrind
#   scripts/test.sh BUILD_DIR CTEST_ARGS  those entries (e.g. -R '^cli-')
# Every ctest entry carries a tier label, quick or long (tests/CMakeLists.txt,
# dlock_tier); an entry without one fails here before anything runs.
# Starts throwaway servers (scripts/server-<store>.sh) in one temp dir
# (the quick tier: redis, postgres, mysql; otherwise also the Sentinel,
# Cluster and TLS topologies), exports DLOCK_TEST_<STORE>_URL, builds the
# plain (non-sanitizer) build BUILD_DIR-plain when an entry needs it
# (label `plain`: install, valgrind, bindings) and exports
# DLOCK_TEST_PLAIN_BUILD, runs ctest, and stops the servers on any exit.
# With CI=true a store that cannot be tested is a failure, not a skip.
set -euo pipefail
build=${1:?usage: scripts/test.sh BUILD_DIR [quick|long|CTEST_ARGS...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
ci=${CI:-false}
jobs=${JOBS:-2}
tier=
case ${1:-} in quick|long) tier=$1; shift ;; esac

stage_t0=$SECONDS
stage() {   # stage NAME: the time since the previous stage ended
    echo "== stage $1: $((SECONDS - stage_t0)) s"
    stage_t0=$SECONDS
}

# The guard: every entry is in exactly one tier.
json=$(ctest --test-dir "$build" --show-only=json-v1)
python3 -c '
import json, sys
bad, both = [], []
for t in json.load(sys.stdin)["tests"]:
    labels = []
    for p in t.get("properties", []):
        if p["name"] == "LABELS":
            labels = p["value"]
    tiers = [l for l in labels if l in ("quick", "long")]
    if not tiers:
        bad.append(t["name"])
    elif len(tiers) > 1:
        both.append(t["name"])
for n in bad:
    print("== ctest entry %s has no tier label (quick or long): add a "
          "dlock_tier(TIER PAR %s) call after its add_test" % (n, n), file=sys.stderr)
for n in both:
    print("== ctest entry %s is in both tiers" % n, file=sys.stderr)
sys.exit(1 if bad or both else 0)
' <<<"$json"

# The long tier runs 4 at a time on 2 cores: its entries mostly wait (on
# leases, faults, failovers).  In two passes, so that a timing-sensitive
# entry (T) never runs beside a CPU-heavy one (C) there either: first
# every entry but the T ones (a C entry, PROCESSORS 2, takes two of the
# four slots; S still runs alone), then the T ones, 3 at a time.
long_jobs=${LONG_JOBS:-4}
long_t_jobs=${LONG_T_JOBS:-3}
case $tier in
quick) args=(-L '^quick$' -j"$jobs") ;;
long)  args=(-L '^long$' -j"$long_jobs") ;;
*)     args=() ;;
esac
# The entries' times from an earlier run (tests/costs.txt, made by
# scripts/timings.py --write) when this build has none of its own: ctest
# then starts the slowest first, also on a fresh clone.
costs=$build/Testing/Temporary/CTestCostData.txt
if [ ! -s "$costs" ] && [ -f "$here/../tests/costs.txt" ]; then
    mkdir -p "$(dirname "$costs")"
    cp "$here/../tests/costs.txt" "$costs"
fi
args+=("$@")
# Does what runs need the plain build?
need_plain=$(ctest --test-dir "$build" --show-only=json-v1 "${args[@]}" | python3 -c '
import json, sys
print(any("plain" in p["value"] for t in json.load(sys.stdin)["tests"]
          for p in t.get("properties", []) if p["name"] == "LABELS"))')
stage "label check"

# The plain, optimised build (tests included: -O2 finds warnings -O0 does
# not), in the background while the servers start.
plain=$build-plain
plain_pid=
if [ "$need_plain" = True ]; then
    ( cmake -S "$here/.." -B "$plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DBUILD_TESTING=ON -DDLOCK_SANITIZE=OFF -DDLOCK_WERROR=ON >/dev/null &&
      cmake --build "$plain" -j"$jobs" >"$build/plain-build.log" 2>&1 ) &
    plain_pid=$!
fi

. "$here/servers.sh"
if [ "$problems" -ne 0 ] && [ "$ci" = true ]; then
    echo "== CI: $problems store(s) cannot be tested: failing" >&2
    exit 1
fi
stage servers

if [ -n "$plain_pid" ]; then
    if ! wait "$plain_pid"; then
        echo "== the plain build $plain failed: $build/plain-build.log" >&2
        tail -20 "$build/plain-build.log" >&2
        exit 1
    fi
    export DLOCK_TEST_PLAIN_BUILD=$(cd "$plain" && pwd)
    stage "plain build (the part not hidden by the servers')"
fi

# Timing-sensitive entries (the contract's +-50 ms) run beside each other
# but never beside a CPU-heavy one (PROCESSORS 2), and entries that change
# or measure a shared server run alone (RUN_SERIAL): tests/CMakeLists.txt.
rc=0
if [ "$tier" = long ]; then
    ctest --test-dir "$build" --output-on-failure --timeout 600 "${args[@]}" \
        -LE '^T$' || rc=$?
    stage "ctest long, all but T"
    ctest --test-dir "$build" --output-on-failure --timeout 600 "${args[@]}" \
        -j"$long_t_jobs" -L '^T$' || rc=$?
    stage "ctest long, T"
else
    ctest --test-dir "$build" --output-on-failure --timeout 600 "${args[@]}" || rc=$?
    stage "ctest${tier:+ $tier}"
fi
exit $rc
