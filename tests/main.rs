//! The facade's integration tests (the embedder's view and the deterministic simulation),
//! one binary: each file or folder here is a module, so the dependency graph links once
//! (issue #43). The simulation alone: `scripts/simulate`, or `cargo test --test
//! integration simulation::`.

mod embedder_limits;
mod embedder_rules;
mod fuzz_corpora;
mod one_time_codes;
mod simulation;
