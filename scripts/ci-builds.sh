#!/bin/bash
# The builds a distribution makes, after make test (which ran the suites):
#
#   gcc   Debug, Release, RelWithDebInfo, MinSizeRel    -Werror, tests built
#   clang Release                                        -Werror, tests built
#   gcc   dpkg-buildflags (fortify, hardening)           -Werror, tests built
#   SQLite only: hiredis, libpq, libmariadb hidden from pkg-config; each
#         is left out and says so, its URLs answer "not compiled in"; odd
#         GNUInstallDirs through tests/install/test_install.sh; the static
#         library in a fully static program
#   gcc   ThreadSanitizer: unit, contract and fork suites, every store
#   ABI:  abi/check.sh on the Release library
#   make install PREFIX=/usr DESTDIR=...
#   Debian: scripts/deb.sh, lintian (no errors), the three packages
#         installed with apt-get, the examples built against them with
#         pkg-config and find_package(dlock), README's static recipe
#         against libdlock-dev's libdlock.a, dlock --version and the demo
#         from /usr/bin, then purged again (the machine is left as found).
#
#   scripts/ci-builds.sh [STEP...]     (default: every step; see `steps`)
# Build directories live in a temp dir that is removed on exit.  -j2.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-2}
tmp=$(mktemp -d /tmp/dlock-ci.XXXXXX)
version=$(sed -n 's/^project(dlock VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
soname=libdlock.so.$(cut -d. -f1,2 <<<"$version") # 0.x: major.minor
debs_installed=false
cleanup() {
    if $debs_installed; then purge_debs || true; fi
    if [ -n "${DLOCK_CI_KEEP:-}" ]; then echo "ci: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
failed=()
summary=()

say() { echo "== ci: $*"; }
# need PKG...: install Debian packages if missing (CI runs as root).
need() { "$src/scripts/deps.sh" "$@"; }

# build NAME [CMAKE_ARGS...]: configure and build $tmp/NAME with -Werror
# and the tests (only the targets in $targets when it is set); the
# compiler's output goes to $tmp/NAME.log.
build() {
    local name=$1
    shift
    if ! cmake -S "$src" -B "$tmp/$name" -DDLOCK_WERROR=ON -DBUILD_TESTING=ON \
            "$@" >"$tmp/$name.log" 2>&1 ||
       ! cmake --build "$tmp/$name" -j"$jobs" ${targets:+--target $targets} \
             >>"$tmp/$name.log" 2>&1; then
        grep -E -B2 -A5 "warning:|error:|undefined reference" "$tmp/$name.log" |
            head -80 >&2
        tail -15 "$tmp/$name.log" >&2
        echo "ci: build $name failed (above: its warnings, errors and end)" >&2
        return 1
    fi
    # Zero warnings even where -Werror cannot reach (the linker, cmake).
    if grep -E "warning:" "$tmp/$name.log" >&2; then
        echo "ci: build $name warned" >&2
        return 1
    fi
}

step_gcc() {
    local t
    for t in Debug Release RelWithDebInfo MinSizeRel; do
        say "gcc $t"
        CC=gcc build "gcc-$t" -DCMAKE_BUILD_TYPE=$t || return 1
        case $t in
        Release)
            say "ABI: abi/check.sh on the Release library"
            "$src/abi/check.sh" "$tmp/gcc-$t/libdlock.so" || return 1 ;;
        RelWithDebInfo)
            # What README tells users: make install, here into a DESTDIR.
            say "make install PREFIX=/usr DESTDIR=... (the RelWithDebInfo build)"
            make -C "$src" -s install BUILD="$tmp/gcc-$t" PREFIX=/usr \
                DESTDIR="$tmp/mkdest" >"$tmp/make-install.log" 2>&1 ||
                { tail -20 "$tmp/make-install.log" >&2; return 1; }
            local libdir f
            libdir=$(. "$tmp/gcc-$t/install-dirs.sh" && echo "$libdir")
            for f in bin/dlock include/dlock.h "$libdir/$soname" \
                     "$libdir/pkgconfig/dlock.pc" "$libdir/cmake/dlock/dlockConfig.cmake" \
                     share/man/man1/dlock.1 share/bash-completion/completions/dlock \
                     share/zsh/vendor-completions/_dlock share/fish/vendor_completions.d/dlock.fish; do
                [ -e "$tmp/mkdest/usr/$f" ] || { echo "ci: make install: no /usr/$f" >&2; return 1; }
            done
            [ -z "$(find "$tmp/mkdest" -mindepth 1 -maxdepth 1 ! -name usr)" ] ||
                { echo "ci: make install wrote outside PREFIX" >&2; return 1; } ;;
        esac
        rm -rf "${tmp:?}/gcc-$t"
    done
}

step_clang() {
    need clang || return 1
    say "clang Release ($(clang --version | head -1))"
    CC=clang build clang-Release -DCMAKE_BUILD_TYPE=Release || return 1
    rm -rf "$tmp/clang-Release"
}

# ThreadSanitizer over the unit, contract, fork and cancel suites on every store
# (scripts/test.sh starts the servers).  Two TSan limits, not findings:
# its deadlock detector tracks at most 64 mutexes held by one thread, and
# a batched renewal holds one per lock of the batch (detect_deadlocks=0);
# it refuses threads in a child forked from a threaded parent, which the
# library supports and the fork cases test (die_after_fork=0).  Data races
# make the program exit 66 and fail the step.
# ThreadSanitizer where threads meet: unit, fork-*, cancel-*, and the
# contract's cases that run the library's threads against the caller's
# (renewal, waits, LOST, threads and processes contending, fork, close
# with locks held, semaphores) on every store's own code: each store once
# in each of its modes (Redis also over TLS: OpenSSL in the renewal
# thread, and Cluster, Sentinel: their own connection code).  Left out,
# as they add no thread code: the single-threaded cases (try_busy, fences,
# names, many_and_list, errmsg, bad_options, lapsed) and the variants that
# only change a key function or a transport's option (postgres-hashtext,
# redis-sentinel-replicas, redis-*-tls beyond redis-tls, etcd-cluster).
# Only the programs those entries run are built (the gcc builds compile
# everything).
tsan_cases='assert_ttl|atexit|auto_renew|broken_lock|close_with_held|extend|fork_child|fork_child_own_store|lease_expired_untaken|lease_takeover|lost_in_extend|processes|renew_many|sem_admit|sem_broken|sem_expiry|sem_limit_mismatch|sem_sigkill|sem_waiter|shared|sigkill_holder|threads_extend_break|threads_own_handles|threads_shared_handle|timeout_precision|wait_finite|wait_forever|wait_zero_free'
tsan_variants='sqlite|redis|redis-tls|redis-cluster|redis-sentinel|postgres|postgres-lease|mysql|mysql-lease|etcd'
step_tsan() {
    say "gcc Debug -fsanitize=thread: unit, fork-*, cancel-*, the contract's threaded cases"
    targets="dlock_cli test_unit dlock-contract test_cancel test_cancel_adv test_cancel_adv_pg test_fork_identity test_fork_sqlite_ns test_fork_unseen" \
        CC=gcc build tsan -DCMAKE_BUILD_TYPE=Debug -DDLOCK_TSAN=ON || return 1
    TSAN_OPTIONS="detect_deadlocks=0 die_after_fork=0" \
        "$src/scripts/test.sh" "$tmp/tsan" -j"$jobs" \
        -R "^(unit|fork-.*|cancel-.*|contract-($tsan_variants)-($tsan_cases))\$" || return 1
    rm -rf "$tmp/tsan"
}

step_debflags() {
    say "gcc with dpkg-buildflags (what Debian's build uses), -Werror"
    (
        eval "$(dpkg-buildflags --export=sh)"
        export DEB_BUILD_MAINT_OPTIONS=hardening=+all
        CC=gcc build debflags -DCMAKE_BUILD_TYPE=None
    ) || return 1
    rm -rf "$tmp/debflags"
}

step_sqlite() {
    # A machine without hiredis, libpq or libmariadb: pkg-config sees only
    # sqlite3 (the libraries stay installed, for make test).
    local pc=$tmp/pc-sqlite-only out s
    mkdir -p "$pc"
    ln -s "$(pkg-config --variable=pcfiledir sqlite3)/sqlite3.pc" "$pc/"
    say "SQLite only (AUTO, the others and libmicrohttpd not found), odd GNUInstallDirs"
    PKG_CONFIG_LIBDIR=$pc build sqlite-only -DCMAKE_BUILD_TYPE=Release -DDLOCK_WITH_MHD=AUTO \
        -DCMAKE_INSTALL_LIBDIR=lib/"$(gcc -print-multiarch)" -DCMAKE_INSTALL_INCLUDEDIR=include/dlock-test \
        -DCMAKE_INSTALL_MANDIR=man -DCMAKE_INSTALL_DATADIR=share/data-test \
        -DCMAKE_INSTALL_BINDIR=sbin || return 1
    for s in redis:hiredis postgres:libpq mysql:libmariadb etcd:libcurl; do
        grep -q "dlock: ${s%%:*} store: left out (pkg-config found no ${s#*:};" \
            "$tmp/sqlite-only.log" ||
            { echo "ci: configure did not say the ${s%%:*} store was left out" >&2; return 1; }
    done
    grep -q "dlock: metrics --listen: left out (pkg-config found no libmicrohttpd;" \
        "$tmp/sqlite-only.log" ||
        { echo "ci: configure did not say metrics --listen was left out" >&2; return 1; }
    out=$("$tmp/sqlite-only/dlock" -s "sqlite://$tmp/l.db" metrics --listen 127.0.0.1:0 2>&1) && return 1
    [ $? = 64 ] && grep -q "built without libmicrohttpd" <<<"$out" ||
        { echo "ci: metrics --listen without libmicrohttpd: $out" >&2; return 1; }
    "$tmp/sqlite-only/dlock" --version | grep -q "(stores: sqlite)$" ||
        { echo "ci: dlock --version: $("$tmp/sqlite-only/dlock" --version)" >&2; return 1; }
    for s in redis://127.0.0.1:1/ postgres://127.0.0.1:1/x mysql://127.0.0.1:1/x etcd://127.0.0.1:1; do
        out=$("$tmp/sqlite-only/dlock" -s "$s" status x 2>&1) && return 1
        grep -q "${s%%:*}:// support was not compiled in" <<<"$out" ||
            { echo "ci: $s: $out" >&2; return 1; }
    done
    ldd "$tmp/sqlite-only/libdlock.so" | grep -E "hiredis|libpq|mariadb|libcurl|json-c" &&
        { echo "ci: the SQLite-only library links a store it left out" >&2; return 1; }
    say "tests/install/test_install.sh on the SQLite-only build"
    "$src/tests/install/test_install.sh" "$tmp/sqlite-only" >"$tmp/install-sqlite.log" 2>&1 ||
        { grep -v "^ok" "$tmp/install-sqlite.log" >&2; return 1; }

    # A store asked for (ON) and not found fails the configure; one
    # switched OFF is left out even where it is installed.
    say "DLOCK_WITH_REDIS=ON without hiredis fails; =OFF with it says so"
    if PKG_CONFIG_LIBDIR=$pc cmake -S "$src" -B "$tmp/on-missing" \
           -DDLOCK_WITH_REDIS=ON -DBUILD_TESTING=OFF >"$tmp/on-missing.log" 2>&1; then
        echo "ci: DLOCK_WITH_REDIS=ON configured without hiredis" >&2
        return 1
    fi
    cmake -S "$src" -B "$tmp/off" -DDLOCK_WITH_REDIS=OFF -DDLOCK_WITH_POSTGRES=OFF \
        -DDLOCK_WITH_MYSQL=OFF -DDLOCK_WITH_ETCD=OFF -DBUILD_TESTING=ON >"$tmp/off.log" 2>&1 || return 1
    for s in REDIS POSTGRES MYSQL ETCD; do
        grep -q "store: left out (DLOCK_WITH_$s=OFF)" "$tmp/off.log" ||
            { echo "ci: DLOCK_WITH_$s=OFF not reported" >&2; return 1; }
    done
    grep -q "dlock stores: sqlite$" "$tmp/off.log" || return 1
    rm -rf "$tmp/on-missing" "$tmp/off"

    # The static library: a fully static program (libc, SQLite and all).
    say "static: examples/trylock.c linked with -static against libdlock.a"
    cc -std=c11 -Wall -Wextra -Werror -static -I"$src/include" \
        -o "$tmp/trylock-static" "$src/examples/trylock.c" \
        "$tmp/sqlite-only/libdlock.a" -lsqlite3 -lpthread -lm -ldl 2>"$tmp/static.log" ||
        { cat "$tmp/static.log" >&2; return 1; }
    # Through a file: under pipefail, grep -q quitting at a match would
    # SIGPIPE readelf and `!` turn that failure into a pass.
    readelf -d "$tmp/trylock-static" >"$tmp/trylock-static.dyn"
    ! grep -q NEEDED "$tmp/trylock-static.dyn" ||
        { echo "ci: trylock-static needs shared libraries" >&2; return 1; }
    "$tmp/trylock-static" "sqlite://$tmp/static.db" >/dev/null ||
        { echo "ci: the static program failed" >&2; return 1; }
    rm -rf "$tmp/sqlite-only"
}

# pc_static_link DIR LIBDLOCK_A URL: dlock.pc's Requires.private (issue
# 47): every module it names resolves (libdlock-dev Depends on their -dev
# packages), and the plain `cc x.c $(pkg-config --static --cflags --libs
# dlock)` links LIBDLOCK_A (a directory holding only it is searched
# first) with every store client, and runs.  dlock_pg.h compiles with
# `pkg-config --cflags dlock` alone (libpq's include directory).
pc_static_link() {
    local use=$1 a=$2 url=$3 req
    say "pkg-config --static --cflags --libs dlock: Requires.private resolves, links libdlock.a"
    req=$(pkg-config --print-requires-private dlock) || return 1
    [ -n "$req" ] || { echo "ci: dlock.pc has no Requires.private" >&2; return 1; }
    # shellcheck disable=SC2046 # one module a line, with its version
    pkg-config --exists --print-errors $(echo "$req" | awk '{print $1}') ||
        { echo "ci: a Requires.private module of dlock.pc does not resolve: $req" >&2; return 1; }
    mkdir -p "$use/only-a" && ln -sf "$a" "$use/only-a/libdlock.a"
    cat >"$use/x.c" <<'EOF'
#include <dlock.h>
#include <stdio.h>
int main(int argc, char **argv) {
    dlock_store *s; dlock_lock *l;
    if (argc < 2 || dlock_store_open(&s, argv[1]) != DLOCK_OK) return 69;
    if (dlock_acquire(&l, s, "pc-static", NULL) != DLOCK_OK) return 1;
    printf("%s fence %llu\n", dlock_schemes(), (unsigned long long)dlock_fence(l));
    dlock_release(l); dlock_store_close(s); return 0;
}
EOF
    # shellcheck disable=SC2046
    (cd "$use" && cc x.c -L"$use/only-a" $(pkg-config --static --cflags --libs dlock) -o x-static) \
        2>"$use/pc-static.log" || { cat "$use/pc-static.log" >&2; return 1; }
    readelf -d "$use/x-static" >"$use/x-static.dyn"
    ! grep -q "libdlock" "$use/x-static.dyn" ||
        { echo "ci: x-static needs the shared libdlock" >&2; return 1; }
    [[ $("$use/x-static" "$url") == *etcd*" fence "[0-9]* ]] ||
        { echo "ci: the pkg-config static program failed" >&2; return 1; }
    printf '#include <dlock_pg.h>\nint main(void) { return 0; }\n' >"$use/pg.c"
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Wextra -Werror -c $(pkg-config --cflags dlock) \
        -o "$use/pg.o" "$use/pg.c" ||
        { echo "ci: dlock_pg.h needs more than pkg-config --cflags dlock" >&2; return 1; }
}

# The three packages, as a user gets them.
debs=(libdlock0.2 libdlock-dev dlock)
purge_debs() {
    say "apt-get purge ${debs[*]} (and what their install pulled in)"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${debs[@]}" >/dev/null
    local extra
    extra=$(dpkg-query -W -f='${Package}\n' | LC_ALL=C sort |
        LC_ALL=C comm -13 "$tmp/pkgs-before" - || true)
    if [ -n "$extra" ]; then
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $extra >/dev/null
    fi
    debs_installed=false
}

step_deb() {
    local d found=()
    for d in "${debs[@]}"; do
        dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "ok installed" &&
            found+=("$d")
    done
    if [ ${#found[@]} != 0 ]; then
        echo "ci: ${found[*]} already installed: not replacing them" >&2
        return 1
    fi
    say "scripts/deb.sh (dpkg-buildpackage -us -uc -b)"
    "$src/scripts/deb.sh" "$tmp/debs" || return 1
    need lintian || return 1
    say "lintian"
    lintian --fail-on error --display-info --pedantic "$tmp/debs"/*.changes >"$tmp/lintian.log" 2>&1 ||
        { cat "$tmp/lintian.log" >&2; echo "ci: lintian found errors" >&2; return 1; }
    grep -v "^running with root" "$tmp/lintian.log" | grep -E "^[EWIP]:" || true
    summary+=("lintian: $(grep -c '^E:' "$tmp/lintian.log") errors, $(grep -c '^W:' "$tmp/lintian.log") warnings, $(grep -c '^[IP]:' "$tmp/lintian.log") info/pedantic")

    dpkg-query -W -f='${Package}\n' | LC_ALL=C sort >"$tmp/pkgs-before"
    say "apt-get install ./libdlock0.2_*.deb ./libdlock-dev_*.deb ./dlock_*.deb"
    debs_installed=true
    (cd "$tmp/debs" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends ./libdlock0.2_*.deb ./libdlock-dev_*.deb ./dlock_*.deb \
        >"$tmp/apt.log" 2>&1) || { cat "$tmp/apt.log" >&2; return 1; }

    local use=$tmp/use url=sqlite://$tmp/use.db ex
    mkdir -p "$use"
    [ "$(command -v dlock)" = /usr/bin/dlock ] || { echo "ci: dlock is $(command -v dlock)" >&2; return 1; }
    say "/usr/bin/dlock --version: $(/usr/bin/dlock --version)"
    [ "$(/usr/bin/dlock --version | awk '{print $2}')" = "$version" ] || return 1
    [ "$(dpkg-query -W -f='${Version}' libdlock0.2)" = "$version" ] ||
        { echo "ci: libdlock0.2 is $(dpkg-query -W -f='${Version}' libdlock0.2), the build $version" >&2; return 1; }
    man -w 1 dlock >/dev/null && man -w 3 libdlock >/dev/null ||
        { echo "ci: man pages not found" >&2; return 1; }
    for f in bash-completion/completions/dlock zsh/vendor-completions/_dlock \
             fish/vendor_completions.d/dlock.fish; do
        [ -f "/usr/share/$f" ] || { echo "ci: the package has no /usr/share/$f" >&2; return 1; }
    done

    say "examples with pkg-config against the installed package"
    for ex in trylock wait_timeout fenced_write shared; do
        # shellcheck disable=SC2046
        cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags dlock) \
            -o "$use/$ex" "$src/examples/$ex.c" $(pkg-config --libs dlock) || return 1
        case $ex in
        fenced_write) "$use/$ex" "$use/fenced.txt" "$url" >/dev/null ;;
        *) "$use/$ex" "$url" >/dev/null ;;
        esac || { echo "ci: example $ex failed" >&2; return 1; }
        ldd "$use/$ex" >"$use/$ex.ldd"
        grep -Eq "$soname => (/usr)?/lib/" "$use/$ex.ldd" ||
            { echo "ci: $ex does not use the installed libdlock" >&2; return 1; }
    done
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags dlock libpq) \
        -o "$use/pg_xact" "$src/examples/pg_xact.c" $(pkg-config --libs dlock libpq) || return 1

    # README's static recipe, as written, against libdlock-dev's libdlock.a
    # (the store clients linked shared: they are the suggested -dev
    # packages, here already as Build-Depends).
    say "a 10-line program linked with libdlock.a from libdlock-dev (README's recipe)"
    need libsqlite3-dev libhiredis-dev libssl-dev libpq-dev libmariadb-dev \
        libcurl4-openssl-dev libjson-c-dev || return 1
    local a
    a=$(realpath "$(pkg-config --variable=libdir dlock)/libdlock.a")
    [[ $(dpkg -S "$a" 2>/dev/null) == libdlock-dev* ]] ||
        { echo "ci: libdlock-dev does not ship $a" >&2; return 1; }
    cat >"$use/app.c" <<'EOF'
#include <dlock.h>
#include <stdio.h>
int main(int argc, char **argv) {
    dlock_store *s; dlock_lock *l;
    if (argc < 2 || dlock_store_open(&s, argv[1]) != DLOCK_OK) return 69;
    if (dlock_acquire(&l, s, "static-app", NULL) != DLOCK_OK) return 1;
    printf("fence %llu\n", (unsigned long long)dlock_fence(l));
    dlock_release(l); dlock_store_close(s); return 0;
}
EOF
    # shellcheck disable=SC2046
    (cd "$use" && cc app.c -Wl,-Bstatic $(pkg-config --static --libs dlock | sed 's/-ldlock /-ldlock -Wl,-Bdynamic /') -o app-static) \
        2>"$use/static.log" || { cat "$use/static.log" >&2; return 1; }
    readelf -d "$use/app-static" >"$use/app-static.dyn"
    ! grep -q "libdlock" "$use/app-static.dyn" ||
        { echo "ci: app-static needs the shared libdlock" >&2; return 1; }
    [ "$("$use/app-static" "$url")" = "fence 1" ] ||
        { echo "ci: the static program failed" >&2; return 1; }
    pc_static_link "$use" "$a" "$url" || return 1

    say "examples with CMake find_package(dlock) against the installed package"
    cat >"$use/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(use_dlock C)
find_package(dlock $version EXACT REQUIRED)
foreach(ex trylock wait_timeout fenced_write shared)
  add_executable(\${ex} $src/examples/\${ex}.c)
  target_link_libraries(\${ex} PRIVATE dlock::dlock)
endforeach()
EOF
    (cmake -S "$use" -B "$use/build" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" &&
        cmake --build "$use/build" -j"$jobs") >"$tmp/use-cmake.log" 2>&1 ||
        { cat "$tmp/use-cmake.log" >&2; return 1; }
    "$use/build/trylock" "$url" >/dev/null && "$use/build/shared" "$url" >/dev/null &&
        "$use/build/wait_timeout" "$url" >/dev/null &&
        "$use/build/fenced_write" "$use/fenced.txt" "$url" >/dev/null ||
        { echo "ci: a find_package example failed" >&2; return 1; }

    say "the demo with /usr/bin/dlock"
    DLOCK_STORE=sqlite://$tmp/demo.db "$src/scripts/demo.sh" /usr/bin/dlock || return 1
    purge_debs
    for d in "${debs[@]}"; do
        ! dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "ok installed" || return 1
    done
}

steps=(gcc clang debflags sqlite tsan deb)
[ $# -gt 0 ] && steps=("$@")
start=$SECONDS
for s in "${steps[@]}"; do
    t0=$SECONDS
    if "step_$s"; then
        summary+=("ok   $s ($((SECONDS - t0)) s)")
    else
        summary+=("FAIL $s ($((SECONDS - t0)) s; logs were in $tmp)")
        failed+=("$s")
    fi
done
say "summary ($((SECONDS - start)) s)"
printf '   %s\n' "${summary[@]}"
[ ${#failed[@]} = 0 ] || { echo "ci: failed: ${failed[*]}" >&2; exit 1; }
