#!/usr/bin/env bash
# Settlement drain of the reference server (BENCHMARKS.md, "Settlement now keeps up"):
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

base="http://127.0.0.1:$PORT"
STABLECOIN_LISTEN="127.0.0.1:$PORT" STABLECOIN_DATA_DIR="$WORK/data" \
  STABLECOIN_LOG=warn STABLECOIN_DEMO_TREASURY_CREDIT=100000000 \
  STABLECOIN_SIM_TREASURY_FLOAT=100000000 \
  "$BIN" serve > "$WORK/banner.txt" 2> "$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q "live key:" "$WORK/banner.txt" 2>/dev/null && break; sleep 0.1; done
KEY="$(awk '/live key:/ {print $3}' "$WORK/banner.txt")"
[ -n "$KEY" ] || { echo "no live key in the banner"; cat "$WORK/banner.txt" "$WORK/server.log"; exit 1; }

post() { curl -sf -X POST "$base$1" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -d "$2"; }
post /v1/users/provision '{"phone_number":"+2250700000001"}' > /dev/null
post /v1/users/provision '{"phone_number":"+2250700000002"}' > /dev/null
FUNDING="$(post /v1/users/fund '{"phone_number":"+2250700000001","token":"USDC","amount":"10000000"}' \
  | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')"
for _ in $(seq 300); do
  curl -sf "$base/v1/fundings/$FUNDING" -H "X-API-Key: $KEY" | grep -q SETTLED && break
  sleep 0.1
done

cat > "$WORK/send.lua" <<LUA
wrk.method = "POST"
wrk.headers["X-API-Key"] = "$KEY"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"from_phone_number":"+2250700000001","to_phone_number":"+2250700000002","token":"USDC","quote_id":"DIRECT_CRYPTO:USDC:0.01"}'
LUA
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
