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
    /// The one-time code that consents to linking a wallet to this phone.
    LinkCode,
    /// The one-time code, sent to the new number, that consents to moving a wallet there.
    PhoneChangeCode,
    /// A recipient's notice that a transfer settled into their wallet (best effort).
    MoneyReceived,
    /// The one-time code that consents to paying a checkout session from the wallet of
    /// this phone.
    PaymentCode,
}

/// One SMS the engine asks a [`Notifier`] to send.
///
/// Its `Debug` shows the kind and the length of the text, never the text: a code
/// message carries the one-time code itself.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmsMessage {
    /// Why it is sent (a gateway may use its own template per kind).
    pub kind: SmsKind,
    /// The engine's full English text. It carries the one-time code itself, so an
    /// adapter must not log it.
    pub text: String,
}

impl std::fmt::Debug for SmsMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmsMessage")
            .field("kind", &self.kind)
            .field(
                "text",
                &format_args!("<{} chars redacted>", self.text.chars().count()),
            )
            .finish()
    }
}

/// A gateway's acceptance of one SMS: accepted for delivery, not delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmsAccepted {
    /// The gateway's id of the message (Africa's Talking `ATXid_...`, Twilio `SM...`):
    /// what its delivery reports name, so [`crate::engine::Engine::record_sms_report`] finds the
    /// message by it. Unique per gateway.
    pub message_id: String,
}

/// What a gateway's delivery report says of a message: what an SMS adapter parses its
/// callbacks into, so it sits beside the [`Notifier`] port (adapters name no engine type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SmsDelivery {
    /// Delivered to the handset (final).
    Delivered,
    /// Not deliverable (final): the gateway's reason.
    Failed {
        /// The gateway's reason (`AbsentSubscriber`, error code 30003, ...).
        reason: String,
    },
    /// Still on its way (queued, sent to the carrier, buffered).
    InProgress,
}

/// The SMS could not be sent. The engine keeps the message queued and tries again with
/// backoff while `retryable`; a permanent refusal (an invalid number, a blacklisted
/// recipient) ends it at once. A code request whose SMS is refused for good answers
/// NOTIFIER_ERROR.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("notification failed: {reason}")]
pub struct NotifyError {
    /// What went wrong, for logs and the message's delivery record (never the text).
    pub reason: String,
    /// Whether the same message may succeed later (timeouts, 429, 5xx, a gateway
    /// outage, credentials an operator can fix).
    pub retryable: bool,
}

impl NotifyError {
    /// A failure that may pass: the message is tried again later.
    pub fn retryable(reason: impl Into<String>) -> Self {
        NotifyError {
            reason: reason.into(),
            retryable: true,
        }
    }

    /// A refusal that will not pass for this message: it is not tried again.
    pub fn permanent(reason: impl Into<String>) -> Self {
        NotifyError {
            reason: reason.into(),
            retryable: false,
        }
    }
}

/// An SMS gateway.
#[async_trait]
pub trait Notifier: Send + Sync {
    /// Sends `message` to `to`. `Ok` means accepted by the gateway, not delivered; it
    /// carries the gateway's message id, which its delivery reports name.
    async fn send_sms(&self, to: &Phone, message: &SmsMessage) -> Result<SmsAccepted, NotifyError>;
}

/// Why no usable rate could be had; the engine quotes nothing and answers with a code
/// that tells the two apart (`CoreError::from` maps them).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RateError {
    /// The source could not give a rate (feed unreachable, refused, timed out, answered
    /// nonsense, or has no rate for the pair): RATE_SOURCE_ERROR.
    #[error("rate unavailable: {0}")]
    Unavailable(String),
    /// The source answered, but its rate is older than the maximum age it may be used
    /// at: RATE_STALE. A stale rate is never quoted.
    #[error("rate stale: {0}")]
    Stale(String),
}

/// Which way a rate converts, so a source with a spread can price in the service's
/// favour both ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateSide {
    /// The customer pays local currency for tokens (an FX quote): a higher rate gives
    /// fewer tokens, so a spread raises the rate.
    CustomerBuysToken,
    /// The customer gives tokens for local currency (a withdrawal): a lower rate pays
    /// less fiat, so a spread lowers the rate.
    CustomerSellsToken,
}

/// Where FX rates come from, for quotes and withdrawals.
#[async_trait]
pub trait RateSource: Send + Sync {
    /// Local currency units per one token (e.g. 600.00 XOF per USDC); for a source with
    /// a spread, the rate of an FX quote ([`RateSide::CustomerBuysToken`]).
    async fn rate(&self, currency: Currency, token: Token) -> Result<Decimal, RateError>;

    /// The rate to convert at in the direction `side`. The engine calls this one; a
    /// source without a spread need not implement it (the default is [`Self::rate`]).
    async fn rate_for(
        &self,
        currency: Currency,
        token: Token,
        side: RateSide,
    ) -> Result<Decimal, RateError> {
        let _ = side;
        self.rate(currency, token).await
    }
}

/// A mobile-money payout of a withdrawal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payout {
    /// Idempotency id (the withdrawal id): the provider's client reference.
    pub id: String,
    /// The mobile-money number paid (the withdrawing wallet's phone).
    pub phone: Phone,
    /// ISO 4217 code of the payout (`"XOF"`).
    pub currency: String,
    /// Fiat amount to pay, already rounded down to the currency's minor unit.
    pub amount: Decimal,
    /// The withdrawn token amount in micro-units that `amount` was converted from
    /// (informational: `amount` is what is paid).
    pub source_micros: Micros,
}

/// Where a payout stands, as the provider's status query ([`PayoutProvider::status`])
/// answers it.
///
/// The status query is the truth. A provider's callback (webhook) is only a hint that
/// something changed: an adapter receiving one makes the engine ask, it never moves a
/// withdrawal itself (a callback can be forged, replayed, reordered or lost).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PayoutStatus {
    /// The provider holds no payout with this id. Not a failure and not a reason to
    /// refund: the submit may not have reached it yet (a crash before it, a submit still
    /// in flight in another worker). The engine submits the same id again only when the
    /// provider deduplicates it ([`PayoutProvider::resubmit_is_idempotent`]); otherwise
    /// it keeps asking and staff may resolve it.
    NotFound,
    /// Received and not final: the provider may still pay it. However long it lasts,
    /// the engine keeps asking and never refunds a pending payout.
    Pending,
    /// Final: paid. The provider's reference is the evidence COMPLETED requires.
    Delivered {
        /// The provider's transaction reference.
        reference: String,
    },
    /// Final: the provider will never pay this payout id (declined by the recipient's
    /// operator, cancelled, expired, reversed before payment). The only status that
    /// starts the refund of the withdrawal.
    Failed {
        /// The provider's reason, recorded as the withdrawal's payout failure.
        reason: String,
    },
}

/// Why a payout submission did not return `Ok`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PayoutError {
    /// Final: the provider refused this payout and holds nothing under its id, so it
    /// will never pay it (a later submit of the same payout is refused too). Starts the
    /// refund. A transient refusal (rate limit, maintenance) is `Unknown`, not this.
    #[error("payout rejected: {0}")]
    Rejected(String),
    /// The submit may or may not have reached the provider (timeout, lost answer), or
    /// the status query failed: ask [`PayoutProvider::status`] later.
    #[error("payout outcome unknown: {0}")]
    Unknown(String),
}

/// A mobile-money provider.
#[async_trait]
pub trait PayoutProvider: Send + Sync {
    /// Who takes the payouts submitted here: the provider's kind and the account paying
    /// (`mpesa:600000`, `mtn_momo:<api user>:<environment>`, `simulated`, `disabled`).
    ///
    /// Why: a withdrawal's payout leg records the identity of the provider it was
    /// submitted to, and the engine asks, re-submits and settles it only through a
    /// provider with the same identity. After an operator switches provider (to
    /// `disabled` or another account), a payout the old one holds stays in flight until
    /// that provider is configured again or staff resolve it; the new provider, which
    /// has never heard of it, would answer `NotFound` (and pay it again) or, simulated,
    /// "delivered" for a payout nobody paid.
    fn identity(&self) -> String;

    /// Whether the provider documents that a re-submit of a payout id it already holds
    /// pays nothing new (MTN's `X-Reference-Id`). Only then does the engine submit the
    /// same id again after a `NotFound` (the first submit may have reached it unseen);
    /// otherwise a payout whose submit may have reached the provider waits for a
    /// definite answer or for staff (M-Pesa: Daraja does not document that it refuses a
    /// re-used `OriginatorConversationID`).
    fn resubmit_is_idempotent(&self) -> bool;

    /// The decimal places of `currency` this provider pays (default: the currency's
    /// own minor unit). The engine rounds a withdrawal's payout amount down to them when
    /// it accepts the withdrawal.
    ///
    /// Why: a rate feed prices to the currency's minor unit (KES 1280.70), but a
    /// provider may pay coarser units (M-Pesa B2C: whole shillings) and refuses any
    /// other amount; without this every such payout would be refused after the sweep
    /// and refunded.
    fn payout_decimals(&self, currency: &crate::domain::money::Currency) -> u32 {
        currency.exponent
    }

    /// Submits a payout. Idempotent by `payout.id` where the provider documents it
    /// ([`PayoutProvider::resubmit_is_idempotent`]). `Ok` means received, not paid.
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError>;

    /// Where the payout with this id stands (see [`PayoutStatus`]): the only input the
    /// engine settles or refunds a payout on.
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError>;
}

/// Time, injected everywhere so simulations are deterministic.
pub trait Clock: Send + Sync {
    /// The current instant (wall-clock time in production, settable in tests).
    fn now(&self) -> Timestamp;
}

/// The operating system's wall clock: the production [`Clock`]. Here beside the trait,
/// not among the in-memory adapters, so adapters built without the `memory` feature
/// (the providers' token caches) use it too.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Timestamp(ms)
    }
}

/// Randomness, injected for the same reason.
pub trait Entropy: Send + Sync {
    /// Fills `buf` with random bytes. Ids, one-time codes, API keys and the code
    /// hashing key come from it, so a production implementation must be a CSPRNG.
    fn fill(&self, buf: &mut [u8]);
}
