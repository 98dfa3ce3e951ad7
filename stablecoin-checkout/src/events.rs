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
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::OutboxEvent;

/// `payment.confirmed`.
pub const PAYMENT_CONFIRMED: &str = "payment.confirmed";
/// `payment.failed`.
pub const PAYMENT_FAILED: &str = "payment.failed";
/// `wallet.deposit.detected`.
pub const DEPOSIT_DETECTED: &str = "wallet.deposit.detected";
/// `wallet.deposit.confirmed`.
pub const DEPOSIT_CONFIRMED: &str = "wallet.deposit.confirmed";
/// `wallet.deposit.hash_resolved`.
pub const DEPOSIT_HASH_RESOLVED: &str = "wallet.deposit.hash_resolved";

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

/// Which deposit event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepositEventKind {
    /// Seen; credits nothing.
    Detected,
    /// Confirmations reached; the crediting event when `safe_to_credit`.
    Confirmed {
        /// Whether the deposit was credited by this event.
        safe_to_credit: bool,
    },
    /// The real hash of a deposit first reported without one.
    HashResolved,
}

/// A `wallet.deposit.*` event of a session deposit. `customer_id` is the session's
/// `customer_id`, or the session id when the business gave none.
pub fn deposit_event(
    id: String,
    session: &Session,
    dep: &SessionDeposit,
    kind: DepositEventKind,
    at: Timestamp,
) -> OutboxEvent {
    let customer = session
        .customer_id
        .clone()
        .unwrap_or_else(|| session.id.clone());
    let mut d = Map::new();
    d.insert("customer_id".into(), json!(customer));
    d.insert("deposit_id".into(), json!(dep.deposit_id));
    let common = |d: &mut Map<String, Value>| {
        d.insert("address".into(), json!(dep.address));
        d.insert("network".into(), json!(dep.network));
        d.insert("currency".into(), json!(dep.token.as_str()));
        d.insert("amount".into(), json!(dep.amount.to_decimal_string()));
        d.insert("tx_hash".into(), json!(dep.wire_hash()));
    };
    let confirmations = json!(dep.confirmations.min(u32::MAX as u64));
    let event = match kind {
        DepositEventKind::HashResolved => {
            d.insert("tx_hash".into(), json!(dep.wire_hash()));
            d.insert("detected_at".into(), json!(dep.detected_at.to_rfc3339()));
            DEPOSIT_HASH_RESOLVED
        }
        DepositEventKind::Detected => {
            common(&mut d);
            d.insert("hash_pending".into(), json!(dep.tx_hash.is_none()));
            d.insert("confirmations".into(), confirmations);
            d.insert("status".into(), json!("detected"));
            d.insert("detected_at".into(), json!(dep.detected_at.to_rfc3339()));
            d.insert("detected_by".into(), json!(dep.detected_by));
            DEPOSIT_DETECTED
        }
        DepositEventKind::Confirmed { safe_to_credit } => {
            common(&mut d);
            d.insert("confirmations".into(), confirmations);
            d.insert("status".into(), json!("confirmed"));
            d.insert("safe_to_credit".into(), json!(safe_to_credit));
            d.insert("detected_at".into(), json!(dep.detected_at.to_rfc3339()));
            d.insert(
                "confirmed_at".into(),
                json!(dep.confirmed_at.unwrap_or(at).to_rfc3339()),
            );
            DEPOSIT_CONFIRMED
        }
    };
    outbox(
        id,
        session,
        event,
        at,
        json!({"event": event, "data": Value::Object(d)}),
    )
}
