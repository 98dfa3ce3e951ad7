//! End-to-end engine tests on in-memory adapters and the simulated EVM rail: every step
//! checks the ledger and the chain.
//!
//! Moved from the facade crate's `tests/engine_flow.rs`: they test the core engine, so
//! they live with it. The simulated rails come from `stablecoin-rails` (feature `sim`), a
//! dev-dependency: `stablecoin-rails` depends on this crate, and an integration test links
//! the one `stablecoin_core` library both use, so the types line up.

mod caching;
mod chains;
mod deposits;
mod failures;
mod harness;
mod journey;
mod money_safety;
mod policy_reads;
mod quotes;
mod reconciliation;
mod retention;
mod sms_outbox;
mod swaps;
mod topups;
mod withdrawal_safety;
mod workers;
