//! The payout provider of `[payouts]`, and the routes its callbacks arrive on.
//!
//! The engine pays a withdrawal out through the configured [`PayoutProvider`] and
//! decides it (COMPLETED, or REFUNDED) only on the status query of the provider that
//! took it (see `stablecoin_core::engine`'s withdrawals). The callbacks never move a
//! withdrawal by themselves, and each is authenticated and checked before it counts:
//!
//! - Each payout's callback URLs end in `/{payout id}/{token}`, the token an HMAC of
//!   the payout id under `payouts.callback_secret` ([`CallbackKey`]): Daraja and MTN
//!   sign nothing, and only the provider is given these URLs. A wrong token is 403
//!   `INVALID_SIGNATURE`, logged, and nothing is read.
//! - The body is then checked against the withdrawal's payout leg (the provider that
//!   took it, its amount, currency and payee) and, for M-Pesa, against our own requests
//!   (their `ConversationID`s). A mismatch is 409 `CALLBACK_MISMATCH`, logged, and
//!   nothing is recorded.
//!
//! Routes:
//!
//! - `POST /v1/callbacks/payouts/mpesa/result/{id}/{token}`: Daraja's `ResultURL`. The
//!   body goes to [`MpesaResults`] (in the database, so the node that asks need not be
//!   the node called back; purged by retention): a status query's result is what the
//!   adapter's `status` reads, only forward; a payment's own result is kept as a hint.
//!   200 `{"ResultCode":0,"ResultDesc":"Accepted"}`; 400 `MALFORMED_CALLBACK` for a body
//!   not in Daraja's shape.
//! - `POST /v1/callbacks/payouts/mpesa/timeout/{id}/{token}`: Daraja's
//!   `QueueTimeOutURL`: the outcome is unknown, which is what the engine already assumes
//!   until the status query says otherwise. Acknowledged (200) and logged.
//! - `PUT` or `POST /v1/callbacks/payouts/mtn_momo/{id}/{token}`: MTN's
//!   `X-Callback-Url`. Checked, logged, acknowledged (200); the engine asks MTN's status
//!   `GET` on its own schedule (`engine.poll_interval_ms`).
//!
//! Each answers 404 `ROUTE_NOT_FOUND` unless its provider is the configured one.

use crate::config::{ConfigError, PayoutSettings};
use crate::error::ApiError;
use crate::error::StartupError;
use crate::state::AppState;
use axum::extract::Path;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use stablecoin_core::engine::PayoutLeg;
use stablecoin_core::ports::{Clock, PayoutProvider, Store};
use stablecoin_providers::ProviderError;
use stablecoin_providers::callback::CallbackKey;
use stablecoin_providers::mpesa::{Expected, MpesaB2c, MpesaConfig, MpesaResults, Recorded};
use stablecoin_providers::mtn_momo::{MtnMomoConfig, MtnMomoDisbursement};
use std::sync::Arc;
use std::time::Duration;

/// The base of Daraja's results (`ResultURL`); each payout's ends `/{id}/{token}`.
pub const MPESA_RESULT_PATH: &str = "/v1/callbacks/payouts/mpesa/result";
/// The base of Daraja's queue timeouts (`QueueTimeOutURL`), per payout as above.
pub const MPESA_TIMEOUT_PATH: &str = "/v1/callbacks/payouts/mpesa/timeout";
/// The base of MTN MoMo's transfer callbacks (`X-Callback-Url`), per payout as above.
pub const MTN_MOMO_CALLBACK_PATH: &str = "/v1/callbacks/payouts/mtn_momo";

pub use crate::payout_providers::{DisabledPayouts, SimPayouts};

/// The configured provider and the handles its routes and tests need.
pub struct Payouts {
    /// What the engine pays through.
    pub provider: Arc<dyn PayoutProvider>,
    /// The simulated provider, when `payouts.kind = "simulated"` (tests and the demo
    /// script its outcomes).
    pub simulated: Option<Arc<SimPayouts>>,
    /// The store Daraja's results are recorded in, when `payouts.kind = "mpesa"`.
    pub mpesa_results: Option<Arc<MpesaResults>>,
    /// The key of the per-payout callback tokens, when the provider calls back.
    pub callbacks: Option<CallbackKey>,
}

/// `base` (no trailing `/`) followed by `path`.
fn callback_url(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// Builds the provider `settings` name. `disabled` gets [`DisabledPayouts`], never the
/// simulated one: a payout in flight when an operator switches to it must not be
/// "delivered" by a simulation.
pub fn build(
    settings: &PayoutSettings,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> Result<Payouts, StartupError> {
    let bad = |e: stablecoin_providers::ProviderError| {
        StartupError::Config(ConfigError::Invalid(format!("payouts: {e}")))
    };
    Ok(match settings {
        PayoutSettings::Disabled => Payouts {
            provider: Arc::new(DisabledPayouts),
            simulated: None,
            mpesa_results: None,
            callbacks: None,
        },
        PayoutSettings::Simulated => {
            let sim = Arc::new(SimPayouts::default());
            Payouts {
                provider: sim.clone(),
                simulated: Some(sim),
                mpesa_results: None,
                callbacks: None,
            }
        }
        PayoutSettings::Mpesa {
            base_url,
            consumer_key,
            consumer_secret,
            initiator_name,
            security_credential,
            shortcode,
            command_id,
            callback_base_url,
            callback_secret,
            timeout_ms,
            result_wait_ms,
        } => {
            let results = Arc::new(MpesaResults::new(store).with_clock(clock));
            let config = MpesaConfig {
                base_url: base_url.clone(),
                consumer_key: consumer_key.clone(),
                consumer_secret: consumer_secret.expose().to_string(),
                initiator_name: initiator_name.clone(),
                security_credential: security_credential.expose().to_string(),
                shortcode: shortcode.clone(),
                command_id: command_id.clone(),
                result_url: callback_url(callback_base_url, MPESA_RESULT_PATH),
                queue_timeout_url: callback_url(callback_base_url, MPESA_TIMEOUT_PATH),
                callback_secret: callback_secret.expose().to_string(),
                timeout: Duration::from_millis(*timeout_ms),
                result_wait: Duration::from_millis(*result_wait_ms),
                ..MpesaConfig::default()
            };
            let adapter = MpesaB2c::new(config, results.clone()).map_err(bad)?;
            Payouts {
                provider: Arc::new(adapter),
                simulated: None,
                mpesa_results: Some(results),
                callbacks: Some(CallbackKey::new(callback_secret.expose()).map_err(bad)?),
            }
        }
        PayoutSettings::MtnMomo {
            base_url,
            api_user,
            api_key,
            subscription_key,
            target_environment,
            currency: _,
            callback_base_url,
            callback_secret,
            timeout_ms,
        } => {
            let secret = callback_secret.as_ref().map(|s| s.expose().to_string());
            let config = MtnMomoConfig {
                base_url: base_url.clone(),
                api_user: api_user.clone(),
                api_key: api_key.expose().to_string(),
                subscription_key: subscription_key.expose().to_string(),
                target_environment: target_environment.clone(),
                callback_url: callback_base_url
                    .as_deref()
                    .map(|b| callback_url(b, MTN_MOMO_CALLBACK_PATH)),
                callback_secret: secret.clone(),
                payer_message: "Withdrawal".into(),
                payee_note: "Withdrawal".into(),
                timeout: Duration::from_millis(*timeout_ms),
            };
            let callbacks = match (callback_base_url, &secret) {
                (Some(_), Some(s)) => Some(CallbackKey::new(s).map_err(bad)?),
                _ => None,
            };
            Payouts {
                provider: Arc::new(MtnMomoDisbursement::new(config).map_err(bad)?),
                simulated: None,
                mpesa_results: None,
                callbacks,
            }
        }
    })
}

fn malformed(why: impl std::fmt::Display) -> Response {
    ApiError::bad_request("MALFORMED_CALLBACK", why.to_string()).into_response()
}

/// A payout id shown in a log line: it comes from the URL, so it is bounded and kept to
/// the characters an id has (no forged line breaks in the log).
fn shown(id: &str) -> String {
    id.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// The per-payout token checked: `None` when it is the payout's, else the 403.
fn refuse_token(app: &AppState, provider: &str, id: &str, token: &str) -> Option<Response> {
    let ok = app
        .payout_callbacks
        .as_ref()
        .is_some_and(|k| k.verify(id, token));
    (!ok).then(|| {
        tracing::warn!(provider, payout = %shown(id), "payout callback at a wrong token: refused");
        ApiError::new(
            StatusCode::FORBIDDEN,
            "INVALID_SIGNATURE",
            "this callback URL is not valid for this payout",
        )
        .into_response()
    })
}

/// 409 `CALLBACK_MISMATCH`, logged.
fn mismatch(provider: &str, id: &str, reason: &str) -> Response {
    tracing::warn!(provider, payout = %shown(id), reason, "payout callback does not match the payout: refused");
    ApiError::new(
        StatusCode::CONFLICT,
        "CALLBACK_MISMATCH",
        "this callback does not match the payout",
    )
    .into_response()
}

/// The payout leg of withdrawal `id`, taken by the configured provider; else the
/// answer (a mismatch for an unknown id or another provider's payout).
async fn leg_of(app: &AppState, provider: &str, id: &str) -> Result<PayoutLeg, Response> {
    let leg = match app.engine.withdrawal_payout(id).await {
        Ok(leg) => leg,
        Err(stablecoin_core::error::CoreError::NotFound { .. }) => {
            return Err(mismatch(provider, id, "no such withdrawal"));
        }
        Err(e) => return Err(ApiError::from(e).into_response()),
    };
    let identity = app.payouts.identity();
    if leg.provider.as_deref().is_some_and(|p| p != identity) {
        return Err(mismatch(
            provider,
            id,
            "the payout was taken by another provider account",
        ));
    }
    Ok(leg)
}

/// Daraja's expected acknowledgement.
fn daraja_accepted() -> Response {
    (
        StatusCode::OK,
        axum::Json(serde_json::json!({"ResultCode": 0, "ResultDesc": "Accepted"})),
    )
        .into_response()
}

/// `POST /v1/callbacks/payouts/mpesa/result/{id}/{token}`: a Daraja result for payout
/// `id`, checked and recorded in the shared results store.
pub async fn mpesa_result(
    State(app): State<AppState>,
    Path((id, token)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let Some(results) = app.mpesa_results.clone() else {
        return ApiError::route_not_found().into_response();
    };
    if let Some(r) = refuse_token(&app, "mpesa", &id, &token) {
        return r;
    }
    let leg = match leg_of(&app, "mpesa", &id).await {
        Ok(leg) => leg,
        Err(r) => return r,
    };
    let expected = Expected {
        amount: leg.amount,
        party_b: leg.phone.as_str().trim_start_matches('+').to_string(),
    };
    match results.record(&id, &expected, &body).await {
        Ok(Recorded::Mismatch { reason }) => mismatch("mpesa", &id, &reason),
        Ok(recorded) => {
            tracing::info!(payout = %shown(&id), recorded = ?recorded, "M-Pesa result recorded");
            daraja_accepted()
        }
        Err(ProviderError::Storage(e)) => {
            tracing::error!(payout = %shown(&id), error = %e, "M-Pesa result not stored");
            ApiError::internal("the result could not be stored; retry").into_response()
        }
        Err(e) => malformed(e),
    }
}

/// `POST /v1/callbacks/payouts/mpesa/timeout/{id}/{token}`: a queue timeout (outcome
/// unknown; the engine's status query resolves it).
pub async fn mpesa_timeout(
    State(app): State<AppState>,
    Path((id, token)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if app.mpesa_results.is_none() {
        return ApiError::route_not_found().into_response();
    }
    if let Some(r) = refuse_token(&app, "mpesa", &id, &token) {
        return r;
    }
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(_) => {
            tracing::warn!(payout = %shown(&id), "M-Pesa queue timeout: the status query decides");
            daraja_accepted()
        }
        Err(e) => malformed(format!("not JSON: {e}")),
    }
}

/// `PUT`/`POST /v1/callbacks/payouts/mtn_momo/{id}/{token}`: an MTN transfer callback
/// for payout `id`, checked against it and logged (a hint; MTN's status `GET` is the
/// truth).
pub async fn mtn_momo_callback(
    State(app): State<AppState>,
    Path((id, token)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if !matches!(app.config.payouts, PayoutSettings::MtnMomo { .. }) {
        return ApiError::route_not_found().into_response();
    }
    if let Some(r) = refuse_token(&app, "mtn_momo", &id, &token) {
        return r;
    }
    let t = match MtnMomoDisbursement::parse_callback(&body) {
        Ok(t) => t,
        Err(e) => return malformed(e),
    };
    let leg = match leg_of(&app, "mtn_momo", &id).await {
        Ok(leg) => leg,
        Err(r) => return r,
    };
    let party = leg.phone.as_str().trim_start_matches('+');
    if let Some(reason) = t.mismatch(&id, leg.amount, &leg.currency, party) {
        return mismatch("mtn_momo", &id, &reason);
    }
    tracing::info!(
        payout = %shown(&id),
        status = %t.status,
        "MTN MoMo callback (a hint; the status query decides)"
    );
    StatusCode::OK.into_response()
}
