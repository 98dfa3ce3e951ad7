//! The smaller ports: notifications, FX rates, mobile-money payouts, time and entropy.

use crate::domain::money::{Currency, Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use async_trait::async_trait;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a customer is messaged; lets an SMS gateway pick a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmsKind {
    LinkCode,
    PhoneChangeCode,
    MoneyReceived,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmsMessage {
    pub kind: SmsKind,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("notification failed: {0}")]
pub struct NotifyError(pub String);

#[async_trait]
pub trait Notifier: Send + Sync {
    async fn send_sms(&self, to: &Phone, message: &SmsMessage) -> Result<(), NotifyError>;
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("rate unavailable: {0}")]
pub struct RateError(pub String);

#[async_trait]
pub trait RateSource: Send + Sync {
    /// Local currency units per one token (e.g. 600.00 XOF per USDC).
    async fn rate(&self, currency: Currency, token: Token) -> Result<Decimal, RateError>;
}

/// A mobile-money payout of a withdrawal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payout {
    /// Idempotency id (the withdrawal id).
    pub id: String,
    pub phone: Phone,
    pub currency: String,
    pub amount: Decimal,
    pub source_micros: Micros,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PayoutStatus {
    NotFound,
    Pending,
    /// Evidence that the payout reached the recipient (provider reference).
    Delivered {
        reference: String,
    },
    Failed {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PayoutError {
    #[error("payout rejected: {0}")]
    Rejected(String),
    #[error("payout outcome unknown: {0}")]
    Unknown(String),
}

#[async_trait]
pub trait PayoutProvider: Send + Sync {
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError>;
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError>;
}

/// Time, injected everywhere so simulations are deterministic.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// Randomness, injected for the same reason.
pub trait Entropy: Send + Sync {
    fn fill(&self, buf: &mut [u8]);
}
