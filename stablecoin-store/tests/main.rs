//! The integration tests of `stablecoin-store`, one binary: each file of this folder is a module,
//! so the crate and its dependency graph link once, not once per file (issue #43).
//! Run one file's tests with a filter on its module, e.g. `cargo nextest run -p stablecoin-store
//! -E 'test(/^MODULE::/)'` or `cargo test -p stablecoin-store --test integration MODULE::`.

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_group_commit;
#[cfg(feature = "postgres")]
mod postgres_hot_accounts;
#[cfg(feature = "sqlite")]
mod sqlite_bad_input;
#[cfg(feature = "sqlite")]
mod sqlite_compact;
#[cfg(feature = "sqlite")]
mod sqlite_concurrency;
#[cfg(feature = "sqlite")]
mod sqlite_crash;
#[cfg(feature = "sqlite")]
mod sqlite_migration;
#[cfg(feature = "sqlite")]
mod sqlite_suite;
