# Shared by bench-server.sh and bench-drain.sh (sourced, not run): start the release
# server with its zero-configuration defaults in a fresh data dir, and fund a sender.

# bench_start_server BIN WORK PORT: starts BIN serve on 127.0.0.1:PORT with data in
# WORK/data (a large demo treasury so the sender never runs dry); sets SERVER_PID, base
# and KEY (the demo tenant's live key, read from the banner). Any STABLECOIN_* variable
# already in the environment reaches the server. Per-key rate limits are off: the load
# comes from one key, and the bench measures the server, not its limiter. The EVM
# minimum send is off too: the bench sends 0.01 USDC, as every figure in
# docs/performance-log.md did.
bench_start_server() {
  local bin="$1" work="$2" port="$3"
  base="http://127.0.0.1:$port"
  STABLECOIN_LISTEN="127.0.0.1:$port" STABLECOIN_DATA_DIR="$work/data" \
    STABLECOIN_LOG=warn STABLECOIN_DEMO_TREASURY_CREDIT=100000000 \
    STABLECOIN_SIM_TREASURY_FLOAT=100000000 STABLECOIN_RATE_LIMITS="${STABLECOIN_RATE_LIMITS:-false}" \
    STABLECOIN_MIN_SEND_EVM="${STABLECOIN_MIN_SEND_EVM:-0}" "$bin" serve > "$work/banner.txt" 2> "$work/server.log" &
  SERVER_PID=$!
  for _ in $(seq 100); do grep -q "live key:" "$work/banner.txt" 2>/dev/null && break; sleep 0.1; done
  KEY="$(awk '/live key:/ {print $3}' "$work/banner.txt")"
  [ -n "$KEY" ] || { echo "no live key in the banner"; cat "$work/banner.txt" "$work/server.log"; exit 1; }
}

post() { curl -sf -X POST "$base$1" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -d "$2"; }

SENDER="+2250700000001"
RECIPIENT="+2250700000002"

# bench_fund_sender: provisions SENDER and RECIPIENT and funds SENDER with FUND_USDC
# (default 10M) USDC,
# waiting until the funding is SETTLED. Not until the on-chain balance shows it: the
# balance is a live chain read and shows the tokens before the ledger posts the credit,
# and a send spends only posted funds (a send in between is a correct 422
# INSUFFICIENT_FUNDS).
bench_fund_sender() {
  post /v1/users/provision "{\"phone_number\":\"$SENDER\"}" > /dev/null
  post /v1/users/provision "{\"phone_number\":\"$RECIPIENT\"}" > /dev/null
  local funding fst=""
  funding="$(post /v1/users/fund "{\"phone_number\":\"$SENDER\",\"token\":\"USDC\",\"amount\":\"${FUND_USDC:-10000000}\"}" |
    sed -n 's/.*"id":"\([^"]*\)".*/\1/p')"
  for _ in $(seq 300); do
    fst="$(curl -sf "$base/v1/fundings/$funding" -H "X-API-Key: $KEY")"
    case "$fst" in *'"status":"SETTLED"'*) return 0 ;; esac
    sleep 0.1
  done
  echo "funding did not settle: $fst"
  exit 1
}

# bench_send_lua FILE: a wrk script posting a new 0.01 USDC transfer SENDER -> RECIPIENT.
bench_send_lua() {
  cat > "$1" <<LUA
wrk.method = "POST"
wrk.headers["X-API-Key"] = "$KEY"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"from_phone_number":"$SENDER","to_phone_number":"$RECIPIENT","token":"USDC","quote_id":"DIRECT_CRYPTO:USDC:0.01"}'
LUA
}

# bench_send_idem_lua FILE: the same transfer with a fresh Idempotency-Key on every
# request, as a client that retries safely sends every POST.
bench_send_idem_lua() {
  cat > "$1" <<LUA
local counter, threads = 0, 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
request = function()
  counter = counter + 1
  return wrk.format("POST", nil,
    {["X-API-Key"] = "$KEY", ["Content-Type"] = "application/json",
     ["Idempotency-Key"] = "bench-" .. tid .. "-" .. counter},
    '{"from_phone_number":"$SENDER","to_phone_number":"$RECIPIENT","token":"USDC","quote_id":"DIRECT_CRYPTO:USDC:0.01"}')
end
LUA
}
