//! Build script of `stablecoin-store`: rebuilds the crate when a migration changes.
//!
//! `sqlx::migrate!` embeds `migrations/` at compile time; without this a new migration
//! file would not rebuild the crate (sqlx's documented advice).

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
