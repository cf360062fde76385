#!/bin/bash
# Run the Python binding's tests against a libdlock:
#   bindings/python/test.sh LIBDLOCK_PATH [DLOCK_CLI_PATH] [PYTEST ARGS...]
# Stores: a sqlite file in a temporary directory, plus every
# DLOCK_TEST_{REDIS,POSTGRES,MYSQL,REDIS_SENTINEL,REDIS_CLUSTER,ETCD}_URL set
# (with CI=true a store whose URL is missing fails instead of skipping).
# DLOCK_TEST_ONLY=STORE (sqlite, redis, postgres, mysql, redis-sentinel,
# redis-cluster, etcd): that store's tests only (the tests that take no store
# run with sqlite), so the others' URLs are not needed: one ctest entry a
# store (tests/CMakeLists.txt, bindings-python-STORE).
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 LIBDLOCK_PATH [DLOCK_CLI_PATH] [PYTEST ARGS...]" >&2
    exit 64
fi
. "$(dirname "$0")/lib_arg.sh"
lib_arg "$1"
shift
cli=
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
    cli=$(realpath "$1")
    shift
fi

export DLOCK_LIBRARY=$lib
export DLOCK_CLI=$cli
export PYTHONDONTWRITEBYTECODE=1
cd "$here"
if [ -z "${DLOCK_TEST_ONLY:-}" ]; then
    exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@" tests
fi
exec /usr/bin/python3 - -q -p no:cacheprovider "$@" tests <<'EOF'
import os
import sys

import pytest

only = os.environ["DLOCK_TEST_ONLY"]


class Only:
    """Deselect every test parametrized with another store (conftest.py's
    url fixture); a test with no store runs with sqlite's."""

    def pytest_collection_modifyitems(self, config, items):
        stores = set()
        keep, drop = [], []
        for item in items:
            cs = getattr(item, "callspec", None)
            kind = cs.params.get("url") if cs is not None else None
            if kind is not None:
                stores.add(kind)
            (keep if kind == only or (kind is None and only == "sqlite")
             else drop).append(item)
        if only not in stores:
            raise pytest.UsageError("DLOCK_TEST_ONLY=%s: no such store (%s)"
                                    % (only, ", ".join(sorted(stores))))
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


sys.exit(pytest.main(sys.argv[1:], plugins=[Only()]))
EOF
