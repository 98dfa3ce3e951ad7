//! `/v1/escrows`: the embedded escrow (spec 1.6, 2.1, 2.2, 3.1, 4.1) over
//! `stablecoin_escrow::EscrowEngine`. Handlers only decode, call the engine and encode;
//! every rule (admission, parties, state machine, sandbox simulation) lives in the crate.
//!
//! Status codes: create `201` with the escrow view (a sandbox key gets a simulated view,
//! `simulated: true`, never stored); release and refund `202` (the payout settles
//! asynchronously: `payout_pending` stays true until it is confirmed); dispute and cancel
//! `200` (they complete in the request). Escrow actions take no `Idempotency-Key`
//! (spec 2.2): a repeat is answered by the state machine (`409`). Staff resolution of a
//! dispute and recoveries are not tenant operations: they are the staff routes of
//! [`super::staff`] (`/admin/v1/escrows`), which no tenant key can reach.

use super::paging;
use super::schemas::{DisputeEscrowRequest, EscrowStateName, ListLimit, ListPage};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, IdempotencyKey};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use stablecoin_escrow::{
    CreateEscrowRequest, EscrowActionRequest, EscrowEngine, EscrowError, EscrowEventList,
    EscrowList, EscrowView, ListEscrowsQuery,
};
use utoipa::IntoParams;

pub(crate) fn engine(app: &AppState) -> Result<&EscrowEngine, ApiError> {
    app.escrow.as_ref().ok_or_else(|| {
        EscrowError::EscrowUnavailable {
            reason: "the TRON rail is disabled on this server".into(),
        }
        .into()
    })
}

/// Create an escrow deal: TRON USDT held at a fresh per-deal address.
///
/// Buyer and seller must be wallets provisioned and linked to the calling tenant.
/// `amount` is a whole-token string (`"150"`); every amount in the view is base units
/// (`"150000000"`). Admission needs TRON deposits enabled and the TRON rail READY.
/// Sandbox: a simulated view (`simulated: true`) that is never stored.
#[utoipa::path(post, path = "/v1/escrows", tag = "escrows",
    request_body = CreateEscrowRequest,
    responses(
        (status = 201, description = "Created (CREATED, awaiting funding at escrow_address)", body = EscrowView),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet for a party's phone", body = ErrorBody),
        (status = 422, description = "SAME_WALLET", body = ErrorBody),
        (status = 503, description = "ESCROW_UNAVAILABLE, RAIL_NOT_READY", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_escrow(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<CreateEscrowRequest>,
) -> Result<Response, ApiError> {
    let view = engine(&app)?
        .create(&caller.0, &body, key.as_deref())
        .await?;
    let location = format!("/v1/escrows/{}", view.id);
    let mut r = (StatusCode::CREATED, Json(view)).into_response();
    if let Ok(v) = location.parse() {
        r.headers_mut().insert(axum::http::header::LOCATION, v);
    }
    Ok(r)
}

/// Query of the escrow list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EscrowListParams {
    /// Only escrows in this state.
    #[param(value_type = EscrowStateName, required = false)]
    pub state: Option<String>,
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// List the tenant's escrows, newest first.
#[utoipa::path(get, path = "/v1/escrows", tag = "escrows",
    params(EscrowListParams),
    responses((status = 200, description = "A page of escrows", body = EscrowList)),
    security(("tenant_key" = [])))]
pub async fn list_escrows(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EscrowListParams>,
) -> Result<Json<EscrowList>, ApiError> {
    // The API's paging rules (bounds, errors) are the same for every list.
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let query = ListEscrowsQuery {
        state: q.state,
        limit: Some(p.limit),
        page: Some(p.page),
    };
    Ok(Json(engine(&app)?.list(&caller.0, &query).await?))
}

/// Read an escrow (spec 2.1). Another tenant's escrow, or a simulated one, is 404.
#[utoipa::path(get, path = "/v1/escrows/{id}", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses(
        (status = 200, description = "The escrow view", body = EscrowView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_escrow(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<EscrowView>, ApiError> {
    Ok(Json(engine(&app)?.get(&caller.0, &id).await?))
}

/// Query of an escrow's history.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EscrowEventsParams {
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// An escrow's permanent history: every transition with actor, authority,
/// `on_behalf_of`, reason and time. Each entry's `event_id` is its webhook's.
#[utoipa::path(get, path = "/v1/escrows/{id}/events", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)"), EscrowEventsParams),
    responses(
        (status = 200, description = "A page of the history", body = EscrowEventList),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn escrow_events(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiQuery(q): ApiQuery<EscrowEventsParams>,
) -> Result<Json<EscrowEventList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    Ok(Json(
        engine(&app)?
            .events(&caller.0, &id, Some(p.limit), Some(p.page))
            .await?,
    ))
}

fn view(status: StatusCode, v: EscrowView) -> Response {
    (status, Json(v)).into_response()
}

/// Release a funded escrow to the seller's linked wallet (spec 4.1).
///
/// 202 with the view: the state stays FUNDED with `payout_pending=true` until the payout
/// is confirmed, then RELEASED with `payout_tx_hash`. A 202 is not settlement.
#[utoipa::path(post, path = "/v1/escrows/{id}/release", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    request_body = EscrowActionRequest,
    responses(
        (status = 202, description = "Payout claimed", body = EscrowView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 409, description = "INVALID_STATE, PAYOUT_IN_FLIGHT", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody),
        (status = 403, description = "SCREENING_HIT: sanctions screening lists the destination wallet (audited); POLICY_DENIED: a spending policy of the tenant refuses the payout (`rule_id`; audited; above an approval threshold too, as a payout cannot be held for approval); nothing claimed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn release_escrow(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<EscrowActionRequest>,
) -> Result<Response, ApiError> {
    let v = engine(&app)?.release(&caller.0, &id, &body).await?;
    Ok(view(StatusCode::ACCEPTED, v))
}

/// Refund a funded escrow to the buyer's linked wallet. Mirrors release.
#[utoipa::path(post, path = "/v1/escrows/{id}/refund", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    request_body = EscrowActionRequest,
    responses(
        (status = 202, description = "Payout claimed", body = EscrowView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 409, description = "INVALID_STATE, PAYOUT_IN_FLIGHT", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody),
        (status = 403, description = "SCREENING_HIT: sanctions screening lists the destination wallet (audited); POLICY_DENIED: a spending policy of the tenant refuses the payout (`rule_id`; audited; above an approval threshold too, as a payout cannot be held for approval); nothing claimed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn refund_escrow(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<EscrowActionRequest>,
) -> Result<Response, ApiError> {
    let v = engine(&app)?.refund(&caller.0, &id, &body).await?;
    Ok(view(StatusCode::ACCEPTED, v))
}

/// Dispute a funded escrow (`reason` required). Only staff can then resolve it.
#[utoipa::path(post, path = "/v1/escrows/{id}/dispute", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    request_body = DisputeEscrowRequest,
    responses(
        (status = 200, description = "DISPUTED", body = EscrowView),
        (status = 400, description = "MISSING_PARAMETER (reason)", body = ErrorBody),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 409, description = "INVALID_STATE, PAYOUT_IN_FLIGHT", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn dispute_escrow(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<EscrowActionRequest>,
) -> Result<Response, ApiError> {
    let v = engine(&app)?.dispute(&caller.0, &id, &body).await?;
    Ok(view(StatusCode::OK, v))
}

/// Cancel an escrow that is not funded yet (CREATED only); partial deposits become
/// recoverable by staff.
#[utoipa::path(post, path = "/v1/escrows/{id}/cancel", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    request_body = EscrowActionRequest,
    responses(
        (status = 200, description = "CANCELLED", body = EscrowView),
        (status = 404, description = "Not found for this tenant", body = ErrorBody),
        (status = 409, description = "INVALID_STATE", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn cancel_escrow(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<EscrowActionRequest>,
) -> Result<Response, ApiError> {
    let v = engine(&app)?.cancel(&caller.0, &id, &body).await?;
    Ok(view(StatusCode::OK, v))
}
