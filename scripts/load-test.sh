#!/usr/bin/env bash
# Runs the test suite several times in a row next to a CPU and I/O load, and fails on the first failed run.
#   bash scripts/load-test.sh                                  # the whole suite, 5 runs
#   LOAD_RUNS=3 bash scripts/load-test.sh test/reliability     # vitest arguments choose the tests
# LOAD_RUNS (default 5), LOAD_CPU and LOAD_IO (stress-ng workers, default: the number of cores and 2).
# Installs stress-ng with apt-get when it is missing (Debian, as root). Each run goes through
# scripts/with-databases.sh, so PG_URL and MYSQL_URL, when set, are used as they are.
# Logs of every run stay in a temporary directory, printed at the end.
set -euo pipefail

RUNS=${LOAD_RUNS:-5}
CPU=${LOAD_CPU:-$(nproc)}
IO=${LOAD_IO:-2}
cd "$(dirname "$0")/.."

log() { echo "[load-test] $*" >&2; }

if ! command -v stress-ng >/dev/null; then
  log "installing stress-ng"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq stress-ng >/dev/null
fi

logs=$(mktemp -d /tmp/lgcd-load.XXXXXX)
# The load runs as long as the tests; stopped (only this one process group) when the script ends.
setsid stress-ng --cpu "$CPU" --io "$IO" --timeout 0 >"$logs/stress-ng.log" 2>&1 &
stress=$!
stop_load() { kill -- "-$stress" 2>/dev/null || kill "$stress" 2>/dev/null || true; }
trap stop_load EXIT
log "stress-ng --cpu $CPU --io $IO (pid $stress); logs in $logs"

for run in $(seq 1 "$RUNS"); do
  started=$(date +%s)
  if bash scripts/with-databases.sh npx vitest run "$@" >"$logs/run-$run.log" 2>&1; then
    summary=$(sed 's/\x1b\[[0-9;]*m//g' "$logs/run-$run.log" | grep -E '^ +Tests ' | tail -1 | xargs || true)
    log "run $run/$RUNS passed in $(($(date +%s) - started)) s: $summary"
  else
    log "run $run/$RUNS FAILED after $(($(date +%s) - started)) s; its log: $logs/run-$run.log"
    grep -E 'FAIL|Error' "$logs/run-$run.log" | sed 's/\x1b\[[0-9;]*m//g' | head -20 >&2 || true
    exit 1
  fi
done
log "all $RUNS runs passed under load; logs in $logs"
