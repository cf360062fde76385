#!/bin/sh
# The public header must compile alone, warning-free, as C11 and as C++.
set -eu
inc=$1 out=$2
mkdir -p "$out"
printf '#include <dlock.h>\nint main(void) { dlock_options o = DLOCK_OPTIONS_INIT; return o.version == DLOCK_OPTIONS_VERSION ? 0 : 1; }\n' >"$out/h.c"
cp "$out/h.c" "$out/h.cpp"
${CC:-cc} -std=c11 -Wall -Wextra -pedantic -Werror -I"$inc" -o "$out/h_c" "$out/h.c"
${CXX:-c++} -std=c++11 -Wall -Wextra -pedantic -Werror -I"$inc" -o "$out/h_cpp" "$out/h.cpp"
"$out/h_c"
"$out/h_cpp"
echo "dlock.h compiles alone as C11 and C++11"
