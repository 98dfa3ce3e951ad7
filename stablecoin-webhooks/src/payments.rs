//! Wire payloads of the payments family (spec 6.2).
//!
//! Two shapes:
//!
//! - `payment.confirmed` / `payment.failed`: a **flat** object ([`PaymentEvent`]): `event`,
//!   `session_id`, `reference`, `amount` (decimal string), `currency`, `status` (`paid` or
//!   `failed`), `payment_method`, `network`, `tx_hash`, `created_at`, `paid_at`,
//!   `metadata` (object), `timestamp` (integer, Unix seconds). `network`, `tx_hash`,
//!   `paid_at` and `metadata` are omitted when not applicable; `payment.failed` never has
//!   `paid_at`.
//! - wallet events: an **envelope** `{"event": ..., "data": {...}}` ([`WalletEnvelope`]) for
//!   `wallet.deposit.detected`, `wallet.deposit.confirmed`, `wallet.deposit.hash_resolved`
//!   ([`DepositData`]) and `wallet.transfer.*` ([`WalletTransferData`]).
//!
//! Every field of the data objects but `customer_id` is optional (spec 6.2: "customer_id is
//! the only guaranteed field"); absent fields are omitted, never `null`. Amounts are
//! decimal strings with 6 places, never numbers; `deposit_id` and `block_number` are
//! integers. Senders build payloads from typed facts ([`Deposit`], [`Payment`]) so the
//! formats cannot drift; the same structs parse what a receiver gets (see
//! [`crate::receiver`] for the lenient, partial-tolerant parser). Golden files in
//! `tests/fixtures/payments/` pin every payload byte for byte.

use crate::error::{WebhookError, WebhookResult};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::OutboxEvent;

/// `payment.confirmed`.
pub const PAYMENT_CONFIRMED: &str = "payment.confirmed";
/// `payment.failed`.
pub const PAYMENT_FAILED: &str = "payment.failed";
/// `wallet.deposit.detected`: records a pending deposit, does NOT credit.
pub const DEPOSIT_DETECTED: &str = "wallet.deposit.detected";
/// `wallet.deposit.confirmed`: the crediting event, when `safe_to_credit` is true.
pub const DEPOSIT_CONFIRMED: &str = "wallet.deposit.confirmed";
/// `wallet.deposit.hash_resolved`: backfills the real chain hash only.
pub const DEPOSIT_HASH_RESOLVED: &str = "wallet.deposit.hash_resolved";
/// Refund events of a checkout session (an addition to spec 6.2, issue #50): flat,
/// like `payment.*` ([`RefundEventBody`]).
pub const REFUND_EVENT_TYPES: &[&str] = &[
    REFUND_CREATED,
    REFUND_CLAIMED,
    REFUND_SUBMITTED,
    REFUND_COMPLETED,
    REFUND_FAILED,
    REFUND_EXPIRED,
];
/// `refund.created`: a refund was recorded (to an address, or as a claim link).
pub const REFUND_CREATED: &str = "refund.created";
/// `refund.claimed`: the payer gave an address on the claim page.
pub const REFUND_CLAIMED: &str = "refund.claimed";
/// `refund.submitted`: its first payment was sent.
pub const REFUND_SUBMITTED: &str = "refund.submitted";
/// `refund.completed`: it landed at the destination.
pub const REFUND_COMPLETED: &str = "refund.completed";
/// `refund.failed`: it could not be sent; its money went back (`failure_reason`).
pub const REFUND_FAILED: &str = "refund.failed";
/// `refund.expired`: its claim link expired unclaimed; its money went back.
pub const REFUND_EXPIRED: &str = "refund.expired";
/// Prefix of the wallet transfer events (`wallet.transfer.confirmed`, ...).
pub const WALLET_TRANSFER_PREFIX: &str = "wallet.transfer.";

/// Event types a payments endpoint may subscribe to; `wallet.transfer.<status>` is
/// accepted for any lowercase status word.
pub const PAYMENTS_EVENT_TYPES: &[&str] = &[
    PAYMENT_CONFIRMED,
    PAYMENT_FAILED,
    DEPOSIT_DETECTED,
    DEPOSIT_CONFIRMED,
    DEPOSIT_HASH_RESOLVED,
    REFUND_CREATED,
    REFUND_CLAIMED,
    REFUND_SUBMITTED,
    REFUND_COMPLETED,
    REFUND_FAILED,
    REFUND_EXPIRED,
];

/// True for a payments-family event name.
pub fn is_payments_event_type(t: &str) -> bool {
    PAYMENTS_EVENT_TYPES.contains(&t)
        || t.strip_prefix(WALLET_TRANSFER_PREFIX).is_some_and(|s| {
            !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
}

/// The flat `payment.*` payload. Field order is the spec's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentEvent {
    /// `payment.confirmed` or `payment.failed`.
    pub event: String,
    /// The checkout session paid (`cs_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The tenant's own reference of the session (an order number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Decimal string with 6 places.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// The token paid (`USDC`, `USDT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// `paid` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// How the session was paid (`crypto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_method: Option<String>,
    /// The rail paid on (`polygon`, `tron`, ...); absent when not applicable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The paying transaction; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// When the session was created (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the payment was confirmed (RFC 3339 UTC); never on `payment.failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_at: Option<String>,
    /// The tenant's key/value metadata of the session; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
}

/// The flat `refund.*` payload (an addition to spec 6.2): absent fields are omitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundEventBody {
    /// `refund.created`, `.claimed`, `.submitted`, `.completed`, `.failed` or `.expired`.
    pub event: String,
    /// The refund (`rf_...`).
    pub refund_id: String,
    /// The refunded session (`cs_...`).
    pub session_id: String,
    /// The session's reference (an order number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Decimal string with 6 places.
    pub amount: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// `awaiting_claim`, `pending`, `submitted`, `completed`, `failed` or `expired`.
    pub status: String,
    /// The network it is sent on, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The destination, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The refund's transaction, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// The business's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it failed (`refund.failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The payer's claim page, for a refund by claim link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_url: Option<String>,
    /// When the refund was created (RFC 3339 UTC).
    pub created_at: String,
    /// Unix seconds.
    pub timestamp: i64,
}

/// Data of the three deposit events. Field order is the spec's (the union of the three
/// lists keeps each list's order).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositData {
    /// The tenant's customer UUID; the only guaranteed field.
    pub customer_id: String,
    /// The idempotency key: dedupe on it, never on `tx_hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deposit_id: Option<u64>,
    /// The monitored address that received the funds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The rail it arrived on (`polygon`, `tron`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The token received (`USDC`, `USDT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Decimal string with 6 places, never a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// On detected/confirmed possibly a placeholder `pending_<timestamp>_<address prefix>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// True while `tx_hash` is the placeholder: the real hash comes in `hash_resolved`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_pending: Option<bool>,
    /// Confirmations when the event was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmations: Option<u32>,
    /// `detected` or `confirmed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// On `confirmed`: credit the balance only when true (spec 6.2 rule 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_to_credit: Option<bool>,
    /// Links detected, confirmed and hash_resolved of one deposit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_at: Option<String>,
    /// When the required confirmations were reached (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
    /// Which scanner saw the deposit (`scanner-polygon-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_by: Option<String>,
}

/// Data of `wallet.transfer.*`. Field order is the spec's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletTransferData {
    /// The transfer's transaction; absent while unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// The tenant's customer UUID; the only guaranteed field.
    pub customer_id: String,
    /// The rail (`polygon`, `tron`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The token moved (`USDC`, `USDT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// The sending wallet's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_address: Option<String>,
    /// The receiving address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_address: Option<String>,
    /// Amount sent: decimal string with 6 places.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// The transfer's network fee in the token: decimal string with 6 places.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gas_fee: Option<String>,
    /// The status word, as in the event name (`confirmed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// When it was confirmed (RFC 3339 UTC); absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
    /// The including block (an integer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_number: Option<u64>,
}

/// The `data` of a wallet envelope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum WalletData {
    /// Of a `wallet.deposit.*` event.
    Deposit(DepositData),
    /// Of a `wallet.transfer.*` event.
    Transfer(WalletTransferData),
}

/// `{"event": ..., "data": {...}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalletEnvelope {
    /// The `wallet.*` event name.
    pub event: String,
    /// The event's fields.
    pub data: WalletData,
}

/// One payments-family webhook body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PaymentsPayload {
    /// `payment.confirmed` / `payment.failed` (flat).
    Payment(PaymentEvent),
    /// `wallet.*` (envelope).
    Wallet(WalletEnvelope),
    /// `refund.*` (flat).
    Refund(RefundEventBody),
}

impl PaymentsPayload {
    /// The event name.
    pub fn event_type(&self) -> &str {
        match self {
            PaymentsPayload::Payment(p) => &p.event,
            PaymentsPayload::Wallet(w) => &w.event,
            PaymentsPayload::Refund(r) => &r.event,
        }
    }

    /// Strict parse of a stored payload (the sending side). Unknown names are refused.
    pub fn from_value(v: &serde_json::Value) -> Result<PaymentsPayload, String> {
        let event = v
            .get("event")
            .and_then(|e| e.as_str())
            .ok_or("no event name")?;
        let bad = |e: serde_json::Error| format!("{event}: {e}");
        if event == PAYMENT_CONFIRMED || event == PAYMENT_FAILED {
            return serde_json::from_value(v.clone())
                .map(PaymentsPayload::Payment)
                .map_err(bad);
        }
        if REFUND_EVENT_TYPES.contains(&event) {
            return serde_json::from_value(v.clone())
                .map(PaymentsPayload::Refund)
                .map_err(bad);
        }
        let data = v.get("data").cloned().ok_or("no data object")?;
        let data = if event.starts_with("wallet.deposit.") && is_payments_event_type(event) {
            WalletData::Deposit(serde_json::from_value(data).map_err(bad)?)
        } else if is_payments_event_type(event) {
            WalletData::Transfer(serde_json::from_value(data).map_err(bad)?)
        } else {
            return Err(format!("{event} is not a payments event"));
        };
        Ok(PaymentsPayload::Wallet(WalletEnvelope {
            event: event.to_string(),
            data,
        }))
    }

    /// The exact body bytes that are signed and sent (compact JSON, spec field order).
    pub fn to_body(&self) -> WebhookResult<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| WebhookError::InvalidParameter {
            field: "payload",
            reason: e.to_string(),
        })
    }

    /// The outbox event to commit in the same `Batch` as the change it reports; the
    /// delivery worker renders it back to exactly [`Self::to_body`].
    pub fn to_outbox(
        &self,
        event_id: &str,
        tenant: &str,
        occurred_at: Timestamp,
    ) -> WebhookResult<OutboxEvent> {
        Ok(OutboxEvent {
            id: event_id.to_string(),
            tenant: tenant.to_string(),
            event_type: self.event_type().to_string(),
            occurred_at,
            payload: serde_json::to_value(self).map_err(|e| WebhookError::InvalidParameter {
                field: "payload",
                reason: e.to_string(),
            })?,
        })
    }
}

/// Facts of a checkout payment, from which `payment.*` payloads are built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payment {
    /// The checkout session (`cs_...`).
    pub session_id: String,
    /// The tenant's reference of the session (an order number).
    pub reference: String,
    /// Micro-units of `currency`, rendered with 6 places.
    pub amount: Micros,
    /// The token paid (`USDC`, `USDT`).
    pub currency: String,
    /// How it was paid (`crypto`).
    pub payment_method: String,
    /// The rail paid on; `None` or empty omits it.
    pub network: Option<String>,
    /// The paying transaction; `None` or empty omits it.
    pub tx_hash: Option<String>,
    /// When the session was created.
    pub created_at: Timestamp,
    /// The session's tenant metadata; `None` or empty omits it.
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Payment {
    fn event(
        &self,
        event: &str,
        status: &str,
        paid_at: Option<Timestamp>,
        now: Timestamp,
    ) -> PaymentEvent {
        PaymentEvent {
            event: event.into(),
            session_id: Some(self.session_id.clone()),
            reference: Some(self.reference.clone()),
            amount: Some(self.amount.to_decimal_string()),
            currency: Some(self.currency.clone()),
            status: Some(status.into()),
            payment_method: Some(self.payment_method.clone()),
            network: self.network.clone().filter(|s| !s.is_empty()),
            tx_hash: self.tx_hash.clone().filter(|s| !s.is_empty()),
            created_at: Some(self.created_at.to_rfc3339()),
            paid_at: paid_at.map(Timestamp::to_rfc3339),
            metadata: self.metadata.clone().filter(|m| !m.is_empty()),
            timestamp: Some(now.unix_secs()),
        }
    }

    /// `payment.confirmed` (status `paid`), sent at `now`.
    pub fn confirmed(&self, paid_at: Timestamp, now: Timestamp) -> PaymentsPayload {
        PaymentsPayload::Payment(self.event(PAYMENT_CONFIRMED, "paid", Some(paid_at), now))
    }

    /// `payment.failed` (status `failed`, no `paid_at`), sent at `now`.
    pub fn failed(&self, now: Timestamp) -> PaymentsPayload {
        PaymentsPayload::Payment(self.event(PAYMENT_FAILED, "failed", None, now))
    }
}

/// Facts of one inbound deposit, from which the three deposit events are built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deposit {
    /// The tenant's customer UUID owning `address`.
    pub customer_id: String,
    /// The deposit's id: the receiver's idempotency key, the same in all three events.
    pub deposit_id: u64,
    /// The monitored address credited (its first 8 characters go into the placeholder hash).
    pub address: String,
    /// The rail (`polygon`, `tron`, ...).
    pub network: String,
    /// The token received (`USDC`, `USDT`).
    pub currency: String,
    /// Micro-units received, rendered with 6 places.
    pub amount: Micros,
    /// The real hash, or `None` while only the placeholder is known.
    pub tx_hash: Option<String>,
    /// Confirmations at detection (the confirmed event takes its own count).
    pub confirmations: u32,
    /// When the scanner saw it; links the three events and dates the placeholder.
    pub detected_at: Timestamp,
    /// Which scanner saw it (`scanner-polygon-1`).
    pub detected_by: String,
}

impl Deposit {
    /// `pending_<unix seconds of detection>_<first 8 characters of the address>`.
    pub fn placeholder_hash(&self) -> String {
        let prefix: String = self.address.chars().take(8).collect();
        format!("pending_{}_{prefix}", self.detected_at.unix_secs())
    }

    fn hash(&self) -> (String, bool) {
        match &self.tx_hash {
            Some(h) if !h.is_empty() => (h.clone(), false),
            _ => (self.placeholder_hash(), true),
        }
    }

    fn envelope(event: &str, data: DepositData) -> PaymentsPayload {
        PaymentsPayload::Wallet(WalletEnvelope {
            event: event.into(),
            data: WalletData::Deposit(data),
        })
    }

    /// The fields `detected` and `confirmed` share.
    fn observed(&self, status: &str) -> DepositData {
        let (tx_hash, _) = self.hash();
        DepositData {
            customer_id: self.customer_id.clone(),
            deposit_id: Some(self.deposit_id),
            address: Some(self.address.clone()),
            network: Some(self.network.clone()),
            currency: Some(self.currency.clone()),
            amount: Some(self.amount.to_decimal_string()),
            tx_hash: Some(tx_hash),
            status: Some(status.into()),
            detected_at: Some(self.detected_at.to_rfc3339()),
            ..Default::default()
        }
    }

    /// `wallet.deposit.detected`.
    pub fn detected(&self) -> PaymentsPayload {
        let (_, pending) = self.hash();
        Self::envelope(
            DEPOSIT_DETECTED,
            DepositData {
                hash_pending: Some(pending),
                confirmations: Some(self.confirmations),
                detected_by: Some(self.detected_by.clone()),
                ..self.observed("detected")
            },
        )
    }

    /// `wallet.deposit.confirmed`, the crediting event when `safe_to_credit`.
    pub fn confirmed(
        &self,
        confirmations: u32,
        safe_to_credit: bool,
        confirmed_at: Timestamp,
    ) -> PaymentsPayload {
        Self::envelope(
            DEPOSIT_CONFIRMED,
            DepositData {
                confirmations: Some(confirmations),
                safe_to_credit: Some(safe_to_credit),
                confirmed_at: Some(confirmed_at.to_rfc3339()),
                ..self.observed("confirmed")
            },
        )
    }

    /// `wallet.deposit.hash_resolved`: the real hash, no amount, no currency.
    pub fn hash_resolved(&self, real_tx_hash: &str) -> PaymentsPayload {
        Self::envelope(
            DEPOSIT_HASH_RESOLVED,
            DepositData {
                customer_id: self.customer_id.clone(),
                deposit_id: Some(self.deposit_id),
                tx_hash: Some(real_tx_hash.to_string()),
                detected_at: Some(self.detected_at.to_rfc3339()),
                ..Default::default()
            },
        )
    }
}

/// Facts of a wallet transfer the tenant initiated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalletTransfer {
    /// The transaction; empty omits it.
    pub tx_hash: String,
    /// The tenant's customer UUID whose wallet sent.
    pub customer_id: String,
    /// The rail (`polygon`, `tron`, ...).
    pub network: String,
    /// The token moved (`USDC`, `USDT`).
    pub currency: String,
    /// The sending wallet's address.
    pub from_address: String,
    /// The receiving address.
    pub to_address: String,
    /// Micro-units sent, rendered with 6 places.
    pub amount: Micros,
    /// The transfer's network fee in micro-units of the token, rendered with 6 places.
    pub gas_fee: Micros,
    /// The including block, once known.
    pub block_number: Option<u64>,
}

impl WalletTransfer {
    /// `wallet.transfer.<status>` (`confirmed` is the one the spec shows).
    pub fn event(&self, status: &str, confirmed_at: Option<Timestamp>) -> PaymentsPayload {
        PaymentsPayload::Wallet(WalletEnvelope {
            event: format!("{WALLET_TRANSFER_PREFIX}{status}"),
            data: WalletData::Transfer(WalletTransferData {
                tx_hash: Some(self.tx_hash.clone()).filter(|s| !s.is_empty()),
                customer_id: self.customer_id.clone(),
                network: Some(self.network.clone()),
                currency: Some(self.currency.clone()),
                from_address: Some(self.from_address.clone()),
                to_address: Some(self.to_address.clone()),
                amount: Some(self.amount.to_decimal_string()),
                gas_fee: Some(self.gas_fee.to_decimal_string()),
                status: Some(status.into()),
                confirmed_at: confirmed_at.map(Timestamp::to_rfc3339),
                block_number: self.block_number,
            }),
        })
    }
}
