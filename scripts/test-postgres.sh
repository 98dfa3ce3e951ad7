#!/usr/bin/env bash
# Runs the PostgreSQL tests of stablecoin-store, and the server's tests of two servers on
# one database and one shared simulated chain (shared_chain, concurrency, kill, nodes), against a
# throwaway local cluster.
#
#   scripts/test-postgres.sh [cargo test args...]     # e.g. a test-name filter
#   scripts/test-postgres.sh --bench [criterion args] # the store bench, PostgreSQL included
#   scripts/test-postgres.sh --run COMMAND [args]     # any command, e.g.
#                                 NODES=2 scripts/test-postgres.sh --run scripts/bench-sustained.sh
#
# Installs PostgreSQL from Debian's packages when it is missing, starts a private cluster
# as the `postgres` user (initdb in a temp dir, listening on 127.0.0.1 on a free port,
# unix socket in the temp dir, trust auth), exports STABLECOIN_TEST_PG_URL, runs
# `cargo test -p stablecoin-store --features postgres` and the server's `shared_chain`,
# `concurrency`, `kill` and `nodes` tests (scripts/test runs the whole suite under `--run`
# instead), and stops and removes the cluster on exit, whatever happens. The cluster keeps
# PostgreSQL's durable defaults (fsync on, synchronous_commit on), so bench numbers are
# honest. PG_SERVER_OPTS adds server options, e.g. to profile statements:
#   PG_SERVER_OPTS="-c shared_preload_libraries=pg_stat_statements" \
#     scripts/test-postgres.sh --run scripts/pg-profile.sh scripts/bench-sustained.sh
set -euo pipefail
cd "$(dirname "$0")/.."

find_pg_bin() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; fi
}

PG_BIN="$(find_pg_bin)"
if [ -z "$PG_BIN" ]; then
  echo "== installing PostgreSQL from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update && PG_APT_UPDATED=1
  apt-get install -y postgresql
  PG_BIN="$(find_pg_bin)"
fi
if [ -z "$PG_BIN" ]; then
  echo "test-postgres.sh: PostgreSQL server binaries (initdb, pg_ctl) not found" >&2
  exit 1
fi

# initdb refuses to run as root: run the cluster as `postgres` when we are root.
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
  AS_PG=(runuser -u postgres --)
else
  AS_PG=()
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stablecoin-pg.XXXXXX")"
DATA="$TMP/data"
SOCK="$TMP/sock"
mkdir -p "$SOCK"
[ "$(id -u)" = 0 ] && chown -R postgres "$TMP"

cleanup() {
  local rc=$?
  if [ -f "$TMP/pgbouncer.pid" ]; then
    kill "$(cat "$TMP/pgbouncer.pid")" 2>/dev/null || true
  fi
  if [ -f "$DATA/postmaster.pid" ]; then
    "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ "$rc" != 0 ] && [ -f "$TMP/server.log" ]; then
    echo "---- last lines of the PostgreSQL log ----" >&2
    tail -n 30 "$TMP/server.log" >&2 || true
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 30000))
  fi
}

echo "== initdb ($PG_BIN)"
"${AS_PG[@]}" "$PG_BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --no-sync >"$TMP/initdb.log" 2>&1 \
  || { cat "$TMP/initdb.log" >&2; exit 1; }

PORT=""
for _ in 1 2 3 4 5; do
  PORT="$(free_port)"
  if "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w -t 60 \
       -o "-c listen_addresses=127.0.0.1 -p $PORT -k $SOCK -c max_connections=300 -c shared_buffers=256MB ${PG_SERVER_OPTS:-}" \
       start >/dev/null; then
    break
  fi
  PORT=""
done
[ -n "$PORT" ] || { echo "test-postgres.sh: could not start PostgreSQL" >&2; exit 1; }

"${AS_PG[@]}" "$PG_BIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -q \
  -c "CREATE DATABASE stablecoin_test" >/dev/null
export STABLECOIN_TEST_PG_URL="postgres://postgres@127.0.0.1:$PORT/stablecoin_test"
export STABLECOIN_REQUIRE_PG=1
echo "== PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT"

# PgBouncer (Debian's `pgbouncer`) in transaction pooling mode on loopback, in front of
# the cluster: the store's tests run through it (STABLECOIN_TEST_PGBOUNCER_URL). Every
# database of the cluster is reachable through it (`*`). PgBouncer refuses to run as
# root: it runs as `postgres` too. From 1.21 on it keeps the clients' named prepared
# statements across server connections (`max_prepared_statements`); before, the store
# connects with `pooler=transaction` (PgConfig::pooler): no named statements, every
# statement in a transaction of its own.
find_pgbouncer() {
  command -v pgbouncer 2>/dev/null || { [ -x /usr/sbin/pgbouncer ] && echo /usr/sbin/pgbouncer; } || true
}
PGBOUNCER="$(find_pgbouncer)"
if [ -z "$PGBOUNCER" ]; then
  echo "== installing PgBouncer from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  [ -n "${PG_APT_UPDATED:-}" ] || apt-get update
  apt-get install -y --no-install-recommends pgbouncer
  PGBOUNCER="$(find_pgbouncer)"
fi
if [ -n "$PGBOUNCER" ]; then
  BOUNCER_VERSION="$("$PGBOUNCER" --version | awk 'NR==1 {print $2}')"
  BOUNCER_PORT="$(free_port)"
  printf '"postgres" ""\n' >"$TMP/userlist.txt"
  {
    echo "[databases]"
    echo "* = host=127.0.0.1 port=$PORT"
    echo "[pgbouncer]"
    echo "listen_addr = 127.0.0.1"
    echo "listen_port = $BOUNCER_PORT"
    echo "unix_socket_dir ="
    echo "auth_type = trust"
    echo "auth_file = $TMP/userlist.txt"
    echo "pool_mode = transaction"
    echo "max_client_conn = 1000"
    echo "default_pool_size = 5"
    echo "ignore_startup_parameters = extra_float_digits"
    echo "logfile = $TMP/pgbouncer.log"
    echo "pidfile = $TMP/pgbouncer.pid"
    if [ "$(printf '%s\n' 1.21.0 "$BOUNCER_VERSION" | sort -V | head -n 1)" = 1.21.0 ]; then
      echo "max_prepared_statements = 500"
    fi
  } >"$TMP/pgbouncer.ini"
  [ "$(id -u)" = 0 ] && chown postgres "$TMP/pgbouncer.ini" "$TMP/userlist.txt"
  "${AS_PG[@]}" "$PGBOUNCER" -d -q "$TMP/pgbouncer.ini"
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$BOUNCER_PORT") 2>/dev/null && break
    sleep 0.1
  done
  export STABLECOIN_TEST_PGBOUNCER_URL="postgres://postgres@127.0.0.1:$BOUNCER_PORT/stablecoin_test"
  export STABLECOIN_TEST_PGBOUNCER_VERSION="$BOUNCER_VERSION"
  echo "== PgBouncer $BOUNCER_VERSION (transaction pooling) on 127.0.0.1:$BOUNCER_PORT"
fi

export PG_BIN
if [ "${1:-}" = "--run" ]; then
  shift
  echo "== $*"
  "$@"
elif [ "${1:-}" = "--bench" ]; then
  shift
  echo "== cargo bench -p stablecoin-store --features postgres --bench store -- $*"
  cargo bench -p stablecoin-store --features postgres --bench store -- "$@"
else
  echo "== cargo test -p stablecoin-store --features postgres $*"
  cargo test -p stablecoin-store --features postgres "$@"
  echo "== cargo test -p stablecoin-server --test integration: shared_chain, concurrency, kill, nodes $*"
  cargo test -p stablecoin-server --test integration "$@" -- shared_chain:: concurrency:: kill:: nodes::
fi
