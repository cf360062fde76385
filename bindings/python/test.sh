#!/bin/bash
# Run the Python binding's tests against a libdlock:
#   bindings/python/test.sh LIBDLOCK_PATH [DLOCK_CLI_PATH] [PYTEST ARGS...]
# Stores: a sqlite file in a temporary directory, plus every
# DLOCK_TEST_{REDIS,POSTGRES,MYSQL,REDIS_SENTINEL,REDIS_CLUSTER}_URL set
# (with CI=true a store whose URL is missing fails instead of skipping).
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 LIBDLOCK_PATH [DLOCK_CLI_PATH] [PYTEST ARGS...]" >&2
    exit 64
fi
here=$(cd "$(dirname "$0")" && pwd)
lib=$(realpath "$1")
shift
cli=
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
    cli=$(realpath "$1")
    shift
fi
[ -f "$lib" ] || { echo "$0: no library at $lib" >&2; exit 66; }

export DLOCK_LIBRARY=$lib
export DLOCK_CLI=$cli
export PYTHONDONTWRITEBYTECODE=1
cd "$here"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@" tests
