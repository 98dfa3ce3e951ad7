#!/usr/bin/env bash
# The Solana rail's tests alone (issue #9), for working on that rail. Run from
# anywhere. The project's scripts/test does not call this: it runs these tests with the
# other real rails in one feature selection (tron-test,solana-test,evm-test).
#
#   - unit tests of the pure halves (codec, scan, json_rpc parsers, unit conversions)
#   - tests/solana_fixtures.rs: byte-for-byte against @solana/web3.js and solders
#   - tests/solana_litesvm.rs:  every flow on litesvm (real SPL Token + ATA programs)
#   - tests/solana_json_rpc.rs: the same over HTTP (reqwest -> axum JSON-RPC -> litesvm)
#   - tests/solana_engine.rs:   the engine's Solana wallets and sends on litesvm
#
# Feature `solana-test` = `solana` + litesvm/axum test support. It is never part of a
# default build: only a build that asks for it (this, or scripts/test's rails step)
# compiles litesvm.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The crate's one integration-test binary, its Solana modules (solana_fixtures::,
# solana_litesvm::, solana_json_rpc::, solana_engine::) and the library's solana tests.
cargo test -p stablecoin-rails --features solana-test --lib --test integration "$@" -- solana
