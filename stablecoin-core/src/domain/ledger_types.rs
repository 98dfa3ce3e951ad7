//! The ledger's values: accounts, transfers, balances and the errors of its rules.
//!
//! They live in the domain, not beside the `Ledger` port, because the rules that decide
//! them ([`crate::domain::ledger`]) are the domain's, and the domain names no port
//! (KERNEL.md §3.1); `ports::ledger` re-exports them at their old paths.

use crate::domain::money::Micros;
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A ledger account; create-if-absent through `Batch.accounts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerAccount {
    /// The account name (see `engine::accounts`, e.g. `wallet:<wallet>:<TOKEN>`).
    pub id: String,
    /// Only for accounts that stand for the outside world (fiat received, chain inflows).
    pub allow_negative: bool,
}

/// How a [`LedgerTransfer`] moves money: at once, or in two phases (reserve, then post or
/// void).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Posted at once.
    Single,
    /// Reserved on the debit account until posted or voided.
    Pending,
    /// Posts the pending transfer with this id (its accounts and amount).
    Post {
        /// The [`LedgerTransfer::id`] of the `Pending` transfer to post.
        pending_id: String,
    },
    /// Voids the pending transfer with this id.
    Void {
        /// The [`LedgerTransfer::id`] of the `Pending` transfer to void.
        pending_id: String,
    },
}

/// One movement between two accounts, written through `Batch::ledger` and applied once per
/// id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerTransfer {
    /// Unique per transfer and stable across retries: the same id with the same fields is a
    /// no-op, so a replayed batch moves nothing twice.
    pub id: String,
    /// The account debited (its balance goes down).
    pub debit: String,
    /// The account credited; must differ from `debit`.
    pub credit: String,
    /// For `Post`/`Void` this must equal the pending amount.
    pub amount: Micros,
    /// Posted at once, or one step of a two-phase transfer.
    pub phase: Phase,
}

/// Sums of one account.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    /// Sum of posted debits, in micro-units.
    pub debits_posted: u64,
    /// Sum of posted credits, in micro-units.
    pub credits_posted: u64,
    /// Sum of reserved (pending) debits, in micro-units; they count against `available`.
    pub debits_pending: u64,
    /// Sum of pending credits, in micro-units; not spendable until posted.
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
    /// The [`LedgerTransfer::id`] that made it.
    pub transfer_id: String,
    /// The account debited.
    pub debit: String,
    /// The account credited.
    pub credit: String,
    /// The amount moved, in micro-units.
    pub amount: Micros,
    /// The step it records (a `Post` entry posts an earlier `Pending` one).
    pub phase: Phase,
}

/// One transfer of an account's history, with when it was committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedEntry {
    /// The transfer.
    pub entry: LedgerEntry,
    /// When its commit happened (the store's clock, Unix ms); `None` when the store
    /// does not record it or the transfer predates the recording.
    pub committed_at: Option<Timestamp>,
}

/// What `Ledger::entries_since` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountEntries {
    /// The account's sums after every transfer listed (and every earlier one).
    pub balance: Balance,
    /// The transfers committed at or after `since`, oldest first.
    pub entries: Vec<TimedEntry>,
    /// Whether the store records commit times: when false, `entries` is the whole
    /// history whatever `since` was, and no entry has a time.
    pub timed: bool,
}

/// Why a ledger read or a batch's ledger part failed; [`LedgerError::code`] is the stable
/// code.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// A transfer or read names an account no batch created.
    #[error("account {account} does not exist")]
    UnknownAccount {
        /// The missing account's id.
        account: String,
    },
    /// A batch creates an account that exists with another `allow_negative`.
    #[error("account {account} exists with other flags")]
    AccountExists {
        /// The account's id.
        account: String,
    },
    /// A debit would take an account without `allow_negative` below zero (pending debits
    /// counted).
    #[error("insufficient funds on {account}: available {available}, needed {needed}")]
    InsufficientFunds {
        /// The account that would go negative.
        account: String,
        /// What the account could still be debited, in micro-units.
        available: i128,
        /// The amount of the refused transfer, in micro-units.
        needed: u64,
    },
    /// A transfer id was applied before with other fields.
    #[error("transfer {id} exists with other fields")]
    TransferExists {
        /// The transfer id.
        id: String,
    },
    /// A `Post` or `Void` names no pending transfer.
    #[error("pending transfer {id} not found")]
    PendingNotFound {
        /// The `pending_id` named.
        id: String,
    },
    /// A `Post` or `Void` names a pending transfer already posted or voided.
    #[error("pending transfer {id} was already posted or voided")]
    PendingResolved {
        /// The `pending_id` named.
        id: String,
    },
    /// A transfer breaks a rule of its own (zero or too large an amount, debit equal to
    /// credit, a sum that would overflow, a `Post`/`Void` that does not match its pending
    /// transfer).
    #[error("transfer {id} is invalid: {reason}")]
    InvalidTransfer {
        /// The transfer id.
        id: String,
        /// Which rule it breaks (an overflow says "overflows").
        reason: String,
    },
    /// The backend failed (I/O, connection); the text is for logs.
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

    /// The stable machine code (`INSUFFICIENT_FUNDS`, `LEDGER_...`, `STORAGE_ERROR`).
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
