//! The integration tests of `stablecoin-core`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-core
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-core --test integration MODULE::`.

mod embedder_lists;
mod engine_flow;
