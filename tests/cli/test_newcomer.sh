#!/bin/sh
# What a newcomer runs into first (issue 36):  test_newcomer.sh DLOCK [URL]
#  - a script without "#!" runs under `dlock run` with /bin/sh, as under
#    flock(1) (execvp's ENOEXEC fallback), its status passed on; a file
#    that is not executable still exits 126 saying why, a missing one 127;
#    a binary the kernel cannot run (another architecture's) is never
#    handed to /bin/sh (126), and a script whose path starts with '-' is
#    sh's script, not its options;
#  - a global option (-s, --store, --store-file, -v, --verbose, --version)
#    given after the command is a usage error that says where it goes,
#    without echoing the URL (it may hold a password).
# URL defaults to an SQLite file in a temporary directory.
set -u
DLOCK=$1
case $DLOCK in /*) ;; *) DLOCK=$PWD/$DLOCK ;; esac # the test cd's
T=$(mktemp -d /tmp/dlock-newc.XXXXXX)
trap 'rm -rf "$T"' EXIT
STORE=${2:-sqlite://$T/newc.db}
export DLOCK_STORE="$STORE"
unset DLOCK_STORE_FILE
fails=0
n=0
id="newc-$$"

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
has() { # has NAME TEXT PATTERN
    case $2 in *"$3"*) ok "$1" ;; *) fail "$1: no '$3' in: $2" ;; esac
}
hasnt() { # hasnt NAME TEXT PATTERN
    case $2 in *"$3"*) fail "$1: '$3' in: $2" ;; *) ok "$1" ;; esac
}

# --- 1. scripts without "#!" ------------------------------------------------
mkdir "$T/bin"
# No "#!": execve() says ENOEXEC; execvp() runs it as "/bin/sh FILE ARG...".
# shellcheck disable=SC2016 # expanded by the script
printf 'echo "ran $DLOCK_NAME fence=${DLOCK_FENCE:+yes} args=$*"\nexit 3\n' \
    >"$T/bin/noshebang"
chmod +x "$T/bin/noshebang"

out=$("$DLOCK" run "$id/s" -- "$T/bin/noshebang" a 'b c' 2>"$T/err")
check "a script without #! runs, its status passed on" 3 $?
check "it ran under the lock with its arguments" \
    "ran $id/s fence=yes args=a b c" "$out"
check "nothing on stderr" "" "$(cat "$T/err")"

out=$(cd "$T/bin" && "$DLOCK" run "$id/s" -- ./noshebang 2>&1)
check "./script without #! (relative path) runs" 3 $?
has "  and prints" "$out" "ran $id/s"

out=$(PATH="$T/bin:$PATH" "$DLOCK" run "$id/s" -- noshebang x 2>&1)
check "a script without #! found on PATH runs" 3 $?
has "  with its argument" "$out" "args=x"

# flock(1) itself, where installed, does the same (the behaviour copied).
if command -v flock >/dev/null 2>&1; then
    flock "$T/flock.lock" "$T/bin/noshebang" >/dev/null
    check "flock(1) runs it too (exit 3)" 3 $?
fi

printf 'exit 0\n' >"$T/bin/zero"
chmod +x "$T/bin/zero"
"$DLOCK" run "$id/s" -- "$T/bin/zero"
check "a script without #! exiting 0 gives 0" 0 $?

# A script that kills itself: the signal shows as 128+N, as for any CMD.
printf 'kill -TERM $$\n' >"$T/bin/selfkill"
chmod +x "$T/bin/selfkill"
"$DLOCK" run "$id/s" -- "$T/bin/selfkill" 2>/dev/null
check "a script without #! dying of SIGTERM gives 143" 143 $?

# Not executable: still 126, and the message says what to do.
printf 'echo should not run\n' >"$T/bin/noexec"
chmod 644 "$T/bin/noexec"
out=$("$DLOCK" run "$id/s" -- "$T/bin/noexec" 2>&1)
check "a file that is not executable exits 126" 126 $?
hasnt "  and does not run" "$out" "should not run"
has "  its message says it is not executable" "$out" "not executable"
has "  and how to run it" "$out" "chmod +x"

out=$("$DLOCK" run "$id/s" -- "$T/bin" 2>&1)
check "a directory exits 126" 126 $?
has "  saying it is a directory" "$out" "is a directory"

out=$("$DLOCK" run "$id/s" -- "$T/bin/missing" 2>&1)
check "a missing file exits 127" 127 $?
has "  saying so" "$out" "No such file"

out=$(PATH="$T/bin" "$DLOCK" run "$id/s" -- missing-$$ 2>&1)
check "a command not on PATH exits 127" 127 $?

# A binary the kernel cannot run (another architecture's ELF, a corrupt
# one) also fails with ENOEXEC, but it is no script: /bin/sh must never
# read it as one (dash runs whatever lines it finds in it).  126, "Exec
# format error", as bash says; the bytes below hold a shell line after
# an aarch64 ELF header.
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\002\000\267\000\001\000\000\000\ntouch %s\n' \
    "$T/ran-as-sh" >"$T/bin/foreign"
chmod +x "$T/bin/foreign"
out=$("$DLOCK" run "$id/s" -- "$T/bin/foreign" 2>&1)
check "another architecture's binary exits 126" 126 $?
check "  and is not run by /bin/sh" no "$([ -e "$T/ran-as-sh" ] && echo yes || echo no)"
has "  saying why" "$out" "Exec format error"
# The same with a NUL before the first newline and no ELF magic (bash's
# test for a binary file).
printf 'zz\000zz\ntouch %s\n' "$T/ran-as-sh2" >"$T/bin/blob"
chmod +x "$T/bin/blob"
"$DLOCK" run "$id/s" -- "$T/bin/blob" >/dev/null 2>&1
check "a file with a NUL in its first line exits 126" 126 $?
check "  and is not run by /bin/sh" no "$([ -e "$T/ran-as-sh2" ] && echo yes || echo no)"

# A script without "#!" whose name starts with '-' (found through an
# empty PATH entry, or a relative path): /bin/sh must take it as the
# script, not as its options ("-c" would run the first argument).
mkdir "$T/-d"
printf 'echo dash-ok "$@"\n' >"$T/-d/-c"
chmod +x "$T/-d/-c"
out=$(cd "$T/-d" && PATH=":/usr/bin:/bin" "$DLOCK" run "$id/s" -- -c 'echo INJECTED' 2>&1)
check "a script named -c on PATH runs as the script" "dash-ok echo INJECTED" "$out"
out=$(cd "$T" && "$DLOCK" run "$id/s" -- -d/-c x 2>&1)
check "a script at a relative path starting with - runs" "dash-ok x" "$out"

# With a "#!" line nothing changed.
printf '#!/bin/sh\nexit 5\n' >"$T/bin/shebang"
chmod +x "$T/bin/shebang"
"$DLOCK" run "$id/s" -- "$T/bin/shebang"
check "a script with #! runs as before" 5 $?

# --- 2. global options after the command --------------------------------
# A URL with a password: the message must not echo it.
secret="redis://u:hunter2secret@127.0.0.1:1"
printf '%s\n' "$STORE" >"$T/storefile"
chmod 600 "$T/storefile"

# misplaced CMD OPTION...: exit 64, "global option", where it goes.
misplaced() {
    cmd=$1
    want=$2
    shift 2
    case $cmd in
    run) set -- run "$id/g" "$@" -- true ;;
    status | history) set -- "$cmd" "$@" "$id/g" ;;
    release) set -- release --force "$@" "$id/g" ;;
    *) set -- "$cmd" "$@" ;;
    esac
    out=$("$DLOCK" "$@" 2>&1 </dev/null)
    rc=$?
    check "dlock $* exits 64" 64 $rc
    has "  says it is a global option" "$out" "global option"
    has "  and where it goes" "$out" "$want"
    hasnt "  and does not show the URL's password" "$out" hunter2secret
}
for cmd in run status list history release init; do
    case $cmd in
    run) rest=" NAME -- CMD" ;;
    status | history) rest=" NAME" ;;
    release) rest=" --force NAME" ;;
    *) rest="" ;;
    esac
    misplaced "$cmd" "dlock -s URL $cmd$rest" -s "$secret"
    misplaced "$cmd" "dlock -s URL $cmd$rest" "-s$secret"
    misplaced "$cmd" "dlock --store URL $cmd$rest" --store "$secret"
    misplaced "$cmd" "dlock --store URL $cmd$rest" "--store=$secret"
    misplaced "$cmd" "dlock --store-file FILE $cmd$rest" --store-file "$T/storefile"
    misplaced "$cmd" "dlock --store-file FILE $cmd$rest" "--store-file=$T/storefile"
    misplaced "$cmd" "dlock -v $cmd$rest" -v
    misplaced "$cmd" "dlock --verbose $cmd$rest" --verbose
    misplaced "$cmd" "dlock --version" --version
done

# A URL where the command goes: a hint to -s, the password not shown.
out=$("$DLOCK" "$secret" run "$id/g" -- true 2>&1)
check "dlock URL run ... exits 64" 64 $?
has "  with the hint" "$out" "a store URL goes after -s: dlock -s URL COMMAND"
hasnt "  not showing the password" "$out" hunter2secret

# A URL where NAME goes ("dlock status redis://u:pw@h"): as a lock name
# its password would be printed (status, release's message), written
# into the store for every client to list (run), and put in CMD's
# DLOCK_NAME.  A usage error with the hint, the password not shown, and
# nothing taken.
for cmd in status history release run; do
    case $cmd in
    run) set -- run "$secret" -- sh -c 'echo "RAN $DLOCK_NAME"' ;;
    release) set -- release --force "$secret" ;;
    *) set -- "$cmd" "$secret" ;;
    esac
    out=$("$DLOCK" "$@" 2>&1 </dev/null)
    check "dlock $cmd URL-with-password as NAME exits 64" 64 $?
    hasnt "  not showing the password" "$out" hunter2secret
    has "  with the hint" "$out" "dlock -s URL"
    hasnt "  and nothing ran" "$out" "RAN "
done
out=$("$DLOCK" list 2>&1)
hasnt "  and no lock was named after it" "$out" hunter2secret
# A name that merely looks like a URL, with no password, is still a name.
"$DLOCK" run "postgres://db1/app" -- true
check "a URL-like name without a password is still a name" 0 $?

# The option in a run's option list (after NAME) gets the hint too.
out=$("$DLOCK" run "$id/g" -s "$secret" -- true 2>&1)
check "dlock run NAME -s URL -- CMD exits 64" 64 $?
has "  with the hint" "$out" "dlock -s URL run NAME -- CMD"

# After the command's own words, -s is the command's.
# shellcheck disable=SC2016
out=$("$DLOCK" run "$id/g" -- sh -c 'echo "$1"' sh -s 2>&1)
check "a CMD's own -s is left alone" "-s" "$out"
out=$("$DLOCK" run "$id/g" echo -s 2>&1)
check "  also flock style (no --)" "-s" "$out"

# In place, the same options work.
"$DLOCK" -s "$STORE" run "$id/g" -- true
check "dlock -s URL run NAME -- CMD works" 0 $?
"$DLOCK" --store-file "$T/storefile" -v status "$id/g" >/dev/null
check "dlock --store-file FILE -v status NAME works (3: free)" 3 $?
"$DLOCK" run "$id/g" -S -- true
check "run -S (shared) is still run's" 0 $?
out=$("$DLOCK" status "$id/g" --bogus 2>&1)
check "an unknown option is still a usage error" 64 $?
has "  called unknown" "$out" "unknown option"

echo "$((n - fails))/$n passed"
[ "$fails" -eq 0 ]
