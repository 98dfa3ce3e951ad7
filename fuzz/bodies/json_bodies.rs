//! JSON request bodies as clients send them: the escrow and checkout requests (their
//! own serde types, `deny_unknown_fields`, the escrow's whole-seconds fields) and the
//! engine's typed requests (phones, tokens, amounts, currencies validated while
//! deserializing), then the core validators their fields go through (phones, token
//! amounts, whole tokens, tokens, quote ids, fiat amounts, currencies, `on_behalf_of`,
//! recovery kinds, idempotency keys, ids, timestamps). The input is deserialized as
//! every body from arbitrary bytes. Nothing panics, and an accepted body serializes to
//! JSON that deserializes to the same body.
//!
//! The body of the fuzz target `json_bodies` (fuzz/fuzz_targets/json_bodies.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use stablecoin_checkout::{CreateSessionRequest, SimulatePaymentRequest, is_session_id};
use stablecoin_core::domain::fx::{parse_fiat_amount, parse_quote_ref};
use stablecoin_core::domain::money::{Currency, Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{
    FundRequest, SendRequest, SwapRequest, WithdrawRequest, validate_idempotency_key,
};
use stablecoin_escrow::{
    CreateEscrowRequest, EscrowActionRequest, EscrowState, RecoveryKind, RecoveryRequest,
    ResolveRequest, parse_on_behalf_of,
};
use std::fmt::Debug;

/// Deserializes `data` as a `T`; an accepted body must survive a round trip.
fn body<T: DeserializeOwned + Serialize + PartialEq + Debug>(data: &[u8]) -> Option<T> {
    let v: T = serde_json::from_slice(data).ok()?;
    let json = serde_json::to_vec(&v).expect("a request body serializes");
    let back: T = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "{v:?} serialized to {:?}, refused: {e}",
            String::from_utf8_lossy(&json)
        )
    });
    assert_eq!(back, v);
    Some(v)
}

/// Whether a JSON value holds a float: serde_json's default float parsing is not
/// guaranteed to round-trip the last bit, which is no bug of ours.
fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(has_float),
        Value::Object(o) => o.values().any(has_float),
        _ => false,
    }
}

fn token(s: &str) {
    if let Ok(t) = s.parse::<Token>() {
        assert_eq!(t.as_str(), s);
    }
}

fn text(s: &str) {
    if let Ok(p) = Phone::parse(s) {
        assert_eq!(Phone::parse(p.as_str()).ok().as_ref(), Some(&p));
    }
    if let Ok(m) = Micros::parse_decimal(s) {
        assert_eq!(Micros::parse_decimal(&m.to_string()).ok(), Some(m));
    }
    let _ = Micros::parse_positive(s.trim());
    let _ = Micros::parse_whole_tokens(s);
    token(s);
    let _ = parse_quote_ref(s);
    let _ = parse_fiat_amount(s);
    if let Ok(c) = Currency::parse(s) {
        assert_eq!(c.code, s);
    }
    let _ = parse_on_behalf_of(Some(s));
    let _ = RecoveryKind::parse(s);
    let _ = EscrowState::parse(s);
    let _ = validate_idempotency_key(s);
    let _ = is_session_id(s);
    let _ = Timestamp::parse_rfc3339(s);
}

fn opt(s: &Option<String>) {
    if let Some(s) = s {
        text(s);
    }
}

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        text(s);
    }
    if let Some(r) = body::<CreateEscrowRequest>(data) {
        text(&r.buyer_phone_number);
        text(&r.seller_phone_number);
        text(&r.amount);
        opt(&r.token);
        text(&r.reference);
    }
    if let Some(r) = body::<EscrowActionRequest>(data) {
        opt(&r.on_behalf_of);
        opt(&r.reason);
    }
    if let Some(r) = body::<ResolveRequest>(data) {
        text(&r.resolution);
        text(&r.resolution_note);
    }
    if let Some(r) = body::<RecoveryRequest>(data) {
        text(&r.kind);
        opt(&r.token);
        text(&r.note);
    }
    if let Ok(v) = serde_json::from_slice::<Value>(data)
        && !has_float(&v)
    {
        if let Some(r) = body::<CreateSessionRequest>(data) {
            text(&r.amount);
            text(&r.currency);
            for s in r.networks.iter().chain(r.tokens.iter()).flatten() {
                text(s);
            }
            opt(&r.reference);
            opt(&r.customer_id);
        }
    } else {
        let _ = serde_json::from_slice::<CreateSessionRequest>(data);
    }
    if let Some(r) = body::<SimulatePaymentRequest>(data) {
        opt(&r.amount);
        opt(&r.token);
        opt(&r.network);
    }
    let _ = body::<FundRequest>(data);
    let _ = body::<SendRequest>(data).map(|r| parse_quote_ref(&r.quote_id));
    let _ = body::<WithdrawRequest>(data);
    let _ = body::<SwapRequest>(data);
}
