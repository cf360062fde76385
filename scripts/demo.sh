#!/bin/sh
# Two `dlock run` on one name exclude each other on the embedded store:
# A holds "demo" for 2 s; B waits for it; C tries once (-n) and gives up.
set -eu
dlock=${1:-build/dlock}
store=${DLOCK_STORE:-}
[ -n "$store" ] && set -- -s "$store" || set --
echo "store: ${store:-the default, sqlite:///var/tmp/dlock-$(id -u)/dlock.db (private to you; set DLOCK_STORE or -s URL for another)}"
ready=$(mktemp -u /tmp/dlock-demo.XXXXXX)
mkfifo "$ready"
trap 'rm -f "$ready"' EXIT

"$dlock" "$@" run demo -- sh -c 'echo "A: got the lock (fence $DLOCK_FENCE), working 2 s" ; echo go >'"$ready"'; sleep 2; echo "A: done"' &
a=$!
read -r _ <"$ready"   # A holds the lock now
echo "C: trying once (-n) while A holds it..."
if "$dlock" "$@" run demo -n -- true; then echo "C: got it?!"; exit 1; else echo "C: busy, exit code $? (as documented)"; fi
echo "B: waiting up to 10 s..."
"$dlock" "$@" -v run demo -w 10 -- sh -c 'echo "B: got the lock (fence $DLOCK_FENCE) after A released it"'
wait $a
# Free now: status exits 3 for a free name (0 held), which set -e must
# not take for a failure.
"$dlock" "$@" status demo || [ $? = 3 ]

# Where this dlock is, and how to type just `dlock` (as README's tour does).
dir=$(cd "$(dirname "$dlock")" && pwd)
if [ "$(command -v dlock 2>/dev/null)" = "$dir/dlock" ]; then
    echo "dlock is $dir/dlock (on your PATH)"
else
    # shellcheck disable=SC2016 # $PWD and $PATH are for the user to type
    case $dir in
    "$PWD"/*) shown='$PWD'${dir#"$PWD"} ;; # as typed from here
    *) shown=$dir ;;
    esac
    echo "dlock is $dir/dlock, not on your PATH; for the tour, run:"
    # shellcheck disable=SC2016
    printf '  export PATH="%s:$PATH"   # or: sudo make install\n' "$shown"
fi
