# Sourced by the Python binding's test scripts (test.sh, test_venv.sh):
# the LIBDLOCK_PATH argument they share.  Sets here (this folder) and,
# through lib_arg PATH, lib (PATH made absolute), or exits 66 when no
# library is there.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib_arg() {
    lib=$(realpath "$1")
    [ -f "$lib" ] || { echo "$0: no library at $lib" >&2; exit 66; }
}
