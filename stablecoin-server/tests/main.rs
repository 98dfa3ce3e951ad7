//! The integration tests of `stablecoin-server`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-server
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-server --test integration MODULE::`.

mod checkout_evm_live;
mod checkout_http;
mod cli;
mod cli_staff;
mod common;
mod concurrency;
mod console_http;
mod console_sessions;
mod dashboard_browser;
mod dashboard_http;
mod dashboard_scope;
mod escrow_http;
mod events_http;
mod evm_alto_live;
mod evm_bundled_live;
mod evm_chains_http;
mod evm_live;
mod evm_two_chains_live;
mod failover;
mod fx_rate_feed;
mod hardening;
mod http_api;
mod idempotency;
mod kill;
mod nodes;
mod one_time_codes_http;
mod openapi;
mod openapi_truth;
mod pay_page;
mod pay_page_checkout;
mod payouts_crash;
mod payouts_http;
mod payouts_switch;
mod quickstart;
mod rate_classes;
mod readme_quickstart;
mod reconciliation_http;
mod remote_signer;
mod request_bodies;
mod retention_http;
mod sandbox;
mod shared_chain;
mod sms_gateways_http;
mod solana_live;
mod staff_http;
mod statements_http;
mod swaps_evm_live;
mod swaps_http;
mod topups_http;
mod tron_live;
mod webhooks_http;
mod webhooks_security;
mod webhooks_standard;
