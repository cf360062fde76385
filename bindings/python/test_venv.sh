#!/bin/bash
# The binding installs into a venv offline, with what Debian's python3 and
# python3-venv ship (no setuptools, wheel or package index), as
# bindings/python/README.md says; then imports and takes a lock on SQLite:
#   bindings/python/test_venv.sh LIBDLOCK_PATH
# LIBDLOCK_PATH: a libdlock.so not built with sanitizers (an interpreter
# cannot load the ASan build).  The ways tried, each in a fresh temp dir:
#   1. python3 -m venv V && V/bin/pip install --no-index ./bindings/python
#      (pip's build isolation on), the library by DLOCK_LIBRARY;
#   2. the same with --no-build-isolation, the library by its SONAME
#      through LD_LIBRARY_PATH (as an installed libdlock0.2 is found);
#   3. the sdist the in-tree backend makes, installed the same way;
#   4. pip install -e (editable);
#   5. no install: PYTHONPATH=bindings/python with the system python3.
#   6. from a copy under a path with a space, with stray files in the
#      package directory (swap file, backup, notes, a library): installs,
#      and the wheel and sdist hold none of them.
# Offline: pip gets --no-index, and runs in a new network namespace with
# no interface up where that can be made (root, or unprivileged user
# namespaces).  Nothing is written into the source tree.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 LIBDLOCK_PATH" >&2
    exit 64
fi
. "$(dirname "$0")/lib_arg.sh"
lib_arg "$1"
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "$0: $py has no venv/ensurepip: apt-get install python3-venv" >&2
    exit 1
fi
T=$(mktemp -d /tmp/dlock-venv.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
n=0
ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }

# pip with no network: --no-index always; no interface where possible.
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PIP_CONFIG_FILE=/dev/null PYTHONDONTWRITEBYTECODE=1
offline=()
if unshare -rn true 2>/dev/null; then
    offline=(unshare -rn)
elif unshare -n true 2>/dev/null; then
    offline=(unshare -n)
fi
how="with --no-index"
[ ${#offline[@]} = 0 ] || how="under ${offline[*]} (no network), $how"
echo "# pip runs $how"

# A copy of the source (what a user has), to prove the tree is untouched.
src_before=$(cd "$here" && find . -path ./tests -prune -o -type f -print |
    LC_ALL=C sort | xargs sha256sum)

# The library by SONAME, as an installed libdlock0.2 is found.
mkdir "$T/lib"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
ln -s "$lib" "$T/lib/$soname"

# check NAME VENV_PYTHON [ENV...]: import dlock from outside the source
# tree, lock on SQLite, see a second store refused while held.
check() {
    local what=$1 vpy=$2 out
    shift 2
    if out=$(cd "$T" && env "$@" "$vpy" - "$T/$what.db" 2>&1 <<'EOF'
import sys, dlock
print("module", dlock.__file__)
print("library", dlock.library_path(), dlock.version())
url = "sqlite://" + sys.argv[1]
with dlock.Store(url) as a, dlock.Store(url) as b:
    with a.lock("venv-test", wait=5) as lock:
        assert lock.fence == 1, lock.fence
        assert b.try_lock("venv-test") is None   # held: refused
    other = b.try_lock("venv-test")
    assert other is not None and other.fence == 2
    other.release()
print("locked ok")
EOF
    ); then
        case $out in
        *"locked ok"*) ok "$what" ;;
        *) fail "$what: $out" ;;
        esac
    else
        fail "$what: $out"
    fi
    printf '%s\n' "$out" | sed 's/^/#   /'
    last_out=$out
}
module_in() { # module_in NAME DIR: was dlock imported from under DIR?
    case $last_out in
    *"module $2/"*) ok "$1" ;;
    *) fail "$1: $last_out" ;;
    esac
}
pip_install() { # pip_install LOG VENV ARGS...
    local log=$1 v=$2
    shift 2
    if "${offline[@]}" "$v/bin/pip" install "$@" >"$log" 2>&1; then
        return 0
    fi
    sed 's/^/#   /' "$log"
    return 1
}

# 1. pip install (build isolation on: an in-tree backend, requires = []).
"$py" -m venv "$T/v1"
if pip_install "$T/pip1.log" "$T/v1" "$here"; then
    ok "venv: pip install --no-index bindings/python, offline"
    check venv-pip "$T/v1/bin/python" DLOCK_LIBRARY="$lib"
    module_in "  imported from the venv" "$T/v1/lib"
    case $last_out in *"library $lib "*) ok "  the library by DLOCK_LIBRARY" ;;
        *) fail "  the library by DLOCK_LIBRARY: $last_out" ;; esac
else
    fail "venv: pip install --no-index bindings/python, offline"
fi

# 2. --no-build-isolation; the library by SONAME (LD_LIBRARY_PATH).
"$py" -m venv "$T/v2"
if pip_install "$T/pip2.log" "$T/v2" --no-build-isolation "$here"; then
    ok "venv: pip install --no-build-isolation, offline"
    check venv-nbi "$T/v2/bin/python" -u DLOCK_LIBRARY LD_LIBRARY_PATH="$T/lib"
    case $last_out in *"library $soname "*) ok "  the library by its SONAME" ;;
        *) fail "  the library by its SONAME: $last_out" ;; esac
else
    fail "venv: pip install --no-build-isolation, offline"
fi

# 3. The sdist, built by the backend itself, then installed from it.
mkdir "$T/dist"
# (The listing to a file: grep -q quitting early would SIGPIPE tar, and
# pipefail make that a failure.)
if sdist=$(cd "$here" && "$py" -c 'import sys, _dlock_build as b
print(b.build_sdist(sys.argv[1]))' "$T/dist") &&
    tar -tzf "$T/dist/$sdist" >"$T/sdist.list" &&
    grep -q '/dlock/__init__.py$' "$T/sdist.list" &&
    grep -q '/PKG-INFO$' "$T/sdist.list"; then
    ok "sdist: $sdist"
    "$py" -m venv "$T/v3"
    if pip_install "$T/pip3.log" "$T/v3" "$T/dist/$sdist"; then
        ok "venv: pip install the sdist, offline"
        check venv-sdist "$T/v3/bin/python" DLOCK_LIBRARY="$lib"
    else
        fail "venv: pip install the sdist, offline"
    fi
else
    fail "sdist: $(cat "$T/sdist.list" 2>/dev/null)"
fi

# 4. Editable: the source directory on the venv's path.
"$py" -m venv "$T/v4"
if pip_install "$T/pip4.log" "$T/v4" -e "$here"; then
    ok "venv: pip install -e, offline"
    check venv-editable "$T/v4/bin/python" DLOCK_LIBRARY="$lib"
    module_in "  imported from the source" "$here/dlock"
else
    fail "venv: pip install -e, offline"
fi

# 5. No install at all: PYTHONPATH.
check pythonpath "$py" PYTHONPATH="$here" DLOCK_LIBRARY="$lib"
module_in "  imported from the source" "$here/dlock"

# 6. A copy under a directory with a space in its name, with the files a
# working tree collects in the package (an editor's swap file and
# backup, notes, a library copied in): pip install works from there, and
# the wheel and sdist hold the package's Python files only.
sp="$T/with space/python"
mkdir -p "$sp"
(cd "$here" && tar -cf - --exclude=./tests --exclude=__pycache__ .) |
    (cd "$sp" && tar -xf -)
for f in .__init__.py.swp __init__.py~ NOTES.txt libdlock.so.0.2; do
    printf 'stray\n' >"$sp/dlock/$f"
done
mkdir "$T/dist6"
if whl=$(cd "$sp" && "$py" -c 'import sys, _dlock_build as b
print(b.build_wheel(sys.argv[1]))' "$T/dist6") &&
    sd=$(cd "$sp" && "$py" -c 'import sys, _dlock_build as b
print(b.build_sdist(sys.argv[1]))' "$T/dist6") &&
    "$py" -c 'import sys, zipfile
print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' \
        "$T/dist6/$whl" >"$T/whl6.list" &&
    tar -tzf "$T/dist6/$sd" >"$T/sdist6.list"; then
    stray=$(grep -h -e 'swp$' -e '~$' -e 'NOTES' -e '\.so' \
        "$T/whl6.list" "$T/sdist6.list" || true)
    if [ -z "$stray" ] && grep -q '^dlock/__init__.py$' "$T/whl6.list"; then
        ok "wheel and sdist hold no stray files of the package directory"
    else
        fail "stray files in the wheel or sdist: $stray"
    fi
else
    fail "building in '$sp': $(cat "$T/whl6.list" "$T/sdist6.list" 2>&1)"
fi
"$py" -m venv "$T/v6"
if pip_install "$T/pip6.log" "$T/v6" "$sp"; then
    ok "venv: pip install from a path with a space, offline"
    check venv-space "$T/v6/bin/python" DLOCK_LIBRARY="$lib"
else
    fail "venv: pip install from a path with a space, offline"
fi

src_after=$(cd "$here" && find . -path ./tests -prune -o -type f -print |
    LC_ALL=C sort | xargs sha256sum)
if [ "$src_before" = "$src_after" ]; then
    ok "the source tree is unchanged (no build/, egg-info, __pycache__)"
else
    fail "the source tree changed: $(diff <(echo "$src_before") <(echo "$src_after"))"
fi

echo "$((n - fails))/$n passed"
[ "$fails" -eq 0 ]
