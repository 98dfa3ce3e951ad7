#!/usr/bin/env bash
# The Solana rail's tests (issue #9). Run from anywhere; the project's test script
# calls this once, after the default `cargo test --workspace`.
#
#   - unit tests of the pure halves (codec, scan, json_rpc parsers, unit conversions)
#   - tests/solana_fixtures.rs: byte-for-byte against @solana/web3.js and solders
#   - tests/solana_litesvm.rs:  every flow on litesvm (real SPL Token + ATA programs)
#   - tests/solana_json_rpc.rs: the same over HTTP (reqwest -> axum JSON-RPC -> litesvm)
#
# Feature `solana-test` = `solana` + litesvm/axum test support. It is never part of a
# default build: only this command compiles litesvm.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test -p stablecoin-rails --features solana-test --lib --test solana_fixtures \
  --test solana_litesvm --test solana_json_rpc "$@"
