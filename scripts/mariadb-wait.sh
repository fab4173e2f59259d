# Sourced by the server scripts: wait_for_mariadb NAME SOCKET PID LOG waits until the server
# process PID answers on SOCKET. Up to two minutes: a first start creates InnoDB's files, which a
# loaded machine slows down. Stops waiting when the server exits; on failure prints the end of
# its LOG and returns 1.
wait_for_mariadb() {
  local name=$1 socket=$2 pid=$3 log_file=$4
  for _ in $(seq 1 600); do
    mariadb --no-defaults -uroot --socket="$socket" -e "select 1" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "$name did not start; the end of its log:" >&2
  tail -20 "$log_file" >&2 || true
  return 1
}
