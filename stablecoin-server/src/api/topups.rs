//! Top-ups (money in, spec 1 item 3 and 2.6): the tenant's quote and reads under
//! `/v1/treasury/topups`, and the staff confirmation under `/admin/v1/topups`. Every rule
//! is the engine's (`Engine::create_topup`, `Engine::confirm_topup`); these handlers only
//! map HTTP to it.

use super::schemas::*;
use super::types::FiatAmount;
use super::{paging, token};
use crate::auth::{Caller, Staff};
use crate::error::{ApiError, ErrorBody, at};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_core::CoreError;
use stablecoin_core::domain::fx::parse_fiat_amount;
use stablecoin_core::domain::money::Currency;
use stablecoin_core::domain::topup::{TopUpConfirmation, TopUpStatus, TopUpView};
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/treasury/topups`. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TopUpBody {
    /// The fiat the tenant pays (XOF, XAF, NGN, GHS, KES, ...).
    #[schema(value_type = CurrencyCode)]
    pub currency_code: String,
    /// Amount of fiat, in the currency's major unit.
    pub fiat_amount: FiatAmount,
    /// The token the treasury is credited in.
    #[schema(value_type = TokenName)]
    pub token: String,
}

/// `POST /admin/v1/topups/{id}/confirm`. Unknown fields are refused (`UNKNOWN_FIELD`).
/// Its schema, with the patterns, is written in `schemas.rs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmTopUpBody {
    /// The fiat receipt's reference (bank or mobile-money transaction id): one line, not
    /// blank, at most 200 characters; it confirms one top-up only.
    pub fiat_reference: String,
    /// A note for the audit trail (at most 1000 characters).
    #[serde(default)]
    pub note: Option<String>,
}

/// `GET /v1/treasury/topups`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TopUpListQuery {
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// A top-up.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TopUpResponse {
    /// `tu_...`.
    #[schema(example = "tu_01JD0000000000000000000000")]
    pub id: String,
    /// AWAITING_FUNDS (quoted, fiat not confirmed), AWAITING_SECOND_APPROVAL (above the
    /// single-approval cap: one staff member confirmed, a second must approve), CREDITED
    /// (the treasury was credited), EXPIRED (not confirmed before `expires_at`).
    #[schema(value_type = TopUpStatusName)]
    pub status: String,
    /// ISO 4217 code of the fiat.
    #[schema(example = "XOF")]
    pub currency_code: String,
    /// The fiat to pay, exactly 2 decimal places.
    #[schema(example = "600000.00")]
    pub fiat_amount: String,
    /// `USDC` or `USDT`.
    #[schema(example = "USDC")]
    pub token: String,
    /// Local currency per token, locked at creation (the FX quotes' rate source).
    #[schema(example = "600")]
    pub rate: String,
    /// Tokens credited on confirmation: `fiat_amount / rate` rounded down to 6 places.
    #[schema(example = "1000.000000")]
    pub token_amount: String,
    /// `<CURRENCY>_<TOKEN>`.
    #[schema(example = "XOF_USDC")]
    pub currency_pair: String,
    /// RFC 3339 UTC; a confirmation from then on is 410 QUOTE_EXPIRED.
    pub expires_at: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
    /// RFC 3339 UTC, once credited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
    /// The fiat receipt's reference, once credited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fiat_reference: Option<String>,
    /// Staff responses only: the tenant whose treasury it credits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Staff responses only: whose confirmation credited it (`stf_...` or
    /// `admin-token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<String>,
    /// Staff responses only: above the single-approval cap, who proposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_by: Option<String>,
    /// Staff responses only: when it was proposed (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_at: Option<String>,
    /// Staff responses only: the confirmation's note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<TopUpView> for TopUpResponse {
    fn from(v: TopUpView) -> Self {
        let TopUpView {
            id,
            status,
            currency_code,
            fiat_amount,
            token,
            rate,
            token_amount,
            currency_pair,
            expires_at,
            created_at,
            updated_at,
            confirmed_at,
            fiat_reference,
            tenant_id,
            confirmed_by,
            proposed_by,
            proposed_at,
            note,
        } = v;
        TopUpResponse {
            id,
            status,
            currency_code,
            fiat_amount,
            token,
            rate,
            token_amount,
            currency_pair,
            expires_at,
            created_at,
            updated_at,
            confirmed_at,
            fiat_reference,
            tenant_id,
            confirmed_by,
            proposed_by,
            proposed_at,
            note,
        }
    }
}

/// A page of top-ups, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TopUpList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// The tenant's top-ups across all pages.
    pub total: u64,
    /// This page's top-ups, newest first.
    pub topups: Vec<TopUpResponse>,
}

/// Ask for a top-up quote: money in to the tenant's treasury.
///
/// Locks the FX rate (the same source and rounding as `POST /api/v1/fx/quote`) for
/// `fiat_amount` of `currency_code` into `token`. Nothing is credited yet: pay the fiat,
/// then service staff confirm the top-up (`POST /admin/v1/topups/{id}/confirm`) and the
/// treasury is credited `token_amount` once, with a `treasury.topup.credited` webhook.
/// Confirmable until `expires_at` (24 hours by default). 201 with the top-up and a
/// `Location`. Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/treasury/topups", tag = "treasury",
    request_body = TopUpBody,
    responses(
        (status = 201, description = "The top-up quote, AWAITING_FUNDS", body = TopUpResponse,
            headers(("Location" = String, description = "/v1/treasury/topups/{id}"))),
        (status = 400, description = "Bad amount, currency or token; INVALID_AMOUNT also when the amount converts to less than 0.000001 token at the current rate", body = ErrorBody),
        (status = 403, description = "SANDBOX_UNSUPPORTED: a test key", body = ErrorBody),
        (status = 503, description = "RATE_SOURCE_ERROR or RATE_STALE: no FX rate can be locked now", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_topup(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<TopUpBody>,
) -> Result<Response, ApiError> {
    let fiat = parse_fiat_amount(&body.fiat_amount.0).map_err(CoreError::from)?;
    let currency = Currency::parse(body.currency_code.trim()).map_err(at("currency_code"))?;
    let tok = token("token", &body.token)?;
    caller.0.require_live("a top-up")?;
    let v = app
        .engine
        .create_topup(caller.tenant(), fiat, currency, tok)
        .await?;
    let location = format!("/v1/treasury/topups/{}", v.id);
    let mut res = (StatusCode::CREATED, Json(TopUpResponse::from(v))).into_response();
    if let Ok(loc) = location.parse() {
        res.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(res)
}

/// Read a top-up of the caller.
#[utoipa::path(get, path = "/v1/treasury/topups/{id}", tag = "treasury",
    params(("id" = String, Path, description = "Top-up id (`tu_...`)")),
    responses(
        (status = 200, description = "The top-up", body = TopUpResponse),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_topup(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<TopUpResponse>, ApiError> {
    Ok(Json(app.engine.topup(caller.tenant(), &id).await?.into()))
}

/// List the caller's top-ups, newest first.
#[utoipa::path(get, path = "/v1/treasury/topups", tag = "treasury",
    params(TopUpListQuery),
    responses(
        (status = 200, description = "A page of top-ups", body = TopUpList),
        (status = 400, description = "Bad limit or page", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_topups(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<TopUpListQuery>,
) -> Result<Json<TopUpList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let (skip, take) = p.window();
    let (topups, total) = app.engine.list_topups(caller.tenant(), take, skip).await?;
    Ok(Json(TopUpList {
        limit: p.limit,
        page: p.page,
        total,
        topups: topups.into_iter().map(Into::into).collect(),
    }))
}

/// Staff: confirm that a top-up's fiat arrived, crediting the tenant's treasury.
///
/// Credits `token_amount` to the tenant's treasury exactly once (ledger transfer
/// `topup:<id>` from `fiat_in:<TOKEN>`), records the fiat reference and who confirmed it
/// (the staff account's `stf_...` id, or `admin-token` for the shared token), sends the
/// tenant `treasury.topup.credited` and writes the staff audit entry `topup.confirm`, all
/// in one commit. Two-person rule: a top-up whose `token_amount` is above
/// `[admin] topup_single_approval_max` (10,000 tokens by default) is only proposed by
/// the first confirmation: 202 AWAITING_SECOND_APPROVAL with `proposed_by`, the
/// reference claimed, nothing credited, audited `topup.confirm.proposed`. A DIFFERENT
/// staff identity confirming with the same `fiat_reference` credits it (200). The
/// proposer again is 409 SECOND_APPROVER_REQUIRED (the admin token is ONE identity, so
/// it never approves its own proposal; a different reference from the proposer replaces
/// the proposal); another approver's different reference is 409 APPROVAL_MISMATCH. A
/// replay is 409 ALREADY_CONFIRMED and changes nothing (safe to retry, so no
/// `Idempotency-Key`). Needs `Authorization: Bearer <admin.token>` or a staff account's
/// secret; without either configured the route answers 404 ADMIN_DISABLED.
#[utoipa::path(post, path = "/admin/v1/topups/{id}/confirm", tag = "admin",
    params(("id" = String, Path, description = "Top-up id (`tu_...`)")),
    request_body = ConfirmTopUpBody,
    responses(
        (status = 200, description = "The top-up, CREDITED, with who confirmed it", body = TopUpResponse),
        (status = 202, description = "The top-up, AWAITING_SECOND_APPROVAL: above the single-approval cap, a different staff member must confirm it", body = TopUpResponse),
        (status = 400, description = "INVALID_PARAMETER: a blank, multi-line or over-long fiat_reference, or an over-long note", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED: no admin bearer token, or a wrong one; STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED: an API key instead of the admin token", body = ErrorBody),
        (status = 404, description = "No such top-up; ADMIN_DISABLED when the server has no admin token", body = ErrorBody),
        (status = 409, description = "ALREADY_CONFIRMED (the treasury was credited; nothing changed), FIAT_REFERENCE_USED (the reference confirmed another top-up), SECOND_APPROVER_REQUIRED (the proposer approving), APPROVAL_MISMATCH (the approver's fiat_reference differs from the proposal's), CONFLICT", body = ErrorBody),
        (status = 410, description = "QUOTE_EXPIRED: the top-up quote expired before the confirmation", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn confirm_topup(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ConfirmTopUpBody>,
) -> Result<Response, ApiError> {
    let v = app
        .engine
        .confirm_topup(
            &id,
            staff.identity(),
            TopUpConfirmation {
                fiat_reference: body.fiat_reference,
                note: body.note,
            },
        )
        .await?;
    let status = if v.status == TopUpStatus::AwaitingSecondApproval.as_str() {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(TopUpResponse::from(v))).into_response())
}
