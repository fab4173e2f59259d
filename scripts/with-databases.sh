#!/usr/bin/env bash
# Runs a command with a private PostgreSQL and MariaDB on loopback, then stops them.
#   bash scripts/with-databases.sh <command...>
# Installs the servers with apt-get when they are missing (Debian, as root).
# Exports PG_URL and MYSQL_URL to the command. Data lives in a temporary directory
# that is removed afterwards, so runs never see each other's data. Also starts the
# sharded MariaDB of scripts/spider-cluster.sh (unless SPIDER_URL is set) and exports
# SPIDER_URL and SPIDER_SHARDS.
set -euo pipefail

# Below the kernel's ephemeral range (32768-60999 on Linux): a client connection's local port
# can never hold them when a server starts.
PG_PORT=${PG_PORT:-25432}
MYSQL_PORT=${MYSQL_PORT:-23306}

log() { echo "[databases] $*" >&2; }
# shellcheck source=scripts/apt-install.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
# shellcheck source=scripts/mariadb-wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/mariadb-wait.sh"

pg_bin() {
  local d
  # "return 0", not "return": in the EXIT trap a bare return gives the exit status being
  # returned, and a failed run then left PostgreSQL running.
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && { echo "$d"; return 0; }; done
  return 1
}

ensure_packages() {
  local missing=()
  pg_bin >/dev/null || missing+=(postgresql)
  command -v mariadbd >/dev/null || command -v mysqld >/dev/null || missing+=(mariadb-server)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
  fi
}

start_postgres() {
  local bin; bin=$(pg_bin)
  id postgres >/dev/null 2>&1 || useradd --system --home "$work" postgres
  mkdir -p "$work/pg" && chown postgres "$work/pg"
  runuser -u postgres -- "$bin/initdb" -D "$work/pg/data" -U postgres --auth=trust -E UTF8 >/dev/null
  runuser -u postgres -- "$bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $work/pg -c fsync=off -c max_connections=200" start >/dev/null
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "create database langgraph" >/dev/null
  export PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/langgraph"
  log "PostgreSQL on $PG_URL"
}

start_mariadb() {
  local server; server=$(command -v mariadbd || command -v mysqld)
  mkdir -p "$work/mysql"
  # Its output is kept for the one case it explains: a server that then does not start.
  mariadb-install-db --no-defaults --datadir="$work/mysql/data" --user=root --auth-root-authentication-method=normal \
    >"$work/mysql/install.log" 2>&1 || { log "mariadb-install-db failed:"; tail -20 "$work/mysql/install.log" >&2; return 1; }
  "$server" --no-defaults --datadir="$work/mysql/data" --user=root --bind-address=127.0.0.1 \
    --port="$MYSQL_PORT" --socket="$work/mysql/sock" --pid-file="$work/mysql/pid" \
    --innodb-flush-log-at-trx-commit=2 --max-connections=300 --max-allowed-packet=256M \
    --log-error="$work/mysql/error.log" &
  wait_for_mariadb "[databases] MariaDB" "$work/mysql/sock" $! "$work/mysql/error.log" ||
    { log "what mariadb-install-db said:"; tail -20 "$work/mysql/install.log" >&2; return 1; }
  mariadb --no-defaults -uroot --socket="$work/mysql/sock" -e "
    create database langgraph character set utf8mb4;
    create user 'langgraph'@'127.0.0.1' identified by 'langgraph';
    grant all on *.* to 'langgraph'@'127.0.0.1' with grant option;"
  export MYSQL_URL="mysql://langgraph:langgraph@127.0.0.1:$MYSQL_PORT/langgraph"
  log "MariaDB on $MYSQL_URL"
}

stop_all() {
  local bin
  if bin=$(pg_bin) && [ -d "$work/pg/data" ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  if [ -f "$work/mysql/pid" ]; then kill "$(cat "$work/mysql/pid")" 2>/dev/null || true; sleep 1; fi
  if [ -n "${spider_started:-}" ]; then bash "$here/spider-cluster.sh" stop || true; fi
  rm -rf "$work"
}

start_spider() {
  [ -n "${SPIDER_URL:-}" ] && return 0
  local out
  # A cluster someone else started on these ports is used, and left running.
  bash "$here/spider-cluster.sh" running || spider_started=1
  out=$(bash "$here/spider-cluster.sh" start)
  export SPIDER_URL SPIDER_SHARDS
  SPIDER_URL=$(grep '^SPIDER_URL=' <<<"$out" | cut -d= -f2-)
  SPIDER_SHARDS=$(grep '^SPIDER_SHARDS=' <<<"$out" | cut -d= -f2-)
  log "Spider head on $SPIDER_URL"
}

# Servers already given (a developer's own): use them as they are.
if [ -n "${PG_URL:-}" ] && [ -n "${MYSQL_URL:-}" ]; then exec "$@"; fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/lgcd-db.XXXXXX)
chmod 755 "$work"
trap stop_all EXIT
ensure_packages
start_postgres
start_mariadb
start_spider
# The command runs as a child that a signal to this script is passed on to: bash runs
# traps only once a foreground command has ended, so a killed wrapper used to leave the
# servers running. Its standard input is kept (a background job would get /dev/null).
"$@" <&0 &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT HUP
status=0
wait "$child" || status=$?
# wait returns early when a signal arrives: wait for the command itself to end.
while kill -0 "$child" 2>/dev/null; do wait "$child" || status=$?; done
exit "$status"
