#!/bin/bash
# Build the Debian packages (libdlock0.2, libdlock-dev, dlock) the way a
# distribution would: dpkg-buildpackage -us -uc -b on a copy of the source
# tree in a temp dir (nothing written next to the tree or into it), the
# .debs, .buildinfo and .changes copied to OUT_DIR.
#   scripts/deb.sh [OUT_DIR]        (default: build-deb)
# As root it installs what is missing (dpkg-dev, debhelper, the
# Build-Depends of debian/control); otherwise it says what to install.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-deb}
jobs=${JOBS:-2}

need() { "$src/scripts/deps.sh" "$@"; } # missing Debian packages (root)
need dpkg-dev debhelper build-essential
if ! unmet=$(cd "$src" && dpkg-checkbuilddeps 2>&1); then
    if [ "$(id -u)" = 0 ]; then
        echo "deb: $unmet" >&2
        DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq \
            --no-install-recommends "$src" >&2
    else
        echo "deb: $unmet; as root: apt-get build-dep $src" >&2
        exit 1
    fi
fi

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tmp=$(mktemp -d /tmp/dlock-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/dlock-$version
mkdir "$tree"
# The files git knows (tracked, and new ones not ignored): no build
# directories or local databases end up in the source package.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
        tar --null -T - -cf -) | tar -xf - -C "$tree"
else
    tar -C "$src" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$tree"
fi
echo "deb: building dlock $version in $tree"
(cd "$tree" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1) || {
    tail -40 "$tmp/build.log" >&2
    echo "deb: dpkg-buildpackage failed (the end of its log above)" >&2
    exit 1
}
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
cp "$tmp"/*.deb "$tmp"/*.buildinfo "$tmp"/*.changes "$tmp/build.log" "$out/"
grep -E "^dpkg-shlibdeps|warning" "$tmp/build.log" >&2 || true
ls -1 "$out"/*.deb
