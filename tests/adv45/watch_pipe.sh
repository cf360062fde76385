#!/bin/sh
# watch_pipe.sh DLOCK URL: `dlock leader NAME --watch | head -1` ends when
# head does, though the leader never changes again: the watch writes only
# on a change, so it used to learn of the gone reader (SIGPIPE) only at
# the next change, maybe never, and the pipeline hung.  Both with SIGPIPE
# at its default and ignored (a shell started with it ignored passes that
# on).  And a watch whose stdout is a regular file is not ended by that.
set -u
DLOCK=$1
URL=$2
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp"/pid* 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
name="adv45-watch-pipe-$$"

# wait_gone PID MS: 0 if PID has exited within MS milliseconds.
wait_gone() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        [ "$i" -ge "$2" ] && return 1
        sleep 0.05
        i=$((i + 50))
    done
    return 0
}

for pipe in default ignored; do
    mkfifo "$tmp/fifo-$pipe"
    if [ "$pipe" = ignored ]; then
        (trap '' PIPE; exec "$DLOCK" -s "$URL" leader "$name" --watch \
            >"$tmp/fifo-$pipe" 2>"$tmp/err-$pipe"; ) &
    else
        "$DLOCK" -s "$URL" leader "$name" --watch >"$tmp/fifo-$pipe" \
            2>"$tmp/err-$pipe" &
    fi
    pid=$!
    echo "$pid" >"$tmp/pid-$pipe"
    line=$(head -1 <"$tmp/fifo-$pipe")
    case $line in
    *"no leader"*) ;;
    *) fail "SIGPIPE $pipe: first line '$line'" ;;
    esac
    wait_gone "$pid" 3000 || fail "SIGPIPE $pipe: the watch still runs 3 s after its reader left"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 141 ] || fail "SIGPIPE $pipe: exit $rc, not 141 (128+SIGPIPE)"
    echo "ok: SIGPIPE $pipe: ended with its reader, exit $rc"
done

# A regular file never looks like a gone reader.
"$DLOCK" -s "$URL" leader "$name" --watch >"$tmp/out" 2>&1 &
pid=$!
echo "$pid" >"$tmp/pid-file"
i=0
until grep -qs "no leader" "$tmp/out"; do
    [ "$i" -ge 100 ] && fail "no first line in the file"
    sleep 0.05
    i=$((i + 1))
done
wait_gone "$pid" 1500 && fail "a watch writing to a file ended by itself"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, not 143"
echo "ok: a watch into a file runs until SIGTERM (exit $rc)"
