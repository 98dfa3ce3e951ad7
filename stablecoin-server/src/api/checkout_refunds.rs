//! Refunds of a checkout session over HTTP (issue #50 item 1), by the session's
//! business key. Every rule (what may be refunded, the refund's states, the claim link,
//! its expiry) is the checkout engine's; a handler maps HTTP to one engine call.

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use stablecoin_checkout::{CreateRefundRequest, RefundList, RefundView};

fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    match headers.get(crate::idempotency::HEADER) {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).map_err(|_| {
            ApiError::bad_request(
                "INVALID_IDEMPOTENCY_KEY",
                "Idempotency-Key must be 1 to 255 printable ASCII characters",
            )
        }),
    }
}

/// Refund a session: all that is refundable (default) or `amount` of `token`.
///
/// What can be refunded: the session's excess and late payments (and all it received
/// if it failed or expired unpaid), and for a paid session up to its amount from the
/// business's settled funds; never more in total than it received. Several partial
/// refunds are allowed. With `address` (and `network`) the refund is sent there, gas
/// sponsored; without it the answer's `claim_url` (`/pay/refunds/{refund_id}`) lets the
/// payer claim it with an address of their own, once, until `claim_expires_at`; an
/// expired claim returns the money to where it came from. `refund.*` webhooks follow it.
///
/// Accepts `Idempotency-Key`: the same key and body answer the first refund.
#[utoipa::path(post, path = "/api/v1/checkout/sessions/{session_id}/refunds", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_...")),
    request_body = CreateRefundRequest,
    responses(
        (status = 201, description = "The refund", body = RefundView),
        (status = 400, description = "Bad input (amount, token, network, address, reason)", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key; SCREENING_HIT: sanctions screening lists the address (audited, nothing reserved); POLICY_DENIED: a spending policy of the tenant refuses this live refund (`rule_id`; audited; above an approval threshold too, as a refund cannot be held for approval; nothing reserved)", body = ErrorBody),
        (status = 404, description = "No such session for this business and mode", body = ErrorBody),
        (status = 409, description = "Concurrent update, or the same key is still running", body = ErrorBody),
        (status = 422, description = "More than refundable (REFUND_EXCEEDS_REFUNDABLE), settled funds no longer in the treasury (INSUFFICIENT_FUNDS), or a key reused with another body", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody),
        (status = 502, description = "A rail failed", body = ErrorBody),
        (status = 503, description = "SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn create_refund(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath(id): ApiPath,
    ApiJson(req): ApiJson<CreateRefundRequest>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let view = app
        .checkout
        .create_refund(&caller.0, &id, &req, key)
        .await?;
    let location = format!("/api/v1/checkout/refunds/{}", view.refund_id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    )
        .into_response())
}

/// A session's refunds, newest first, and what it can still refund per token.
#[utoipa::path(get, path = "/api/v1/checkout/sessions/{session_id}/refunds", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_...")),
    responses(
        (status = 200, description = "The refunds and what is left", body = RefundList),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "No such session for this business and mode", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn list_refunds(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<RefundList>, ApiError> {
    Ok(Json(app.checkout.list_refunds(&caller.0, &id).await?))
}

/// Read one refund.
#[utoipa::path(get, path = "/api/v1/checkout/refunds/{refund_id}", tag = "checkout",
    params(("refund_id" = String, Path, description = "rf_...")),
    responses(
        (status = 200, description = "The refund", body = RefundView),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "No such refund for this business and mode", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn get_refund(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<RefundView>, ApiError> {
    Ok(Json(app.checkout.get_refund(&caller.0, &id).await?))
}

/// `POST /v1/businesses/{id}/auto-refunds`.
#[derive(Debug, serde::Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AutoRefundsRequest {
    /// `true`: refund the excess and late part of each confirmed deposit to the address
    /// that paid it, when the chain names it. Off by default: a paying address may be
    /// an exchange's hot wallet, which would not credit the payer.
    pub enabled: bool,
}

/// Turn a business's automatic refunds of excess and late payments on or off.
///
/// With it on, the excess or late part of every confirmed deposit into the business's
/// live sessions is refunded to the paying address the chain reports (EVM, TRON,
/// Solana scanners; not the deposit intake), as an ordinary refund with its
/// `refund.*` events. Off by default, for the reason above.
#[utoipa::path(post, path = "/v1/businesses/{id}/auto-refunds", tag = "checkout",
    params(("id" = String, Path, description = "biz_...")),
    request_body = AutoRefundsRequest,
    responses(
        (status = 200, description = "The business", body = stablecoin_checkout::BusinessView),
        (status = 400, description = "Bad body", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a live tenant key", body = ErrorBody),
        (status = 404, description = "No such business of this tenant", body = ErrorBody),
        (status = 409, description = "Concurrent update, or the same key is still running", body = ErrorBody),
        (status = 422, description = "Key reused with another body", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn set_auto_refunds(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(req): ApiJson<AutoRefundsRequest>,
) -> Result<Json<stablecoin_checkout::BusinessView>, ApiError> {
    caller.0.require_live("automatic refunds")?;
    Ok(Json(
        app.checkout
            .set_auto_refunds(caller.tenant(), &id, req.enabled)
            .await?,
    ))
}
