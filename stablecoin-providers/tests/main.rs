//! The integration tests of `stablecoin-providers`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-providers
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-providers --test integration MODULE::`.

#[cfg(all(feature = "africastalking", feature = "testkit"))]
mod africastalking;
#[cfg(all(feature = "mpesa", feature = "testkit"))]
mod mpesa;
#[cfg(all(feature = "mtn-momo", feature = "testkit"))]
mod mtn_momo;
#[cfg(feature = "testkit")]
mod rate_feed;
#[cfg(all(
    feature = "sanctions-list",
    feature = "chainalysis",
    feature = "testkit"
))]
mod sanctions;
#[cfg(all(feature = "twilio", feature = "testkit"))]
mod twilio;
