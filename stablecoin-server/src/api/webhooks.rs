//! `/v1/webhook-endpoints`: registration of wallet-service webhook endpoints (spec 6.1's
//! "dashboard" actions) over `stablecoin_webhooks::Deliverer`, whose worker runs in the
//! server's worker loop. The signing secret is returned once, by the create call; reads
//! never show it. DELETE disables the endpoint (its history stays; nothing more is sent).
//! Sandbox keys may read but not register or delete (`SANDBOX_UNSUPPORTED`).

use super::paging;
use crate::app::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_webhooks::{Endpoint, WebhookError};
use utoipa::{IntoParams, ToSchema};

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        use WebhookError::*;
        let status = match &e {
            InvalidUrl { .. } | UnknownEventType { .. } | InvalidParameter { .. } => {
                StatusCode::BAD_REQUEST
            }
            NotFound { .. } => StatusCode::NOT_FOUND,
            Conflict { .. } => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(code = e.code(), error = %e, "internal webhook error");
            return ApiError::internal("internal error; the request may be retried");
        }
        let param = match &e {
            InvalidUrl { .. } => Some("url"),
            UnknownEventType { .. } => Some("events"),
            InvalidParameter { field, .. } => Some(*field),
            _ => None,
        };
        let mut a = ApiError::new(status, e.code(), e.to_string());
        if let Some(p) = param {
            a = a.with_param(p);
        }
        a
    }
}

/// Register an endpoint.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEndpointBody {
    /// `https://` URL (loopback `http://` only when the server allows it).
    pub url: String,
    /// Subscribed event types: `transfer.received`, `transfer.settled`, `transfer.failed`,
    /// `swap.settled`, `swap.failed`, `user.linked`, `user.phone_changed`, `escrow.*`.
    pub events: Vec<String>,
}

/// A webhook endpoint. `secret` appears only in the response that creates it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointView {
    pub id: String,
    pub object: &'static str,
    pub url: String,
    pub events: Vec<String>,
    pub enabled: bool,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl EndpointView {
    fn of(e: Endpoint, with_secret: bool) -> Self {
        EndpointView {
            id: e.id.0,
            object: "webhook_endpoint",
            url: e.url,
            events: e.events,
            enabled: e.enabled,
            created_at: e.created_at.to_rfc3339(),
            secret: with_secret.then_some(e.secret),
        }
    }
}

/// A page of endpoints.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointList {
    pub limit: u32,
    pub page: u32,
    pub total: u64,
    pub webhook_endpoints: Vec<EndpointView>,
}

/// Paging of the endpoint list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct EndpointListParams {
    /// 1-100, default 20.
    pub limit: Option<String>,
    /// 1-based, default 1.
    pub page: Option<String>,
}

fn live_only(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.is_sandbox() {
        return Err(ApiError::sandbox_unsupported(what));
    }
    Ok(())
}

/// Register a wallet-service webhook endpoint; its signing secret is returned once.
#[utoipa::path(post, path = "/v1/webhook-endpoints", tag = "webhooks",
    request_body = CreateEndpointBody,
    responses(
        (status = 201, description = "Registered; `secret` is shown only now", body = EndpointView),
        (status = 400, description = "INVALID_WEBHOOK_URL, UNKNOWN_EVENT_TYPE, INVALID_PARAMETER", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_webhook_endpoint(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateEndpointBody>,
) -> Result<Response, ApiError> {
    live_only(&caller, "webhook endpoint registration")?;
    let e = app
        .webhooks
        .register(caller.tenant(), &body.url, &body.events)
        .await?;
    Ok((StatusCode::CREATED, Json(EndpointView::of(e, true))).into_response())
}

/// List the tenant's webhook endpoints (without secrets), newest first.
#[utoipa::path(get, path = "/v1/webhook-endpoints", tag = "webhooks",
    params(EndpointListParams),
    responses((status = 200, description = "A page of endpoints", body = EndpointList)),
    security(("tenant_key" = [])))]
pub async fn list_webhook_endpoints(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EndpointListParams>,
) -> Result<Json<EndpointList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let offset = (p.page as usize - 1).saturating_mul(p.limit as usize);
    let (endpoints, total) = app
        .webhooks
        .list_endpoints(caller.tenant(), p.limit as usize, offset)
        .await?;
    Ok(Json(EndpointList {
        limit: p.limit,
        page: p.page,
        total,
        webhook_endpoints: endpoints
            .into_iter()
            .map(|e| EndpointView::of(e, false))
            .collect(),
    }))
}

/// Read a webhook endpoint (without its secret). Another tenant's is 404.
#[utoipa::path(get, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses(
        (status = 200, description = "The endpoint", body = EndpointView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_webhook_endpoint(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<EndpointView>, ApiError> {
    let e = app.webhooks.endpoint(caller.tenant(), &id).await?;
    Ok(Json(EndpointView::of(e, false)))
}

/// Disable a webhook endpoint: nothing more is sent to it.
#[utoipa::path(delete, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses(
        (status = 200, description = "Disabled", body = EndpointView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn delete_webhook_endpoint(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<EndpointView>, ApiError> {
    live_only(&caller, "webhook endpoint deletion")?;
    let e = app.webhooks.disable(caller.tenant(), &id).await?;
    Ok(Json(EndpointView::of(e, false)))
}
