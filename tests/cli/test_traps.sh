#!/bin/sh
# Issue 47's traps of `dlock run` (and elect), end to end on one store:
#   test_traps.sh DLOCK_BINARY STORE_URL
#  1. a missing NAME is no lock: "--" where NAME goes is a usage error
#     (64); a CMD that cannot run (not found 127, not executable 126)
#     takes no lock and records no run, and its message names the lock and
#     the command, with a hint for an unquoted NAME with spaces;
#  3. no silence: a -w that runs out says who holds the lock and since
#     when; -v says each failed try of a store that is down, and the last
#     error is said with or without it; -n on a busy lock is silent, as
#     flock -n; -q silences the rest;
#  4. a script whose #! interpreter is missing says which ("CRLF line
#     endings?"), before the lock and at exec;
#  flock(1) habits: -x/-e/--exclusive, --timeout, -c STRING, and the
#     self-locking line of dlock(1)'s EXAMPLES, run as written there.
# Synchronisation is by FIFOs, never by sleeping.
set -u
DLOCK=$1
STORE=$2
MAN=$(dirname "$0")/../../docs/man/dlock.1
if ! out=$("$DLOCK" --version 2>&1); then
    echo "FAIL the dlock binary '$DLOCK' does not run: ${out:-no output}"
    exit 1
fi
export DLOCK_STORE="$STORE"
T=$(mktemp -d /tmp/dlock-traps.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
fails=0
n=0
id="traps-$$"

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
check() { # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (wanted '$2', got '$3')"; fi
}
has() { # has WHAT TEXT NEEDLE
    case $2 in *"$3"*) ok "$1" ;; *) fail "$1 (no '$3' in: $2)" ;; esac
}
hasnt() {
    case $2 in *"$3"*) fail "$1 ('$3' in: $2)" ;; *) ok "$1" ;; esac
}
# No run of NAME recorded (a store without run records lists none either).
no_runs() { # no_runs WHAT NAME
    check "$1" "" "$("$DLOCK" history "$2" 2>/dev/null)"
}
await() { # await FIFO WHAT: bounded, so a holder that never starts fails
    timeout 120 head -n 1 "$1" >/dev/null && return 0
    fail "$2 never said it runs (nothing on $(basename "$1") in 120 s)"
    return 1
}
# hold TAG NAME [OPTION...]: a `dlock run NAME` whose command holds until
# $T/go-TAG is written; returns once it runs; $holder is dlock's pid.
hold() {
    tag=$1
    nm=$2
    shift 2
    mkfifo "$T/ready-$tag" "$T/go-$tag"
    "$DLOCK" run "$nm" "$@" -- sh -c "echo x >'$T/ready-$tag'; read _ <'$T/go-$tag'" &
    holder=$!
    await "$T/ready-$tag" "the holder $tag" || kill -KILL "$holder" 2>/dev/null
}
let_go() { # let_go TAG PID
    timeout 120 sh -c 'echo go >"$0"' "$T/go-$1" 2>/dev/null
    wait "$2"
    rm -f "$T/go-$1" "$T/ready-$1"
}

# --- trap 1: a missing NAME ---------------------------------------------
out=$("$DLOCK" run -- echo hi 2>&1)
check "run -- echo hi is a usage error" 64 $?
has "  saying NAME is missing before '--'" "$out" "NAME is missing before '--'"
hasnt "  and echo does not run" "$out" "hi"
out=$("$DLOCK" run -w 1 -- "$id/n" true 2>&1)
check "run -w 1 -- NAME CMD is one too" 64 $?
out=$("$DLOCK" elect -- true 2>&1)
check "elect -- CMD is a usage error" 64 $?
has "  saying NAME is missing before '--'" "$out" "NAME is missing before '--'"

# "dlock run echo hi": the lock echo, the command hi.
out=$("$DLOCK" run "$id/echo" no-such-cmd-$$ 2>&1)
check "run NAME CMD with CMD not found exits 127" 127 $?
has "  the message names the lock" "$out" "lock '$id/echo'"
has "  and the command, not found in PATH" "$out" "cannot run 'no-such-cmd-$$': not found in PATH"
no_runs "  and no run of it is recorded" "$id/echo"
out=$("$DLOCK" run echo no-such-cmd-$$ 2>&1)
check "run echo CMD (NAME a command) exits 127" 127 $?
has "  asking whether echo was the command" "$out" "is 'echo' the command?"

# "dlock run my job -- true": an unquoted NAME with spaces.
out=$("$DLOCK" run "$id/my" job-$$ -- true 2>&1)
check "run my job -- true exits 127" 127 $?
has "  naming the lock and the command" "$out" "lock '$id/my': cannot run 'job-$$'"
has "  asking whether the name was 'my job'" "$out" "was the lock name '$id/my job-$$'? quote a NAME with spaces"
no_runs "  and no run of it is recorded" "$id/my"
check "  and the lock is free" 1 "$("$DLOCK" status "$id/my" --json 2>/dev/null | grep -c '"held":false')"

# Not executable: 126 before the lock, the lock named.
printf 'echo should not run\n' >"$T/noexec"
chmod 644 "$T/noexec"
out=$("$DLOCK" run "$id/nx" -- "$T/noexec" 2>&1)
check "a file that is not executable exits 126" 126 $?
has "  naming the lock" "$out" "lock '$id/nx': cannot run '$T/noexec'"
has "  saying how to run it" "$out" "chmod +x"
no_runs "  and no run of it is recorded" "$id/nx"

# --- trap 4: a missing #! interpreter, CRLF line endings ----------------
printf '#!/bin/sh\r\necho ran\r\n' >"$T/crlf.sh"
chmod +x "$T/crlf.sh"
out=$("$DLOCK" run "$id/crlf" -- "$T/crlf.sh" 2>&1)
check "a CRLF script exits 127" 127 $?
has "  naming its interpreter, the CR shown" "$out" "its interpreter '/bin/sh\\x0d' is missing"
has "  asking about CRLF line endings" "$out" "(CRLF line endings?)"
has "  and the lock" "$out" "lock '$id/crlf'"
no_runs "  and no run of it is recorded" "$id/crlf"
# The usual shape, through env(1): env would say "'sh\r': No such file"
# only once it ran under the lock.
printf '#!/usr/bin/env sh\r\necho ran\r\n' >"$T/crlf-env.sh"
chmod +x "$T/crlf-env.sh"
if [ -x /usr/bin/env ]; then
    out=$("$DLOCK" run "$id/crlf" -- "$T/crlf-env.sh" 2>&1)
    check "a CRLF script through env exits 127" 127 $?
    has "  naming env's program, the CR shown" "$out" "its interpreter '/usr/bin/env sh\\x0d' is missing (CRLF line endings?)"
fi
printf '#!/nonexistent-%s/bash\necho ran\n' $$ >"$T/noint.sh"
chmod +x "$T/noint.sh"
mkdir "$T/bin"
cp "$T/noint.sh" "$T/bin/noint-$$"
out=$("$DLOCK" run "$id/ni" -- "$T/noint.sh" 2>&1)
check "a script whose interpreter is missing exits 127" 127 $?
has "  saying which" "$out" "its interpreter '/nonexistent-$$/bash' is missing"
hasnt "  without a CRLF guess" "$out" "CRLF"
out=$(PATH="$T/bin:$PATH" "$DLOCK" run "$id/ni" -- noint-$$ 2>&1)
check "found on PATH, the same" 127 $?
has "  saying which" "$out" "its interpreter '/nonexistent-$$/bash' is missing"
# At exec: a binary whose ELF interpreter is missing looks runnable
# before (no #!), fails at exec with ENOENT: the lock is named there too.
if python3 - "$T/noloader" <<'EOF' 2>/dev/null
import struct, sys
d = bytearray(open('/bin/true', 'rb').read())
assert d[:4] == b'\x7fELF' and d[4] == 2
phoff, = struct.unpack_from('<Q', d, 0x20)
size, num = struct.unpack_from('<HH', d, 0x36)
for i in range(num):
    o = phoff + i * size
    if struct.unpack_from('<I', d, o)[0] == 3:  # PT_INTERP
        off, = struct.unpack_from('<Q', d, o + 8)
        n, = struct.unpack_from('<Q', d, o + 32)
        d[off + n - 2] = ord('X')  # the last byte before the NUL
        break
else:
    sys.exit(1)
open(sys.argv[1], 'wb').write(d)
EOF
then
    chmod +x "$T/noloader"
    out=$("$DLOCK" run "$id/elf" -- "$T/noloader" 2>&1)
    check "a binary without its loader exits 127 at exec" 127 $?
    has "  naming the lock at exec" "$out" "lock '$id/elf': cannot run '$T/noloader'"
    has "  and what may be missing" "$out" "ELF interpreter"
else
    echo "skip the exec-time case: no 64-bit /bin/true to copy"
fi

# --- trap 3: silence ----------------------------------------------------
hold a "$id/busy"
host=$(hostname)
out=$("$DLOCK" run -w 0.3 "$id/busy" -- true 2>&1)
check "-w on a busy lock exits 1" 1 $?
has "  saying it is still held, after how long" "$out" "lock '$id/busy' still held after 0.300 s: by host "
has "  by whom (dlock's pid)" "$out" " pid $holder since 2"
has "  and its fence" "$out" "(fence "
check "  in one line" 1 "$(printf '%s\n' "$out" | wc -l)"
out=$("$DLOCK" run --timeout 0.2 "$id/busy" -- true 2>&1)
check "--timeout is -w" 1 $?
has "  with the same line" "$out" "still held after 0.200 s"
out=$("$DLOCK" run -q -w 0.2 "$id/busy" -- true 2>&1)
check "-q -w on a busy lock exits 1" 1 $?
check "  silent" "" "$out"
out=$("$DLOCK" run -n "$id/busy" -- true 2>&1)
check "-n on a busy lock exits 1" 1 $?
check "  silent, as flock -n" "" "$out"
out=$("$DLOCK" run -E 9 -w 0.2 "$id/busy" -- true 2>&1)
check "-E CODE with -w" 9 $?
has "  still says who holds it" "$out" "still held"
let_go a "$holder"
check "the holder ran to its end" 0 $?

# A semaphore: how many of N hold it.
hold s1 "$id/sem" -l 2
h1=$holder
hold s2 "$id/sem" -l 2
h2=$holder
out=$("$DLOCK" run -l 2 -w 0.2 "$id/sem" -- true 2>&1)
check "a full semaphore with -w exits 1" 1 $?
has "  saying how many of N hold it" "$out" "by 2 of 2 holders (semaphore)"
let_go s1 "$h1"
let_go s2 "$h2"

# An election not won within -w names the leader.
hold e "$id/el"
out=$("$DLOCK" elect -w 0.2 "$id/el" -- true 2>&1)
check "elect -w behind a leader exits 1" 1 $?
has "  naming who holds it" "$out" "lock '$id/el' not elected after 0.200 s: by host "
out=$("$DLOCK" elect -q -w 0.2 "$id/el" -- true 2>&1)
check "elect -q -w exits 1" 1 $?
check "  silent" "" "$out"
let_go e "$holder"

# -q: no skip line for --once-per either (a store without run records
# says 69 for --once-per: nothing to test there).
if "$DLOCK" run --once-per 1h "$id/op" -- true 2>/dev/null; then
    out=$("$DLOCK" run --once-per 1h "$id/op" -- true 2>&1)
    has "--once-per skip says which run satisfied it" "$out" "already ran"
    out=$("$DLOCK" run -q --once-per 1h "$id/op" -- true 2>&1)
    check "-q --once-per skip exits 0" 0 $?
    check "  silent" "" "$out"
fi

# A store that is down: a closed loopback port.
down="redis://127.0.0.1:1"
out=$("$DLOCK" -s "$down" -v run -w 1 "$id/down" -- true 2>&1)
check "-w 1 on a store that is down exits 69" 69 $?
tries=$(printf '%s\n' "$out" | grep -c "trying again in")
[ "$tries" -ge 2 ] && ok "  -v says each retry ($tries)" || fail "  -v retries: $tries lines in: $out"
has "  with the error" "$out" "(try 1): cannot connect to redis://127.0.0.1:1"
last=$(printf '%s\n' "$out" | tail -n 1)
has "  and the last error at the end" "$last" "dlock: cannot open the store: cannot connect"
out=$("$DLOCK" -s "$down" run -w 0.5 "$id/down" -- true 2>&1)
check "without -v: exit 69" 69 $?
check "  one line, the last error" 1 "$(printf '%s\n' "$out" | grep -c 'cannot open the store')"
hasnt "  no retry lines" "$out" "trying again"
out=$("$DLOCK" -s "$down" -v run -q -w 0.5 "$id/down" -- true 2>&1)
check "-q: exit 69" 69 $?
check "  only the last error" "1 0" "$(printf '%s\n' "$out" | grep -c 'cannot open the store') $(printf '%s\n' "$out" | grep -c 'trying again')"

out=$("$DLOCK" -s "redis://u:s3cr3tpw@127.0.0.1:1" -v run -w 0.5 "$id/down" -- true 2>&1)
check "-v retries with a password in the URL: exit 69" 69 $?
has "  the retry lines are there" "$out" "trying again"
hasnt "  and never show the password" "$out" "s3cr3tpw"

# --- flock(1) habits ----------------------------------------------------
for x in -x -e --exclusive; do
    "$DLOCK" run "$id/x" $x -- true
    check "$x is accepted (exclusive, the default)" 0 $?
done
out=$("$DLOCK" run "$id/x" -x -S -- true 2>&1)
check "-x with --shared is a usage error" 64 $?
has "  saying they conflict" "$out" "conflict"
out=$("$DLOCK" run "$id/c" -c 'echo "c:$DLOCK_NAME"; exit 3' 2>&1)
check "-c STRING runs it with sh -c" 3 $?
check "  under the lock" "c:$id/c" "$out"
out=$("$DLOCK" run -c 'exit 4' "$id/c" 2>&1)
check "-c before NAME" 4 $?
out=$("$DLOCK" run "$id/c" -c 'true' -- true 2>&1)
check "-c with a CMD is a usage error" 64 $?
has "  saying they conflict" "$out" "conflict"
out=$("$DLOCK" run "$id/c" -c 'true' echo 2>&1)
check "-c with a CMD without -- too" 64 $?
out=$("$DLOCK" run --help)
for o in "--timeout SEC" "-q, --quiet" "-x, --exclusive" "-c, --command STRING"; do
    has "run --help lists $o" "$out" "$o"
done

# The self-locking script of dlock(1)'s EXAMPLES, as written there.
line=$(grep 'DLOCK_NAME:' "$MAN" | grep 'exec dlock run' | sed 's/\\-/-/g')
if [ -z "$line" ]; then
    fail "dlock(1) EXAMPLES has no self-locking line (DLOCK_NAME ... exec dlock run)"
else
    ok "dlock(1) has the self-locking line: $line"
    mkdir "$T/pbin"
    # `dlock` on PATH as the line calls it: this build's binary.
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$DLOCK" >"$T/pbin/dlock"
    chmod +x "$T/pbin/dlock"
    mkfifo "$T/up" "$T/go"
    {
        echo '#!/bin/sh'
        printf '%s\n' "$line"
        echo 'echo "ran $1" >>"$TRAPS_T/ran"'
        echo 'echo up >"$TRAPS_T/up"'
        echo 'read _ <"$TRAPS_T/go"'
    } >"$T/job.sh"
    chmod +x "$T/job.sh"
    export TRAPS_T="$T"
    PATH="$T/pbin:$PATH" "$T/job.sh" first 2>"$T/first.err" &
    first=$!
    if await "$T/up" "the first copy"; then
        out=$(PATH="$T/pbin:$PATH" "$T/job.sh" second 2>&1)
        check "a second copy meanwhile exits 1" 1 $?
        check "  silent" "" "$out"
        timeout 120 sh -c 'echo go >"$0"' "$T/go"
    fi
    wait "$first"
    check "the first copy ran to its end" 0 $?
    check "exactly one copy ran its body" "ran first" "$(cat "$T/ran" 2>/dev/null)"
fi

echo "$((n - fails)) of $n passed"
[ "$fails" = 0 ]
