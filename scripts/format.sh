#!/bin/sh
# The C sources in .clang-format's style (clang-format 14, Debian's).
#   scripts/format.sh check   list the files that differ, exit 1 if any
#                             (the `clang-format` ctest entry, quick tier)
#   scripts/format.sh fix     rewrite them in place
# Every .c and .h under src/, include/, tests/, bench/ and bindings/ (the
# build directories' generated files are not in the tree).  Text a
# formatter would spoil (tables laid out by hand) sits between
# /* clang-format off */ and /* clang-format on */.
set -eu
cd "$(dirname "$0")/.."
mode=${1:-check}
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null 2>&1 || {
    echo "format.sh: no $cf (apt-get install clang-format; scripts/deps.sh test does)" >&2
    exit 1
}
files=$(find src include tests bench bindings -name '*.[ch]' -type f | LC_ALL=C sort)
case $mode in
check)
    bad=0
    for f in $files; do
        if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
            echo "not formatted: $f (scripts/format.sh fix)"
            bad=$((bad + 1))
        fi
    done
    n=$(echo "$files" | wc -l)
    echo "format.sh: $bad of $n files differ from .clang-format"
    [ "$bad" = 0 ]
    ;;
fix) echo "$files" | xargs "$cf" -i ;;
*) echo "usage: $0 check|fix" >&2; exit 64 ;;
esac
