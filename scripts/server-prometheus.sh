#!/bin/bash
# A throwaway Prometheus server for tests, everything in one directory:
#   scripts/server-prometheus.sh start DIR TARGET  scrape TARGET (ADDR:PORT,
#                                  a `dlock metrics --listen`) every second;
#                                  print its URL (also DIR/url)
#   scripts/server-prometheus.sh stop DIR          stop it (0 if not running)
# Listens on 127.0.0.1 only, on a free port in 21000-29999; its TSDB in
# DIR/data, its log in DIR/prometheus.log.  Ready when /-/ready says so
# (a bounded wait: 30 s).
set -euo pipefail
. "$(dirname "$0")/server-lib.sh"

die() {
    echo "server-prometheus.sh: $*" >&2
    exit 1
}

ready() {
    curl -sf --max-time 2 "http://127.0.0.1:$1/-/ready" >/dev/null
}

start() {
    local dir=$1 target=$2 port try
    command -v prometheus >/dev/null || die "no prometheus (Debian: apt-get install prometheus)"
    [ -d "$dir" ] || die "no directory $dir"
    dir=$(cd "$dir" && pwd)
    cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dlock
    static_configs:
      - targets: ['$target']
YML
    for try in 1 2 3 4 5 6 7 8; do
        port=$((21000 + RANDOM % 9000))
        port_free "$port" || continue
        prometheus --config.file="$dir/prometheus.yml" \
            --storage.tsdb.path="$dir/data" \
            --web.listen-address="127.0.0.1:$port" \
            >"$dir/prometheus.log" 2>&1 </dev/null &
        echo $! >"$dir/pid"
        if wait_for 30 ready "$port"; then
            echo "$port" >"$dir/port"
            echo "http://127.0.0.1:$port" >"$dir/url"
            cat "$dir/url"
            return 0
        fi
        stop "$dir"
        # Lost the port to someone else?  Try another.
        grep -q "address already in use" "$dir/prometheus.log" || {
            tail -n 20 "$dir/prometheus.log" >&2
            die "prometheus in $dir not ready after 30 s"
        }
    done
    die "no free port found"
}

stop() {
    local pid
    pid=$(cat "$1/pid" 2>/dev/null) || return 0
    [ -n "$pid" ] && stop_pid "$pid" TERM
    rm -f "$1/pid"
    return 0
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start DIR ADDR:PORT | stop DIR"
case $cmd in
start)
    [ -n "${3:-}" ] || die "usage: $0 start DIR ADDR:PORT"
    start "$dir" "$3"
    ;;
stop)
    stop "$dir"
    ;;
*)
    die "unknown command '$cmd' (start, stop)"
    ;;
esac
