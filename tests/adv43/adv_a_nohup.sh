#!/bin/sh
# Adversary pass on issue 43 item 11 (tests/adv43/adv_a.cmake): nohup's
# SIGHUP, ignored when dlock started, stays ignored while dlock waits, and
# must stay so for CMD too: `nohup dlock run N -- CMD` must not die of
# the hang-up nohup was asked to ignore (sent to dlock's group, as a
# shell does to its jobs, and to CMD).  On a843813 CMD got SIGHUP reset
# to its default (run_signals_default()) and dlock passed a SIGHUP sent
# to its group on to CMD: CMD died, dlock exited 129.  (A background
# job's ignored SIGINT and SIGQUIT are still passed on while CMD runs:
# cli-* "SIGQUIT to dlock: passed on".)
#   adv_a_nohup.sh DLOCK
set -u
DLOCK=$1
T=$(mktemp -d /tmp/dlock-adva-nohup.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
export DLOCK_STORE="sqlite://$T/s.db"

# wait_for FILE: a bounded poll (20 s), no sleep as synchronisation.
wait_for() {
    i=0
    while [ ! -s "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    [ -s "$1" ]
}

for sig in HUP; do
    rm -f "$T/pid" "$T/go" "$T/out" "$T/rc"
    # dlock in a session (and so a process group) of its own, started
    # with SIG$sig ignored as nohup (or sh for a background job) does.
    setsid sh -c "trap '' $sig; \"\$0\" run adv-a-nohup-$sig -- sh -c '
        echo \$\$ >\"$T/pid\"
        while [ ! -e \"$T/go\" ]; do sleep 0.05; done
        echo survived >\"$T/out\"'; echo \$? >\"$T/rc\"" "$DLOCK" \
        </dev/null >/dev/null 2>"$T/err.$sig" &
    spid=$!
    if ! wait_for "$T/pid"; then
        echo "FAIL($sig): CMD never started: $(cat "$T/err.$sig")"; fail=1
        kill -9 "$spid" 2>/dev/null; continue
    fi
    cpid=$(cat "$T/pid")
    dpid=$(ps -o ppid= -p "$cpid" | tr -d ' ')
    pgid=$(ps -o pgid= -p "$dpid" | tr -d ' ')
    # As a terminal's hang-up (or the shell's on its jobs) does: the
    # signal to dlock's group and to CMD itself.
    kill -s "$sig" -- "-$pgid" 2>/dev/null
    kill -s "$sig" "$cpid" 2>/dev/null
    touch "$T/go"
    wait "$spid" 2>/dev/null
    i=0
    while [ ! -s "$T/rc" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    rc=$(cat "$T/rc" 2>/dev/null)
    if [ "$(cat "$T/out" 2>/dev/null)" != survived ]; then
        echo "FAIL($sig): CMD died of the SIG$sig it was started ignoring (dlock exit ${rc:-?}): $(cat "$T/err.$sig")"
        fail=1
    elif [ "$rc" != 0 ]; then
        echo "FAIL($sig): dlock exited ${rc:-?}, not 0: $(cat "$T/err.$sig")"
        fail=1
    fi
    kill -9 "$cpid" 2>/dev/null
done
[ $fail -eq 0 ] && echo ok
exit $fail
