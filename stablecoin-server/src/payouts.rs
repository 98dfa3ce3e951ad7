//! The payout provider of `[payouts]`, and the routes its callbacks arrive on.
//!
//! The engine pays a withdrawal out through the configured [`PayoutProvider`] and
//! decides it (COMPLETED, or REFUNDED) only on the provider's status query (see
//! `stablecoin_core::engine`'s withdrawals). The callbacks are hints and never move a
//! withdrawal:
//!
//! - `POST /v1/callbacks/payouts/mpesa/result`: Daraja's `ResultURL`. Each body goes to
//!   the adapter's [`MpesaResults`] store: the results of the adapter's own
//!   transaction-status queries are what its `status` reads (matched by the
//!   `ConversationID` Daraja acknowledged the query with), a payment's own result is
//!   kept as a hint. 200 `{"ResultCode":0,"ResultDesc":"Accepted"}` for a body Daraja's
//!   shape, whatever it names (an unknown id changes nothing); 400 `MALFORMED_CALLBACK`
//!   otherwise.
//! - `POST /v1/callbacks/payouts/mpesa/timeout`: Daraja's `QueueTimeOutURL`: the
//!   outcome is unknown, which is what the engine already assumes until the status
//!   query says otherwise. Acknowledged (200) and logged; 400 for a body that is not
//!   JSON.
//! - `PUT` or `POST /v1/callbacks/payouts/mtn_momo`: MTN's `X-Callback-Url`. Unsigned:
//!   parsed, logged, acknowledged (200; 400 when unreadable); the engine asks MTN's
//!   status `GET` on its own schedule (`engine.poll_interval_ms`).
//!
//! Each answers 404 `ROUTE_NOT_FOUND` unless its provider is the configured one.

use crate::app::{AppState, StartupError};
use crate::config::{ConfigError, PayoutSettings};
use crate::error::ApiError;
use async_trait::async_trait;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use stablecoin_core::memory::MemoryPayouts;
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};
use stablecoin_providers::mpesa::{MpesaB2c, MpesaConfig, MpesaResults, Recorded};
use stablecoin_providers::mtn_momo::{MtnMomoConfig, MtnMomoDisbursement};
use std::sync::Arc;
use std::time::Duration;

/// The route of Daraja's results (`ResultURL`).
pub const MPESA_RESULT_PATH: &str = "/v1/callbacks/payouts/mpesa/result";
/// The route of Daraja's queue timeouts (`QueueTimeOutURL`).
pub const MPESA_TIMEOUT_PATH: &str = "/v1/callbacks/payouts/mpesa/timeout";
/// The route of MTN MoMo's transfer callbacks (`X-Callback-Url`).
pub const MTN_MOMO_CALLBACK_PATH: &str = "/v1/callbacks/payouts/mtn_momo";

/// The mobile-money payout simulation of sim mode: `MemoryPayouts` (idempotent by payout
/// id, as the port requires) whose payouts are delivered as soon as their status is asked
/// (no provider callback exists in-process; a real one would only be a hint to ask). The
/// engine settles or refunds a withdrawal on this status query alone.
#[derive(Default)]
pub struct SimPayouts(pub MemoryPayouts);

#[async_trait]
impl PayoutProvider for SimPayouts {
    fn identity(&self) -> String {
        "simulated".into()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        true
    }
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        self.0.submit(payout).await
    }
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        self.0.settle_all();
        self.0.status(payout_id).await
    }
}

/// `payouts.kind = "disabled"`: no provider. It takes no payout (a withdrawal whose
/// tokens were swept before the switch is refused here and refunded, as nothing holds
/// it) and never answers `Delivered` or `Failed`: a payout another provider took stays
/// in flight until that provider is configured again or staff resolve it (its identity,
/// `disabled`, is never that of the provider holding it).
#[derive(Debug, Default)]
pub struct DisabledPayouts;

#[async_trait]
impl PayoutProvider for DisabledPayouts {
    fn identity(&self) -> String {
        "disabled".into()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        false
    }
    async fn submit(&self, _payout: &Payout) -> Result<(), PayoutError> {
        Err(PayoutError::Rejected(
            "payouts are disabled (payouts.kind = \"disabled\")".into(),
        ))
    }
    async fn status(&self, _payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        Err(PayoutError::Unknown(
            "payouts are disabled: no provider to ask".into(),
        ))
    }
}

/// The configured provider and the handles its routes and tests need.
pub struct Payouts {
    /// What the engine pays through.
    pub provider: Arc<dyn PayoutProvider>,
    /// The simulated provider, when `payouts.kind = "simulated"` (tests and the demo
    /// script its outcomes).
    pub simulated: Option<Arc<SimPayouts>>,
    /// The store Daraja's results are recorded in, when `payouts.kind = "mpesa"`.
    pub mpesa_results: Option<Arc<MpesaResults>>,
}

/// `base` (no trailing `/`) followed by `path`.
fn callback_url(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// Builds the provider `settings` name. `disabled` gets [`DisabledPayouts`], never the
/// simulated one: a payout in flight when an operator switches to it must not be
/// "delivered" by a simulation.
pub fn build(settings: &PayoutSettings) -> Result<Payouts, StartupError> {
    let bad = |e: stablecoin_providers::ProviderError| {
        StartupError::Config(ConfigError::Invalid(format!("payouts: {e}")))
    };
    Ok(match settings {
        PayoutSettings::Disabled => Payouts {
            provider: Arc::new(DisabledPayouts),
            simulated: None,
            mpesa_results: None,
        },
        PayoutSettings::Simulated => {
            let sim = Arc::new(SimPayouts::default());
            Payouts {
                provider: sim.clone(),
                simulated: Some(sim),
                mpesa_results: None,
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
            timeout_ms,
            result_wait_ms,
        } => {
            let results = Arc::new(MpesaResults::new());
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
                timeout: Duration::from_millis(*timeout_ms),
                result_wait: Duration::from_millis(*result_wait_ms),
                ..MpesaConfig::default()
            };
            let adapter = MpesaB2c::new(config, results.clone()).map_err(bad)?;
            Payouts {
                provider: Arc::new(adapter),
                simulated: None,
                mpesa_results: Some(results),
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
            timeout_ms,
        } => {
            let config = MtnMomoConfig {
                base_url: base_url.clone(),
                api_user: api_user.clone(),
                api_key: api_key.expose().to_string(),
                subscription_key: subscription_key.expose().to_string(),
                target_environment: target_environment.clone(),
                callback_url: callback_base_url
                    .as_deref()
                    .map(|b| callback_url(b, MTN_MOMO_CALLBACK_PATH)),
                payer_message: "Withdrawal".into(),
                payee_note: "Withdrawal".into(),
                timeout: Duration::from_millis(*timeout_ms),
            };
            Payouts {
                provider: Arc::new(MtnMomoDisbursement::new(config).map_err(bad)?),
                simulated: None,
                mpesa_results: None,
            }
        }
    })
}

fn malformed(why: impl std::fmt::Display) -> Response {
    ApiError::bad_request("MALFORMED_CALLBACK", why.to_string()).into_response()
}

/// Daraja's expected acknowledgement.
fn daraja_accepted() -> Response {
    (
        StatusCode::OK,
        axum::Json(serde_json::json!({"ResultCode": 0, "ResultDesc": "Accepted"})),
    )
        .into_response()
}

/// `POST /v1/callbacks/payouts/mpesa/result`: a Daraja result, recorded in the
/// adapter's store (a hint, or the answer to one of its own status queries).
pub async fn mpesa_result(State(app): State<AppState>, body: axum::body::Bytes) -> Response {
    let Some(results) = &app.mpesa_results else {
        return ApiError::route_not_found().into_response();
    };
    match results.record(&body) {
        Ok(recorded) => {
            match &recorded {
                Recorded::Payment { payout_id } => {
                    tracing::info!(payout = %payout_id, "M-Pesa payment result (a hint; the status query decides)");
                }
                other => tracing::debug!(recorded = ?other, "M-Pesa result"),
            }
            daraja_accepted()
        }
        Err(e) => malformed(e),
    }
}

/// `POST /v1/callbacks/payouts/mpesa/timeout`: a queue timeout (outcome unknown; the
/// engine's status query resolves it).
pub async fn mpesa_timeout(State(app): State<AppState>, body: axum::body::Bytes) -> Response {
    if app.mpesa_results.is_none() {
        return ApiError::route_not_found().into_response();
    }
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(v) => {
            let id = v
                .pointer("/Result/OriginatorConversationID")
                .and_then(|x| x.as_str())
                .unwrap_or("?");
            tracing::warn!(payout = %id, "M-Pesa queue timeout: the status query decides");
            daraja_accepted()
        }
        Err(e) => malformed(format!("not JSON: {e}")),
    }
}

/// `PUT`/`POST /v1/callbacks/payouts/mtn_momo`: an MTN transfer callback, logged (a
/// hint; MTN's status `GET` is the truth).
pub async fn mtn_momo_callback(State(app): State<AppState>, body: axum::body::Bytes) -> Response {
    if !matches!(app.config.payouts, PayoutSettings::MtnMomo { .. }) {
        return ApiError::route_not_found().into_response();
    }
    match MtnMomoDisbursement::parse_callback(&body) {
        Ok(t) => {
            tracing::info!(
                payout = t.external_id.as_deref().unwrap_or("?"),
                status = %t.status,
                "MTN MoMo callback (a hint; the status query decides)"
            );
            StatusCode::OK.into_response()
        }
        Err(e) => malformed(e),
    }
}
