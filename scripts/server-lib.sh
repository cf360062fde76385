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

# make_tls_certs DIR: a throwaway CA and certificates in DIR, for servers
# that talk TLS (once; later calls keep them):
#   ca.crt ca.key          the CA the servers and clients trust
#   server.crt server.key  for 127.0.0.1, ::1 and localhost (subjectAltName),
#                          server and client use (replication, cluster bus)
#   client.crt client.key  a client certificate of the same CA
#   expired.crt            server.key's names, valid only in 2000
#   other-ca.crt           a CA that signed none of them
# EC P-256 keys: quick to make.  Valid for 30 days.
make_tls_certs() {
    local d=$1 ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    [ -f "$d/other-ca.crt" ] && return 0
    mkdir -p "$d"
    (
        set -e
        cd "$d"
        # shellcheck disable=SC2086
        openssl req -x509 $ec -keyout ca.key -out ca.crt -days 30 \
            -subj /CN=dlock-test-ca
        printf '%s\n' 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost' \
            'extendedKeyUsage=serverAuth,clientAuth' >server.ext
        # shellcheck disable=SC2086
        openssl req -new $ec -keyout server.key -out server.csr \
            -subj /CN=localhost
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key \
            -CAcreateserial -days 30 -out server.crt -extfile server.ext
        printf '%s\n' 'extendedKeyUsage=clientAuth' >client.ext
        # shellcheck disable=SC2086
        openssl req -new $ec -keyout client.key -out client.csr \
            -subj /CN=dlock-test-client
        openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key \
            -CAcreateserial -days 30 -out client.crt -extfile client.ext
        # An expired certificate needs `openssl ca` (x509 -days is > 0).
        printf '%s\n' '[ca]' 'default_ca=d' '[d]' "database=$PWD/index.txt" \
            "new_certs_dir=$PWD" "serial=$PWD/serial" 'default_md=sha256' \
            'policy=p' '[p]' 'commonName=supplied' >ca.cnf
        : >index.txt
        echo 01 >serial
        openssl ca -batch -notext -config ca.cnf -cert ca.crt -keyfile ca.key \
            -in server.csr -out expired.crt -extfile server.ext \
            -startdate 20000101000000Z -enddate 20001231000000Z
        # shellcheck disable=SC2086
        openssl req -x509 $ec -keyout other-ca.key -out other-ca.crt \
            -days 30 -subj /CN=dlock-test-other-ca
        chmod 644 ./*.key
    ) >"$d/openssl.log" 2>&1 || {
        cat "$d/openssl.log" >&2
        return 1
    }
}

# --- Redis topologies (server-redis-sentinel.sh, server-redis-cluster.sh)
# Each node may run in a network namespace of the partition tests: DIR/netns
# records where (PORT NS ADDR a line).  tls holds redis-cli's TLS
# arguments once DIR/tls says the topology talks TLS only.
declare -A node_ns node_addr
tls=()

# load_netns DIR: where each node runs (DIR/netns), if anywhere else.
load_netns() {
    local p ns a
    [ -f "$1/netns" ] || return 0
    while read -r p ns a; do
        node_ns[$p]=$ns
        node_addr[$p]=$a
    done <"$1/netns"
}

addr_of() { echo "${node_addr[$1]:-127.0.0.1}"; }

# at PORT CMD...: run CMD where the node on PORT runs.
at() {
    local p=$1
    shift
    if [ -n "${node_ns[$p]:-}" ]; then
        ip netns exec "${node_ns[$p]}" "$@"
    else
        "$@"
    fi
}

# use_tls DIR: redis-cli's TLS arguments, if DIR's topology talks TLS.
use_tls() {
    [ ! -f "$1/tls" ] || tls=(--tls --cacert "$1/tls-certs/ca.crt")
}

# setup_tls DIR: make DIR's topology talk TLS only (start-tls), with a
# throwaway CA in DIR/tls-certs.
setup_tls() {
    make_tls_certs "$1/tls-certs" || return 1
    touch "$1/tls"
    use_tls "$1"
}
