#!/bin/bash
# Run every suite against every store compiled into BUILD_DIR:
#   scripts/test.sh BUILD_DIR [CTEST_ARGS...]
# With CTEST_ARGS (e.g. -R torture) only those ctest runs happen.
# Starts throwaway servers (scripts/server-<store>.sh) in one temp dir,
# exports DLOCK_TEST_<STORE>_URL, runs ctest, and stops the servers on any
# exit.  With CI=true a store that cannot be tested is a failure, not a skip.
set -euo pipefail
build=${1:?usage: scripts/test.sh BUILD_DIR [CTEST_ARGS...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
ci=${CI:-false}
tmp=$(mktemp -d /tmp/dlock-test.XXXXXX)
chmod 755 "$tmp"
started=()

cleanup() {
    local s
    for s in "${started[@]}"; do
        "$here/server-$s.sh" stop "$tmp/$s" >/dev/null 2>&1 || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

schemes=$("$build/dlock" --version)
echo "== $schemes"
problems=0
for store in redis postgres mysql; do
    upper=$(echo "$store" | tr a-z A-Z)
    if [ ! -f "$here/../src/stores/$store.c" ]; then
        echo "== $store: not implemented yet"
        continue
    fi
    case $schemes in
    *"$store"*) ;;
    *)
        echo "== $store: not compiled in (client library missing?)"
        if [ "$ci" = true ]; then problems=$((problems + 1)); fi
        continue ;;
    esac
    if [ ! -x "$here/server-$store.sh" ]; then
        echo "== $store: no scripts/server-$store.sh to start a server"
        problems=$((problems + 1))
        continue
    fi
    mkdir -p "$tmp/$store"
    chmod 777 "$tmp/$store"
    started+=("$store")
    if url=$("$here/server-$store.sh" start "$tmp/$store"); then
        echo "== $store: $(echo "$url" | sed -E 's#://([^:/@]*):[^@]*@#://\1:***@#')"
        export "DLOCK_TEST_${upper}_URL=$url"
    else
        echo "== $store: the server did not start"
        problems=$((problems + 1))
    fi
done
if [ "$problems" -ne 0 ] && [ "$ci" = true ]; then
    echo "== CI: $problems store(s) cannot be tested: failing" >&2
    exit 1
fi
# One suite at a time: the contract suite asserts timing within +-50 ms,
# which two ASan builds racing for two cores could blur.
ctest --test-dir "$build" --output-on-failure --timeout 3600 "$@"
[ $# -eq 0 ] || exit 0

# A plain (non-sanitizer) build: the CLI once more under valgrind (which
# cannot run the ASan build), and an install into a DESTDIR used the way a
# user would (tests/install).
plain=$build-plain
cmake -S "$here/.." -B "$plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build "$plain" -j2 >/dev/null
echo "== install into a DESTDIR"
"$here/../tests/install/test_install.sh" "$plain"
if command -v valgrind >/dev/null; then
    cat >"$tmp/dlock-vg" <<EOF2
#!/bin/sh
exec valgrind -q --error-exitcode=99 --leak-check=full \\
    --show-leak-kinds=definite,indirect,possible \\
    --errors-for-leak-kinds=definite,indirect,possible \\
    --child-silent-after-fork=yes "$plain/dlock" "\$@"
EOF2
    chmod +x "$tmp/dlock-vg"
    echo "== cli-sqlite under valgrind"
    DLOCK_UNDER_VALGRIND=1 \
        "$here/../tests/cli/test_cli.sh" "$tmp/dlock-vg" "sqlite://$tmp/cli-vg.db"
elif [ "$ci" = true ]; then
    echo "== CI: valgrind missing" >&2
    exit 1
fi
