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
. "$here/servers.sh"
if [ "$problems" -ne 0 ] && [ "$ci" = true ]; then
    echo "== CI: $problems store(s) cannot be tested: failing" >&2
    exit 1
fi
# One suite at a time: the contract suite asserts timing within +-50 ms,
# which two ASan builds racing for two cores could blur.
ctest --test-dir "$build" --output-on-failure --timeout 600 "$@"
[ $# -eq 0 ] || exit 0

# A plain, optimised build (tests included: -O2 finds warnings -O0 does
# not): the CLI once more under valgrind (which cannot run the ASan
# build), and an install into a DESTDIR used the way a user would.
plain=$build-plain
cmake -S "$here/.." -B "$plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_TESTING=ON -DDLOCK_SANITIZE=OFF -DDLOCK_WERROR=ON >/dev/null
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

# The language bindings over this plain build's libdlock (the sanitizer
# build's cannot be loaded into an interpreter), against every store the
# servers above serve: a symbol they use that the library stops exporting
# fails here.
for b in python php; do
    echo "== bindings/$b"
    "$here/../bindings/$b/test.sh" "$plain/libdlock.so" "$plain/dlock"
done
