//! `Ledger`: double-entry accounts with two-phase transfers (TigerBeetle's model).
//!
//! Transfers are written through `Store::commit` (so they land atomically with the
//! records of the same decision); this trait is the read side. Rules every backend
//! enforces inside its transaction:
//! - a transfer id is applied once; the same id with the same fields is a no-op, with
//!   other fields an error (`TransferExists`);
//! - `Pending` reserves the amount on the debit account (counted against its balance);
//!   `Post` applies a pending transfer in full, `Void` releases it; a pending transfer
//!   is resolved at most once;
//! - an account without `allow_negative` never has
//!   `debits_posted + debits_pending > credits_posted`;
//! - no amount or account sum exceeds `MAX_AMOUNT_MICROS` (2^63 - 1).
//!
//! These rules are implemented once, in [`crate::domain::ledger`]: every store in the
//! tree applies a batch's ledger part through it, and a new store should too.

use async_trait::async_trait;

/// Re-exported from [`crate::domain::ledger_types`], where the domain's ledger rules name
/// them too.
pub use crate::domain::ledger_types::{
    Balance, LedgerAccount, LedgerEntry, LedgerError, LedgerTransfer, Phase,
};

/// The result of a ledger call.
pub type LedgerResult<T> = Result<T, LedgerError>;

/// The read side of the double-entry ledger (writes go through `Store::commit`).
#[async_trait]
pub trait Ledger: Send + Sync {
    /// Sums of an account; an unknown account is `UnknownAccount`.
    async fn balance(&self, account: &str) -> LedgerResult<Balance>;
    /// Transfers touching an account, oldest first.
    async fn history(
        &self,
        account: &str,
        offset: usize,
        limit: usize,
    ) -> LedgerResult<Vec<LedgerEntry>>;
    /// Sum over all accounts of (credits_posted - debits_posted): zero in a sound ledger.
    async fn posted_sum(&self) -> LedgerResult<i128>;
}
