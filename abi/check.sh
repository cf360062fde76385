#!/bin/bash
# The ABI check: the dynamic symbols libdlock.so exports against the list
# committed in abi/libdlock.symbols (taken from a build with every store,
# as the packages are built; its first line names the SONAME it is for).
#   abi/check.sh LIBDLOCK_SO             compare; exit 1 on a difference
#   abi/check.sh --update LIBDLOCK_SO    rewrite the list from LIBDLOCK_SO
#
# - A symbol gone while the SONAME stayed the same breaks every program
#   linked against the old library: a failure.  Remove a symbol only
#   with a SONAME change (before 1.0: a new minor version), then --update.
# - A new symbol fails too, until the list is updated: the list is the
#   record of what each SONAME exports, and a symbol shipped without
#   being in it would be removed later without this check noticing.  The
#   message says the one command to run.
# - A new SONAME: the list is expected to be out of date; --update.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list=$here/libdlock.symbols
update=false
if [ "${1:-}" = --update ]; then update=true; shift; fi
lib=${1:?usage: abi/check.sh [--update] LIBDLOCK_SO}

soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
# Defined, exported (default visibility) dynamic symbols, names only.
exported() {
    nm -D --defined-only "$lib" | awk '$2 ~ /^[A-Z]$/ {print $3}' |
        grep -v -x -e _init -e _fini | LC_ALL=C sort -u
}

# Debian's symbols file for the library package (dpkg-gensymbols fails a
# package build that lost a symbol, too): the same names, each with the
# first version that had it.
pkg=libdlock${soname#libdlock.so.}
debsym=$here/../debian/$pkg.symbols

if $update; then
    {
        echo "# SONAME $soname"
        echo "# abi/check.sh --update LIBDLOCK_SO (a build with every store)"
        exported
    } >"$list"
    echo "abi: $list: $(exported | wc -l) symbols of $soname"
    if [ -d "$here/../debian" ]; then
        # Symbols already listed keep their version; new ones get this one.
        ver=$(sed -n '1s/^dlock (\([^)]*\)).*/\1/p' "$here/../debian/changelog")
        old=$(cat "$debsym" 2>/dev/null || true)
        {
            echo "$soname $pkg #MINVER#"
            echo "* Build-Depends-Package: libdlock-dev"
            exported | while read -r sym; do
                v=$(awk -v s="$sym@Base" '$1 == s {print $2}' <<<"$old")
                echo " $sym@Base ${v:-$ver}"
            done
        } >"$debsym"
        echo "abi: ${debsym#"$here/../"} written"
    fi
    exit 0
fi

want_soname=$(sed -n 's/^# SONAME //p' "$list")
now=$(mktemp)
trap 'rm -f "$now"' EXIT
exported >"$now"
gone=$(grep -v '^#' "$list" | LC_ALL=C comm -23 - "$now")
new=$(grep -v '^#' "$list" | LC_ALL=C comm -13 - "$now")
fails=0
if [ "$soname" != "$want_soname" ]; then
    echo "abi: SONAME is $soname, the list is for $want_soname:"
    echo "abi:   run abi/check.sh --update $lib and commit abi/libdlock.symbols"
    exit 1
fi
if [ -n "$gone" ]; then
    echo "abi: FAIL symbols gone while the SONAME stayed $soname:"
    echo "$gone" | sed 's/^/abi:   - /'
    echo "abi:   programs linked against $soname would fail to load; keep them"
    echo "abi:   or raise the SONAME (the minor version before 1.0)"
    fails=1
fi
if [ -n "$new" ]; then
    echo "abi: FAIL new symbols not in abi/libdlock.symbols:"
    echo "$new" | sed 's/^/abi:   + /'
    echo "abi:   if they are meant to be public: abi/check.sh --update $lib,"
    echo "abi:   commit the list and note them under Added in CHANGELOG.md"
    fails=1
fi
if [ -d "$here/../debian" ]; then
    if [ ! -f "$debsym" ]; then
        echo "abi: FAIL no debian/$pkg.symbols: abi/check.sh --update $lib"
        fails=1
    elif ! awk '$1 ~ /@Base$/ {sub(/@Base$/, "", $1); print $1}' "$debsym" | LC_ALL=C sort |
            cmp -s - <(grep -v '^#' "$list"); then
        echo "abi: FAIL debian/$pkg.symbols and abi/libdlock.symbols differ:"
        echo "abi:   abi/check.sh --update $lib writes both"
        fails=1
    fi
fi
[ "$fails" = 0 ] && echo "abi: ok, $(wc -l <"$now") symbols of $soname as listed"
exit "$fails"
