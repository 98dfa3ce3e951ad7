//! Webhook management over `stablecoin_webhooks::Deliverer`, whose worker runs in the
//! server's worker loop (spec 6's "dashboard" actions, for both families):
//!
//! - `/v1/webhook-endpoints`: register (`family` `wallet`, the default, or `payments`;
//!   `standard_webhooks: true` adds Standard Webhooks signatures), list, read, enable,
//!   rotate the secret, disable (DELETE). The signing secret is returned by create and
//!   rotate only; reads never show it, and an idempotent replay of a create or a rotate
//!   (same `Idempotency-Key`) answers the endpoint WITHOUT it: the secret is shown once
//!   and never stored with a response (lost it? rotate). It is stored sealed. An
//!   endpoint that has failed for 5 days is disabled automatically and says so in
//!   `disabled_reason`.
//! - URLs must be `https://` to a public address (`INVALID_WEBHOOK_URL` otherwise, the
//!   same reason whether the host does not resolve or resolves to an internal address);
//!   `webhooks.allow_networks` opens more (tests, local receivers). Attempts record an
//!   HTTP status, `timeout` or `connection failed`, never an address.
//! - `/v1/webhook-events`: the tenant's events (newest first, optionally of one `type`),
//!   one event with every delivery and attempt (time, HTTP status, latency, error),
//!   replay of one event, replay of every failed (`DEAD`) delivery in a time range.
//! - `/v1/webhook-deliveries`: the tenant's deliveries, optionally in one `state`.
//!
//! Everything is tenant-scoped: another tenant's endpoint, event or delivery is 404.
//! Sandbox keys may read but not change anything here (`SANDBOX_UNSUPPORTED`).

use super::paging;
use super::schemas::{DeliveryStateName, ListLimit, ListPage, Rfc3339};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::ReplayBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_webhooks::delivery::{Attempt, render};
use stablecoin_webhooks::{Delivery, DeliveryState, Endpoint, Family, NewEndpoint, WebhookEvent};
use utoipa::{IntoParams, ToSchema};

/// Register an endpoint. Its schema (one shape per family) is in `api::schemas`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEndpointBody {
    /// `wallet` (default: spec 6.1, `X-Svc-Signature`) or `payments` (spec 6.2,
    /// `X-Webhook-Signature`, `whsec_` secret).
    #[serde(default)]
    pub family: Option<String>,
    /// `https://` URL of a public address (an allowed loopback `http://` only when the
    /// server's `webhooks.allow_networks` allows it).
    pub url: String,
    /// Subscribed event types. Wallet family: `transfer.received`, `transfer.settled`,
    /// `transfer.failed`, `swap.settled`, `swap.failed`, `user.linked`,
    /// `user.phone_changed`, `treasury.topup.credited`, `escrow.*`. Payments family: `payment.confirmed`,
    /// `payment.failed`, `wallet.deposit.detected`, `wallet.deposit.confirmed`,
    /// `wallet.deposit.hash_resolved`, `wallet.transfer.<status>`.
    pub events: Vec<String>,
    /// `true`: every delivery also carries Standard Webhooks headers (`webhook-id`,
    /// `webhook-timestamp`, `webhook-signature: v1,<base64>`, signing
    /// `{id}.{timestamp}.{body}`), beside the family's own signature header, which stays
    /// as the spec defines it. Receivers refuse a stale timestamp, so a captured delivery
    /// cannot be replayed. `webhook-id` is the delivery id, the same on every retry (a
    /// replay is a new delivery). A Standard Webhooks library takes the secret as
    /// `whsec_` + the part after the prefix. Default `false`.
    #[serde(default)]
    pub standard_webhooks: Option<bool>,
}

/// A webhook endpoint. `secret` appears only in the response that creates it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointView {
    /// Endpoint id (`whe_...`).
    pub id: String,
    /// Always `webhook_endpoint`.
    pub object: &'static str,
    /// `wallet` or `payments`.
    pub family: &'static str,
    /// Where deliveries are POSTed.
    pub url: String,
    /// Subscribed event types.
    pub events: Vec<String>,
    /// Whether deliveries also carry Standard Webhooks headers.
    pub standard_webhooks: bool,
    /// Whether deliveries are sent; false after a disable (by the tenant or automatic).
    pub enabled: bool,
    /// Why it is disabled (by the tenant, or automatically after failing for days).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Start of the current run of failed deliveries, when failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    /// When it was registered (RFC 3339).
    pub created_at: String,
    /// The signing secret (`svcwh_...` wallet, `whsec_...` payments); only in the create
    /// and rotate-secret responses, never in reads or idempotent replays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl EndpointView {
    pub(crate) fn of(e: Endpoint, with_secret: bool) -> Self {
        EndpointView {
            id: e.id.0,
            object: "webhook_endpoint",
            family: e.family.as_str(),
            url: e.url,
            events: e.events,
            standard_webhooks: e.standard_webhooks,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            failing_since: e.failing_since.map(Timestamp::to_rfc3339),
            created_at: e.created_at.to_rfc3339(),
            secret: with_secret.then_some(e.secret),
        }
    }
}

/// The answer that shows a secret once: `status` with the endpoint and its secret, and
/// for an idempotent replay ([`ReplayBody`]) the endpoint without it, so the secret is
/// never stored with a response.
fn secret_shown_once(status: StatusCode, e: Endpoint) -> Result<Response, ApiError> {
    let without = serde_json::to_vec(&EndpointView::of(e.clone(), false))
        .map_err(|_| ApiError::internal("internal error; the request may be retried"))?;
    let mut res = (status, Json(EndpointView::of(e, true))).into_response();
    res.extensions_mut().insert(ReplayBody(without.into()));
    Ok(res)
}

/// A page of endpoints.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// The tenant's endpoints across all pages.
    pub total: u64,
    /// This page's endpoints, newest first, without secrets.
    pub webhook_endpoints: Vec<EndpointView>,
}

/// Paging of the endpoint list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EndpointListParams {
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// The sandbox rule of webhook mutations (`AuthContext::require_live`).
fn live_only(caller: &Caller, what: &str) -> Result<(), ApiError> {
    Ok(caller.0.require_live(what)?)
}

/// Register a webhook endpoint of either family; its signing secret is returned once.
#[utoipa::path(post, path = "/v1/webhook-endpoints", tag = "webhooks",
    request_body = CreateEndpointBody,
    responses(
        (status = 201, description = "Registered; `secret` is shown only now (an idempotent replay answers the endpoint without it)", body = EndpointView),
        (status = 400, description = "INVALID_WEBHOOK_URL (also for a host that does not resolve to public addresses only, which no schema can tell), UNKNOWN_EVENT_TYPE, INVALID_PARAMETER", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_webhook_endpoint(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateEndpointBody>,
) -> Result<Response, ApiError> {
    live_only(&caller, "webhook endpoint registration")?;
    let family = match body.family.as_deref() {
        None | Some("wallet") => Family::Wallet,
        Some("payments") => Family::Payments,
        Some(_) => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "family must be wallet or payments",
            )
            .with_param("family"));
        }
    };
    let new = NewEndpoint {
        family,
        url: body.url,
        events: body.events,
        standard_webhooks: body.standard_webhooks.unwrap_or(false),
    };
    let e = app
        .webhooks
        .register_endpoint(caller.tenant(), &new)
        .await
        .map_err(ApiError::webhook)?;
    secret_shown_once(StatusCode::CREATED, e)
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
    let (offset, count) = p.window();
    let (endpoints, total) = app
        .webhooks
        .list_endpoints(caller.tenant(), count, offset)
        .await
        .map_err(ApiError::webhook)?;
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
    let e = app
        .webhooks
        .endpoint(caller.tenant(), &id)
        .await
        .map_err(ApiError::webhook)?;
    Ok(Json(EndpointView::of(e, false)))
}

/// Disable a webhook endpoint: nothing more is sent to it.
#[utoipa::path(delete, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses(
        (status = 200, description = "Disabled", body = EndpointView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 409, description = "CONFLICT: a concurrent change won; retry", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn delete_webhook_endpoint(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<EndpointView>, ApiError> {
    live_only(&caller, "webhook endpoint deletion")?;
    let e = app
        .webhooks
        .disable(caller.tenant(), &id)
        .await
        .map_err(ApiError::webhook)?;
    Ok(Json(EndpointView::of(e, false)))
}

/// Enable a disabled endpoint again (after a manual or automatic disable). Events it
/// missed meanwhile are recovered with the replays.
#[utoipa::path(post, path = "/v1/webhook-endpoints/{id}/enable", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses(
        (status = 200, description = "Enabled", body = EndpointView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn enable_webhook_endpoint(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<EndpointView>, ApiError> {
    live_only(&caller, "webhook endpoint changes")?;
    let e = app
        .webhooks
        .enable(caller.tenant(), &id)
        .await
        .map_err(ApiError::webhook)?;
    Ok(Json(EndpointView::of(e, false)))
}

/// Replace the endpoint's signing secret. The new secret is returned once; the previous
/// one stops verifying at once.
#[utoipa::path(post, path = "/v1/webhook-endpoints/{id}/rotate-secret", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses(
        (status = 200, description = "Rotated; `secret` is shown only now (an idempotent replay answers the endpoint without it)", body = EndpointView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn rotate_webhook_secret(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Response, ApiError> {
    live_only(&caller, "webhook secret rotation")?;
    let e = app
        .webhooks
        .rotate_secret(caller.tenant(), &id)
        .await
        .map_err(ApiError::webhook)?;
    secret_shown_once(StatusCode::OK, e)
}

/// One delivery attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView {
    /// When the attempt was made (RFC 3339).
    pub at: String,
    /// HTTP status answered, absent when none was (timeout, connection error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Time from sending to the answer (or the failure), in milliseconds.
    pub latency_ms: u64,
    /// Why it failed (`HTTP 500`, `timeout`, `connection failed`, ...); absent on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<Attempt> for AttemptView {
    fn from(a: Attempt) -> Self {
        AttemptView {
            at: a.at.to_rfc3339(),
            status: a.status,
            latency_ms: a.latency_ms,
            error: a.error,
        }
    }
}

/// One delivery of an event to one endpoint, with every attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// Delivery id (`whd_...`); also the `webhook-id` / `X-Webhook-ID` header, the same
    /// on every retry.
    pub id: String,
    /// Always `webhook_delivery`.
    pub object: &'static str,
    /// The endpoint it is sent to (`whe_...`).
    pub endpoint_id: String,
    /// The event it carries (`evt_...`).
    pub event_id: String,
    /// The event's type (`transfer.settled`, ...).
    pub event_type: String,
    /// `PENDING`, `DELIVERED` or `DEAD` (every attempt failed).
    pub state: &'static str,
    /// When the next attempt is due (RFC 3339); only while `PENDING`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    /// Every attempt so far, oldest first.
    pub attempts: Vec<AttemptView>,
    /// The delivery this one re-sends (a replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The replay that re-sent this failed delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_by: Option<String>,
    /// When the delivery was created (RFC 3339).
    pub created_at: String,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            object: "webhook_delivery",
            endpoint_id: d.endpoint.0,
            event_id: d.event_id,
            event_type: d.event_type,
            state: d.state.as_str(),
            next_attempt_at: match d.state {
                DeliveryState::Pending => d.next_attempt_at.map(Timestamp::to_rfc3339),
                _ => None,
            },
            attempts: d.attempts.into_iter().map(AttemptView::from).collect(),
            replay_of: d.replay_of,
            replayed_by: d.replayed_by,
            created_at: d.created_at.to_rfc3339(),
        }
    }
}

/// An event as its receivers get it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventView {
    /// Event id (`evt_...`), the same across deliveries and replays.
    pub id: String,
    /// Always `webhook_event`.
    pub object: &'static str,
    /// The event type (`transfer.settled`, `payment.confirmed`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the event occurred (RFC 3339).
    pub created_at: String,
    /// The payload exactly as delivered (spec 6).
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    /// How many times it was replayed.
    pub replays: u32,
    /// The deliveries with their attempts (only when reading one event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<DeliveryView>>,
}

impl EventView {
    fn of(e: WebhookEvent, deliveries: Option<Vec<Delivery>>) -> Self {
        let payload = render(&e.event_type, &e.payload)
            .ok()
            .and_then(|body| serde_json::from_str(&body).ok())
            .unwrap_or(e.payload);
        EventView {
            id: e.id,
            object: "webhook_event",
            event_type: e.event_type,
            created_at: e.occurred_at.to_rfc3339(),
            payload,
            replays: e.replays,
            deliveries: deliveries.map(|d| d.into_iter().map(DeliveryView::from).collect()),
        }
    }
}

/// A page of events.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Events of the tenant across all pages (after filters).
    pub total: u64,
    /// This page's events, newest first, without their deliveries.
    pub webhook_events: Vec<EventView>,
}

/// Filters and paging of the event list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventListParams {
    /// Only events of this type (`transfer.settled`, ...).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub event_type: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// List the tenant's webhook events, newest first.
#[utoipa::path(get, path = "/v1/webhook-events", tag = "webhooks",
    params(EventListParams),
    responses((status = 200, description = "A page of events", body = EventList)),
    security(("tenant_key" = [])))]
pub async fn list_webhook_events(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EventListParams>,
) -> Result<Json<EventList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let (offset, count) = p.window();
    let page = app
        .webhooks
        .list_events(caller.tenant(), q.event_type.as_deref(), count, offset)
        .await
        .map_err(ApiError::webhook)?;
    Ok(Json(EventList {
        limit: p.limit,
        page: p.page,
        total: page.total,
        webhook_events: page
            .items
            .into_iter()
            .map(|e| EventView::of(e, None))
            .collect(),
    }))
}

/// Read one event with every delivery and attempt. Another tenant's is 404.
#[utoipa::path(get, path = "/v1/webhook-events/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Event id")),
    responses(
        (status = 200, description = "The event, its deliveries and attempts", body = EventView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_webhook_event(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<EventView>, ApiError> {
    let d = app
        .webhooks
        .event(caller.tenant(), &id)
        .await
        .map_err(ApiError::webhook)?;
    Ok(Json(EventView::of(d.event, Some(d.deliveries))))
}

/// Deliveries created by a replay.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayView {
    /// Always `webhook_replay`.
    pub object: &'static str,
    /// How many deliveries the replay created (0: nothing to re-send).
    pub replayed: usize,
    /// The new deliveries, queued for sending.
    pub deliveries: Vec<DeliveryView>,
}

impl ReplayView {
    fn of(created: Vec<Delivery>) -> Self {
        ReplayView {
            object: "webhook_replay",
            replayed: created.len(),
            deliveries: created.into_iter().map(DeliveryView::from).collect(),
        }
    }
}

/// Send one event again, now, to every enabled endpoint subscribed to it: same bytes (an
/// escrow event keeps its `event_id`), a new delivery (payments: a new `X-Webhook-ID`).
#[utoipa::path(post, path = "/v1/webhook-events/{id}/replay", tag = "webhooks",
    params(("id" = String, Path, description = "Event id")),
    responses(
        (status = 202, description = "Queued for delivery", body = ReplayView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn replay_webhook_event(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Response, ApiError> {
    live_only(&caller, "webhook replay")?;
    let created = app
        .webhooks
        .replay_event(caller.tenant(), &id)
        .await
        .map_err(ApiError::webhook)?;
    Ok((StatusCode::ACCEPTED, Json(ReplayView::of(created))).into_response())
}

/// Replay every failed delivery created in `[from, to)`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayFailedBody {
    /// Inclusive.
    #[schema(value_type = Rfc3339)]
    pub from: String,
    /// Exclusive; after `from` (else 400 INVALID_PARAMETER).
    #[schema(value_type = Rfc3339)]
    pub to: String,
}

fn instant(field: &'static str, s: &str) -> Result<Timestamp, ApiError> {
    Timestamp::parse_rfc3339(s).ok_or_else(|| {
        ApiError::bad_request(
            "INVALID_PARAMETER",
            format!("{field} must be an RFC 3339 timestamp"),
        )
        .with_param(field)
    })
}

/// Re-send every `DEAD` delivery created in `[from, to)` whose endpoint is enabled and
/// that no earlier replay re-sent (up to 1,000 per call; call again for more).
#[utoipa::path(post, path = "/v1/webhook-events/replay-failed", tag = "webhooks",
    request_body = ReplayFailedBody,
    responses(
        (status = 202, description = "Queued for delivery", body = ReplayView),
        (status = 400, description = "INVALID_PARAMETER (timestamps, empty range)", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn replay_failed_webhooks(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ReplayFailedBody>,
) -> Result<Response, ApiError> {
    live_only(&caller, "webhook replay")?;
    let from = instant("from", &body.from)?;
    let to = instant("to", &body.to)?;
    let created = app
        .webhooks
        .replay_failed(caller.tenant(), from, to)
        .await
        .map_err(ApiError::webhook)?;
    Ok((StatusCode::ACCEPTED, Json(ReplayView::of(created))).into_response())
}

/// A page of deliveries.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Deliveries of the tenant across all pages (after filters).
    pub total: u64,
    /// This page's deliveries, newest first, with their attempts.
    pub webhook_deliveries: Vec<DeliveryView>,
}

/// Filters and paging of the delivery list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveryListParams {
    /// Only deliveries in this state.
    #[param(value_type = DeliveryStateName, required = false)]
    pub state: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// List the tenant's deliveries with their attempts, newest first.
#[utoipa::path(get, path = "/v1/webhook-deliveries", tag = "webhooks",
    params(DeliveryListParams),
    responses((status = 200, description = "A page of deliveries", body = DeliveryList)),
    security(("tenant_key" = [])))]
pub async fn list_webhook_deliveries(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<DeliveryListParams>,
) -> Result<Json<DeliveryList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let state = match q.state.as_deref() {
        None => None,
        Some("PENDING") => Some(DeliveryState::Pending),
        Some("DELIVERED") => Some(DeliveryState::Delivered),
        Some("DEAD") => Some(DeliveryState::Dead),
        Some(_) => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "state must be PENDING, DELIVERED or DEAD",
            )
            .with_param("state"));
        }
    };
    let (offset, count) = p.window();
    let page = app
        .webhooks
        .list_deliveries(caller.tenant(), state, count, offset)
        .await
        .map_err(ApiError::webhook)?;
    Ok(Json(DeliveryList {
        limit: p.limit,
        page: p.page,
        total: page.total,
        webhook_deliveries: page.items.into_iter().map(DeliveryView::from).collect(),
    }))
}
