//! Requests and views of the checkout API: what a business sends and reads back.

use crate::model::{Business, Session, SessionDeposit};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::time::Timestamp;

/// `POST /api/v1/checkout/sessions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateSessionRequest {
    /// Amount due: a positive decimal string with at most 6 places.
    #[cfg_attr(
        feature = "utoipa",
        schema(example = "25.00", pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$")
    )]
    pub amount: String,
    /// `USDC`, `USDT`, or `USD` (either stablecoin, at par).
    #[cfg_attr(
        feature = "utoipa",
        schema(example = "USDC", pattern = "^(USDC|USDT|USD)$")
    )]
    pub currency: String,
    /// The business's own reference (an order number), up to 128 characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 128))]
    pub reference: Option<String>,
    /// What is bought, shown to the payer; up to 500 characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 500))]
    pub description: Option<String>,
    /// The payer's name, up to 200 characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 200))]
    pub customer_name: Option<String>,
    /// The payer's e-mail address, up to 254 characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 254))]
    pub customer_email: Option<String>,
    /// The business's own customer id (the deposit webhooks' `customer_id`), up to 128
    /// characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 128))]
    pub customer_id: Option<String>,
    /// Networks accepted (`polygon`, `tron`, `solana`, ...). Default: every configured
    /// network that watches deposits and carries an accepted token.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_items = 8))]
    pub networks: Option<Vec<String>>,
    /// Tokens accepted. Default: the currency's token, or both for `USD`. A `USDC` or
    /// `USDT` session accepts only that token.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_items = 2))]
    pub tokens: Option<Vec<String>>,
    /// Seconds until the session expires: 60 to 604800 (7 days). Default 3600.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(minimum = 60, maximum = 604800))]
    pub expires_in_secs: Option<u64>,
    /// Up to 20 keys of up to 40 characters, each with a string value of up to 500
    /// characters; echoed in `payment.*` webhooks.
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `POST /api/v1/checkout/sessions/{session_id}/simulate-payment` (test keys only): a
/// simulated deposit into a test session, as a real one would arrive.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SimulatePaymentRequest {
    /// Amount paid; default: what is still due (or the amount, once nothing is due).
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$"))]
    pub amount: Option<String>,
    /// Token paid; default: the session's first accepted token.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(pattern = "^(USDC|USDT)$"))]
    pub token: Option<String>,
    /// Network paid on; default: the session's first network.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 32))]
    pub network: Option<String>,
    /// `false` records the deposit as detected only (confirming); default `true`.
    #[serde(default)]
    pub confirmed: Option<bool>,
}

/// One way to pay, as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PayOptionView {
    /// The network (`polygon`, `tron`, ...).
    pub network: String,
    /// The token accepted there.
    pub token: String,
    /// The session's own deposit address there.
    pub address: String,
}

/// One deposit into the session's addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct DepositView {
    /// The integer idempotency key of the deposit webhooks.
    pub deposit_id: u64,
    /// The network it arrived on.
    pub network: String,
    /// Which session address received it.
    pub address: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// Decimal string, 6 places.
    pub amount: String,
    /// The real hash, or the `pending_...` placeholder while `hash_pending`.
    pub tx_hash: String,
    /// True while the real hash is not known.
    pub hash_pending: bool,
    /// Confirmations last seen.
    pub confirmations: u64,
    /// `detected`, `confirmed_unsafe` (confirmed, not safe to credit) or `credited`.
    pub status: String,
    /// The part that paid the amount, 6 places.
    pub applied: String,
    /// The part beyond the amount, 6 places.
    pub excess: String,
    /// Arrived after expiry or after the session ended.
    pub late: bool,
    /// RFC 3339.
    pub detected_at: String,
    /// RFC 3339; absent until confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
}

impl DepositView {
    /// The view of a stored deposit.
    pub fn of(d: &SessionDeposit) -> Self {
        DepositView {
            deposit_id: d.deposit_id,
            network: d.network.clone(),
            address: d.address.clone(),
            token: d.token.as_str().into(),
            amount: d.amount.to_decimal_string(),
            tx_hash: d.wire_hash().into(),
            hash_pending: d.tx_hash.is_none(),
            confirmations: d.confirmations,
            status: d.state.as_str().into(),
            applied: d.applied.to_decimal_string(),
            excess: d.excess.to_decimal_string(),
            late: d.late,
            detected_at: d.detected_at.to_rfc3339(),
            confirmed_at: d.confirmed_at.map(Timestamp::to_rfc3339),
        }
    }
}

/// A payment session as its business reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SessionView {
    /// The numeric id of the list item (spec 2.5).
    pub id: i64,
    /// `cs_...`.
    pub session_id: String,
    /// The owning business.
    pub business_id: String,
    /// `live` or `test`.
    pub mode: String,
    /// pending, paid, expired or failed.
    pub status: String,
    /// Amount due, decimal string with 6 places.
    pub amount: String,
    /// `USDC`, `USDT` or `USD`.
    pub currency: String,
    /// How it is paid: `crypto`.
    pub payment_method: String,
    /// The ways to pay: each network and token with the session's own address.
    pub payment_options: Vec<PayOptionView>,
    /// The payer's page: `/pay/{session_id}`.
    pub payment_url: String,
    /// The business's reference.
    pub reference: String,
    /// What is bought.
    pub description: String,
    /// The payer's name.
    pub customer_name: String,
    /// The payer's e-mail.
    pub customer_email: String,
    /// The business's customer id, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<String>,
    /// The business's metadata.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Confirmed and credited toward the amount, 6 places.
    pub amount_received: String,
    /// Detected, not yet confirmed, 6 places.
    pub amount_pending: String,
    /// Still to pay, 6 places (`0.000000` once covered).
    pub amount_due: String,
    /// Paid beyond the amount, 6 places.
    pub excess_amount: String,
    /// Something arrived after expiry or after the session ended.
    pub late: bool,
    /// What arrived late, 6 places.
    pub late_amount: String,
    /// What the business owes back to payers for this session, 6 places: excess, late,
    /// and the received part of a session that failed or expired unpaid.
    pub refundable_amount: String,
    /// Why it failed (`cancelled`, `underpaid: ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The network of the deposit that completed the payment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// Its transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// RFC 3339.
    pub expires_at: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// RFC 3339, once paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_at: Option<String>,
    /// Every deposit, oldest first.
    pub deposits: Vec<DepositView>,
    /// The payment link (`plink_...`) the payer opened this session from; absent for a
    /// session the business created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_link_id: Option<String>,
}

impl SessionView {
    /// The view of a session and its deposits.
    pub fn of(s: &Session, deposits: &[SessionDeposit]) -> Self {
        let due = s.amount.get().saturating_sub(s.applied_total().get());
        SessionView {
            id: s.number,
            session_id: s.id.clone(),
            business_id: s.business.clone(),
            mode: s.mode.as_str().into(),
            status: s.status.as_str().into(),
            amount: s.amount.to_decimal_string(),
            currency: s.currency.clone(),
            payment_method: crate::events::PAYMENT_METHOD.into(),
            payment_options: s
                .options
                .iter()
                .map(|o| PayOptionView {
                    network: o.network.clone(),
                    token: o.token.as_str().into(),
                    address: o.address.clone(),
                })
                .collect(),
            payment_url: format!("/pay/{}", s.id),
            reference: s.reference.clone(),
            description: s.description.clone(),
            customer_name: s.customer_name.clone(),
            customer_email: s.customer_email.clone(),
            customer_id: s.customer_id.clone(),
            metadata: s.metadata.clone(),
            amount_received: s.applied_total().to_decimal_string(),
            amount_pending: s.pending.to_decimal_string(),
            amount_due: stablecoin_core::domain::money::Micros::new(due).to_decimal_string(),
            excess_amount: s.excess.to_decimal_string(),
            late: !s.late.is_zero(),
            late_amount: s.late.to_decimal_string(),
            refundable_amount: s.refundable.to_decimal_string(),
            failure_reason: s.failure_reason.clone(),
            network: s.paid_network.clone(),
            tx_hash: s.paid_tx_hash.clone(),
            expires_at: s.expires_at.to_rfc3339(),
            created_at: s.created_at.to_rfc3339(),
            updated_at: s.updated_at.to_rfc3339(),
            paid_at: s.paid_at.map(Timestamp::to_rfc3339),
            deposits: deposits.iter().map(DepositView::of).collect(),
            payment_link_id: s.payment_link.clone(),
        }
    }
}

/// One item of `GET /api/v1/checkout/list`: exactly the spec's fields (2.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ListItem {
    /// The session's numeric id.
    pub id: i64,
    /// `cs_...`.
    pub session_id: String,
    /// The business's reference.
    pub reference: String,
    /// Amount due, a JSON number in the currency's unit (the spec's type; the exact
    /// decimal string is `amount` of the session read).
    #[cfg_attr(feature = "utoipa", schema(value_type = f64))]
    pub amount: serde_json::Number,
    /// `USDC`, `USDT` or `USD`.
    pub currency: String,
    /// pending, paid, expired or failed.
    pub status: String,
    /// `crypto`.
    pub payment_method: String,
    /// The network the payment completed on; empty until paid.
    pub network: String,
    /// What is bought.
    pub description: String,
    /// The payer's name.
    pub customer_name: String,
    /// The payer's e-mail.
    pub customer_email: String,
    /// RFC 3339, once paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_at: Option<String>,
}

impl ListItem {
    /// The list item of a session.
    pub fn of(s: &Session) -> Self {
        let amount = s
            .amount
            .to_decimal_string()
            .parse::<serde_json::Number>()
            .unwrap_or_else(|_| serde_json::Number::from(0u8));
        ListItem {
            id: s.number,
            session_id: s.id.clone(),
            reference: s.reference.clone(),
            amount,
            currency: s.currency.clone(),
            status: s.status.as_str().into(),
            payment_method: crate::events::PAYMENT_METHOD.into(),
            network: s.paid_network.clone().unwrap_or_default(),
            description: s.description.clone(),
            customer_name: s.customer_name.clone(),
            customer_email: s.customer_email.clone(),
            paid_at: s.paid_at.map(Timestamp::to_rfc3339),
        }
    }
}

/// The list envelope (spec 2.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SessionList {
    /// Page size used (1-100, default 20).
    pub limit: u32,
    /// 1-based page (default 1).
    pub page: u32,
    /// Matching sessions across all pages.
    pub total: u64,
    /// This page's sessions, newest first.
    pub payments: Vec<ListItem>,
}

/// A business as its tenant reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct BusinessView {
    /// `biz_...`.
    pub id: String,
    /// Shown to payers.
    pub name: String,
    /// RFC 3339.
    pub created_at: String,
    /// Automatic refunds of excess and late payments to the paying address (default
    /// off).
    #[serde(default)]
    pub auto_refunds: bool,
}

impl BusinessView {
    /// The view of a stored business.
    pub fn of(b: &Business) -> Self {
        BusinessView {
            id: b.id.clone(),
            name: b.name.clone(),
            created_at: b.created_at.to_rfc3339(),
            auto_refunds: b.auto_refunds,
        }
    }
}

/// A new business with its two keys, each shown this once (only hashes are stored).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct NewBusiness {
    /// The business.
    pub business: BusinessView,
    /// `live_sk_...`: live sessions (real deposits). Present in the creating answer only
    /// (an idempotent replay of the creation answers without the keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_key: Option<String>,
    /// `test_sk_...`: test sessions (simulated deposits); as `live_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_key: Option<String>,
}

impl std::fmt::Debug for NewBusiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewBusiness")
            .field("business", &self.business)
            .field("live_key", &"<redacted>")
            .field("test_key", &"<redacted>")
            .finish()
    }
}
