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

use crate::domain::time::Timestamp;
use async_trait::async_trait;

/// Re-exported from [`crate::domain::ledger_types`], where the domain's ledger rules name
/// them too.
pub use crate::domain::ledger_types::{
    AccountEntries, Balance, LedgerAccount, LedgerEntry, LedgerError, LedgerTransfer, Phase,
    TimedEntry,
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

    /// The account's balance and the transfers touching it that were committed at or
    /// after `since` (all of them for `None`), oldest first, read in one snapshot: the
    /// balance is exactly the result of every transfer up to the last one listed.
    /// What a statement over a period is computed from (the balance at any instant
    /// after `since` is this balance minus the postings committed after it).
    ///
    /// A store that records commit times answers `timed: true`, each entry with its
    /// `committed_at`, stamps never decreasing along the history. The default, for a
    /// store that does not (PostgreSQL until it implements this method, see
    /// docs/events-and-statements.md), is [`entries_since_from_history`]: every entry,
    /// untimed, `timed: false`; a caller can then only state the whole history.
    async fn entries_since(
        &self,
        account: &str,
        since: Option<Timestamp>,
    ) -> LedgerResult<AccountEntries> {
        let _ = since;
        entries_since_from_history(self, account).await
    }
}

/// [`Ledger::entries_since`] built from [`Ledger::balance`] and [`Ledger::history`]
/// alone: the whole history, untimed. Consistent although the reads are separate: the
/// balance is read before and after the history and the history once more past its
/// end, and the read is repeated until nothing moved in between (a transfer only ever
/// appends to a history, and changes the balance).
pub async fn entries_since_from_history<L: Ledger + ?Sized>(
    ledger: &L,
    account: &str,
) -> LedgerResult<AccountEntries> {
    const PAGE: usize = 1_000;
    let mut last_err = None;
    for _ in 0..16 {
        let before = ledger.balance(account).await?;
        let mut entries = Vec::new();
        loop {
            let page = ledger.history(account, entries.len(), PAGE).await?;
            let n = page.len();
            entries.extend(page.into_iter().map(|entry| TimedEntry {
                entry,
                committed_at: None,
            }));
            if n < PAGE {
                break;
            }
        }
        let after = ledger.balance(account).await?;
        let more = ledger.history(account, entries.len(), 1).await?;
        if before == after && more.is_empty() {
            return Ok(AccountEntries {
                balance: after,
                entries,
                timed: false,
            });
        }
        last_err = Some(LedgerError::Backend(format!(
            "account {account} kept changing while its history was read"
        )));
    }
    Err(last_err.unwrap_or_else(|| LedgerError::Backend("unreachable".into())))
}
