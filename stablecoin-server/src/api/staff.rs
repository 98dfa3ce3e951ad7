//! `/admin/v1/escrows` and `/admin/v1/audit`: the escrow staff routes (issue #32) over
//! `stablecoin_escrow::EscrowAdmin`, and the staff audit log of the engine.
//!
//! Handlers only decode, call the engines and encode: which deals need staff, the
//! two-person rule and every state rule are the escrow crate's; the audit log is the
//! core engine's. Each decision writes its audit entry under the caller's proven staff
//! identity (`stf_...`, or `admin-token` for the shared token) in the decision's own
//! commit (the escrow crate does it). Without the escrow engine (TRON disabled) the
//! escrow routes answer 503 ESCROW_UNAVAILABLE, as the tenant escrow routes do.

use super::escrow::engine;
use super::paging;
use super::schemas::{ListLimit, ListPage};
use crate::auth::Staff;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_escrow::{
    DealAccounting, EscrowEventList, PayoutView, RecoveryOutcome, RecoveryRequest, ResolveOutcome,
    ResolveRequest, StaffEscrowList, StaffEscrowView,
};
use utoipa::{IntoParams, ToSchema};

/// `limit` and `page` of a staff list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StaffListParams {
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

/// One token's money of a deal, from the ledger (base units, like every escrow amount).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenAccountingResponse {
    /// `USDT` (the deal's token) or another token that was sent to the deal address.
    pub token: String,
    /// Every recorded deposit.
    pub deposited: String,
    /// Held for the deal (counted toward the amount).
    pub held: String,
    /// Partial deposits of a deal that closed unfunded, recoverable.
    pub partial: String,
    /// Money beyond the amount, recoverable.
    pub excess: String,
    /// Deposits after the window or to a closed deal, recoverable.
    pub late: String,
    /// Deposits of a token the deal is not in, recoverable.
    pub unsupported: String,
    /// Confirmed payouts.
    pub paid_out: String,
    /// Payouts claimed and not yet settled (a part of the balances above).
    pub in_flight: String,
}

/// `GET /admin/v1/escrows/{id}`: the deal, whose it is, its money and its payouts.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StaffEscrowDetail {
    /// The deal with its tenant and any pending two-person proposal.
    #[serde(flatten)]
    pub deal: StaffEscrowView,
    /// The deal's money per token; `deposited = held + partial + excess + late +
    /// unsupported + paid_out` always.
    pub accounting: Vec<TokenAccountingResponse>,
    /// Every payout (deal payouts and recoveries), oldest first.
    pub payouts: Vec<PayoutView>,
}

fn accounting(a: &DealAccounting) -> Vec<TokenAccountingResponse> {
    a.tokens
        .iter()
        .map(|t| TokenAccountingResponse {
            token: t.token.map(|k| k.as_str().to_string()).unwrap_or_default(),
            deposited: t.deposited.to_string(),
            held: t.held.to_string(),
            partial: t.partial.to_string(),
            excess: t.excess.to_string(),
            late: t.late.to_string(),
            unsupported: t.unsupported.to_string(),
            paid_out: t.paid_out.to_string(),
            in_flight: t.in_flight.to_string(),
        })
        .collect()
}

/// One entry of the staff audit log.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StaffAuditEntryResponse {
    /// `sta_...`.
    pub id: String,
    /// Who: a staff account (`stf_...`), `admin-token` or `cli`.
    pub staff_id: String,
    /// What: `escrow.resolve`, `escrow.resolve.proposed`, `escrow.recovery`,
    /// `escrow.recovery.proposed`, `topup.confirm`, `topup.confirm.proposed`,
    /// `treasury.credit`, `treasury.credit.proposed`, `staff.create`, `staff.disable`,
    /// `stray.return`, `stray.return.proposed`.
    pub action: String,
    /// To what: `esc_...`, `tu_...`, `treasury:<tenant>:<TOKEN>`, `stf_...`, `sd_...`.
    pub target: String,
    /// Why, in their words.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// A page of the staff audit log, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StaffAuditList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Entries over all pages.
    pub total: u64,
    /// This page's entries.
    pub entries: Vec<StaffAuditEntryResponse>,
}

/// A staff resolution of escrow `id` (audited `escrow.resolve`, or
/// `escrow.resolve.proposed` when a second approval is awaited, in the decision's
/// commit): what `POST /admin/v1/escrows/{id}/resolve` and the staff console's form both
/// run.
pub(crate) async fn resolve_as(
    app: &AppState,
    staff: &Staff,
    id: &str,
    body: &ResolveRequest,
) -> Result<ResolveOutcome, ApiError> {
    Ok(engine(app)?
        .admin()
        .resolve(&staff.actor()?, id, body)
        .await?)
}

/// A staff recovery of escrow `id` (audited `escrow.recovery`, or
/// `escrow.recovery.proposed` under the two-person rule, in the decision's commit): what
/// `POST /admin/v1/escrows/{id}/recoveries` and the staff console's form both run.
pub(crate) async fn recover_as(
    app: &AppState,
    staff: &Staff,
    id: &str,
    body: &RecoveryRequest,
) -> Result<RecoveryOutcome, ApiError> {
    Ok(engine(app)?
        .admin()
        .authorize_recovery(&staff.actor()?, id, body)
        .await?)
}

/// Staff: every escrow that needs staff, of every tenant, newest first.
///
/// DISPUTED deals (only staff resolve them) and deals holding a recoverable balance
/// (only staff authorise recoveries). Needs `Authorization: Bearer <admin.token>` or a
/// staff account's secret.
#[utoipa::path(get, path = "/admin/v1/escrows", tag = "admin",
    params(StaffListParams),
    responses(
        (status = 200, description = "A page of deals needing staff", body = StaffEscrowList),
        (status = 400, description = "INVALID_PARAMETER (limit, page), INVALID_QUERY (an unknown parameter)", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED: no or a wrong credential; STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED: an API key instead of staff credentials", body = ErrorBody),
        (status = 404, description = "ADMIN_DISABLED: the server has no admin token", body = ErrorBody),
        (status = 503, description = "ESCROW_UNAVAILABLE: no TRON rail on this server", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_list_escrows(
    State(app): State<AppState>,
    staff: Staff,
    ApiQuery(q): ApiQuery<StaffListParams>,
) -> Result<Json<StaffEscrowList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let list = engine(&app)?
        .admin()
        .attention(&staff.actor()?, Some(p.limit), Some(p.page))
        .await?;
    Ok(Json(list))
}

/// Staff: any tenant's escrow with its tenant, ledger accounting and payouts.
#[utoipa::path(get, path = "/admin/v1/escrows/{id}", tag = "admin",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses(
        (status = 200, description = "The deal", body = StaffEscrowDetail),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 503, description = "ESCROW_UNAVAILABLE", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_get_escrow(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
) -> Result<Json<StaffEscrowDetail>, ApiError> {
    let admin = engine(&app)?.admin();
    let actor = staff.actor()?;
    let deal = admin.get_staff_view(&actor, &id).await?;
    let acc = admin.accounting(&actor, &id).await?;
    let payouts = admin.payouts(&actor, &id).await?;
    Ok(Json(StaffEscrowDetail {
        deal,
        accounting: accounting(&acc),
        payouts,
    }))
}

/// Staff: any tenant's escrow history, newest first (every transition with actor,
/// authority, reason and data).
#[utoipa::path(get, path = "/admin/v1/escrows/{id}/events", tag = "admin",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)"), StaffListParams),
    responses(
        (status = 200, description = "A page of the history", body = EscrowEventList),
        (status = 400, description = "INVALID_PARAMETER (limit, page), INVALID_QUERY (an unknown parameter)", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 503, description = "ESCROW_UNAVAILABLE", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_escrow_events(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiQuery(q): ApiQuery<StaffListParams>,
) -> Result<Json<EscrowEventList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let list = engine(&app)?
        .admin()
        .events(&staff.actor()?, &id, Some(p.limit), Some(p.page))
        .await?;
    Ok(Json(list))
}

/// Staff: resolve a DISPUTED escrow, `RELEASE` to the seller or `REFUND` to the buyer.
///
/// `resolution_note` is required: it becomes the deal's `resolution_note` once the
/// payout confirms (the tenant then reads RELEASED or REFUNDED). 200: the payout is
/// claimed (`payout_pending: true`; it settles asynchronously). With
/// `[admin] second_approval_above` (10,000 by default) and the deal above it, the first staff member's
/// call is a proposal: 202 with `awaiting_approval: true`, nothing else changes; a
/// DIFFERENT staff member's call with the same resolution carries it out (200). The
/// proposer approving it is 409 SECOND_APPROVER_REQUIRED (the shared admin token is one
/// identity, so it never approves its own proposal); another staff member asking
/// for the other resolution is 409 RESOLUTION_MISMATCH (the proposer may change it).
/// Audited as `escrow.resolve` or `escrow.resolve.proposed`, in the decision's commit.
#[utoipa::path(post, path = "/admin/v1/escrows/{id}/resolve", tag = "admin",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "Carried out: the payout is claimed", body = ResolveOutcome),
        (status = 202, description = "Proposed: awaiting a second staff member's approval", body = ResolveOutcome),
        (status = 400, description = "MISSING_PARAMETER (resolution_note), INVALID_PARAMETER (resolution), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED; SCREENING_HIT: sanctions screening lists the destination wallet (audited); nothing claimed", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "INVALID_STATE, PAYOUT_IN_FLIGHT, SECOND_APPROVER_REQUIRED, RESOLUTION_MISMATCH, CONFLICT", body = ErrorBody),
        (status = 503, description = "ESCROW_UNAVAILABLE, RAIL_NOT_READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_resolve_escrow(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ResolveRequest>,
) -> Result<Response, ApiError> {
    let out = resolve_as(&app, &staff, &id, &body).await?;
    let status = if out.awaiting_approval {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)).into_response())
}

/// Staff: return a whole recoverable balance of one kind (`PARTIAL`, `EXCESS`, `LATE`,
/// `UNSUPPORTED_TOKEN`) to the buyer's linked wallet.
///
/// 202 with the payout (`QUEUED`): it settles asynchronously (`escrow.recovered` or
/// `escrow.recovery_failed`). `note` is required. Audited as `escrow.recovery` in the
/// same commit. Two-person rule: with `[admin] second_approval_above` (10,000 by
/// default) and a balance above it, the first staff member's call is a proposal: 200
/// with the deal and its `pending_recovery`, nothing else changes; a DIFFERENT staff
/// member's call with the same kind and token carries it out (202, the proposer's note
/// on the payout). The proposer repeating it is 409 SECOND_APPROVER_REQUIRED (the shared
/// admin token is one identity); another staff member asking for another kind, token or
/// a changed balance is 409 APPROVAL_MISMATCH. Audited as `escrow.recovery.proposed`.
#[utoipa::path(post, path = "/admin/v1/escrows/{id}/recoveries", tag = "admin",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    request_body = RecoveryRequest,
    responses(
        (status = 200, description = "Proposed: awaiting a second staff member's approval (`pending_recovery`)", body = StaffEscrowView),
        (status = 202, description = "The recovery payout, claimed", body = PayoutView),
        (status = 400, description = "MISSING_PARAMETER (note), INVALID_PARAMETER (kind), UNKNOWN_TOKEN, UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED; SCREENING_HIT: sanctions screening lists the destination wallet (audited); nothing claimed", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "NOTHING_TO_RECOVER, SECOND_APPROVER_REQUIRED, APPROVAL_MISMATCH, CONFLICT", body = ErrorBody),
        (status = 503, description = "ESCROW_UNAVAILABLE, RAIL_NOT_READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_recover_escrow(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<RecoveryRequest>,
) -> Result<Response, ApiError> {
    Ok(match recover_as(&app, &staff, &id, &body).await? {
        RecoveryOutcome::Claimed(payout) => (StatusCode::ACCEPTED, Json(payout)).into_response(),
        RecoveryOutcome::Proposed(deal) => (StatusCode::OK, Json(deal)).into_response(),
    })
}

/// Staff: the audit log, newest first: who did what, to what, when and why.
#[utoipa::path(get, path = "/admin/v1/audit", tag = "admin",
    params(StaffListParams),
    responses(
        (status = 200, description = "A page of the audit log", body = StaffAuditList),
        (status = 400, description = "INVALID_PARAMETER (limit, page), INVALID_QUERY (an unknown parameter)", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_audit_log(
    State(app): State<AppState>,
    _staff: Staff,
    ApiQuery(q): ApiQuery<StaffListParams>,
) -> Result<Json<StaffAuditList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let (entries, total) = app.engine.staff_audit(p.limit, p.page).await?;
    Ok(Json(StaffAuditList {
        limit: p.limit,
        page: p.page,
        total,
        entries: entries
            .into_iter()
            .map(|e| StaffAuditEntryResponse {
                id: e.id,
                staff_id: e.staff_id,
                action: e.action,
                target: e.target,
                note: e.note,
                at: e.at.to_rfc3339(),
            })
            .collect(),
    }))
}
