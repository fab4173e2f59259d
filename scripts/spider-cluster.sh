#!/usr/bin/env bash
# A sharded MariaDB on loopback: two data nodes and one Spider head, each its own server process.
#   bash scripts/spider-cluster.sh start         # prints SPIDER_URL=... and SPIDER_SHARDS=... last
#   bash scripts/spider-cluster.sh stop          # stops the three servers, removes their data
#   bash scripts/spider-cluster.sh running       # exit status 0 when the cluster is up
#   bash scripts/spider-cluster.sh kill-node N   # stops data node N abruptly (kill -9), keeps its data
#   bash scripts/spider-cluster.sh start-node N  # starts data node N (again, on its data)
# Ports (below the ephemeral range, as in with-databases.sh): SPIDER_HEAD_PORT (23320),
# SPIDER_NODE0_PORT (23321), SPIDER_NODE1_PORT (23322), and SPIDER_NODE2_PORT (23323): a spare node that only `start-node 2` starts, for the failure
# test, so killing it never disturbs the tests that use nodes 0 and 1.
# Data and state live in SPIDER_DIR (default /tmp/lgcd-spider-<head port>).
# Installs mariadb-server and mariadb-plugin-spider with apt-get when missing (Debian, as root).
# The database "langgraph" is created on every server and migrated with the saver's Spider
# setup (src/spider/), so SPIDER_URL is ready for `new DrizzleSaver(db, { spider: { shards } })`.
set -euo pipefail

HEAD_PORT=${SPIDER_HEAD_PORT:-23320}
NODE_PORTS=("${SPIDER_NODE0_PORT:-23321}" "${SPIDER_NODE1_PORT:-23322}" "${SPIDER_NODE2_PORT:-23323}")
DIR=${SPIDER_DIR:-/tmp/lgcd-spider-$HEAD_PORT}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "[spider] $*" >&2; }
# shellcheck source=scripts/apt-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
# shellcheck source=scripts/mariadb-wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/mariadb-wait.sh"

ensure_packages() {
  local missing=()
  command -v mariadbd >/dev/null || missing+=(mariadb-server)
  local plugins; plugins=$(mariadb_config --plugindir 2>/dev/null || echo /usr/lib/mysql/plugin)
  [ -f "$plugins/ha_spider.so" ] || [ -f /usr/lib/mysql/plugin/ha_spider.so ] || missing+=(mariadb-plugin-spider)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
  fi
}

# launch NAME PORT [extra server options...]: starts one server on its data directory and waits for it.
launch() {
  local name=$1 port=$2; shift 2
  local home="$DIR/$name"
  if [ ! -d "$home/data" ]; then
    mkdir -p "$home"
    mariadb-install-db --no-defaults --datadir="$home/data" --user=root --auth-root-authentication-method=normal \
      >/dev/null 2>&1
  fi
  mariadbd --no-defaults --datadir="$home/data" --user=root --bind-address=127.0.0.1 --port="$port" \
    --socket="$home/sock" --pid-file="$home/pid" --innodb-flush-log-at-trx-commit=2 --max-connections=300 \
    --max-allowed-packet=256M --innodb-buffer-pool-size=64M --log-error="$home/error.log" "$@" >>"$home/out" 2>&1 &
  wait_for_mariadb "[spider] $name (port $port)" "$home/sock" $! "$home/error.log"
}

sql_on() { local name=$1; shift; mariadb --no-defaults -uroot --socket="$DIR/$name/sock" -e "$*"; }

create_database() {
  sql_on "$1" "create database if not exists langgraph character set utf8mb4;
    create user if not exists 'langgraph'@'127.0.0.1' identified by 'langgraph';
    grant all on *.* to 'langgraph'@'127.0.0.1' with grant option;"
}

start() {
  if running; then
    log "already running in $DIR"
  else
    ensure_packages
    rm -rf "$DIR" && mkdir -p "$DIR" && chmod 755 "$DIR"
    local i
    # Two commands, not "launch && create_database": set -e ignores a failure on the left of &&,
    # and a node that did not start went on to a migration error that named the head.
    for i in 0 1; do
      launch "node$i" "${NODE_PORTS[$i]}"
      create_database "node$i"
    done
    # Short link timeouts: a dead node fails its threads fast. The group-by handler
    # mistranslates window functions (see src/spider/migrations.ts).
    launch head "$HEAD_PORT" --plugin-load-add=ha_spider --spider-connect-timeout=2 --spider-disable-group-by-handler=1 \
      --spider-net-read-timeout=10 --spider-net-write-timeout=10
    create_database head
    log "migrating the head and the data nodes"
    (cd "$ROOT" && npx tsx src/cli/main.ts migrate --url "$(head_url)" --spider-shards "$(shard_urls)" >&2)
  fi
  echo "SPIDER_URL=$(head_url)"
  echo "SPIDER_SHARDS=$(shard_urls)"
}

head_url() { echo "mysql://langgraph:langgraph@127.0.0.1:$HEAD_PORT/langgraph"; }
shard_urls() {
  echo "mysql://langgraph:langgraph@127.0.0.1:${NODE_PORTS[0]}/langgraph,mysql://langgraph:langgraph@127.0.0.1:${NODE_PORTS[1]}/langgraph"
}

stop_server() {
  local pidfile="$DIR/$1/pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill "${2:-}" "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$pidfile"
}

running() { [ -f "$DIR/head/pid" ] && kill -0 "$(cat "$DIR/head/pid")" 2>/dev/null; }

case "${1:-}" in
  start) start ;;
  running) running ;;
  stop)
    for name in head node0 node1 node2; do stop_server "$name" -TERM; done
    rm -rf "$DIR"
    ;;
  kill-node) stop_server "node${2:?node number}" -KILL ;;
  start-node)
    pid_file="$DIR/node${2:?node number}/pid"
    if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then exit 0; fi
    launch "node${2:?node number}" "${NODE_PORTS[$2]}" >/dev/null
    create_database "node$2"
    ;;
  *)
    echo "usage: $0 start|stop|running|kill-node N|start-node N" >&2
    exit 2
    ;;
esac
