#!/bin/sh
# The house rules: the C sources in .clang-format's style (clang-format
# 14, Debian's), and no file in src/ or bindings/ over 1,000 lines.
#   scripts/format.sh check   list the files that break a rule, exit 1 if
#                             any (the `house-style` ctest entry, quick tier)
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
    long=0
    for f in $(find src bindings -type f \( -name '*.[ch]' -o -name '*.py' \
        -o -name '*.php' -o -name '*.sql' -o -name '*.lua' -o -name '*.sh' \) |
        LC_ALL=C sort); do
        l=$(wc -l <"$f")
        if [ "$l" -ge 1000 ]; then
            echo "too long: $f ($l lines; the house limit is 1,000)"
            long=$((long + 1))
        fi
    done
    echo "format.sh: $long files in src/ and bindings/ over 1,000 lines"
    [ "$bad" = 0 ] && [ "$long" = 0 ]
    ;;
fix) echo "$files" | xargs "$cf" -i ;;
*) echo "usage: $0 check|fix" >&2; exit 64 ;;
esac
