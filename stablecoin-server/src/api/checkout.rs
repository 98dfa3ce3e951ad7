//! The checkout gateway over HTTP: business keys (`live_sk_` / `test_sk_`) create, read,
//! cancel and list payment sessions under `/api/v1/checkout/...` (spec 2.5, 4.4), and a
//! test key simulates payments; tenant keys manage businesses at `/v1/businesses`. Every
//! rule is the checkout engine's; a handler maps HTTP to one engine call.

use super::types::CheckoutListQuery;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::ReplayBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_checkout::{
    BusinessView, CreateSessionRequest, NewBusiness, SessionList, SessionView,
    SimulatePaymentRequest,
};
use utoipa::ToSchema;

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
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

pub(crate) fn number(v: Option<&str>, name: &str) -> Result<Option<u32>, ApiError> {
    match v {
        None => Ok(None),
        Some(s) => s.trim().parse::<u32>().map(Some).map_err(|_| {
            ApiError::bad_request(
                "INVALID_PARAMETER",
                format!("{name} must be a positive integer"),
            )
            .with_param(name)
        }),
    }
}

/// List the business's payment sessions of the key's mode, newest first.
///
/// `status`: pending, paid, expired or failed. `limit`: 1-100, default 20. `page`: from
/// 1, default 1; a page past the end is empty and still carries the total.
#[utoipa::path(get, path = "/api/v1/checkout/list", tag = "checkout",
    params(CheckoutListQuery),
    responses(
        (status = 200, description = "A page of payment sessions", body = SessionList),
        (status = 400, description = "Bad status, limit or page", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<CheckoutListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let limit = number(q.limit.as_deref(), "limit")?;
    let page = number(q.page.as_deref(), "page")?;
    Ok(Json(
        app.checkout
            .list_sessions(&caller.0, q.status.as_deref(), limit, page)
            .await?,
    ))
}

/// Create a payment session: a fresh deposit address on each accepted network.
///
/// Accepts `Idempotency-Key`: the same key and body answer the first session; the same
/// key with another body is 422 `IDEMPOTENCY_KEY_REUSED`.
#[utoipa::path(post, path = "/api/v1/checkout/sessions", tag = "checkout",
    request_body = CreateSessionRequest,
    responses(
        (status = 201, description = "The session", body = SessionView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 409, description = "The same key is still running", body = ErrorBody),
        (status = 422, description = "Key reused with another body", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody),
        (status = 502, description = "A rail failed deriving an address", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn create_session(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(req): ApiJson<CreateSessionRequest>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let view = app.checkout.create_session(&caller.0, &req, key).await?;
    let location = format!("/api/v1/checkout/sessions/{}", view.session_id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    )
        .into_response())
}

/// Read one session, with its deposits and every partial, over and late amount.
#[utoipa::path(get, path = "/api/v1/checkout/sessions/{session_id}", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_...")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "No such session for this business and mode", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn get_session(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<SessionView>, ApiError> {
    Ok(Json(app.checkout.get_session(&caller.0, &id).await?))
}

/// Cancel a pending session: it fails with reason `cancelled`; anything it received
/// becomes refundable.
#[utoipa::path(post, path = "/api/v1/checkout/sessions/{session_id}/cancel", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_...")),
    responses(
        (status = 200, description = "The cancelled session", body = SessionView),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "No such session for this business and mode", body = ErrorBody),
        (status = 409, description = "Not pending", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn cancel_session(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<SessionView>, ApiError> {
    Ok(Json(app.checkout.cancel_session(&caller.0, &id).await?))
}

/// Test mode: a simulated deposit into a test session, recorded exactly as a real one
/// (webhooks included). `confirmed: false` leaves it detected; a later call without an
/// amount confirms it.
#[utoipa::path(post, path = "/api/v1/checkout/sessions/{session_id}/simulate-payment", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_...")),
    request_body = SimulatePaymentRequest,
    responses(
        (status = 200, description = "The session after the deposit", body = SessionView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a test business key", body = ErrorBody),
        (status = 404, description = "No such session for this business and mode", body = ErrorBody),
        (status = 409, description = "Concurrent update", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn simulate_payment(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(req): ApiJson<SimulatePaymentRequest>,
) -> Result<Json<SessionView>, ApiError> {
    Ok(Json(
        app.checkout.simulate_payment(&caller.0, &id, &req).await?,
    ))
}

/// `POST /v1/businesses`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBusinessRequest {
    /// Shown to payers on the payment page: 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
}

/// The tenant's businesses.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct BusinessList {
    /// Newest first (at most 100).
    pub businesses: Vec<BusinessView>,
}

/// Create a business (the tenant's checkout identity) with a live and a test key,
/// shown in this answer only. An idempotent replay answers the business without keys.
#[utoipa::path(post, path = "/v1/businesses", tag = "checkout",
    request_body = CreateBusinessRequest,
    responses(
        (status = 201, description = "The business and its keys (shown once)", body = NewBusiness),
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a live tenant key", body = ErrorBody),
        (status = 409, description = "The same key is still running", body = ErrorBody),
        (status = 422, description = "Key reused with another body", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_business(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<CreateBusinessRequest>,
) -> Result<Response, ApiError> {
    caller.0.require_live("business creation")?;
    let created = app
        .checkout
        .create_business(caller.tenant(), &req.name)
        .await?;
    let without =
        serde_json::to_vec(&serde_json::json!({"business": created.business})).unwrap_or_default();
    let mut res = (StatusCode::CREATED, Json(created)).into_response();
    res.extensions_mut().insert(ReplayBody(without.into()));
    Ok(res)
}

/// List the tenant's businesses.
#[utoipa::path(get, path = "/v1/businesses", tag = "checkout",
    responses(
        (status = 200, description = "The businesses", body = BusinessList),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a tenant key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_businesses(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<BusinessList>, ApiError> {
    Ok(Json(BusinessList {
        businesses: app.checkout.list_businesses(caller.tenant()).await?,
    }))
}
