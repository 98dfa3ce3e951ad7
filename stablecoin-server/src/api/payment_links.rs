//! Payment links over HTTP (issue #50): a business key creates, lists, reads and
//! deactivates its reusable links under `/api/v1/payment-links`; payers open sessions
//! from them on the hosted page `/pay/l/{link_id}` (`crate::pages::links`). Every rule
//! is the checkout engine's (`stablecoin_checkout::links`); a handler maps HTTP to one
//! engine call.

use super::schemas::ListLimit;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use stablecoin_checkout::links::{CreatePaymentLinkRequest, PaymentLinkList, PaymentLinkView};
use utoipa::IntoParams;

/// `GET /api/v1/payment-links`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PaymentLinkListQuery {
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page: the list continues after its last link.
    #[param(max_length = 512)]
    pub starting_after: Option<String>,
}

/// Create a payment link: a fixed `amount`, or payer-chosen (between `min_amount` and
/// `max_amount` when given); optionally until `expires_at` or `max_payments`.
///
/// Each payer who opens `url` gets a session of their own on the business's networks
/// and tokens, carrying the link's id. Accepts `Idempotency-Key`.
#[utoipa::path(post, path = "/api/v1/payment-links", tag = "checkout",
    request_body = CreatePaymentLinkRequest,
    responses(
        (status = 201, description = "The link", body = PaymentLinkView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 409, description = "The same key is still running", body = ErrorBody),
        (status = 422, description = "Key reused with another body", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn create_payment_link(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(req): ApiJson<CreatePaymentLinkRequest>,
) -> Result<Response, ApiError> {
    let key = super::checkout::idempotency_key(&headers)?;
    let view = app
        .checkout
        .create_payment_link(&caller.0, &req, key)
        .await?;
    let location = format!("/api/v1/payment-links/{}", view.link_id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    )
        .into_response())
}

/// List the business's payment links of the key's mode, newest first (cursor-paged).
#[utoipa::path(get, path = "/api/v1/payment-links", tag = "checkout",
    params(PaymentLinkListQuery),
    responses(
        (status = 200, description = "A page of links", body = PaymentLinkList),
        (status = 400, description = "Bad limit or cursor", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn list_payment_links(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<PaymentLinkListQuery>,
) -> Result<Json<PaymentLinkList>, ApiError> {
    let limit = super::checkout::number(q.limit.as_deref(), "limit")?;
    Ok(Json(
        app.checkout
            .list_payment_links(&caller.0, limit, q.starting_after.as_deref())
            .await?,
    ))
}

/// Read one payment link, with how many sessions it opened and how many are paid.
#[utoipa::path(get, path = "/api/v1/payment-links/{link_id}", tag = "checkout",
    params(("link_id" = String, Path, description = "plink_...")),
    responses(
        (status = 200, description = "The link", body = PaymentLinkView),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "No such link for this business and mode", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn get_payment_link(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<PaymentLinkView>, ApiError> {
    Ok(Json(app.checkout.get_payment_link(&caller.0, &id).await?))
}

/// Deactivate a payment link: it opens no more sessions (for good); the sessions it
/// opened are untouched. A second call answers the link unchanged.
#[utoipa::path(post, path = "/api/v1/payment-links/{link_id}/deactivate", tag = "checkout",
    params(("link_id" = String, Path, description = "plink_...")),
    responses(
        (status = 200, description = "The deactivated link", body = PaymentLinkView),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "No such link for this business and mode", body = ErrorBody),
        (status = 409, description = "Concurrent update", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn deactivate_payment_link(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<PaymentLinkView>, ApiError> {
    Ok(Json(
        app.checkout.deactivate_payment_link(&caller.0, &id).await?,
    ))
}
