#!/bin/sh
# test_embed.sh CC - cmake/embed.cmake's edge cases: what a store's .sql or
# .lua file holds is what the compiled C string holds, or the build stops.
#   - '??(' and the other trigraphs survive a -std=c11 compile (a C11
#     compiler turns them into '[' etc. in a string literal, with only a
#     warning outside -Werror builds);
#   - a Lua block comment (--[[ ... ]]) stops the build: embed strips the
#     first line only (full-line -- comments), and the rest would be sent
#     as code, a script that fails at SCRIPT LOAD, not in the golden test.
set -u
cc=${1:-cc}
here=$(cd "$(dirname "$0")" && pwd)
embed=$here/../../cmake/embed.cmake
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

printf "SELECT '??( ??) ??< ??> ??= ??/ ??'' ??! ??-' AS t;\n" > "$tmp/tri.sql"
cmake -DSTORE=t -DOUT_C="$tmp/t_text.c" -DOUT_H="$tmp/t_text.h" \
    -DFILES="$tmp/tri.sql" -P "$embed" || { echo "FAIL embed tri.sql"; exit 1; }
cat > "$tmp/main.c" <<'C'
#include <stdio.h>
#include "t_text.h"
int main(void) { fputs(dlock__text_t_tri, stdout); return 0; }
C
if ! "$cc" -std=c11 -w -I"$tmp" -o "$tmp/tri" "$tmp/main.c" "$tmp/t_text.c"; then
    echo "FAIL trigraphs: the generated C does not compile"
    fails=$((fails + 1))
elif ! "$tmp/tri" | cmp -s - "$tmp/tri.sql"; then
    echo "FAIL trigraphs: the text compiled is not the file's:"
    "$tmp/tri"
    fails=$((fails + 1))
else
    echo "ok   trigraphs"
fi

printf -- "--[[ a block\nlocal x = 1\n]]\nreturn 1\n" > "$tmp/block.lua"
if cmake -DSTORE=t -DOUT_C="$tmp/b.c" -DOUT_H="$tmp/b.h" \
    -DFILES="$tmp/block.lua" -P "$embed" >/dev/null 2>&1; then
    echo "FAIL lua block comment: embedded (its body would be sent as code)"
    fails=$((fails + 1))
else
    echo "ok   lua block comment refused"
fi
exit $fails
