#!/bin/bash
# Install into a DESTDIR and use dlock the way a user would: pkg-config and
# CMake find_package against the installed tree, every example built and
# run against the SQLite store.  Also: only dlock_* symbols exported, man
# pages render without warnings.
#   test_install.sh BUILD_DIR (a plain, non-sanitizer build)
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/dlock-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
# /usr, not the configure-time /usr/local: what a packager runs
# (`cmake --install build --prefix /usr`), so dlock.pc must not carry the
# configure-time prefix.
prefix=/usr
fails=0
ok()   { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }

# Where GNUInstallDirs put things in this build (a packager may have
# given any of them: Debian's multiarch libdir, say); every path below
# comes from these, none is assumed.
. "$build/install-dirs.sh"  # bindir libdir includedir mandir datadir conf_prefix
for d in "$bindir" "$libdir" "$includedir" "$mandir" "$datadir"; do
    case $d in
    "") fail "$build/install-dirs.sh lacks a directory" ;;
    /*) fail "$d is absolute: this test installs under --prefix $prefix" ;;
    esac
done
[ "$fails" = 0 ] || { echo "$fails failed"; exit 1; }

out=$(DESTDIR=$dest cmake --install "$build" --prefix "$prefix")
# Everything lands in DESTDIR + prefix: nothing written to the live system
# or outside the prefix.
n=0
while read -r f; do
    n=$((n + 1))
    case $f in
    "$dest$prefix"/*) ;;
    *) fail "installed outside DESTDIR/prefix: $f" ;;
    esac
done < <(sed -n 's/^-- \(Installing\|Up-to-date\): //p' <<<"$out")
[ "$n" -gt 0 ] && ok "all $n installed files under \$DESTDIR$prefix" || fail "nothing installed"
for f in "$bindir/dlock" "$includedir/dlock.h" "$libdir/libdlock.a" "$libdir/pkgconfig/dlock.pc" \
         "$libdir/cmake/dlock/dlockConfig.cmake" "$libdir/cmake/dlock/dlockConfigVersion.cmake" \
         "$libdir/cmake/dlock/dlockTargets.cmake" "$mandir/man1/dlock.1" \
         "$mandir/man3/libdlock.3" "$datadir/bash-completion/completions/dlock" \
         "$datadir/zsh/vendor-completions/_dlock" "$datadir/fish/vendor_completions.d/dlock.fish"; do
    if [ -e "$dest$prefix/$f" ]; then ok "installed $f"; else fail "missing $f"; fi
done
# The CMake package finds its files from where it lies, like dlock.pc:
# no build tree, DESTDIR or configure-time prefix written into it.
for f in "$dest$prefix/$libdir"/cmake/dlock/*.cmake "$dest$prefix/$libdir/pkgconfig/dlock.pc"; do
    for bad in "$build" "$dest" "$src" "$conf_prefix/"; do
        if grep -qF "$bad" "$f"; then fail "${f#"$dest"} names $bad"; continue 2; fi
    done
    ok "${f#"$dest"} is relocatable"
done
soname=$(objdump -p "$dest$prefix/$libdir/libdlock.so" | awk '/SONAME/ {print $2}')
[ "$soname" = libdlock.so.0.2 ] && ok "SONAME $soname" || fail "SONAME is '$soname'"

# Only the public API is exported.
others=$(nm -D --defined-only "$dest$prefix/$libdir/libdlock.so" | awk '{print $3}' |
         grep -v '^dlock_' | grep -v '^_init$\|^_fini$' || true)
[ -z "$others" ] && ok "only dlock_* symbols exported" || fail "also exported: $others"
n_api=$(grep -c '^DLOCK_EXTERN' "$src/include/dlock.h")
n_exp=$(nm -D --defined-only "$dest$prefix/$libdir/libdlock.so" | grep -c ' T dlock_')
[ "$n_exp" -ge "$n_api" ] && ok "all $n_api declared functions exported" ||
    fail "$n_exp exported, $n_api declared"

# pkg-config, as a user would.  dlock.pc is relocatable (its prefix comes
# from ${pcfiledir}), so the DESTDIR copy points into the DESTDIR tree.
pc=$dest$prefix/$libdir/pkgconfig/dlock.pc
grep -q '/usr/local' "$pc" && fail "dlock.pc names /usr/local: $(grep /usr/local "$pc")" ||
    ok "dlock.pc carries no configure-time prefix"
grep -q '^URL:' "$pc" && fail "dlock.pc has a URL line" || ok "dlock.pc has no URL line"
export PKG_CONFIG_PATH=$dest$prefix/$libdir/pkgconfig
export LD_LIBRARY_PATH=$dest$prefix/$libdir
cflags=$(pkg-config --cflags dlock)
libs=$(pkg-config --libs dlock)
check_pc() { # the path pkg-config printed must be the installed one
    if [ "$(cd "$2" 2>/dev/null && pwd -P)" = "$(cd "$3" && pwd -P)" ]; then
        ok "pkg-config $1 points at the installed tree"
    else
        fail "pkg-config $1: '$2', wanted '$3'"
    fi
}
inc=${cflags#-I}
check_pc --cflags "${inc%% *}" "$dest$prefix/$includedir"
check_pc libdir "$(pkg-config --variable=libdir dlock)" "$dest$prefix/$libdir"
[ -n "$libs" ] && ok "pkg-config --cflags/--libs resolve: $cflags $libs" || fail "pkg-config"
url=sqlite://$tmp/examples.db
for ex in trylock wait_timeout fenced_write shared; do
    if cc -std=c11 -Wall -Wextra -Werror $cflags -o "$tmp/$ex" "$src/examples/$ex.c" $libs; then
        ok "example $ex builds against the installed library"
    else
        fail "example $ex does not build"; continue
    fi
    case $ex in
    fenced_write) args=("$tmp/fenced.txt" "$url") ;;
    *) args=("$url") ;;
    esac
    if "$tmp/$ex" "${args[@]}" >/dev/null; then ok "example $ex runs"; else fail "example $ex failed"; fi
done
"$tmp/fenced_write" "$tmp/fenced.txt" "$url" >/dev/null
[ "$(cut -d' ' -f2 "$tmp/fenced.txt")" = 2 ] && ok "fenced_write counted twice" || fail "fenced counter"
# The transaction-scoped Postgres lock, where the store was built in.
if [ -e "$dest$prefix/$includedir/dlock_pg.h" ]; then
    if cc -std=c11 -Wall -Wextra -Werror $cflags $(pkg-config --cflags libpq) \
          -o "$tmp/pg_xact" "$src/examples/pg_xact.c" $libs $(pkg-config --libs libpq); then
        ok "example pg_xact builds against the installed library"
        if [ -n "${DLOCK_TEST_POSTGRES_URL:-}" ]; then
            pgurl=$(echo "$DLOCK_TEST_POSTGRES_URL" | sed -E 's/[?&](keys|mode)=[^&]*//g')
            "$tmp/pg_xact" "$pgurl" | grep -q committed &&
                ok "example pg_xact runs" || fail "example pg_xact failed"
        fi
    else
        fail "example pg_xact does not build"
    fi
fi
# dlock.pc names the store clients as Requires.private (issue 47), each
# one resolving; --cflags alone compiles dlock_pg.h (libpq's include
# directory is in Cflags).
req=$(pkg-config --print-requires-private dlock)
# shellcheck disable=SC2046 # one module a line, with its version
if [ -n "$req" ] && pkg-config --exists --print-errors $(echo "$req" | awk '{print $1}'); then
    ok "Requires.private resolves: $(echo "$req" | tr '\n' ' ')"
else
    fail "Requires.private: '$req'"
fi
if [ -e "$dest$prefix/$includedir/dlock_pg.h" ]; then
    printf '#include <dlock_pg.h>\nint main(void) { return 0; }\n' >"$tmp/pg.c"
    cc -std=c11 -Wall -Wextra -Werror $cflags -c -o "$tmp/pg.o" "$tmp/pg.c" &&
        ok "dlock_pg.h compiles with pkg-config --cflags dlock alone" ||
        fail "dlock_pg.h needs more than pkg-config --cflags dlock"
fi
# The static library, with its private dependencies from pkg-config.
if cc -std=c11 $cflags -o "$tmp/trylock-static" "$src/examples/trylock.c" \
      -static-libgcc -Wl,-Bstatic $(pkg-config --static --libs dlock | sed 's/-ldlock /-ldlock -Wl,-Bdynamic /'); then
    "$tmp/trylock-static" "$url" >/dev/null && ok "static link works" || fail "static binary failed"
else
    fail "static link"
fi

# CMake: find_package(dlock) -> dlock::dlock.
mkdir -p "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<EOF2
cmake_minimum_required(VERSION 3.20)
project(use_dlock C)
find_package(dlock 0.2 REQUIRED)
add_executable(trylock $src/examples/trylock.c)
target_link_libraries(trylock PRIVATE dlock::dlock)
EOF2
if cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$dest$prefix" >/dev/null &&
   cmake --build "$tmp/cm/build" >/dev/null && "$tmp/cm/build/trylock" "$url" >/dev/null; then
    ok "find_package(dlock) + dlock::dlock"
else
    fail "find_package(dlock)"
fi

# Man pages render cleanly; completion parses.
# The man pages name the version of the build they came with.
version=$("$dest$prefix/$bindir/dlock" --version | awk '{print $2}')
for m in "$mandir/man1/dlock.1" "$mandir/man3/libdlock.3"; do
    th=$(sed -n 's/^\.TH .* "dlock \([^"]*\)".*/\1/p' "$dest$prefix/$m")
    [ "$th" = "$version" ] && ok "man $m is for dlock $version" ||
        fail "man $m says dlock '$th', the build is $version"
done
for m in "$mandir/man1/dlock.1" "$mandir/man3/libdlock.3"; do
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$dest$prefix/$m" 2>&1 >/dev/null)
    [ -z "$w" ] && ok "man $m renders without warnings" || fail "man $m: $w"
done
bash -n "$dest$prefix/$datadir/bash-completion/completions/dlock" && ok "bash completion parses" || fail "completion"
if command -v zsh >/dev/null 2>&1; then
    zsh -n "$dest$prefix/$datadir/zsh/vendor-completions/_dlock" && ok "zsh completion parses" || fail "zsh completion"
fi
if command -v fish >/dev/null 2>&1; then
    fish --no-config -n "$dest$prefix/$datadir/fish/vendor_completions.d/dlock.fish" && ok "fish completion parses" ||
        fail "fish completion"
fi
"$dest$prefix/$bindir/dlock" --version | grep -q "stores: sqlite" && ok "dlock --version lists stores" ||
    fail "--version"

echo "$fails failed"
[ "$fails" = 0 ]
