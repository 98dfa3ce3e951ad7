//! Requests and responses of the escrow API (API shapes; absent fields are omitted,
//! never null). Amounts in responses are base-unit strings (10^-6 of a TRON USDT
//! token), timestamps RFC 3339 UTC.

use crate::model::{Deal, HistoryEntry, PayoutKind, PayoutRecord};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::Token;

/// `POST /v1/escrows`. Unknown fields are refused when deserializing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateEscrowRequest {
    /// E.164 phone of the buyer's wallet (provisioned and linked to the tenant).
    pub buyer_phone_number: String,
    /// E.164 phone of the seller's wallet (provisioned and linked to the tenant).
    pub seller_phone_number: String,
    /// Whole tokens (`"150"`); responses carry base units (`"150000000"`).
    pub amount: String,
    /// `"USDT"` (the default and the only token escrow supports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The partner's reference (1-200 characters).
    pub reference: String,
    /// Funding window in seconds (default 24 h, within the configured bounds).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole_seconds"
    )]
    pub funding_window_secs: Option<u64>,
    /// Inspection window in seconds, starting at confirmed funding; absent means the
    /// escrow never releases by itself.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole_seconds"
    )]
    pub auto_release_after_secs: Option<u64>,
}

/// A count of seconds: a JSON integer, or a number with no fraction (`3600.0` is the
/// integer 3600 in JSON, and JSON Schema says so too), or null.
fn whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct V;
    impl<'a> serde::de::Visitor<'a> for V {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a whole number of seconds")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            u64::try_from(v)
                .map(Some)
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
            // 2^64 is exactly representable; every smaller whole f64 converts exactly.
            if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
                Ok(Some(v as u64))
            } else {
                Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'a>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(V)
        }
    }
    d.deserialize_option(V)
}

/// The escrow action body (spec 2.2): release, refund, dispute, cancel. Unknown fields
/// are refused when deserializing (a `payout_address` or an `idempotency_key` must never
/// be silently dropped); the server reports that as `UNKNOWN_FIELD`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EscrowActionRequest {
    /// `BUYER` or `SELLER`: the partner's assertion that it acts for that user.
    /// Recorded as evidence, never verified, never changes who may act.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    /// Required to raise a dispute, optional otherwise; part of the permanent history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Staff resolution of a DISPUTED escrow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// `RELEASE` (to the seller) or `REFUND` (to the buyer).
    pub resolution: String,
    /// Required: the recorded admin reasoning.
    pub resolution_note: String,
}

/// Staff authorisation to return a recoverable balance to the buyer's linked wallet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RecoveryRequest {
    /// `PARTIAL`, `EXCESS`, `LATE` or `UNSUPPORTED_TOKEN`.
    pub kind: String,
    /// The token (default: the escrow's token; for `UNSUPPORTED_TOKEN` the one held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Required: why staff authorise it.
    pub note: String,
}

/// `GET /v1/escrows` query.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ListEscrowsQuery {
    /// Filter by state (`CREATED`, `FUNDED`, ...).
    #[serde(default)]
    pub state: Option<String>,
    /// 1-100, default 20.
    #[serde(default)]
    pub limit: Option<u32>,
    /// 1-based, default 1.
    #[serde(default)]
    pub page: Option<u32>,
}

/// A recoverable balance as shown to tenants and staff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecoverableView {
    /// `PARTIAL`, `EXCESS`, `LATE` or `UNSUPPORTED_TOKEN`: what the balance came from.
    pub kind: String,
    /// The token held (`USDT`, or another token for `UNSUPPORTED_TOKEN`).
    pub token: String,
    /// Base units.
    pub amount: String,
}

/// The escrow view (spec 2.1), plus a few fields the spec leaves open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct EscrowView {
    /// `esc_...`, stable for the deal's life.
    pub id: String,
    /// Always `escrow`.
    pub object: String,
    /// `CREATED`, `FUNDED`, `DISPUTED`, `RELEASED`, `REFUNDED`, `EXPIRED` or `CANCELLED`.
    pub state: String,
    /// Base units.
    pub amount: String,
    /// `USDT`, the only token escrow moves.
    pub token: String,
    /// `tron`.
    pub rail: String,
    /// The TRON network the host's node serves (the reference server reads it from the
    /// node's genesis block): `mainnet`, `nile`, `shasta`, `private` (any other chain),
    /// `unknown` (the node could not be asked at start); `simulated` on a simulated
    /// chain. A testnet is never `mainnet`.
    pub network: String,
    /// The TRON chain id (728126428 on mainnet, 3448148188 on Nile; 0 on a simulated
    /// chain or when unknown).
    pub chain_id: u64,
    /// The partner's reference, as given at creation.
    pub reference: String,
    /// The deal's own TRON address: the buyer pays the amount here.
    pub escrow_address: String,
    /// E.164 phone of the buyer's wallet.
    pub buyer_phone_number: String,
    /// E.164 phone of the seller's wallet.
    pub seller_phone_number: String,
    /// The linked wallets' TRON addresses: refunds and releases go there, nowhere else.
    pub buyer_address: String,
    /// The seller's linked wallet's TRON address: a release goes there.
    pub seller_address: String,
    /// End of the funding window: deposits from then on are late, and an unfunded escrow
    /// expires.
    pub funding_expires_at: String,
    /// Confirmed deposits counted toward the amount, base units.
    pub funded_amount: String,
    /// When confirmed deposits reached the amount.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub funded_at: Option<String>,
    /// The inspection window, when the escrow has one (absent: no automatic release).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub auto_release_after_secs: Option<u64>,
    /// When the escrow releases to the seller by itself, unless a refund, dispute or release
    /// came first (set on funding when there is an inspection window).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub auto_release_at: Option<String>,
    /// True while a release or refund payout is claimed and not yet settled on chain; no
    /// escrow webhook is a settlement proof while it is true.
    pub payout_pending: bool,
    /// The transaction of the confirmed release or refund.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_tx_hash: Option<String>,
    /// Why the last payout failed; cleared once a later payout is confirmed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_failure_reason: Option<String>,
    /// When the release payout was confirmed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub released_at: Option<String>,
    /// When the refund payout was confirmed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub refunded_at: Option<String>,
    /// When the tenant raised the dispute.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub disputed_at: Option<String>,
    /// The `reason` the tenant gave for the dispute.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dispute_reason: Option<String>,
    /// Staff reasoning of a dispute resolution, once its payout is confirmed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub resolution_note: Option<String>,
    /// When the tenant cancelled the unfunded escrow.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cancelled_at: Option<String>,
    /// When the funding window closed unpaid.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expired_at: Option<String>,
    /// Recoverable balances awaiting a staff recovery (omitted when none).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub recoverable: Vec<RecoverableView>,
    /// True only for a sandbox simulation: nothing was stored.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub simulated: bool,
    /// When the escrow was created.
    pub created_at: String,
    /// When the escrow last changed.
    pub updated_at: String,
}

impl EscrowView {
    /// The API view of a stored deal.
    pub fn from_deal(d: &Deal) -> EscrowView {
        let ts = |t: Option<stablecoin_core::domain::time::Timestamp>| t.map(|t| t.to_rfc3339());
        EscrowView {
            id: d.id.0.clone(),
            object: "escrow".into(),
            state: d.state.as_str().into(),
            amount: d.amount.to_base_units_string(),
            token: d.token.as_str().into(),
            rail: d.rail.clone(),
            network: d.network.clone(),
            chain_id: d.chain_id,
            reference: d.reference.clone(),
            escrow_address: d.escrow_address.0.clone(),
            buyer_phone_number: d.buyer.phone.to_string(),
            seller_phone_number: d.seller.phone.to_string(),
            buyer_address: d.buyer.address.0.clone(),
            seller_address: d.seller.address.0.clone(),
            funding_expires_at: d.funding_expires_at.to_rfc3339(),
            funded_amount: d.applied.to_base_units_string(),
            funded_at: ts(d.funded_at),
            auto_release_after_secs: d.auto_release_after_secs,
            auto_release_at: ts(d.auto_release_at),
            payout_pending: d.payout.is_some(),
            payout_tx_hash: d.payout_tx_hash.clone(),
            payout_failure_reason: d.payout_failure_reason.clone(),
            released_at: ts(d.released_at),
            refunded_at: ts(d.refunded_at),
            disputed_at: ts(d.disputed_at),
            dispute_reason: d.dispute_reason.clone(),
            resolution_note: d.resolution_note.clone(),
            cancelled_at: ts(d.cancelled_at),
            expired_at: ts(d.expired_at),
            recoverable: d
                .recoverable
                .iter()
                .map(|r| RecoverableView {
                    kind: r.kind.as_str().into(),
                    token: r.token.as_str().into(),
                    amount: r.amount.to_base_units_string(),
                })
                .collect(),
            simulated: false,
            created_at: d.created_at.to_rfc3339(),
            updated_at: d.updated_at.to_rfc3339(),
        }
    }
}

/// A page of escrows, newest first (API-CONVENTIONS lists).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct EscrowList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Escrows matching the filter, over all pages.
    pub total: u64,
    /// This page's escrows.
    pub escrows: Vec<EscrowView>,
}

/// One entry of an escrow's permanent history. Its `event_id` is also the webhook's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct EscrowEventView {
    /// `evt_...`: the same id as the event's webhook, so receivers can deduplicate.
    pub event_id: String,
    /// The event name (`escrow.funded`, ...), also the webhook's event type.
    pub event: String,
    /// The escrow it belongs to (`esc_...`).
    pub escrow_id: String,
    /// 0-based position in the escrow's history.
    pub sequence: u64,
    /// The state before the change (absent for `escrow.created`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub previous_state: Option<String>,
    /// The state after the change.
    pub state: String,
    /// Whether a payout was claimed and unsettled after the change.
    pub payout_pending: bool,
    /// `tenant`, `staff`, `system` or `chain`.
    pub actor: String,
    /// Tenant id, staff id, job name or rail.
    pub actor_id: String,
    /// The authority acted under: `api_key:key_...`, `staff:<id>`, `system:<job>`, `chain:tron`.
    pub authority: String,
    /// `BUYER` or `SELLER`: the tenant's unverified assertion of whom it acted for.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub on_behalf_of: Option<String>,
    /// The tenant's or staff's reason or note, or a failed payout's error.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Event-specific facts (the deposit, the payout, ...), per event type.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub data: Option<serde_json::Value>,
    /// When the change was committed.
    pub occurred_at: String,
}

impl EscrowEventView {
    /// The API view of a stored history entry.
    pub fn from_entry(e: &HistoryEntry) -> EscrowEventView {
        use crate::model::Actor;
        let (actor, actor_id) = match &e.actor {
            Actor::Tenant { tenant, .. } => ("tenant", tenant.0.clone()),
            Actor::Staff { staff_id } => ("staff", staff_id.clone()),
            Actor::System { job } => ("system", job.clone()),
            Actor::Chain { rail } => ("chain", rail.clone()),
        };
        EscrowEventView {
            event_id: e.event_id.0.clone(),
            event: e.event.clone(),
            escrow_id: e.deal.0.clone(),
            sequence: e.seq,
            previous_state: e.from_state.clone(),
            state: e.state.clone(),
            payout_pending: e.payout_pending,
            actor: actor.into(),
            actor_id,
            authority: e.authority.clone(),
            on_behalf_of: e.on_behalf_of.map(|p| p.as_str().to_string()),
            reason: e.reason.clone(),
            data: e.data.clone(),
            occurred_at: e.at.to_rfc3339(),
        }
    }
}

/// A page of an escrow's history, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct EscrowEventList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Entries in the escrow's history, over all pages.
    pub total: u64,
    /// This page's entries, newest first.
    pub events: Vec<EscrowEventView>,
}

/// The webhook payload of every escrow event, written to the outbox (`OutboxEvent.payload`)
/// in the same batch as the change: the history entry plus the escrow as it stood
/// right after the change. Receivers deduplicate by `event_id`; no escrow webhook is a
/// settlement proof before `escrow.payout_pending` is false (spec 6.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct EscrowWebhookPayload {
    /// The history entry, flattened into the payload's top level.
    #[serde(flatten)]
    pub entry: EscrowEventView,
    /// The escrow as it stood right after the change.
    pub escrow: EscrowView,
}

/// An outbound payment of a deal, as staff see it (recoveries and deal payouts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PayoutView {
    /// Also the rail payment id.
    pub id: String,
    /// The escrow it pays out of (`esc_...`).
    pub escrow_id: String,
    /// `RELEASE`, `REFUND` or `RECOVERY`.
    pub purpose: String,
    /// `PARTIAL`, `EXCESS`, `LATE` or `UNSUPPORTED_TOKEN` (recoveries only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recovery_kind: Option<String>,
    /// `QUEUED`, `SUBMITTING`, `SUBMITTED`, `SUBMISSION_UNKNOWN`, `CONFIRMED` or `FAILED`.
    pub status: String,
    /// Base units.
    pub amount: String,
    /// The token sent.
    pub token: String,
    /// `BUYER` or `SELLER`.
    pub to: String,
    /// The party's linked wallet's TRON address.
    pub to_address: String,
    /// The transaction hash, once the rail reported one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_hash: Option<String>,
    /// Why the payout failed (`FAILED` only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error_reason: Option<String>,
    /// Who claimed it: `api_key:key_...`, `staff:<id>` or `system:auto_release`.
    pub authority: String,
    /// The tenant's reason, the staff resolution note or the recovery note.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
    /// When the payout was claimed.
    pub created_at: String,
    /// When the payout last changed.
    pub updated_at: String,
    /// When it was confirmed or failed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub settled_at: Option<String>,
}

impl PayoutView {
    /// The staff view of a stored payout.
    pub fn from_record(p: &PayoutRecord) -> PayoutView {
        let (purpose, recovery_kind) = match p.kind {
            PayoutKind::Deal(purpose) => (purpose.as_str().to_string(), None),
            PayoutKind::Recovery(k) => ("RECOVERY".to_string(), Some(k.as_str().to_string())),
        };
        PayoutView {
            id: p.id.clone(),
            escrow_id: p.deal.0.clone(),
            purpose,
            recovery_kind,
            status: p.status.as_str().into(),
            amount: p.amount.to_base_units_string(),
            token: p.token.as_str().into(),
            to: p.to.as_str().into(),
            to_address: p
                .payment
                .legs
                .first()
                .map(|l| l.to.0.clone())
                .unwrap_or_default(),
            tx_hash: p.tx_hash.clone(),
            error_reason: p.error_reason.clone(),
            authority: p.requested_by.authority(),
            note: p.note.clone(),
            created_at: p.created_at.to_rfc3339(),
            updated_at: p.updated_at.to_rfc3339(),
            settled_at: p.settled_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// One token's money of one deal, from the ledger (micro-units).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenAccounting {
    /// The token; always set by
    /// [`EscrowAdmin::accounting`](crate::admin::EscrowAdmin::accounting).
    pub token: Option<Token>,
    /// Every recorded deposit (from the deal record).
    pub deposited: u64,
    /// Posted balances of the deal's accounts (pending payouts still included).
    pub held: u64,
    /// Posted balance of the `partial` account: counted deposits of a deal that closed
    /// unfunded, awaiting recovery.
    pub partial: u64,
    /// Posted balance of the `excess` account: money beyond the amount.
    pub excess: u64,
    /// Posted balance of the `late` account: deposits after the window or to a closed deal.
    pub late: u64,
    /// Posted balance of the `unsupported` account: deposits of a token the deal is not in.
    pub unsupported: u64,
    /// Confirmed payouts.
    pub paid_out: u64,
    /// Payouts claimed and not yet settled (a part of the balances above).
    pub in_flight: u64,
}

impl TokenAccounting {
    /// What the deal address should still hold once nothing is in flight on chain.
    pub fn custody(&self) -> u64 {
        self.held + self.partial + self.excess + self.late + self.unsupported
    }

    /// Conservation: every recorded deposit is held, recoverable or paid out.
    pub fn is_balanced(&self) -> bool {
        self.deposited as u128 == self.custody() as u128 + self.paid_out as u128
    }
}

/// A deal's money per token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealAccounting {
    /// The escrow (`esc_...`).
    pub escrow_id: String,
    /// The deal's TRON address, whose chain balance should equal the custody.
    pub escrow_address: String,
    /// One entry per token the deal was ever paid in (its own token always included).
    pub tokens: Vec<TokenAccounting>,
}

impl DealAccounting {
    /// The accounting of `token` (all zero when the deal never saw it).
    pub fn token(&self, token: Token) -> TokenAccounting {
        self.tokens
            .iter()
            .find(|t| t.token == Some(token))
            .copied()
            .unwrap_or(TokenAccounting {
                token: Some(token),
                ..Default::default()
            })
    }

    /// Conservation holds for every token ([`TokenAccounting::is_balanced`]).
    pub fn is_balanced(&self) -> bool {
        self.tokens.iter().all(TokenAccounting::is_balanced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(json: &str) -> Result<(Option<u64>, Option<u64>), String> {
        let base = r#""buyer_phone_number":"+2250700000001","seller_phone_number":"+2250700000002","amount":"1","reference":"r""#;
        serde_json::from_str::<CreateEscrowRequest>(&format!("{{{base}{json}}}"))
            .map(|r| (r.funding_window_secs, r.auto_release_after_secs))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn seconds_are_whole_json_numbers() {
        assert_eq!(windows(""), Ok((None, None)));
        assert_eq!(
            windows(r#","funding_window_secs":3600,"auto_release_after_secs":null"#),
            Ok((Some(3600), None))
        );
        assert_eq!(
            windows(r#","funding_window_secs":3600.0,"auto_release_after_secs":7.2e3"#),
            Ok((Some(3600), Some(7200)))
        );
        for bad in ["3600.5", "-1", "-1.0", "1e20", "\"3600\"", "true"] {
            assert!(
                windows(&format!(r#","funding_window_secs":{bad}"#)).is_err(),
                "{bad}"
            );
        }
    }
}
