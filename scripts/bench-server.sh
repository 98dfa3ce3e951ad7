#!/usr/bin/env bash
# Load benchmark of the reference server (BENCHMARKS.md, "Server"), on this machine:
#
#   scripts/bench-server.sh            # default: 20 s per run
#   DURATION=30 scripts/bench-server.sh
#
# What it does, in one run so the numbers are comparable:
#   1. builds the release server and the plain axum hello-world (examples/hello.rs);
#   2. starts the server with its zero-configuration defaults (embedded SQLite, WAL,
#      synchronous=FULL, simulated rails, background workers on) in a fresh data dir,
#      reads the demo tenant's live key from the banner, provisions and funds a sender;
#   3. max throughput (wrk, 64 connections, 2 threads, Lua scripts that make every
#      request distinct: fresh phone numbers for provision, a new transfer per send)
#      of the hello-world, POST /v1/users/provision, POST /v1/transfers/send (without
#      and with a fresh Idempotency-Key per request) and GET /v1/users/balance;
#   4. fixed-rate latency (oha -q RATE --latency-correction, i.e. corrected for
#      coordinated omission) of POST /v1/transfers/send and GET /v1/users/balance;
#   5. stops the server and checks that every 202 of the send runs is an operation row
#      in the SQLite file.
#
# Needs wrk (Debian package) and oha (crates.io); both are installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-20}"
RATE="${RATE:-5000}"
CONNS="${CONNS:-64}"
PORT="${PORT:-18080}"
HELLO_PORT="${HELLO_PORT:-18090}"

command -v wrk >/dev/null || { apt-get update && apt-get install -y wrk; }
command -v oha >/dev/null || cargo install oha --locked
command -v sqlite3 >/dev/null || { apt-get update && apt-get install -y sqlite3; }

cargo build --release -p stablecoin-server --bin stablecoin-server --example hello
BIN=target/release/stablecoin-server
HELLO=target/release/examples/hello

WORK="$(mktemp -d "${TMPDIR:-/tmp}/stablecoin-bench.XXXXXX")"
cleanup() {
  [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
  [ -n "${HELLO_PID:-}" ] && kill "$HELLO_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

. scripts/bench-lib.sh
bench_start_server "$BIN" "$WORK" "$PORT"
"$HELLO" "127.0.0.1:$HELLO_PORT" > /dev/null &
HELLO_PID=$!
bench_fund_sender
bal="$(curl -sf "$base/v1/users/balance?phone_number=%2B2250700000001" -H "X-API-Key: $KEY")"
echo "sender funded: $bal"

cat > "$WORK/provision.lua" <<EOF
local n = 0
local thread_id = 0
local counter = 0
function setup(thread) thread:set("tid", counter); counter = counter + 1 end
request = function()
  n = n + 1
  local phone = string.format("+2347%01d%08d", tid, n)
  return wrk.format("POST", "/v1/users/provision",
    {["X-API-Key"] = "$KEY", ["Content-Type"] = "application/json"},
    '{"phone_number":"' .. phone .. '"}')
end
EOF
bench_send_lua "$WORK/send.lua"
bench_send_idem_lua "$WORK/send-idem.lua"
cat > "$WORK/balance.lua" <<EOF
wrk.headers["X-API-Key"] = "$KEY"
EOF

run_wrk() { # name, url, script
  echo "---- wrk: $1 ($CONNS connections, ${DURATION}s)"
  wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency ${3:+-s "$3"} "$2" | tee "$WORK/wrk-$1.txt" |
    grep -E "Requests/sec|Non-2xx|Socket errors|50%|99%"
}
run_oha() { # name, method, url, body
  echo "---- oha: $1 at a fixed $RATE req/s, latency-corrected (${DURATION}s)"
  local args=(-z "${DURATION}s" -c "$CONNS" -q "$RATE" --latency-correction --no-tui
    -H "X-API-Key: $KEY" -m "$2")
  [ -n "${4:-}" ] && args+=(-H "Content-Type: application/json" -d "$4")
  oha "${args[@]}" "$3" | tee "$WORK/oha-$1.txt" |
    grep -E "Success rate|Requests/sec|50.00%|99.00%|99.90%|\[[0-9]{3}\]|Error"
}

run_wrk hello "http://127.0.0.1:$HELLO_PORT/"
run_wrk provision "$base/v1/users/provision" "$WORK/provision.lua"
run_wrk send "$base/v1/transfers/send" "$WORK/send.lua"
run_wrk send-idem "$base/v1/transfers/send" "$WORK/send-idem.lua"
run_wrk balance "$base/v1/users/balance?phone_number=%2B2250700000001" "$WORK/balance.lua"
# Settlement does not keep up with acceptance at wrk's maximum rates: the send runs leave
# a backlog (scripts/bench-sustained.sh finds the rate it keeps pace with). Printed, not
# waited for: the later runs share the machine with that backlog.
unsettled() {
  sqlite3 "$WORK/data/stablecoin.db" "select status, count(*) from records \
    where kind='operation' group by status" | tr '\n' ' '
}
echo "operations by status after the send run: $(unsettled)"
run_oha send POST "$base/v1/transfers/send" \
  "{\"from_phone_number\":\"$SENDER\",\"to_phone_number\":\"$RECIPIENT\",\"token\":\"USDC\",\"quote_id\":\"DIRECT_CRYPTO:USDC:0.01\"}"
echo "operations by status after the fixed-rate send run: $(unsettled)"
run_oha balance GET "$base/v1/users/balance?phone_number=%2B2250700000001"

echo "server RSS after the runs: $(ps -o rss= -p "$SERVER_PID") KiB"

# Durability check: stop the server gracefully, then count the operations on disk. Every
# 202 the load generators saw must be a row (plus the one funding operation).
kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=
wrk_ok="$(cat "$WORK/wrk-send.txt" "$WORK/wrk-send-idem.txt" |
  awk '/requests in/ {t+=$1} /Non-2xx/ {n+=$5} END {print t-n}')"
keyed="$(sqlite3 "$WORK/data/stablecoin.db" "select count(*) from idempotency where key like 'bench-%'")"
oha_ok="$(awk '/\[202\]/ {print $2}' "$WORK/oha-send.txt")"
rows="$(sqlite3 "$WORK/data/stablecoin.db" "select count(*) from records where kind='operation'")"
echo "send 202s: wrk $wrk_ok + oha ${oha_ok:-0}; operation rows on disk: $rows (includes 1 funding)"
echo "keyed sends: engine idempotency records on disk: $keyed (one per accepted keyed send)"
