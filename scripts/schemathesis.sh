#!/usr/bin/env bash
# schemathesis (PyPI) against a live reference server: the OpenAPI document must tell the
# truth (API-CONVENTIONS). scripts/test runs it; it can also run alone:
#
#   scripts/schemathesis.sh                 # 180 s of testing
#   ST_MAX_TIME=600 scripts/schemathesis.sh
#
# What it does:
#   1. a virtualenv under target/ with schemathesis pinned (created once, then reused);
#   2. the debug server binary (ST_SERVER_BIN: scripts/test reuses its own build);
#   3. the server with its zero-configuration defaults (embedded SQLite, simulated rails,
#      workers on) on 127.0.0.1, a free port, in a fresh private data dir; the demo
#      tenant's live key is read from the start-up banner, and a business key (for the
#      checkout list) is issued with the CLI; two wallets are provisioned on every rail
#      and the first one funded, so generated requests can reach existing data;
#   4. `schemathesis run` with its default checks and every phase (examples, coverage,
#      fuzzing, stateful) for ST_MAX_TIME seconds, with schemathesis.toml (the statuses a
#      valid request may still get for a business reason, route by route);
#   5. any failure fails the script; the server is stopped on every exit path, and a
#      `timeout` stops it even if this script is killed.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
ST_VERSION="4.32.5"
ST_MAX_TIME="${ST_MAX_TIME:-180}"
VENV="${ST_VENV:-target/schemathesis-venv}"

if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    apt-get update && apt-get install -y python3-venv
  fi
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$ST_VERSION"
fi
"$VENV/bin/schemathesis" --version
# scripts/test installs it in the background while the tests build.
[ "${ST_ONLY_INSTALL:-0}" = 1 ] && exit 0

# scripts/test passes the server `cargo test --workspace` just built (ST_SERVER_BIN), so
# nothing is compiled again; alone, the script builds it.
BIN="${ST_SERVER_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build -p stablecoin-server --bin stablecoin-server
  BIN=target/debug/stablecoin-server
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/stablecoin-schemathesis.XXXXXX")"
chmod 700 "$WORK"
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# The server's environment: a private data dir, and per-key rate limits far above what
# one schemathesis run sends, so 429 stays possible (and documented) without deciding
# the run.
export STABLECOIN_DATA_DIR="$WORK/data"
export STABLECOIN_LOG="${STABLECOIN_LOG:-warn}"
export STABLECOIN_RATE_LIMIT_MONEY="${STABLECOIN_RATE_LIMIT_MONEY:-100000}"
export STABLECOIN_RATE_LIMIT_WRITE="${STABLECOIN_RATE_LIMIT_WRITE:-100000}"
export STABLECOIN_RATE_LIMIT_READ="${STABLECOIN_RATE_LIMIT_READ:-100000}"
# Likewise the tenant's quota of Solana provisionings (each generated phone number is a
# new wallet); the minimum sends keep their defaults (400 AMOUNT_TOO_SMALL is expected).
export STABLECOIN_RENT_QUOTA_PER_TENANT="${STABLECOIN_RENT_QUOTA_PER_TENANT:-1000000}"

# Port 0: the kernel picks a free port; the banner says which. The timeout outlives the
# test budget by a margin, and stops the server even if this script dies without traps.
STABLECOIN_LISTEN="127.0.0.1:0" timeout "$((ST_MAX_TIME + 300))" "$BIN" serve \
  > "$WORK/banner.txt" 2> "$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 300); do
  grep -q "live key:" "$WORK/banner.txt" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
KEY="$(awk '/live key:/ {print $3}' "$WORK/banner.txt")"
BASE="$(sed -n 's/^stablecoin-server listening on \(http:[^ ]*\).*/\1/p' "$WORK/banner.txt")"
TENANT="$(sed -n 's/^Demo tenant "[^"]*" (\(ten_[^)]*\)).*/\1/p' "$WORK/banner.txt")"
if [ -z "$KEY" ] || [ -z "$BASE" ] || [ -z "$TENANT" ]; then
  echo "the server did not start:"
  cat "$WORK/banner.txt" "$WORK/server.log"
  exit 1
fi
echo "server on $BASE (tenant $TENANT)"

# The checkout list takes a business key (schemathesis.toml reads it from here).
STABLECOIN_ST_BUSINESS_KEY="$("$BIN" key issue --tenant "$TENANT" --kind business --mode live |
  sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p')"
[ -n "$STABLECOIN_ST_BUSINESS_KEY" ] || { echo "could not issue a business key"; exit 1; }
export STABLECOIN_ST_BUSINESS_KEY

# Two wallets on every rail, the first funded from the demo treasury (schemathesis.toml
# draws phone numbers from these); the funding settles in the background.
post() {
  curl -sf -X POST "$BASE$1" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -d "$2" > /dev/null
}
for phone in +2250700000001 +2250700000002; do
  for route in users tron/users solana/users; do
    post "/v1/$route/provision" "{\"phone_number\":\"$phone\"}"
  done
done
for token in USDC USDT; do
  post /v1/users/fund "{\"phone_number\":\"+2250700000001\",\"token\":\"$token\",\"amount\":\"1000\"}"
done

status=0
"$VENV/bin/schemathesis" --no-color --config-file schemathesis.toml run "$BASE/openapi.json" \
  -H "X-API-Key: $KEY" \
  --max-time "$ST_MAX_TIME" \
  --request-timeout 30 || status=$?
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "the server died during the run:"
  tail -50 "$WORK/server.log"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "schemathesis found failures (exit $status); server log tail:"
  tail -30 "$WORK/server.log"
  exit "$status"
fi
echo "schemathesis: no failures"
