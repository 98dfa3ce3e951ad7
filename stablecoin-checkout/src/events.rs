//! The payments-family facts checkout writes to the outbox (spec 6.2), in their wire shape.
//!
//! The webhooks crate parses each payload strictly before it signs and sends it (its
//! `PaymentsPayload`), so a field this module gets wrong fails a delivery visibly instead
//! of reaching a receiver; its golden files pin the bytes. Checkout does not depend on
//! the webhooks crate (as escrow does not): it writes facts, the webhooks crate delivers.
//!
//! - `payment.confirmed` / `payment.failed`: flat; `network`, `tx_hash`, `paid_at` and
//!   `metadata` omitted when they do not apply, `payment.failed` never has `paid_at`.
//! - `wallet.deposit.detected` / `.confirmed` / `.hash_resolved`: an envelope
//!   `{"event", "data"}`; `deposit_id` an integer, `amount` a decimal string, the
//!   placeholder `tx_hash` while `hash_pending`.

use crate::model::{Session, SessionDeposit};
use serde_json::{Map, Value, json};
use stablecoin_core::domain::payments_events::{DepositFields, deposit_payload};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::OutboxEvent;

/// `payment.confirmed`.
pub const PAYMENT_CONFIRMED: &str = "payment.confirmed";
/// `payment.failed`.
pub const PAYMENT_FAILED: &str = "payment.failed";
pub use stablecoin_core::domain::payments_events::{
    DEPOSIT_CONFIRMED, DEPOSIT_DETECTED, DEPOSIT_HASH_RESOLVED,
};

/// The `payment_method` of every checkout session.
pub const PAYMENT_METHOD: &str = "crypto";

fn outbox(
    id: String,
    session: &Session,
    event: &str,
    at: Timestamp,
    payload: Value,
) -> OutboxEvent {
    OutboxEvent {
        id,
        tenant: session.tenant.0.clone(),
        event_type: event.to_string(),
        occurred_at: at,
        payload,
    }
}

/// `payment.confirmed` (status `paid`) or `payment.failed` (status `failed`) of a session
/// that just reached that status.
pub fn payment_event(id: String, session: &Session, at: Timestamp) -> OutboxEvent {
    let paid = session.paid_at.is_some();
    let event = if paid {
        PAYMENT_CONFIRMED
    } else {
        PAYMENT_FAILED
    };
    let mut p = Map::new();
    p.insert("event".into(), json!(event));
    p.insert("session_id".into(), json!(session.id));
    p.insert("reference".into(), json!(session.reference));
    p.insert("amount".into(), json!(session.amount.to_decimal_string()));
    p.insert("currency".into(), json!(session.currency));
    p.insert("status".into(), json!(if paid { "paid" } else { "failed" }));
    p.insert("payment_method".into(), json!(PAYMENT_METHOD));
    if let Some(n) = &session.paid_network {
        p.insert("network".into(), json!(n));
    }
    if let Some(h) = &session.paid_tx_hash {
        p.insert("tx_hash".into(), json!(h));
    }
    p.insert("created_at".into(), json!(session.created_at.to_rfc3339()));
    if let Some(t) = session.paid_at {
        p.insert("paid_at".into(), json!(t.to_rfc3339()));
    }
    if !session.metadata.is_empty() {
        p.insert("metadata".into(), Value::Object(session.metadata.clone()));
    }
    p.insert("timestamp".into(), json!(at.unix_secs()));
    outbox(id, session, event, at, Value::Object(p))
}

pub use stablecoin_core::domain::payments_events::DepositEventKind;

/// A `wallet.deposit.*` event of a session deposit, built by the core's one builder of
/// the payments wallet facts. `customer_id` is the session's `customer_id`, or the
/// session id when the business gave none.
pub fn deposit_event(
    id: String,
    session: &Session,
    dep: &SessionDeposit,
    kind: DepositEventKind,
    at: Timestamp,
) -> OutboxEvent {
    let fields = DepositFields {
        customer_id: session
            .customer_id
            .clone()
            .unwrap_or_else(|| session.id.clone()),
        deposit_id: dep.deposit_id,
        address: dep.address.clone(),
        network: dep.network.clone(),
        token: dep.token,
        amount: dep.amount,
        tx_hash: dep.tx_hash.clone(),
        placeholder: dep.placeholder.clone(),
        confirmations: dep.confirmations,
        detected_at: dep.detected_at,
        confirmed_at: Some(dep.confirmed_at.unwrap_or(at)),
        detected_by: dep.detected_by.clone(),
    };
    let (event, payload) = deposit_payload(kind, &fields);
    outbox(id, session, event, at, payload)
}

/// `refund.created`: a refund was recorded (with an address, or as a claim link).
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

/// A `refund.*` event (flat, like `payment.*`): `event`, `refund_id`, `session_id`,
/// `reference`, `amount`, `token`, `status`, then `network`, `address`, `tx_hash`,
/// `reason`, `failure_reason` and `claim_url` when they apply, `created_at`,
/// `timestamp`.
pub fn refund_event(
    id: String,
    session: &Session,
    r: &crate::refund_model::Refund,
    event: &str,
    at: Timestamp,
) -> OutboxEvent {
    let mut p = Map::new();
    p.insert("event".into(), json!(event));
    p.insert("refund_id".into(), json!(r.id));
    p.insert("session_id".into(), json!(r.session));
    p.insert("reference".into(), json!(session.reference));
    p.insert("amount".into(), json!(r.amount.to_decimal_string()));
    p.insert("token".into(), json!(r.token.to_string()));
    p.insert("status".into(), json!(r.status.wire()));
    let mut opt = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|s| !s.is_empty()) {
            p.insert(k.into(), json!(v));
        }
    };
    opt("network", r.network.clone());
    opt("address", r.address.clone());
    opt("tx_hash", r.tx_hash.clone());
    opt("reason", Some(r.reason.clone()));
    opt("failure_reason", r.failure_reason.clone());
    opt("claim_url", r.claim_expires_at.map(|_| r.claim_path()));
    p.insert("created_at".into(), json!(r.created_at.to_rfc3339()));
    p.insert("timestamp".into(), json!(at.unix_secs()));
    outbox(id, session, event, at, Value::Object(p))
}
