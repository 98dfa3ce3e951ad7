//! Pure domain logic: no I/O, no clock reads, no randomness.

pub mod chain;
pub mod consent;
#[cfg(feature = "crypto")]
pub mod crypto;
pub mod events;
pub mod fees;
pub mod fx;
pub mod ids;
pub mod ledger;
pub mod ledger_types;
pub mod limits;
pub mod money;
pub mod otp;
pub mod payments_events;
pub mod payout_reconciliation;
pub mod phone;
pub mod policy;
pub mod redact;
pub mod rule_error;
pub mod sponsorship;
pub mod state;
pub mod statement;
pub mod time;
pub mod topup;

pub use rule_error::RuleError;
