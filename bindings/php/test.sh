#!/usr/bin/env bash
# Tests of the PHP binding (plain PHP scripts, no phpunit):
#
#   bindings/php/test.sh LIBDLOCK_PATH [DLOCK_CLI_PATH]
#
# Runs tests/test_store.php, tests/test_runs.php, tests/test_elect.php,
# tests/test_suspend.php (which skips a store that cannot suspend yet) and
# tests/test_keep_runs.php (likewise one that cannot keep a setting yet)
# against SQLite (a temporary directory) and
# against each network store named by DLOCK_TEST_REDIS_URL,
# DLOCK_TEST_POSTGRES_URL, DLOCK_TEST_MYSQL_URL, DLOCK_TEST_REDIS_SENTINEL_URL,
# DLOCK_TEST_REDIS_CLUSTER_URL, DLOCK_TEST_ETCD_URL, and
# tests/test_compat.php (the its-mieger/mysql-shared-locks facade) against
# the MySQL one.  With CI=true a missing URL (all but Sentinel's and
# Cluster's, which only the long tier starts) is a failure; otherwise that
# store is skipped with a message.  DLOCK_CLI_PATH, if given, breaks a lock
# from another process for the LOST case (else a second PHP process does).
# One line per check; exit status 1 if anything failed.
# DLOCK_TEST_ONLY=STORE (sqlite, redis, postgres, mysql, redis-sentinel,
# redis-cluster, etcd, compat): that one only (sqlite also runs the [load]
# checks; compat is test_compat.php on the MySQL URL), and with CI=true
# that store's URL must be set: one ctest entry a store
# (tests/CMakeLists.txt, bindings-php-STORE).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDLOCK_PATH [DLOCK_CLI_PATH]" >&2; exit 2; }
lib=$(realpath "$1")
cli=${2:-}
cliarg=()
[ -z "$cli" ] || cliarg=("$(realpath "$cli")")
[ -f "$lib" ] || { echo "FAIL no library at $1" >&2; exit 1; }

php=${PHP:-php}
phpflags=(-d ffi.enable=1 -d display_errors=stderr -d error_reporting=-1)
export DLOCK_LIBRARY=$lib
failed=0
ci=${CI:-}
only=${DLOCK_TEST_ONLY:-}
case $only in
""|sqlite|redis|postgres|mysql|redis-sentinel|redis-cluster|etcd|compat) ;;
*) echo "FAIL DLOCK_TEST_ONLY=$only: not a store this script tests"; exit 1 ;;
esac

command -v "$php" >/dev/null || { echo "FAIL php not found"; exit 1; }
if ! grep -qx FFI <<<"$("$php" -m)"; then
    echo "FAIL php has no FFI extension (php -m)"; exit 1
fi

check() {   # check DESCRIPTION COMMAND...: one line
    local what=$1; shift
    if "$@"; then echo "ok   [load] $what"; else echo "FAIL [load] $what"; failed=1; fi
}

run() {   # run TAG SCRIPT ARGS...
    local tag=$1; shift
    echo "# $tag: $(basename "$1") $(sed -E 's#(//[^/@:]*:)[^/@]*@#\1***@#g' <<<"${*:2}")"
    if ! timeout 600 "$php" "${phpflags[@]}" "$@"; then
        echo "FAIL [$tag] $(basename "$1") exited non-zero"
        failed=1
    fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# (Up to the matching fi: the loading checks and SQLite, unless
# DLOCK_TEST_ONLY names another store.)
if [ -z "$only" ] || [ "$only" = sqlite ]; then
# Loading: DLOCK_LIBRARY, the SONAME, a missing library.
ver=$("$php" "${phpflags[@]}" -r 'require $argv[1]; echo Dlock\Store::version();' "$here/autoload.php" 2>&1) || true
check "DLOCK_LIBRARY loads libdlock $ver" test -n "$ver"
soname=$("$php" -r 'require $argv[1]; echo Dlock\Ffi::SONAME;' "$here/autoload.php")
libdir=$(dirname "$lib")
if [ -e "$libdir/$soname" ]; then
    v2=$(env -u DLOCK_LIBRARY LD_LIBRARY_PATH="$libdir" "$php" "${phpflags[@]}" -r 'require $argv[1]; echo Dlock\Store::version();' "$here/autoload.php" 2>&1) || true
    check "without DLOCK_LIBRARY the SONAME $soname is loaded ($v2)" test "$v2" = "$ver"
else
    echo "ok   [load] (no $soname next to $lib: SONAME loading not checked)"
fi
msg=$(DLOCK_LIBRARY=/nonexistent/libdlock.so "$php" "${phpflags[@]}" -r 'require $argv[1]; try { new Dlock\Store(); echo "loaded?"; } catch (Dlock\Exception $e) { echo get_class($e), " ", $e->getMessage(); }' "$here/autoload.php" 2>&1) || true
check "a missing library: Dlock\\NotSupportedException naming it" grep -q 'NotSupportedException cannot load libdlock (/nonexistent/libdlock.so)' <<<"$msg"
# The README's example is example.php, word for word, and runs as written.
readme_example=$(awk '/^```php$/ {f=1; next} f && /^```$/ {exit} f' "$here/README.md")
check "README.md's example is example.php" test "$readme_example" = "$(cat "$here/example.php")"
out=$(cd "$tmp" && "$php" "${phpflags[@]}" "$here/example.php" 2>&1) || true
check "example.php runs: $out" grep -q '^holding nightly-report with fence [0-9]' <<<"$out"

out=$(cd "$tmp" && "$php" -d ffi.enable=preload "$here/example.php" 2>&1) || true
check "example.php runs with ffi.enable=preload (PHP's default: the CLI may use FFI)" grep -q '^holding nightly-report' <<<"$out"
lint=$(find "$here" -name '*.php' -print0 | xargs -0 -n1 "$php" -l 2>&1 | grep -v '^No syntax errors' || true)
check "php -l of every file${lint:+: $lint}" test -z "$lint"

run sqlite "$here/tests/test_store.php" "sqlite://$tmp/php-test.db" "${cliarg[@]}"
run sqlite "$here/tests/test_runs.php" "sqlite://$tmp/php-test.db"
run sqlite "$here/tests/test_elect.php" "sqlite://$tmp/php-test.db"
run sqlite "$here/tests/test_suspend.php" "sqlite://$tmp/php-test.db"
run sqlite "$here/tests/test_keep_runs.php" "sqlite://$tmp/php-test.db"
fi

for var in DLOCK_TEST_REDIS_URL DLOCK_TEST_POSTGRES_URL DLOCK_TEST_MYSQL_URL \
           DLOCK_TEST_REDIS_SENTINEL_URL DLOCK_TEST_REDIS_CLUSTER_URL \
           DLOCK_TEST_ETCD_URL; do
    tag=${var#DLOCK_TEST_}; tag=${tag%_URL}; tag=${tag,,}
    case $only in
    "") ;;
    compat) [ "$tag" = mysql ] || continue ;;
    *) [ "$tag" = "${only//-/_}" ] || continue ;;
    esac
    url=${!var:-}
    if [ -z "$url" ]; then
        case $var in
        *SENTINEL*|*CLUSTER*)
            if [ -n "$only" ] && [ "$ci" = true ]; then
                echo "FAIL $var is not set (CI=true: DLOCK_TEST_ONLY=$only)"
                failed=1
            else
                echo "skip $var is not set"
            fi ;;
        *)  if [ "$ci" = true ]; then
                echo "FAIL $var is not set (CI=true: every store must be tested)"
                failed=1
            else
                echo "skip $var is not set"
            fi ;;
        esac
        continue
    fi
    if [ "$only" != compat ]; then
        run "$tag" "$here/tests/test_store.php" "$url" "${cliarg[@]}"
        run "$tag" "$here/tests/test_runs.php" "$url"
        run "$tag" "$here/tests/test_elect.php" "$url"
        run "$tag" "$here/tests/test_suspend.php" "$url"
        run "$tag" "$here/tests/test_keep_runs.php" "$url"
    fi
    if [ "$var" = DLOCK_TEST_MYSQL_URL ] && [ "$only" != mysql ]; then
        if command -v mysql >/dev/null; then
            run compat "$here/tests/test_compat.php" "$url"
        elif [ "$ci" = true ]; then
            echo "FAIL [compat] the mysql client is not installed (it plays its-mieger/mysql-shared-locks)"
            failed=1
        else
            echo "skip [compat] the mysql client is not installed"
        fi
    fi
done

if [ $failed -eq 0 ]; then echo "# PHP binding: all passed"; else echo "# PHP binding: FAILED"; fi
exit $failed
