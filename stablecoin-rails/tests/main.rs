//! The integration tests of `stablecoin-rails`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-rails
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-rails --test integration MODULE::`.

#[cfg(feature = "evm-test")]
mod evm_alto;
#[cfg(feature = "evm-test")]
mod evm_anvil;
#[cfg(feature = "evm-test")]
mod evm_bundles;
#[cfg(feature = "evm-test")]
mod evm_costs;
#[cfg(feature = "evm-test")]
mod evm_fees;
#[cfg(feature = "evm-test")]
mod evm_reorgs;
#[cfg(feature = "evm-test")]
mod evm_rpc_failover;
#[cfg(feature = "evm-test")]
mod evm_stuck_bundles;
#[cfg(feature = "evm-test")]
mod evm_uniswap;
mod rail_suite;
#[cfg(feature = "sim")]
mod sim;
#[cfg(feature = "sim")]
mod sim_costs;
#[cfg(feature = "sim-http")]
mod sim_http;
#[cfg(feature = "solana-test")]
mod solana_costs;
#[cfg(feature = "solana-test")]
mod solana_engine;
#[cfg(feature = "solana")]
mod solana_fixtures;
#[cfg(feature = "solana-test")]
mod solana_json_rpc;
#[cfg(feature = "solana-test")]
mod solana_litesvm;
#[cfg(feature = "solana-test")]
mod solana_memo;
#[cfg(feature = "solana-test")]
mod solana_priority_fees;
#[cfg(feature = "solana-test")]
mod solana_rpc_failover;
#[cfg(feature = "tron-test")]
mod tron_costs;
#[cfg(feature = "tron-test")]
mod tron_flows;
#[cfg(feature = "tron-test")]
mod tron_out_of_energy;
#[cfg(feature = "tron-test")]
mod tron_rpc_failover;
#[cfg(feature = "tron")]
mod tron_vectors;
