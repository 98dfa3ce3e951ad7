//! The integration tests of `stablecoin-webhooks`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-webhooks
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-webhooks --test integration MODULE::`.

mod delivery_loopback;
mod dispatcher;
mod payments_payloads;
#[cfg(feature = "axum")]
mod receiver_axum;
mod replay_and_health;
mod signature_vectors;
mod targets_and_secrets;
mod wallet_payloads;
