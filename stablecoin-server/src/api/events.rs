//! The events API (issue #52): what happened, pulled rather than pushed.
//!
//! - `GET /v1/events`, `GET /v1/events/{id}` (tenant keys): the wallet family (spec 6.1:
//!   transfers, swaps, users, top-ups, escrows).
//! - `GET /api/v1/events`, `GET /api/v1/events/{id}` (business keys, beside the
//!   checkout): the payments family (spec 6.2: payments, deposits, wallet transfers).
//!
//! Every event of the key's tenant is listed, whether or not a webhook endpoint was
//! subscribed to it, for the webhook retention window (`retention.webhook_events_hours`,
//! 30 days by default). Each event's `payload` is the JSON the webhook delivered, byte
//! for byte: the handler writes the rendered body into the response as it is, never
//! through a JSON tree that could reorder or reformat it.
//!
//! Lists are newest first and paged by an opaque cursor: `next_cursor` of a page, sent
//! back as `starting_after`, continues exactly after its last event, however many
//! events arrived meanwhile. The rules (filters, cursors, which types a family has) are
//! `stablecoin_webhooks::delivery::events_api`'s; this module maps HTTP to them.

use super::schemas::{ListLimit, Rfc3339};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_webhooks::Family;
use stablecoin_webhooks::delivery::{EventCursor, EventQuery, ListedEvent, TypeFilter};
use utoipa::{IntoParams, ToSchema};

/// Filters and cursor of an event list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsParams {
    /// One type (`transfer.settled`), a prefix (`transfer.*`), or `*` (every type of the
    /// key's family, the default).
    #[serde(rename = "type")]
    #[param(rename = "type", max_length = 65)]
    pub event_type: Option<String>,
    /// Only events created at or after this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub from: Option<String>,
    /// Only events created strictly before this instant (RFC 3339).
    #[param(value_type = Rfc3339, required = false)]
    pub to: Option<String>,
    /// The `next_cursor` of the previous page: the list continues after its last event.
    #[param(max_length = 512)]
    pub starting_after: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
}

/// One event. `payload` is the body the webhook delivered, byte for byte.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventObject {
    /// `evt_...`: the `event_id` the webhook carried.
    pub id: String,
    /// Always `event`.
    pub object: String,
    /// The event type (`transfer.settled`, `payment.confirmed`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the engine committed it (RFC 3339, whole seconds as every API time; the
    /// order of a list is by the exact time, then id).
    pub created_at: String,
    /// The delivered JSON body, exactly (spec 6.1 / 6.2); `null` only for an event that
    /// could not be rendered (its deliveries are DEAD with that reason).
    #[schema(value_type = Object, nullable = true)]
    pub payload: Option<serde_json::Value>,
}

/// A page of events, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsList {
    /// Always `list`.
    pub object: String,
    /// The page size used (1-100).
    pub limit: u32,
    /// Whether more events follow this page.
    pub has_more: bool,
    /// Send as `starting_after` for the next page; `null` on the last page.
    #[schema(nullable = true)]
    pub next_cursor: Option<String>,
    /// The events.
    pub events: Vec<EventObject>,
}

fn instant(field: &'static str, s: Option<&str>) -> Result<Option<Timestamp>, ApiError> {
    s.map(|s| {
        Timestamp::parse_rfc3339(s.trim()).ok_or_else(|| {
            ApiError::bad_request(
                "INVALID_PARAMETER",
                format!("{field} must be an RFC 3339 timestamp"),
            )
            .with_param(field)
        })
    })
    .transpose()
}

fn limit(s: Option<&str>) -> Result<u32, ApiError> {
    use super::schemas::{LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX};
    match s {
        None => Ok(LIST_LIMIT_DEFAULT),
        Some(s) => match s.trim().parse::<u32>() {
            Ok(n) if (1..=LIST_LIMIT_MAX).contains(&n) => Ok(n),
            _ => Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                format!("limit must be an integer from 1 to {LIST_LIMIT_MAX}"),
            )
            .with_param("limit")),
        },
    }
}

/// Appends one event's JSON to `out`, the payload as its delivered bytes.
pub(crate) fn write_event(out: &mut String, e: &ListedEvent) -> Result<(), ApiError> {
    let text = |s: &str| serde_json::to_string(s).map_err(|_| ApiError::internal("internal error"));
    out.push_str("{\"id\":");
    out.push_str(&text(&e.id)?);
    out.push_str(",\"object\":\"event\",\"type\":");
    out.push_str(&text(&e.event_type)?);
    out.push_str(",\"created_at\":");
    out.push_str(&text(&e.created_at.to_rfc3339())?);
    out.push_str(",\"payload\":");
    out.push_str(e.body.as_deref().unwrap_or("null"));
    out.push('}');
    Ok(())
}

fn json(body: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

async fn list(
    app: &AppState,
    caller: &Caller,
    family: Family,
    q: EventsParams,
) -> Result<Response, ApiError> {
    let limit = limit(q.limit.as_deref())?;
    let types = TypeFilter::parse(family, q.event_type.as_deref()).map_err(ApiError::webhook)?;
    let after = q
        .starting_after
        .as_deref()
        .map(EventCursor::decode)
        .transpose()
        .map_err(ApiError::webhook)?;
    let query = EventQuery {
        family,
        types,
        from: instant("from", q.from.as_deref())?,
        to: instant("to", q.to.as_deref())?,
        after,
        limit: limit as usize,
    };
    let page = app
        .webhooks
        .events_page(caller.tenant(), &query)
        .await
        .map_err(ApiError::webhook)?;
    let mut out = String::with_capacity(256 + page.events.len() * 512);
    out.push_str("{\"object\":\"list\",\"limit\":");
    out.push_str(&limit.to_string());
    out.push_str(",\"has_more\":");
    out.push_str(if page.next.is_some() { "true" } else { "false" });
    out.push_str(",\"next_cursor\":");
    match &page.next {
        Some(c) => {
            out.push('"');
            out.push_str(&c.encode()); // base64url: nothing to escape
            out.push('"');
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"events\":[");
    for (i, e) in page.events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_event(&mut out, e)?;
    }
    out.push_str("]}");
    Ok(json(out))
}

async fn one(
    app: &AppState,
    caller: &Caller,
    family: Family,
    id: &str,
) -> Result<Response, ApiError> {
    let e = app
        .webhooks
        .listed_event(caller.tenant(), family, id)
        .await
        .map_err(ApiError::webhook)?;
    let mut out = String::with_capacity(512);
    write_event(&mut out, &e)?;
    Ok(json(out))
}

/// List the tenant's wallet-family events, newest first (cursor-paged).
#[utoipa::path(get, path = "/v1/events", tag = "events",
    params(EventsParams),
    responses(
        (status = 200, description = "A page of events", body = EventsList),
        (status = 400, description = "INVALID_PARAMETER (type, from, to, starting_after, limit) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a tenant key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_events(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EventsParams>,
) -> Result<Response, ApiError> {
    list(&app, &caller, Family::Wallet, q).await
}

/// Read one wallet-family event. Another tenant's (or a payments event) is 404.
#[utoipa::path(get, path = "/v1/events/{id}", tag = "events",
    params(("id" = String, Path, description = "Event id (evt_...)")),
    responses(
        (status = 200, description = "The event", body = EventObject),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a tenant key", body = ErrorBody),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_event(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Response, ApiError> {
    one(&app, &caller, Family::Wallet, &id).await
}

/// List the payments-family events of the business key's tenant, newest first.
#[utoipa::path(get, path = "/api/v1/events", tag = "events",
    params(EventsParams),
    responses(
        (status = 200, description = "A page of events", body = EventsList),
        (status = 400, description = "INVALID_PARAMETER (type, from, to, starting_after, limit) or INVALID_QUERY", body = ErrorBody),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn list_payments_events(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EventsParams>,
) -> Result<Response, ApiError> {
    list(&app, &caller, Family::Payments, q).await
}

/// Read one payments-family event. Another tenant's (or a wallet event) is 404.
#[utoipa::path(get, path = "/api/v1/events/{id}", tag = "events",
    params(("id" = String, Path, description = "Event id (evt_...)")),
    responses(
        (status = 200, description = "The event", body = EventObject),
        (status = 401, description = "Missing or unknown key", body = ErrorBody),
        (status = 403, description = "Not a business key", body = ErrorBody),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn get_payments_event(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Response, ApiError> {
    one(&app, &caller, Family::Payments, &id).await
}
