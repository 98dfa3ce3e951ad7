//! The integration tests of `stablecoin-escrow`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-escrow
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-escrow --test integration MODULE::`.

// Each suite declares its own `common` (tests/common/mod.rs), whose world runs on the
// backend of that suite's `BACKEND` constant (simulated or the real TRON node).
#![allow(clippy::duplicate_mod)]

mod api;
mod lifecycle;
mod lifecycle_tron;
mod staff;
mod state_machine;
