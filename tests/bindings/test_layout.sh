#!/bin/sh
# bindings-layout: the structures the Python and PHP bindings copy from
# include/dlock.h, laid out by ctypes and by PHP's FFI from the bindings'
# own declarations, against the C compiler's layout of the header
# (layout.c): the same sizes, fields, offsets and options version, or a
# diff and exit 1.
#   tests/bindings/test_layout.sh LAYOUT_PROGRAM LIBDLOCK_PATH
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bindings=$here/../../bindings
[ $# -eq 2 ] || { echo "usage: $0 LAYOUT_PROGRAM LIBDLOCK_PATH" >&2; exit 64; }
tmp=$(mktemp -d /tmp/dlock-layout.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
DLOCK_LIBRARY=$(realpath "$2")
export DLOCK_LIBRARY PYTHONDONTWRITEBYTECODE=1
"$1" >"$tmp/c"
failed=0
for b in python php; do
    case $b in
    python) /usr/bin/python3 "$here/layout.py" "$bindings/python" >"$tmp/$b" ;;
    php) php -d ffi.enable=1 -d display_errors=stderr "$here/layout.php" \
        "$bindings/php" >"$tmp/$b" ;;
    esac
    if diff -u --label include/dlock.h --label "bindings/$b" "$tmp/c" \
        "$tmp/$b"; then
        echo "ok   bindings/$b: $(grep -c '^field' "$tmp/$b") fields of $(grep -c '^struct' "$tmp/$b") structures as dlock.h lays them out"
    else
        echo "FAIL bindings/$b does not lay out dlock.h's structures as the header does (above: - the header, + the binding)"
        failed=1
    fi
done
exit $failed
