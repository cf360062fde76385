#!/bin/bash
# One version everywhere: CMake's project(VERSION) is the only place it is
# written down; the header's DLOCK_VERSION_*, dlock_version(), `dlock
# --version`, the SONAME, dlock.pc, the CMake package version, the man
# pages and debian/changelog must all say the same.
#   test_version.sh VERSION SOVERSION TEST_VERSION_BIN DLOCK_BIN LIBDLOCK_SO BUILD_DIR SRC_DIR
set -uo pipefail
version=$1 soversion=$2 tv=$3 cli=$4 lib=$5 build=$6 src=$7
fails=0
check() { # what got wanted
    if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else
        echo "FAIL $1 says '$2', the build (project(VERSION)) is '$3'"
        fails=$((fails + 1))
    fi
}

# The header's macros and dlock_version() (version.c compares both).
got=$("$tv") || fails=$((fails + 1))
check "dlock_version()" "$got" "$version"
check "dlock --version" "$("$cli" --version | awk '{print $2}')" "$version"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
check SONAME "$soname" "libdlock.so.$soversion"
check "the shared library's file name" "$(basename "$(readlink -f "$lib")")" \
    "libdlock.so.$version"
check dlock.pc "$(sed -n 's/^Version: *//p' "$build/dlock.pc")" "$version"
check "CMake package version" \
    "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/dlockConfigVersion.cmake")" \
    "$version"
for m in man/dlock.1 man/libdlock.3; do
    check "$m" "$(sed -n 's/^\.TH .* "dlock \([^"]*\)".*/\1/p' "$build/$m")" "$version"
done
# The Debian package: its upstream version (the part before a "-N"
# revision, if any) is the newest debian/changelog entry; the library
# package is named after the SONAME.
if [ -f "$src/debian/changelog" ]; then
    deb=$(sed -n '1s/^dlock (\([^)]*\)).*/\1/p' "$src/debian/changelog")
    check "debian/changelog" "${deb%-*}" "$version"
    pkg=$(sed -n 's/^Package: \(libdlock[0-9].*\)$/\1/p' "$src/debian/control")
    check "debian/control's library package" "$pkg" "libdlock$soversion"
    [ -f "$src/debian/$pkg.install" ] && echo "ok   debian/$pkg.install exists" ||
        { echo "FAIL debian/$pkg.install missing"; fails=$((fails + 1)); }
fi
# CHANGELOG.md has a section for this release.
if [ -f "$src/CHANGELOG.md" ]; then
    if grep -q "^## \[$version\]" "$src/CHANGELOG.md"; then
        echo "ok   CHANGELOG.md has [$version]"
    else
        echo "FAIL CHANGELOG.md has no '## [$version]' section"
        fails=$((fails + 1))
    fi
fi
echo "$fails failed"
[ "$fails" = 0 ]
