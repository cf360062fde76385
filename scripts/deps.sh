#!/bin/sh
# Install the Debian packages dlock needs, if any are missing.
#   scripts/deps.sh build   compiler, cmake, client libraries
#   scripts/deps.sh test    the above + servers and tools the tests start
#   scripts/deps.sh PKG...  just those (scripts/ci-builds.sh, deb.sh)
# As root on Debian it runs apt-get; otherwise it says what to install.
set -eu
what=${1:-build}
pkgs="build-essential cmake pkg-config libsqlite3-dev libhiredis-dev libssl-dev libpq-dev libmariadb-dev libcurl4-openssl-dev libjson-c-dev libmicrohttpd-dev"
if [ "$what" = test ]; then
    pkgs="$pkgs redis-server redis-tools redis-sentinel postgresql mariadb-server mariadb-client etcd-server etcd-client curl valgrind procps man-db binutils sqlite3 nftables faketime python3 python3-venv python3-pytest python3-prometheus-client prometheus php-cli clang-format strace zsh fish bash-completion systemd"
fi
case $what in
build | test) ;;
*) pkgs="$*" ;;
esac
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends $missing >&2
else
    echo "deps: missing Debian packages:$missing" >&2
    echo "deps: run as root: apt-get install$missing" >&2
    exit 1
fi
