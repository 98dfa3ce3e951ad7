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

use crate::domain::money::Micros;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A ledger account; create-if-absent through `Batch.accounts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerAccount {
    pub id: String,
    /// Only for accounts that stand for the outside world (fiat received, chain inflows).
    pub allow_negative: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Posted at once.
    Single,
    /// Reserved on the debit account until posted or voided.
    Pending,
    /// Posts the pending transfer with this id (its accounts and amount).
    Post { pending_id: String },
    /// Voids the pending transfer with this id.
    Void { pending_id: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerTransfer {
    pub id: String,
    pub debit: String,
    pub credit: String,
    /// For `Post`/`Void` this must equal the pending amount.
    pub amount: Micros,
    pub phase: Phase,
}

/// Sums of one account.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    pub debits_posted: u64,
    pub credits_posted: u64,
    pub debits_pending: u64,
    pub credits_pending: u64,
}

impl Balance {
    /// Posted balance (credits - debits), signed.
    pub fn posted(&self) -> i128 {
        self.credits_posted as i128 - self.debits_posted as i128
    }
    /// What may still be debited: posted minus pending debits.
    pub fn available(&self) -> i128 {
        self.posted() - self.debits_pending as i128
    }
}

/// One posting in an account's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub transfer_id: String,
    pub debit: String,
    pub credit: String,
    pub amount: Micros,
    pub phase: Phase,
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LedgerError {
    #[error("account {account} does not exist")]
    UnknownAccount { account: String },
    #[error("account {account} exists with other flags")]
    AccountExists { account: String },
    #[error("insufficient funds on {account}: available {available}, needed {needed}")]
    InsufficientFunds {
        account: String,
        available: i128,
        needed: u64,
    },
    #[error("transfer {id} exists with other fields")]
    TransferExists { id: String },
    #[error("pending transfer {id} not found")]
    PendingNotFound { id: String },
    #[error("pending transfer {id} was already posted or voided")]
    PendingResolved { id: String },
    #[error("transfer {id} is invalid: {reason}")]
    InvalidTransfer { id: String, reason: String },
    #[error("ledger backend: {0}")]
    Backend(String),
}

impl LedgerError {
    /// `UnknownAccount` for this id: what every store answers for an account it lacks.
    pub fn unknown_account(account: &str) -> Self {
        LedgerError::UnknownAccount {
            account: account.to_string(),
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            LedgerError::InsufficientFunds { .. } => "INSUFFICIENT_FUNDS",
            LedgerError::UnknownAccount { .. } => "LEDGER_UNKNOWN_ACCOUNT",
            LedgerError::AccountExists { .. } => "LEDGER_ACCOUNT_EXISTS",
            LedgerError::TransferExists { .. } => "LEDGER_TRANSFER_EXISTS",
            LedgerError::PendingNotFound { .. } => "LEDGER_PENDING_NOT_FOUND",
            LedgerError::PendingResolved { .. } => "LEDGER_PENDING_RESOLVED",
            LedgerError::InvalidTransfer { .. } => "LEDGER_INVALID_TRANSFER",
            LedgerError::Backend(_) => "STORAGE_ERROR",
        }
    }
}

/// The result of a ledger call.
pub type LedgerResult<T> = Result<T, LedgerError>;

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
