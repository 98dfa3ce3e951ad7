//! `POST /v1/scanner/deposit-events`: where a separately deployed deposit scanner reports
//! deposits into checkout session addresses, in the payments family's own shape
//! (`wallet.deposit.detected` / `.confirmed` / `.hash_resolved`), signed with
//! `X-Webhook-Signature` under `[checkout] intake_secret`.
//!
//! It follows spec 6.2's receiver rules exactly, because it is such a receiver: dedupe on
//! `deposit_id`; a re-delivery answers 200 `{"status":"success","message":
//! "already_recorded"}`; a partial event never answers 400 (only a body that is not a JSON
//! object does); credit only on `confirmed` with `safe_to_credit` true. Parsing is the
//! webhooks crate's lenient receiver parser; recording is the checkout engine's one
//! deposit path, the same the built-in scanner uses.

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use stablecoin_checkout::{DepositFact, DepositOutcome, DepositStage, Mode};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_webhooks::payments::DepositData;
use stablecoin_webhooks::receiver::{Ack, PaymentsEvent, parse_payments, verify_payments};

/// The intake's 200 answer: `{"status":"success","message":...}`.
#[derive(Debug, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct IntakeAck {
    /// Always `success`.
    pub status: String,
    /// `recorded_pending`, `credited`, `not_safe_to_credit`, `hash_backfilled`,
    /// `already_recorded` or `ignored` (not a deposit event, no `deposit_id`, an address
    /// that is no session's, or a first report without an amount).
    pub message: String,
}

fn fact_of(d: &DepositData, deposit_id: u64) -> DepositFact {
    let tx_hash = d
        .tx_hash
        .clone()
        .filter(|h| !h.is_empty() && !h.starts_with("pending_") && d.hash_pending != Some(true));
    // A first report must say what arrived: without a known currency its amount is
    // taken as absent (zero), so the engine records nothing rather than guess a token.
    // A deposit already recorded keeps its own token and amount.
    let token = d.currency.as_deref().and_then(|c| c.parse::<Token>().ok());
    DepositFact {
        deposit_id,
        network: d.network.clone().unwrap_or_default(),
        address: d.address.clone().unwrap_or_default(),
        token: token.unwrap_or(Token::Usdc),
        amount: d
            .amount
            .as_deref()
            .and_then(|a| Micros::parse_decimal(a).ok())
            .filter(|_| token.is_some())
            .unwrap_or(Micros::ZERO),
        tx_hash,
        confirmations: d.confirmations.map(u64::from).unwrap_or(0),
        detected_by: d
            .detected_by
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "external-scanner".into())
            .chars()
            .take(64)
            .collect(),
    }
}

fn ack_of(outcome: DepositOutcome) -> Ack {
    match outcome {
        DepositOutcome::RecordedPending => Ack::RecordedPending,
        DepositOutcome::Credited => Ack::Credited,
        DepositOutcome::NotSafeToCredit => Ack::NotSafeToCredit,
        DepositOutcome::HashResolved => Ack::HashBackfilled,
        DepositOutcome::AlreadyRecorded => Ack::AlreadyRecorded,
        DepositOutcome::UnknownAddress => Ack::Ignored,
    }
}

/// Record a deposit reported by a separately deployed scanner.
#[utoipa::path(post, path = "/v1/scanner/deposit-events", tag = "checkout",
    request_body(content = serde_json::Value, description = "A wallet.deposit.* envelope (spec 6.2), signed with X-Webhook-Signature"),
    params(("X-Webhook-Signature" = String, Header, description = "hex HMAC-SHA256 of the raw body under the intake secret")),
    responses(
        (status = 200, description = "Recorded, or acknowledged (re-deliveries and partial events included)", body = IntakeAck),
        (status = 400, description = "The body is not a JSON object (MALFORMED_JSON), or its amount would take a session's sums past u64 micro-units (INVALID_AMOUNT)", body = ErrorBody),
        (status = 403, description = "Missing or wrong signature", body = ErrorBody),
        (status = 404, description = "The intake is not configured", body = ErrorBody),
        (status = 409, description = "Concurrent update; retry", body = ErrorBody)))]
pub async fn deposit_events(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<IntakeAck>, ApiError> {
    let invalid = || {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "INVALID_SIGNATURE",
            "X-Webhook-Signature is missing or does not verify over the body",
        )
    };
    // Unsigned reports are refused first, whether or not the intake is configured.
    let signature = headers
        .get("x-webhook-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(invalid)?;
    let Some(secret) = app.config.checkout.intake_secret.as_deref() else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "INTAKE_DISABLED",
            "the deposit intake is not configured",
        ));
    };
    verify_payments(secret, &body, Some(signature)).map_err(|_| invalid())?;
    let event = parse_payments(&body)
        .map_err(|_| ApiError::bad_request("MALFORMED_JSON", "the body is not a JSON object"))?;
    let checkout = &app.checkout;
    let confirmed = |d: &DepositData| DepositStage::Confirmed {
        safe_to_credit: d.safe_to_credit == Some(true),
    };
    let ack = match event {
        PaymentsEvent::DepositDetected(d) | PaymentsEvent::DepositConfirmed(d)
            if d.deposit_id.is_none() =>
        {
            Ack::Ignored
        }
        PaymentsEvent::DepositDetected(d) => {
            let fact = fact_of(&d, d.deposit_id.unwrap_or_default());
            ack_of(
                checkout
                    .record_deposit(&fact, DepositStage::Detected, Mode::Live)
                    .await?,
            )
        }
        PaymentsEvent::DepositConfirmed(d) => {
            let fact = fact_of(&d, d.deposit_id.unwrap_or_default());
            ack_of(
                checkout
                    .record_deposit(&fact, confirmed(&d), Mode::Live)
                    .await?,
            )
        }
        PaymentsEvent::DepositHashResolved(d) => match (d.deposit_id, d.tx_hash.as_deref()) {
            (Some(id), Some(h)) if !h.is_empty() && !h.starts_with("pending_") => {
                ack_of(checkout.resolve_hash(id, h, Mode::Live).await?)
            }
            _ => Ack::Ignored,
        },
        _ => Ack::Ignored,
    };
    Ok(Json(IntakeAck {
        status: "success".into(),
        message: ack.message().into(),
    }))
}
