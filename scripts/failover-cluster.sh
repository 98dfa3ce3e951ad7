#!/usr/bin/env bash
# A throwaway PostgreSQL 15 formation with automatic failover, on loopback only (issue
# #46 item 4): a pg_auto_failover monitor and two nodes (a primary and a streaming
# replication standby), Debian's `postgresql-15-auto-failover` and `pg-auto-failover-cli`.
#
#   scripts/failover-cluster.sh [--parent PID]     # start, print, stay up until stopped
#   scripts/failover-cluster.sh --run COMMAND ...  # start, run COMMAND, stop
#
# Once the formation is up (node 1 primary, node 2 secondary) it prints, one per line:
#   FAILOVER_URL=postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/stablecoin?target_session_attrs=read-write
#   FAILOVER_NODE1_PORT=P1  FAILOVER_NODE1_DATA=DIR  FAILOVER_NODE1_PGID=G (same for NODE2)
#   FAILOVER_MONITOR_URL=...
#   FAILOVER_READY
# (exported too under --run). Killing a node's process group (`kill -KILL -- -G`) and its
# postmaster (first line of DIR/postmaster.pid) is a dead machine: its keeper is gone
# with it, so the monitor, after the timeouts below, promotes the other node.
#
# Synchronous replication: the formation keeps pg_auto_failover's defaults,
# number_sync_standbys 0 and replication-quorum true on both nodes, so while the standby
# is healthy the primary runs with synchronous_standby_names = 'ANY 1 (standby)' and
# synchronous_commit = on: a commit is acknowledged only once the standby has it. When
# the standby is lost the primary goes to wait_primary and writes on alone (availability;
# number_sync_standbys 1 would need a third node to keep writing).
#
# Failover timing: the monitor's health checks and timeouts are shortened
# (FAILOVER_UNHEALTHY_MS, default 3000; FAILOVER_DEMOTE_MS, default 6000; and the keepers'
# network_partition_timeout, 3 s, kept below the demote timeout, so an isolated primary
# demotes itself before the standby is promoted).
#
# Runs the nodes as the `postgres` user when started as root (pg_autoctl refuses root),
# through setpriv, which execs (runuser forks a PAM session that dies under setsid).
# Ports: FAILOVER_MONITOR_PORT, FAILOVER_NODE1_PORT, FAILOVER_NODE2_PORT (free ones by
# default). Everything lives in one temp dir, removed on exit whatever happens; with
# --parent PID the formation also stops by itself once that process is gone.
set -euo pipefail
cd "$(dirname "$0")/.."

PARENT=""
RUN=()
case "${1:-}" in
  --parent) PARENT="$2" ;;
  --run) shift; RUN=("$@") ;;
  "") ;;
  *) echo "usage: scripts/failover-cluster.sh [--parent PID | --run COMMAND...]" >&2; exit 2 ;;
esac

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
if ! command -v pg_autoctl >/dev/null 2>&1 || [ ! -x "$PG_BIN/pg_ctl" ]; then
  echo "failover-cluster.sh: pg_autoctl or PostgreSQL 15 missing (apt-get install postgresql-15 postgresql-15-auto-failover pg-auto-failover-cli)" >&2
  exit 3
fi

if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
  # setpriv execs (no PAM session, no forked parent that a signal would take down).
  AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups env HOME="$(getent passwd postgres | cut -d: -f6)")
else
  AS_PG=()
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stablecoin-failover.XXXXXX")"
chmod 755 "$TMP"
export XDG_CONFIG_HOME="$TMP/config" XDG_DATA_HOME="$TMP/share" XDG_RUNTIME_DIR="$TMP/run"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
[ "$(id -u)" = 0 ] && chown -R postgres "$TMP"
export PG_CONFIG="$PG_BIN/pg_config" PATH="$PG_BIN:$PATH"

PGIDS=()
cleanup() {
  local rc=$? g
  trap - EXIT INT TERM
  for g in "${PGIDS[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for g in "${PGIDS[@]}"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for g in "${PGIDS[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  # A postmaster that outlived its keeper: stopped by its pid file, if that pid is still
  # this data directory's postmaster (a killed node's pid may have been reused).
  local d pid
  for d in "$TMP"/monitor "$TMP"/node1 "$TMP"/node2; do
    [ -f "$d/postmaster.pid" ] || continue
    pid="$(head -n 1 "$d/postmaster.pid")"
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $d "; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [ "$rc" != 0 ]; then
    for f in "$TMP"/*.log; do
      [ -f "$f" ] || continue
      echo "---- last lines of $(basename "$f") ----" >&2
      tail -n 20 "$f" >&2 || true
    done
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
MPORT="${FAILOVER_MONITOR_PORT:-$(free_port)}"
P1="${FAILOVER_NODE1_PORT:-$(free_port)}"
P2="${FAILOVER_NODE2_PORT:-$(free_port)}"
MONITOR="postgres://autoctl_node@127.0.0.1:$MPORT/pg_auto_failover?sslmode=disable"

# pg_autoctl's logs (state changes at info level) are in $TMP/NAME.log, shown on failure.

# start NAME PGDATA: `pg_autoctl run` in a process group of its own; records the group.
start() {
  setsid "${AS_PG[@]}" env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" \
    XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PATH="$PATH" PG_CONFIG="$PG_CONFIG" \
    pg_autoctl run --pgdata "$2" >>"$TMP/$1.log" 2>&1 &
  PGIDS+=("$!")
}

as_pg() {
  "${AS_PG[@]}" env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" \
    XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PATH="$PATH" PG_CONFIG="$PG_CONFIG" "$@"
}

# wait_state NODE STATE: until the monitor reports NODE in STATE (60 s).
wait_state() {
  for _ in $(seq 600); do
    if as_pg psql -X -At "$MONITOR" -c \
        "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'" 2>/dev/null \
        | grep -qx "$2"; then
      return 0
    fi
    sleep 0.1
  done
  echo "failover-cluster.sh: $1 never reached $2" >&2
  as_pg pg_autoctl show state --monitor "$MONITOR" >&2 || true
  return 1
}

echo "== pg_auto_failover monitor on 127.0.0.1:$MPORT" >&2
as_pg pg_autoctl create monitor --pgdata "$TMP/monitor" --pgport "$MPORT" \
  --hostname 127.0.0.1 --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl" >"$TMP/monitor.log" 2>&1
# Loopback only (the monitor's default is every interface).
as_pg pg_autoctl config set --pgdata "$TMP/monitor" postgresql.listen_addresses 127.0.0.1 >/dev/null
start monitor "$TMP/monitor"
for _ in $(seq 300); do
  as_pg psql -X -At "$MONITOR" -c 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done
# Failover in seconds, not the default half minute (see the header).
as_pg psql -X -q "postgres://postgres@127.0.0.1:$MPORT/pg_auto_failover?sslmode=disable" <<SQL >/dev/null
ALTER SYSTEM SET pgautofailover.health_check_period = 1000;
ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000;
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500;
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = ${FAILOVER_UNHEALTHY_MS:-3000};
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = ${FAILOVER_DEMOTE_MS:-6000};
SELECT pg_reload_conf();
SQL

# node N PORT: creates node N (the first becomes the primary, the second its standby).
node() {
  as_pg pg_autoctl create postgres --pgdata "$TMP/node$1" --pgport "$2" \
    --listen 127.0.0.1 --hostname 127.0.0.1 --name "node$1" --dbname stablecoin \
    --username postgres --monitor "$MONITOR" --auth trust --no-ssl \
    --pgctl "$PG_BIN/pg_ctl" >>"$TMP/node$1.log" 2>&1
  as_pg pg_autoctl config set --pgdata "$TMP/node$1" timeout.network_partition_timeout 3 >/dev/null
  start "node$1" "$TMP/node$1"
}

echo "== node1 (primary) on 127.0.0.1:$P1" >&2
node 1 "$P1"
wait_state node1 single
until as_pg pg_isready -q -h 127.0.0.1 -p "$P1"; do sleep 0.1; done
# The clients (the servers, the test's checks) connect as postgres over loopback.
echo "host all all 127.0.0.1/32 trust" >>"$TMP/node1/pg_hba.conf"
as_pg psql -X -q "postgres://postgres@127.0.0.1:$P1/postgres" -c 'SELECT pg_reload_conf()' >/dev/null
echo "== node2 (synchronous standby) on 127.0.0.1:$P2" >&2
node 2 "$P2"
wait_state node1 primary
wait_state node2 secondary

MONITOR_PGID="${PGIDS[0]}"
: "$MONITOR_PGID"
cat <<EOF
FAILOVER_URL=postgres://postgres@127.0.0.1:$P1,127.0.0.1:$P2/stablecoin?target_session_attrs=read-write
FAILOVER_MONITOR_URL=$MONITOR
FAILOVER_NODE1_PORT=$P1
FAILOVER_NODE1_DATA=$TMP/node1
FAILOVER_NODE1_PGID=${PGIDS[1]}
FAILOVER_NODE2_PORT=$P2
FAILOVER_NODE2_DATA=$TMP/node2
FAILOVER_NODE2_PGID=${PGIDS[2]}
FAILOVER_READY
EOF

if [ "${#RUN[@]}" -gt 0 ]; then
  export FAILOVER_URL="postgres://postgres@127.0.0.1:$P1,127.0.0.1:$P2/stablecoin?target_session_attrs=read-write"
  export FAILOVER_MONITOR_URL="$MONITOR" FAILOVER_NODE1_PORT="$P1" FAILOVER_NODE2_PORT="$P2"
  export FAILOVER_NODE1_DATA="$TMP/node1" FAILOVER_NODE2_DATA="$TMP/node2"
  export FAILOVER_NODE1_PGID="${PGIDS[1]}" FAILOVER_NODE2_PGID="${PGIDS[2]}"
  "${RUN[@]}"
  exit $?
fi
# Up until stopped (TERM/INT), or until the parent process is gone.
while :; do
  if [ -n "$PARENT" ] && ! kill -0 "$PARENT" 2>/dev/null; then exit 0; fi
  sleep 0.5
done
