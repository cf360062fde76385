#!/bin/sh
# Shell completions (issue 47):  test_completion.sh DLOCK [GENERATED_DIR]
# `dlock completion bash|zsh|fish` prints scripts made from the option
# tables the parsers use.  Each script is parsed (bash -n, zsh -n,
# fish -n) and asked for completions: bash through COMP_WORDS/COMP_CWORD
# and the generated _dlock, fish through `complete -C`, zsh through an
# interactive zsh under zpty (zsh_capture.zsh: compinit, a TAB, the
# matches compadd got).  Every command in `dlock --help` and every long
# option in `dlock CMD --help` must be offered by each shell, and every
# store scheme of `dlock --version` after -s.  GENERATED_DIR: where the
# build wrote dlock.bash, _dlock and dlock.fish (the same text).
# A shell that is not installed is a failure (scripts/deps.sh test
# installs zsh and fish), unless DLOCK_TEST_NO_SHELLS=1.
set -u
DLOCK=$1
GEN=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/dlock-compl.XXXXXX)
trap 'rm -rf "$T"' EXIT
unset DLOCK_STORE DLOCK_STORE_FILE
fails=0
n=0

ok()   { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
# words NAME EXPECTED... -- GOT...: each EXPECTED is among GOT
words() {
    name=$1
    shift
    want=""
    while [ "$1" != -- ]; do want="$want $1"; shift; done
    shift
    got=" $* "
    missing=""
    for w in $want; do
        case $got in *" $w "*) ;; *) missing="$missing $w" ;; esac
    done
    if [ -z "$missing" ]; then ok "$name"; else fail "$name: no$missing in:$got"; fi
}

for sh in bash zsh fish; do
    "$DLOCK" completion $sh >"$T/script.$sh"
    rc=$?
    if [ $rc -eq 0 ] && [ -s "$T/script.$sh" ]; then
        ok "dlock completion $sh prints a script"
    else
        fail "dlock completion $sh (exit $rc)"
    fi
done
"$DLOCK" completion tcsh >/dev/null 2>"$T/err"
[ $? -eq 64 ] && grep -q "bash, zsh or fish" "$T/err" && ok "another shell: usage error (64)" ||
    fail "completion tcsh: $(cat "$T/err")"
"$DLOCK" completion >/dev/null 2>&1
[ $? -eq 64 ] && ok "no shell: usage error (64)" || fail "completion without a shell"

# What the tables must cover: the commands of dlock --help, the long
# options of each command's --help and of dlock --help, the schemes.
cmds=$("$DLOCK" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ -n "$cmds" ] && ok "dlock --help lists commands: $(echo $cmds)" || fail "no commands in dlock --help"
globals=$("$DLOCK" --help | sed -n '/^options:/,/^$/p' | grep -o -- '--[a-z][a-z-]*' | sort -u)
schemes=$("$DLOCK" --version | sed 's/.*stores: \(.*\))$/\1/' | tr ',' ' ')
urls=""
for s in $schemes; do urls="$urls $s://"; done
case " $schemes " in *" etcd "*) ok "etcd is compiled in: its schemes are checked" ;; *) echo "note: no etcd in this build" ;; esac
# The options a command's --help lists (its lines "  -w, --wait SEC",
# "      --ttl SEC", "  --json   ...", "  -n N"; not options of other
# commands its text mentions).
longs() {
    "$DLOCK" "$1" --help | sed -n 's/^ \{2,6\}\(-[A-Za-z]\)\{0,1\}\(, \)\{0,1\}\(--[a-z][a-z-]*\)\{0,1\}.*/\1 \3/p'
}

# --- bash ------------------------------------------------------------------
if bash -n "$T/script.bash"; then ok "bash -n"; else fail "bash -n"; fi
# bc WORD...: COMPREPLY of _dlock with the last WORD being completed
bc() {
    bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _dlock
             printf "%s\n" "${COMPREPLY[@]}"' "$T/script.bash" "$@" | tr '\n' ' '
}
words "bash: dlock hi<TAB> gives history" history -- $(bc dlock hi)
words "bash: dlock run --on<TAB> gives --once, --once-per" --once --once-per -- $(bc dlock run --on)
words "bash: dlock -s et<TAB> gives etcd:// etcds://" etcd:// etcds:// -- $(bc dlock -s et)
words "bash: dlock -s <TAB> gives every scheme" $urls -- $(bc dlock -s '')
words "bash: dlock --store=<TAB> (= a word) too" $urls -- $(bc dlock --store = '')
words "bash: dlock <TAB> gives every command" $cmds -- $(bc dlock '')
words "bash: dlock -<TAB> gives every global option" $globals -- $(bc dlock -)
words "bash: dlock completion <TAB>" bash zsh fish -- $(bc dlock completion '')
words "bash: after --, a command" echo -- $(bc dlock run job -- ech)
words "bash: elect's too" echo -- $(bc dlock elect job -- ech)
mkdir "$T/dir" && : >"$T/dir/metrics.prom"
words "bash: --metrics-file completes a file" "$T/dir/metrics.prom" -- $(bc dlock run --metrics-file "$T/dir/me")
words "bash: --store-file completes a file" "$T/dir/metrics.prom" -- $(bc dlock --store-file "$T/dir/me")
got=$(bc dlock run -w '' | tr -d ' ')
[ -z "$got" ] && ok "bash: -w SEC offers nothing" || fail "bash: -w offered: $got"
for c in $cmds; do
    words "bash: dlock $c -<TAB> offers all of $c --help" $(longs "$c") -- $(bc dlock "$c" -)
done

# --- fish ------------------------------------------------------------------
if command -v fish >/dev/null 2>&1; then
    if fish --no-config -n "$T/script.fish"; then ok "fish -n"; else fail "fish -n"; fi
    fc() { fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$T/script.fish" "$1" | cut -f1 | tr '\n' ' '; }
    words "fish: dlock run --o<TAB>" --once --once-per -- $(fc "dlock run --o")
    words "fish: dlock hi<TAB>" history -- $(fc "dlock hi")
    words "fish: dlock -s et<TAB>" etcd:// etcds:// -- $(fc "dlock -s et")
    words "fish: dlock -s <TAB> gives every scheme" $urls -- $(fc "dlock -s ")
    words "fish: dlock <TAB> gives every command" $cmds -- $(fc "dlock ")
    words "fish: every global option" $globals -- $(fc "dlock -")
    words "fish: after --, a command" echo -- $(fc "dlock run job -- ech")
    words "fish: --metrics-file completes a file" "$T/dir/metrics.prom" -- $(fc "dlock run --metrics-file $T/dir/me")
    for c in $cmds; do
        words "fish: dlock $c -<TAB> offers all of $c --help" $(longs "$c") -- $(fc "dlock $c -")
    done
elif [ "${DLOCK_TEST_NO_SHELLS:-}" = 1 ]; then
    echo "skip fish (not installed)"
else
    fail "fish is not installed (scripts/deps.sh test)"
fi

# --- zsh -------------------------------------------------------------------
if command -v zsh >/dev/null 2>&1; then
    if zsh -n "$T/script.zsh"; then ok "zsh -n"; else fail "zsh -n"; fi
    mkdir "$T/zsh" && cp "$T/script.zsh" "$T/zsh/_dlock"
    zc() { timeout 30 zsh -f "$HERE/zsh_capture.zsh" "$T/zsh" "$1" | tr '\n' ' '; }
    if [ "$(zc 'dlock hi')" = "" ] && ! zsh -f -c 'zmodload zsh/zpty' 2>/dev/null; then
        # No zpty: at least the _arguments specs name every option.
        for c in $cmds; do
            spec=$(sed -n "/^    $c)/,/;;/p" "$T/script.zsh" | tr -d "'{}" | tr ',=+[' '    ')
            words "zsh: $c's _arguments spec lists all of $c --help" $(longs "$c") -- $spec
        done
    else
        words "zsh: dlock run --o<TAB>" --once --once-per -- $(zc "dlock run --o")
        words "zsh: dlock hi<TAB>" history -- $(zc "dlock hi")
        words "zsh: dlock -s et<TAB>" etcd:// etcds:// -- $(zc "dlock -s et")
        words "zsh: dlock <TAB> gives every command" $cmds -- $(zc "dlock ")
        words "zsh: every global option" $globals -- $(zc "dlock -")
        words "zsh: after --, a command" echo -- $(zc "dlock run job -- ech")
        words "zsh: dlock completion <TAB>" bash zsh fish -- $(zc "dlock completion ")
        for c in $cmds; do
            words "zsh: dlock $c -<TAB> offers all of $c --help" $(longs "$c") -- $(zc "dlock $c -")
        done
    fi
elif [ "${DLOCK_TEST_NO_SHELLS:-}" = 1 ]; then
    echo "skip zsh (not installed)"
else
    fail "zsh is not installed (scripts/deps.sh test)"
fi

# --- what the build wrote and installs -------------------------------------
if [ -n "$GEN" ]; then
    for f in bash:dlock.bash zsh:_dlock fish:dlock.fish; do
        if cmp -s "$GEN/${f#*:}" "$T/script.${f%%:*}"; then
            ok "the build's ${f#*:} is dlock completion ${f%%:*}"
        else
            fail "the build's $GEN/${f#*:} differs from dlock completion ${f%%:*}"
        fi
    done
fi

echo "$((n - fails))/$n passed"
[ $fails -eq 0 ]
