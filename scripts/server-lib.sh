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

# port_free PORT: no one listens on it, nor (if ss is there) uses it at
# all: a Redis Cluster's bus ports (+ 10000) are in the range of the
# ephemeral ones, which outgoing connections take.
port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || return 1
    ! command -v ss >/dev/null || [ -z "$(ss -Htan "sport = :$1")" ]
}

# wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds, for at
# most SECONDS (wall clock).
wait_for() {
    local end=$((SECONDS + $1))
    shift
    while [ "$SECONDS" -lt "$end" ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# stop_pidfiles DIR: stop the process of every DIR/*/pid (a topology of
# servers, one subdirectory each) and remove the pidfiles.  Always 0.
stop_pidfiles() {
    local f
    for f in "$1"/*/pid; do
        [ -f "$f" ] || continue
        stop_pid "$(cat "$f")" TERM
        rm -f "$f"
    done
    return 0
}
