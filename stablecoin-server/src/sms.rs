//! The SMS gateway of `[sms]`, and the routes its delivery reports arrive on.
//!
//! Messages go through the engine's durable outbox (`stablecoin_core::engine`'s `sms`
//! module): the gateway here only sends what a worker step hands it. Delivery reports
//! are recorded on the message's delivery record by the gateway's message id:
//!
//! - `POST /v1/callbacks/sms/twilio`: accepted only with a valid `X-Twilio-Signature`
//!   over `sms.status_callback_url` (403 `INVALID_SIGNATURE` otherwise).
//! - `POST /v1/callbacks/sms/africastalking`: Africa's Talking signs nothing, so a
//!   report is recorded only for a message id this deployment holds (404 otherwise),
//!   flagged unverified: a hint on a delivery record, which nothing else acts on.
//!
//! Both answer 404 `ROUTE_NOT_FOUND` unless their gateway is the configured one.

use crate::config::{ConfigError, SmsSettings};
use crate::error::ApiError;
use crate::error::StartupError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use stablecoin_core::memory::MemoryNotifier;
use stablecoin_core::ports::Notifier;
use stablecoin_providers::africastalking::{AfricasTalking, AfricasTalkingConfig, DeliveryReport};
use stablecoin_providers::twilio::{StatusCallback, Twilio, TwilioConfig, TwilioSender};
use std::sync::Arc;
use std::time::Duration;

/// The route of Twilio's status callbacks.
pub const TWILIO_CALLBACK_PATH: &str = "/v1/callbacks/sms/twilio";
/// The route of Africa's Talking's delivery reports.
pub const AFRICASTALKING_CALLBACK_PATH: &str = "/v1/callbacks/sms/africastalking";

/// The `Notifier` the engine sends through: `memory` for `sms.kind = "memory"`, else
/// the configured gateway's adapter.
pub fn notifier(
    settings: &SmsSettings,
    memory: Arc<MemoryNotifier>,
) -> Result<Arc<dyn Notifier>, StartupError> {
    let bad = |e: stablecoin_providers::ProviderError| {
        StartupError::Config(ConfigError::Invalid(format!("sms: {e}")))
    };
    Ok(match settings {
        SmsSettings::Memory => memory,
        SmsSettings::AfricasTalking {
            base_url,
            username,
            api_key,
            from,
            timeout_ms,
        } => Arc::new(
            AfricasTalking::new(AfricasTalkingConfig {
                base_url: base_url.clone(),
                username: username.clone(),
                api_key: api_key.expose().to_string(),
                from: from.clone(),
                timeout: Duration::from_millis(*timeout_ms),
            })
            .map_err(bad)?,
        ),
        SmsSettings::Twilio {
            base_url,
            account_sid,
            auth_token,
            from,
            messaging_service_sid,
            status_callback_url,
            timeout_ms,
        } => {
            let sender = match (from, messaging_service_sid) {
                (Some(f), _) => TwilioSender::From(f.clone()),
                (None, Some(s)) => TwilioSender::MessagingService(s.clone()),
                (None, None) => {
                    return Err(StartupError::Config(ConfigError::Invalid(
                        "sms: set sms.from or sms.messaging_service_sid".into(),
                    )));
                }
            };
            Arc::new(
                Twilio::new(TwilioConfig {
                    base_url: base_url.clone(),
                    account_sid: account_sid.clone(),
                    auth_token: auth_token.expose().to_string(),
                    sender,
                    status_callback: status_callback_url.clone(),
                    timeout: Duration::from_millis(*timeout_ms),
                })
                .map_err(bad)?,
            )
        }
    })
}

fn invalid_signature() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "INVALID_SIGNATURE",
        "the callback's signature does not verify",
    )
}

fn malformed(e: stablecoin_providers::ProviderError) -> ApiError {
    ApiError::bad_request("MALFORMED_CALLBACK", e.to_string())
}

/// `POST /v1/callbacks/sms/twilio`: a status callback, recorded once its signature
/// verifies.
pub async fn twilio_callback(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let SmsSettings::Twilio {
        auth_token,
        status_callback_url,
        ..
    } = &app.config.sms
    else {
        return ApiError::route_not_found().into_response();
    };
    // Without the public URL no signature can be checked: nothing is accepted.
    let Some(url) = status_callback_url else {
        return invalid_signature().into_response();
    };
    let signature = headers
        .get("x-twilio-signature")
        .and_then(|v| v.to_str().ok());
    let cb = match StatusCallback::verify_and_parse(auth_token.expose(), url, &body, signature) {
        Ok(cb) => cb,
        Err(stablecoin_providers::ProviderError::BadSignature) => {
            return invalid_signature().into_response();
        }
        Err(e) => return malformed(e).into_response(),
    };
    match app
        .engine
        .record_sms_report(&cb.message_sid, cb.delivery(), &cb.message_status, true)
        .await
    {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// `POST /v1/callbacks/sms/africastalking`: a delivery report, recorded as an
/// unverified hint for a message id this deployment holds.
pub async fn africastalking_callback(
    State(app): State<AppState>,
    body: axum::body::Bytes,
) -> Response {
    if !matches!(app.config.sms, SmsSettings::AfricasTalking { .. }) {
        return ApiError::route_not_found().into_response();
    }
    let report = match DeliveryReport::parse(&body) {
        Ok(r) => r,
        Err(e) => return malformed(e).into_response(),
    };
    match app
        .engine
        .record_sms_report(&report.id, report.delivery(), &report.status, false)
        .await
    {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
