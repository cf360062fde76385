# Sourced by the scripts/server-*.sh: what they share.

# alive PID: the process runs (a zombie does not count: where pid 1 is slow
# to reap, a server that has exited stays a zombie for seconds).
alive() {
    local state
    state=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" \
        2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# stop_pid PID SIGNAL: send SIGNAL, wait up to 15 s for the process to end,
# then SIGKILL and wait up to 5 s more.  Always 0.
stop_pid() {
    local pid=$1 sig=$2 i
    alive "$pid" || return 0
    kill "-$sig" "$pid" 2>/dev/null || return 0
    for i in $(seq 1 1500); do
        alive "$pid" || return 0
        sleep 0.01
    done
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 500); do
        alive "$pid" || return 0
        sleep 0.01
    done
    return 0
}
