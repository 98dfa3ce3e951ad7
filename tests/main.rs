//! The facade's integration tests (the embedder's view and the deterministic simulation),
//! one binary: each file or folder here is a module, so the dependency graph links once
//! (issue #43). The simulation alone: `scripts/simulate`, or `cargo test --test
//! integration simulation::`.

mod embedder_limits;
mod embedder_rules;
mod fuzz_corpora;
#[cfg(all(
    feature = "memory",
    feature = "sim",
    feature = "escrow",
    feature = "checkout"
))]
mod inbound_router;
mod one_time_codes;
#[cfg(all(
    feature = "memory",
    feature = "sim",
    feature = "escrow",
    feature = "checkout",
    feature = "sqlite",
    feature = "postgres"
))]
mod pre_kernel_data;
#[cfg(all(
    feature = "memory",
    feature = "sim",
    feature = "escrow",
    feature = "checkout",
    feature = "sqlite",
    feature = "postgres"
))]
mod schema_upgrades;
mod simulation;
#[cfg(all(
    feature = "memory",
    feature = "sim",
    feature = "escrow",
    feature = "checkout"
))]
mod support;

#[cfg(all(
    feature = "memory",
    feature = "sim",
    feature = "escrow",
    feature = "checkout"
))]
mod embedder_runtime;
/// The `three_products` example, compiled and run as a test: an embedder runs wallets,
/// escrow and checkout on the kernel's one runtime (issue #45).
#[cfg(all(
    feature = "memory",
    feature = "sim",
    feature = "escrow",
    feature = "checkout"
))]
#[path = "../examples/three_products.rs"]
mod three_products_example;
