//! The receiver kit: what a tenant embedding this crate needs to accept our webhooks.
//!
//! - [`verify_wallet`] / [`verify_payments`]: signature checks over the exact bytes
//!   received, compared in constant time (see [`crate::signature`]).
//! - [`StandardVerifier`]: for an endpoint registered with Standard Webhooks signatures,
//!   checks `webhook-id`, `webhook-timestamp` and `webhook-signature`, and refuses a
//!   timestamp further than a tolerance (5 minutes) from the receiver's clock: a captured
//!   delivery replayed later is refused, which the spec's own headers (body only) cannot
//!   tell.
//! - [`parse_payments`]: typed parsing that accepts partial events. Only `customer_id` is
//!   guaranteed on deposit events; a field that is absent or of the wrong type is `None`,
//!   never an error (a partial event must not cause a 400). Only a body that is not a JSON
//!   object is refused.
//! - [`DepositHandler`]: verifies, parses and applies the deposit rules of spec 6.2 to a
//!   [`DepositBook`] (yours, or the in-memory [`MemoryDepositBook`]): dedupe on
//!   `deposit_id`, never on `tx_hash`; `detected` records a pending deposit and credits
//!   nothing; credit only on `confirmed` with `safe_to_credit` true; `hash_resolved`
//!   backfills the hash only; a re-delivered `deposit_id` is answered 200
//!   `{"status":"success","message":"already_recorded"}`.
//! - With the `axum` feature, [`axum_kit::deposit_router`]: a ready axum route doing all of
//!   the above (401 on a bad signature, 400 only on a body that is not JSON, 500 when your
//!   book fails so we retry, 200 otherwise).

use crate::error::{WebhookError, WebhookResult};
use crate::payments::{
    DEPOSIT_CONFIRMED, DEPOSIT_DETECTED, DEPOSIT_HASH_RESOLVED, DepositData, PAYMENT_CONFIRMED,
    PAYMENT_FAILED, PaymentEvent, WALLET_TRANSFER_PREFIX, WalletTransferData,
};
use crate::signature::Family;
use crate::standard;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::Clock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Verifies an `X-Svc-Signature` header (wallet-service family) over the exact body.
pub fn verify_wallet(secret: &str, body: &[u8], header: Option<&str>) -> WebhookResult<()> {
    Family::Wallet.verify(secret, body, header)
}

/// Verifies an `X-Webhook-Signature` header (payments family) over the exact body.
pub fn verify_payments(secret: &str, body: &[u8], header: Option<&str>) -> WebhookResult<()> {
    Family::Payments.verify(secret, body, header)
}

/// Verifies Standard Webhooks headers ([`crate::standard`]) against the raw body, with
/// the receiver's clock (injected) and a tolerance either way (default
/// [`standard::DEFAULT_TOLERANCE_S`], 5 minutes).
///
/// The secret is the endpoint's secret as registration or rotation returned it
/// (`svcwh_...` or `whsec_...`). A stale or post-dated timestamp is
/// `SIGNATURE_TIMESTAMP_STALE`; the other failures are those of the families' headers.
/// The signature binds the id and the timestamp, so neither can be changed to pass the
/// check; a receiver that also remembers the ids it accepted within the tolerance
/// refuses every replay.
#[derive(Clone)]
pub struct StandardVerifier {
    secret: String,
    tolerance_s: i64,
    clock: Arc<dyn Clock>,
}

/// The operating system's clock, for [`StandardVerifier::system`].
struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Timestamp {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp::from_millis(since.as_millis() as i64)
    }
}

impl StandardVerifier {
    /// A verifier of `secret` reading the time from `clock`.
    pub fn new(secret: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        StandardVerifier {
            secret: secret.into(),
            tolerance_s: standard::DEFAULT_TOLERANCE_S,
            clock,
        }
    }

    /// A verifier of `secret` reading the operating system's clock.
    pub fn system(secret: impl Into<String>) -> Self {
        Self::new(secret, Arc::new(WallClock))
    }

    /// Accepts timestamps up to `seconds` from now either way (instead of 300).
    pub fn with_tolerance_s(mut self, seconds: i64) -> Self {
        self.tolerance_s = seconds.max(0);
        self
    }

    /// Checks the three headers' values against the exact body received.
    pub fn verify(
        &self,
        body: &[u8],
        id: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
    ) -> WebhookResult<()> {
        let now_s = self.clock.now().millis().div_euclid(1000);
        standard::verify(
            &self.secret,
            body,
            id,
            timestamp,
            signature,
            now_s,
            self.tolerance_s,
        )
    }

    /// Checks a request's headers, read by name (lowercase) with `header`, e.g.
    /// `|n| headers.get(n).and_then(|v| v.to_str().ok())` over an HTTP header map.
    pub fn verify_headers<'a>(
        &self,
        body: &[u8],
        header: impl Fn(&str) -> Option<&'a str>,
    ) -> WebhookResult<()> {
        self.verify(
            body,
            header(standard::ID_HEADER),
            header(standard::TIMESTAMP_HEADER),
            header(standard::SIGNATURE_HEADER),
        )
    }
}

/// A received payments-family event, parsed leniently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaymentsEvent {
    /// `payment.confirmed` or `payment.failed` (flat).
    Payment(PaymentEvent),
    /// `wallet.deposit.detected`: record as pending, credit nothing.
    DepositDetected(DepositData),
    /// `wallet.deposit.confirmed`: credit once, and only when `safe_to_credit` is true.
    DepositConfirmed(DepositData),
    /// `wallet.deposit.hash_resolved`: backfill the real `tx_hash`, nothing else.
    DepositHashResolved(DepositData),
    /// `wallet.transfer.<status>`; `event` is the full name.
    WalletTransfer {
        /// The event name as received (`wallet.transfer.confirmed`, ...).
        event: String,
        /// The envelope's `data`, parsed leniently.
        data: WalletTransferData,
    },
    /// An event name this version does not know (or none): acknowledge, do nothing.
    Other {
        /// The `event` field, if the body had a string one.
        event: Option<String>,
    },
}

/// Keeps every field that parses on its own; `required` string fields default to "".
fn lenient<T: DeserializeOwned>(obj: &Map<String, Value>, required: &[&str]) -> Option<T> {
    let mut base = Map::new();
    for r in required {
        let v = obj
            .get(*r)
            .filter(|v| v.is_string())
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()));
        base.insert((*r).to_string(), v);
    }
    let mut keep = base.clone();
    for (k, v) in obj {
        if required.contains(&k.as_str()) {
            continue;
        }
        let mut probe = base.clone();
        probe.insert(k.clone(), v.clone());
        if serde_json::from_value::<T>(Value::Object(probe)).is_ok() {
            keep.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(Value::Object(keep)).ok()
}

/// Parses a payments-family body. Partial events parse (missing or mistyped fields are
/// `None`, a missing `customer_id` is ""); only a body that is not a JSON object is an
/// error (`INVALID_WEBHOOK_BODY`).
pub fn parse_payments(body: &[u8]) -> WebhookResult<PaymentsEvent> {
    let v: Value = serde_json::from_slice(body).map_err(|e| WebhookError::InvalidBody {
        reason: format!("not JSON: {e}"),
    })?;
    let Value::Object(obj) = v else {
        return Err(WebhookError::InvalidBody {
            reason: "not a JSON object".into(),
        });
    };
    let event = obj.get("event").and_then(Value::as_str).map(str::to_string);
    let empty = Map::new();
    let data = obj.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let deposit = || lenient::<DepositData>(data, &["customer_id"]).unwrap_or_default();
    Ok(match event.as_deref() {
        Some(PAYMENT_CONFIRMED) | Some(PAYMENT_FAILED) => {
            PaymentsEvent::Payment(lenient::<PaymentEvent>(&obj, &["event"]).unwrap_or_default())
        }
        Some(DEPOSIT_DETECTED) => PaymentsEvent::DepositDetected(deposit()),
        Some(DEPOSIT_CONFIRMED) => PaymentsEvent::DepositConfirmed(deposit()),
        Some(DEPOSIT_HASH_RESOLVED) => PaymentsEvent::DepositHashResolved(deposit()),
        Some(e) if e.starts_with(WALLET_TRANSFER_PREFIX) => PaymentsEvent::WalletTransfer {
            event: e.to_string(),
            data: lenient(data, &["customer_id"]).unwrap_or_default(),
        },
        _ => PaymentsEvent::Other { event },
    })
}

/// Your deposit records. Every method is keyed on `deposit_id` and must be idempotent.
#[async_trait]
pub trait DepositBook: Send + Sync {
    /// Records a detected (pending, uncredited) deposit. `Ok(false)` when `deposit_id` is
    /// already recorded.
    async fn record_pending(&self, deposit_id: u64, data: &DepositData) -> Result<bool, String>;
    /// Credits a confirmed deposit. `Ok(false)` when `deposit_id` was already credited
    /// (the credit must happen at most once per `deposit_id`, atomically).
    async fn credit(&self, deposit_id: u64, data: &DepositData) -> Result<bool, String>;
    /// Sets the real chain hash of a deposit (amount and currency untouched, no credit).
    /// `Ok(false)` when it already had that hash.
    async fn backfill_hash(&self, deposit_id: u64, tx_hash: &str) -> Result<bool, String>;
}

/// One deposit as [`MemoryDepositBook`] holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BookEntry {
    /// The customer the deposit belongs to (`""` when the event lacked it).
    pub customer_id: String,
    /// The decimal amount string as received, when an event carried one.
    pub amount: Option<String>,
    /// The token as received (`USDC`, `USDT`).
    pub currency: Option<String>,
    /// The hash last known: the placeholder until `hash_resolved` backfills the real one.
    pub tx_hash: Option<String>,
    /// Whether the deposit was credited (at most once).
    pub credited: bool,
}

/// An in-memory [`DepositBook`] (tests, prototypes).
#[derive(Debug, Default)]
pub struct MemoryDepositBook {
    entries: Mutex<HashMap<u64, BookEntry>>,
}

impl MemoryDepositBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// The deposit recorded under `deposit_id`, if any.
    pub fn get(&self, deposit_id: u64) -> Option<BookEntry> {
        self.entries
            .lock()
            .ok()
            .and_then(|m| m.get(&deposit_id).cloned())
    }

    /// Deposits credited so far.
    pub fn credited_count(&self) -> usize {
        self.entries
            .lock()
            .map(|m| m.values().filter(|e| e.credited).count())
            .unwrap_or(0)
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<u64, BookEntry>) -> R) -> Result<R, String> {
        let mut m = self.entries.lock().map_err(|_| "poisoned".to_string())?;
        Ok(f(&mut m))
    }
}

fn entry_of(data: &DepositData) -> BookEntry {
    BookEntry {
        customer_id: data.customer_id.clone(),
        amount: data.amount.clone(),
        currency: data.currency.clone(),
        tx_hash: data.tx_hash.clone(),
        credited: false,
    }
}

#[async_trait]
impl DepositBook for MemoryDepositBook {
    async fn record_pending(&self, deposit_id: u64, data: &DepositData) -> Result<bool, String> {
        self.with(|m| {
            if m.contains_key(&deposit_id) {
                return false;
            }
            m.insert(deposit_id, entry_of(data));
            true
        })
    }

    async fn credit(&self, deposit_id: u64, data: &DepositData) -> Result<bool, String> {
        self.with(|m| {
            let e = m.entry(deposit_id).or_insert_with(|| entry_of(data));
            if e.credited {
                return false;
            }
            if e.amount.is_none() {
                e.amount = data.amount.clone();
            }
            e.credited = true;
            true
        })
    }

    async fn backfill_hash(&self, deposit_id: u64, tx_hash: &str) -> Result<bool, String> {
        self.with(|m| {
            let e = m.entry(deposit_id).or_default();
            if e.tx_hash.as_deref() == Some(tx_hash) {
                return false;
            }
            e.tx_hash = Some(tx_hash.to_string());
            true
        })
    }
}

/// What a handled event did; [`Ack::body`] is the 200 response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// A detected deposit recorded as pending (no credit).
    RecordedPending,
    /// A confirmed, safe-to-credit deposit credited.
    Credited,
    /// A confirmed deposit not (yet) safe to credit: recorded, not credited.
    NotSafeToCredit,
    /// The real hash was backfilled.
    HashBackfilled,
    /// This `deposit_id` was already recorded (a re-delivery).
    AlreadyRecorded,
    /// Nothing to do (not a deposit event, or no `deposit_id` to key on).
    Ignored,
}

impl Ack {
    /// The `message` of the response body (`credited`, `already_recorded`, ...).
    pub fn message(self) -> &'static str {
        match self {
            Ack::RecordedPending => "recorded_pending",
            Ack::Credited => "credited",
            Ack::NotSafeToCredit => "not_safe_to_credit",
            Ack::HashBackfilled => "hash_backfilled",
            Ack::AlreadyRecorded => "already_recorded",
            Ack::Ignored => "ignored",
        }
    }

    /// `{"status":"success","message":"<message>"}`.
    pub fn body(self) -> Value {
        serde_json::json!({"status": "success", "message": self.message()})
    }
}

/// Verifies, parses and applies deposit events to a [`DepositBook`].
pub struct DepositHandler<B> {
    secret: String,
    book: B,
}

impl<B: DepositBook> DepositHandler<B> {
    /// `secret` is the endpoint's current `whsec_` secret (after a rotation, the new one:
    /// the old one no longer verifies).
    pub fn new(secret: impl Into<String>, book: B) -> Self {
        DepositHandler {
            secret: secret.into(),
            book,
        }
    }

    /// The book events are applied to (to read it back, e.g. in tests).
    pub fn book(&self) -> &B {
        &self.book
    }

    /// Handles one delivery: `body` is the exact bytes received, `signature` the
    /// `X-Webhook-Signature` header.
    pub async fn handle(&self, body: &[u8], signature: Option<&str>) -> WebhookResult<Ack> {
        verify_payments(&self.secret, body, signature)?;
        self.apply(parse_payments(body)?).await
    }

    /// Applies an already verified event.
    pub async fn apply(&self, event: PaymentsEvent) -> WebhookResult<Ack> {
        let fail = WebhookError::DepositLedger;
        let known = |fresh: bool, ack: Ack| if fresh { ack } else { Ack::AlreadyRecorded };
        Ok(match event {
            PaymentsEvent::DepositDetected(d) => match d.deposit_id {
                Some(id) => known(
                    self.book.record_pending(id, &d).await.map_err(fail)?,
                    Ack::RecordedPending,
                ),
                None => Ack::Ignored,
            },
            PaymentsEvent::DepositConfirmed(d) => match d.deposit_id {
                Some(id) if d.safe_to_credit == Some(true) => {
                    known(self.book.credit(id, &d).await.map_err(fail)?, Ack::Credited)
                }
                Some(id) => {
                    self.book.record_pending(id, &d).await.map_err(fail)?;
                    Ack::NotSafeToCredit
                }
                None => Ack::Ignored,
            },
            PaymentsEvent::DepositHashResolved(d) => match (d.deposit_id, &d.tx_hash) {
                (Some(id), Some(h)) if !h.is_empty() => known(
                    self.book.backfill_hash(id, h).await.map_err(fail)?,
                    Ack::HashBackfilled,
                ),
                _ => Ack::Ignored,
            },
            _ => Ack::Ignored,
        })
    }
}

/// The axum route of the receiver kit (feature `axum`).
#[cfg(feature = "axum")]
pub mod axum_kit {
    use super::{DepositBook, DepositHandler};
    use axum::body::Bytes;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::{Json, Router};
    use std::sync::Arc;

    /// Handles one payments-family delivery: 401 on a missing, malformed or wrong
    /// signature; 400 only when the body is not a JSON object; 500 when the book fails
    /// (so the sender retries); otherwise 200 with `{"status":"success","message":...}`,
    /// including `already_recorded` for a re-delivered `deposit_id` and for partial events.
    pub async fn deposit_webhook<B: DepositBook + 'static>(
        State(handler): State<Arc<DepositHandler<B>>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let sig = headers
            .get(crate::signature::PAYMENTS_SIGNATURE_HEADER)
            .and_then(|v| v.to_str().ok());
        match handler.handle(&body, sig).await {
            Ok(ack) => (StatusCode::OK, Json(ack.body())).into_response(),
            Err(e) => {
                let status = if e.is_signature_error() {
                    StatusCode::UNAUTHORIZED
                } else if e.code() == "INVALID_WEBHOOK_BODY" {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::INTERNAL_SERVER_ERROR
                };
                let body = serde_json::json!({"status": "error", "message": e.code()});
                (status, Json(body)).into_response()
            }
        }
    }

    /// A router answering `POST {path}` with [`deposit_webhook`].
    pub fn deposit_router<B: DepositBook + 'static>(
        path: &str,
        handler: Arc<DepositHandler<B>>,
    ) -> Router {
        Router::new()
            .route(path, axum::routing::post(deposit_webhook::<B>))
            .with_state(handler)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct At(i64);
    impl Clock for At {
        fn now(&self) -> Timestamp {
            Timestamp::from_millis(self.0)
        }
    }

    #[test]
    fn the_standard_verifier_refuses_stale_and_forged_deliveries() {
        let secret = format!("svcwh_{}", "5a".repeat(32));
        let body = br#"{"event":"transfer.settled"}"#;
        let sig = standard::sign(&secret, "whd_1", 1_000_000, body).unwrap();
        let at = |ms: i64| StandardVerifier::new(secret.clone(), Arc::new(At(ms)));
        let check = |v: &StandardVerifier, body: &[u8]| {
            v.verify_headers(body, |n| match n {
                "webhook-id" => Some("whd_1"),
                "webhook-timestamp" => Some("1000000"),
                "webhook-signature" => Some(sig.as_str()),
                _ => None,
            })
        };
        assert_eq!(check(&at(1_000_000_000), body), Ok(()));
        assert_eq!(check(&at(1_000_300_999), body), Ok(()), "300 s late");
        let stale = Err(WebhookError::StaleTimestamp { tolerance_s: 300 });
        assert_eq!(check(&at(1_000_301_000), body), stale, "301 s late");
        assert_eq!(check(&at(999_699_000), body), stale, "301 s early");
        assert_eq!(
            check(&at(1_000_301_000).with_tolerance_s(600), body),
            Ok(())
        );
        assert_eq!(
            check(&at(1_000_000_000), b"{}"),
            Err(WebhookError::SignatureMismatch)
        );
        assert!(WebhookError::StaleTimestamp { tolerance_s: 300 }.is_signature_error());
        let missing = at(1_000_000_000).verify(body, None, Some("1000000"), Some(&sig));
        assert_eq!(missing.unwrap_err().code(), "SIGNATURE_MISSING");
        // The system clock is far from 1970 + 11 days.
        let sys = StandardVerifier::system(secret.clone());
        assert_eq!(
            check(&sys, body).unwrap_err().code(),
            "SIGNATURE_TIMESTAMP_STALE"
        );
    }

    #[test]
    fn partial_and_mistyped_fields_parse_as_none() {
        let e = parse_payments(
            br#"{"event":"wallet.deposit.confirmed","data":{"deposit_id":"x","amount":10.5,"safe_to_credit":true}}"#,
        )
        .unwrap();
        let PaymentsEvent::DepositConfirmed(d) = e else {
            panic!("{e:?}")
        };
        assert_eq!(d.customer_id, "");
        assert_eq!(
            (d.deposit_id, d.amount, d.safe_to_credit),
            (None, None, Some(true))
        );
        assert!(matches!(
            parse_payments(br#"{"event":"wallet.deposit.detected"}"#).unwrap(),
            PaymentsEvent::DepositDetected(_)
        ));
        assert!(matches!(
            parse_payments(b"{}").unwrap(),
            PaymentsEvent::Other { event: None }
        ));
        assert_eq!(
            parse_payments(b"[1]").unwrap_err().code(),
            "INVALID_WEBHOOK_BODY"
        );
        assert_eq!(
            parse_payments(b"nope").unwrap_err().code(),
            "INVALID_WEBHOOK_BODY"
        );
    }
}
