#!/usr/bin/env bash
# Settlement drain of the reference server (docs/performance-log.md, "Settlement now keeps up"):
#
#   scripts/bench-drain.sh                     # 10 s of send load, then 12 samples 5 s apart
#   LOAD=20 SAMPLES=20 EVERY=3 scripts/bench-drain.sh
#
# Starts the release server with its zero-configuration defaults (SQLite, WAL,
# synchronous=FULL, simulated rails, workers on) in a fresh data dir, funds one sender,
# puts LOAD seconds of wrk send load on it (64 connections, a new 0.01 USDC transfer
# per request), then prints the operations by status every EVERY seconds: how fast the
# workers submit, confirm and settle the backlog. Any STABLECOIN_* variable in the
# environment (STABLECOIN_WORKER_NICE, STABLECOIN_ENGINE_BATCH_LIMIT, ...) reaches the
# server. Needs wrk and sqlite3 (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
LOAD="${LOAD:-10}"
SAMPLES="${SAMPLES:-12}"
EVERY="${EVERY:-5}"
PORT="${PORT:-18085}"

command -v wrk >/dev/null || { apt-get update && apt-get install -y wrk; }
command -v sqlite3 >/dev/null || { apt-get update && apt-get install -y sqlite3; }
cargo build --release -p stablecoin-server --bin stablecoin-server
BIN=target/release/stablecoin-server

WORK="$(mktemp -d "${TMPDIR:-/tmp}/stablecoin-drain.XXXXXX")"
cleanup() {
  [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

. scripts/bench-lib.sh
bench_start_server "$BIN" "$WORK" "$PORT"
bench_fund_sender
bench_send_lua "$WORK/send.lua"
start=$(date +%s.%N)
echo "---- wrk: send (64 connections, ${LOAD}s)"
wrk -t2 -c64 -d"${LOAD}s" -s "$WORK/send.lua" "$base/v1/transfers/send" | grep -E "Requests/sec|Non-2xx"
echo "---- operations by status, seconds since the load started"
for i in $(seq 0 "$SAMPLES"); do
  [ "$i" -gt 0 ] && sleep "$EVERY"
  printf '%6.1f s  %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN {print a - b}')" \
    "$(sqlite3 "$WORK/data/stablecoin.db" \
      "select status, count(*) from records where kind='operation' group by status" | tr '\n' ' ')"
done
echo "server CPU time (user+system, s): $(awk '{printf "%.1f", ($14+$15)/100}' /proc/$SERVER_PID/stat)"
