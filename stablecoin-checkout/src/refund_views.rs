//! Requests and views of refunds: what a business sends and reads back, and what the
//! payer's claim page shows.

use crate::refund_model::Refund;
use crate::refund_state::RefundStatus;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::time::Timestamp;

/// `POST /api/v1/checkout/sessions/{session_id}/refunds`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRefundRequest {
    /// How much: a positive decimal string with at most 6 places. Default: all that is
    /// still refundable in `token`.
    #[serde(default)]
    #[cfg_attr(
        feature = "utoipa",
        schema(example = "5.00", pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$")
    )]
    pub amount: Option<String>,
    /// `USDC` or `USDT`. Default: the one token the session has refundable money in
    /// (required when it has both).
    #[serde(default)]
    #[cfg_attr(
        feature = "utoipa",
        schema(example = "USDC", pattern = "^(USDC|USDT)$")
    )]
    pub token: Option<String>,
    /// The network to send on (`polygon`, `tron`, `solana`, ...). Required with
    /// `address`; without it, it fixes the network the payer may claim on (default: any
    /// of the session's networks that carries the token).
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 32))]
    pub network: Option<String>,
    /// Where to send it, an address of `network`. Absent: the refund gets a claim link
    /// (`/pay/refunds/{refund_id}`) where the payer enters one.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 128))]
    pub address: Option<String>,
    /// Why, shown to the payer on the claim page and in the webhooks; up to 500
    /// characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 500))]
    pub reason: Option<String>,
}

/// A refund as its business reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RefundView {
    /// `rf_...`.
    pub refund_id: String,
    /// The refunded session.
    pub session_id: String,
    /// `awaiting_claim`, `pending`, `submitted`, `completed`, `failed` or `expired`.
    pub status: String,
    /// Decimal string, 6 places.
    pub amount: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// The network it is (to be) sent on, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The destination, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The business's reason, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it failed (status `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The refund's transaction, once sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// The payer's claim page (`/pay/refunds/{refund_id}`), for a refund created
    /// without an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_url: Option<String>,
    /// Until when the claim link may be used (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_expires_at: Option<String>,
    /// Of the amount: the part taken from the excess, late or unpaid money, 6 places.
    pub from_refundable: String,
    /// Of the amount: the part taken from the business's settled funds, 6 places.
    pub from_settled: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
}

impl RefundView {
    /// The view of `r`.
    pub fn of(r: &Refund) -> RefundView {
        let claim = r.claim_expires_at.is_some();
        RefundView {
            refund_id: r.id.clone(),
            session_id: r.session.clone(),
            status: r.status.wire().into(),
            amount: r.amount.to_decimal_string(),
            token: r.token.to_string(),
            network: r.network.clone(),
            address: r.address.clone(),
            reason: Some(r.reason.clone()).filter(|s| !s.is_empty()),
            failure_reason: r.failure_reason.clone(),
            tx_hash: r.tx_hash.clone(),
            claim_url: claim.then(|| r.claim_path()),
            claim_expires_at: r.claim_expires_at.map(Timestamp::to_rfc3339),
            from_refundable: r.sources.owed_back.to_decimal_string(),
            from_settled: r.sources.settled.to_decimal_string(),
            created_at: r.created_at.to_rfc3339(),
            completed_at: r.completed_at.map(Timestamp::to_rfc3339),
        }
    }
}

/// What one token of a session can still be refunded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RefundableView {
    /// `USDC` or `USDT`.
    pub token: String,
    /// All that can still be refunded, 6 places.
    pub amount: String,
    /// Of it: excess, late and unpaid money, 6 places.
    pub from_refundable: String,
    /// Of it: the business's settled funds (a paid session's amount), 6 places.
    pub from_settled: String,
}

/// `GET /api/v1/checkout/sessions/{session_id}/refunds`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RefundList {
    /// The session's refunds, newest first.
    pub refunds: Vec<RefundView>,
    /// What can still be refunded, per token (tokens with nothing left are omitted).
    pub refundable: Vec<RefundableView>,
}

/// What the payer's claim page shows of a refund, and nothing more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundClaimView {
    /// `rf_...`.
    pub refund_id: String,
    /// The business that refunds, as it named itself.
    pub business_name: String,
    /// The session's reference (an order number), if any.
    pub reference: Option<String>,
    /// 6 places.
    pub amount: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// The refund's wire status.
    pub status: String,
    /// The business's reason, if any.
    pub reason: Option<String>,
    /// Networks the payer may choose (while awaiting the claim).
    pub networks: Vec<String>,
    /// The chosen network, once claimed.
    pub network: Option<String>,
    /// The chosen address, once claimed.
    pub address: Option<String>,
    /// The refund's transaction, once sent.
    pub tx_hash: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Until when it can be claimed, RFC 3339 UTC.
    pub expires_at: Option<String>,
    /// A test-mode refund (nothing moves on chain).
    pub sandbox: bool,
}

impl RefundClaimView {
    /// The view of `r` of a business named `business_name`, for a session with
    /// `reference`.
    pub fn of(r: &Refund, business_name: String, reference: &str) -> RefundClaimView {
        RefundClaimView {
            refund_id: r.id.clone(),
            business_name,
            reference: Some(reference.to_string()).filter(|s| !s.is_empty()),
            amount: r.amount.to_decimal_string(),
            token: r.token.to_string(),
            status: r.status.wire().into(),
            reason: Some(r.reason.clone()).filter(|s| !s.is_empty()),
            networks: if r.status == RefundStatus::AwaitingClaim {
                r.claim_networks.clone()
            } else {
                Vec::new()
            },
            network: r.network.clone(),
            address: r.address.clone(),
            tx_hash: r.tx_hash.clone(),
            failure_reason: r.failure_reason.clone(),
            expires_at: r.claim_expires_at.map(Timestamp::to_rfc3339),
            sandbox: r.mode == crate::model::Mode::Test,
        }
    }
}
