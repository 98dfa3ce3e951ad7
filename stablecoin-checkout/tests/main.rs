//! The integration tests of `stablecoin-checkout`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-checkout
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-checkout --test integration MODULE::`.

mod lifecycle;
mod solana_pay;
