//! `/admin/v1/quarantined-deposits`: deposits from a source the sanctions screen
//! flagged, held in a quarantine account instead of the wallet, deal or session they
//! were sent to (issue #51, `stablecoin_core::kernel::quarantine`).
//!
//! Handlers only decode and encode: the screening and recording are the inbound
//! router's, the two-person rule, the audit entry, the release and the on-chain return
//! the core engine's (`Engine::release_quarantined_deposit`,
//! `Engine::return_quarantined_deposit`).

use super::paging;
use super::stray_deposits::{ReturnStrayBody, StrayDepositResponse};
use crate::auth::Staff;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stablecoin_core::kernel::quarantine::Quarantine;
use utoipa::{IntoParams, ToSchema};

/// `limit`, `page` and `status` of the quarantined deposit list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QuarantineListParams {
    /// 1-100, default 20.
    #[param(value_type = super::schemas::ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = super::schemas::ListPage, required = false)]
    pub page: Option<String>,
    /// Only this status: `held`, `proposed`, `releasing`, `released`, `returning` or
    /// `returned`.
    #[param(value_type = super::schemas::StrayStatusName, required = false)]
    pub status: Option<String>,
}

/// Staff's release, as proposed or decided.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuarantineReleaseResponse {
    /// Why, in staff's words.
    pub reason: String,
    /// Above the single-approval cap: who proposed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub proposed_by: Option<String>,
    /// Whose call decided it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approved_by: Option<String>,
    /// When its product credited it (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub released_at: Option<String>,
}

/// Why a deposit is in quarantine (staff only: the list and entry never reach a tenant).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuarantineResponse {
    /// `hit` (the screen lists the sender) or `unavailable` (the screen could not answer
    /// and the deployment fails closed).
    #[schema(example = "hit")]
    pub cause: String,
    /// The screen that answered (`ofac-list`, `chainalysis`, `memory`).
    pub screen: String,
    /// A hit's list.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub list: Option<String>,
    /// A hit's entry on that list.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reference: Option<String>,
    /// Why the screen could not answer.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// The product a release credits: `wallet`, `escrow` or `checkout`.
    pub product: String,
    /// Staff's release, once proposed or decided.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub release: Option<QuarantineReleaseResponse>,
}

impl From<Quarantine> for QuarantineResponse {
    fn from(q: Quarantine) -> Self {
        QuarantineResponse {
            cause: q.cause.as_str().into(),
            screen: q.screen,
            list: q.list,
            reference: q.reference,
            reason: q.reason,
            product: q.product,
            release: q.release.map(|r| QuarantineReleaseResponse {
                reason: r.reason,
                proposed_by: r.proposed_by,
                approved_by: r.approved_by,
                released_at: r.released_at.map(|t| t.to_rfc3339()),
            }),
        }
    }
}

/// A page of quarantined deposits, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuarantinedDepositList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Quarantined deposits matching the filter.
    pub total: u64,
    /// This page.
    pub quarantined_deposits: Vec<StrayDepositResponse>,
}

/// A staff release of a quarantined deposit.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseQuarantinedBody {
    /// Why (1 to 2000 characters): what compliance checked (a false positive, a licence).
    #[schema(example = "false positive: name match only, cleared by compliance case 42")]
    pub reason: String,
}

/// Staff: the deposits held in quarantine by sanctions screening, newest first.
#[utoipa::path(get, path = "/admin/v1/quarantined-deposits", tag = "admin",
    params(QuarantineListParams),
    responses(
        (status = 200, description = "A page of quarantined deposits", body = QuarantinedDepositList),
        (status = 400, description = "INVALID_PARAMETER (limit, page, status), INVALID_QUERY (an unknown parameter)", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn list_quarantined_deposits(
    State(app): State<AppState>,
    _staff: Staff,
    ApiQuery(q): ApiQuery<QuarantineListParams>,
) -> Result<Json<QuarantinedDepositList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let (rows, total) = app
        .engine
        .quarantined_deposits(q.status.as_deref(), p.limit, p.page)
        .await?;
    Ok(Json(QuarantinedDepositList {
        limit: p.limit,
        page: p.page,
        total,
        quarantined_deposits: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Staff: one quarantined deposit.
#[utoipa::path(get, path = "/admin/v1/quarantined-deposits/{id}", tag = "admin",
    params(("id" = String, Path, description = "Quarantined deposit id (`sd_...`)")),
    responses(
        (status = 200, description = "The quarantined deposit", body = StrayDepositResponse),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn get_quarantined_deposit(
    State(app): State<AppState>,
    _staff: Staff,
    ApiPath(id): ApiPath,
) -> Result<Json<StrayDepositResponse>, ApiError> {
    Ok(Json(app.engine.quarantined_deposit(&id).await?.into()))
}

/// Staff: release a quarantined deposit to the wallet, deal or session it was sent to.
///
/// Up to the single-approval cap one staff identity decides (`releasing`); above it the
/// first call proposes (`proposed`) and a different identity repeating it decides. The
/// workers then hand the deposit to its product, which credits it as any deposit (with
/// its usual events), and close the quarantine account (`released`; the tenant's
/// `deposit.quarantined` event says so). Audited (`quarantine.release.proposed`,
/// `quarantine.release`) in the decision's commit. Repeating a decided release answers
/// it again.
#[utoipa::path(post, path = "/admin/v1/quarantined-deposits/{id}/release", tag = "admin",
    params(("id" = String, Path, description = "Quarantined deposit id (`sd_...`)")),
    request_body = ReleaseQuarantinedBody,
    responses(
        (status = 200, description = "The quarantined deposit after the decision", body = StrayDepositResponse),
        (status = 400, description = "INVALID_PARAMETER (reason), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: a return is proposed or under way; SECOND_APPROVER_REQUIRED; CONFLICT", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn release_quarantined_deposit(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ReleaseQuarantinedBody>,
) -> Result<Json<StrayDepositResponse>, ApiError> {
    let v = app
        .engine
        .release_quarantined_deposit(staff.identity(), &id, &body.reason)
        .await?;
    Ok(Json(v.into()))
}

/// Staff: return a quarantined deposit to its sender (or `to`), signed by the receiving
/// address's own key and sponsored.
///
/// The same rules as a stray deposit's return (`POST
/// /admin/v1/stray-deposits/{id}/return`): recorded before it is sent, two-person rule
/// above the cap, audited (`stray.return.proposed`, `stray.return`). The destination is
/// screened: a return to a listed sender is refused (403 SCREENING_HIT, audited), so for
/// a hit staff name where the money goes (what compliance directs).
#[utoipa::path(post, path = "/admin/v1/quarantined-deposits/{id}/return", tag = "admin",
    params(("id" = String, Path, description = "Quarantined deposit id (`sd_...`)")),
    request_body = ReturnStrayBody,
    responses(
        (status = 200, description = "The quarantined deposit after the decision", body = StrayDepositResponse),
        (status = 400, description = "INVALID_PARAMETER (reason, to), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "SCREENING_HIT: the destination is listed (audited); nothing is returned. KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: released, a release proposed, or already returned elsewhere; SECOND_APPROVER_REQUIRED; APPROVAL_MISMATCH (to); CONFLICT", body = ErrorBody),
        (status = 503, description = "SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn return_quarantined_deposit(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ReturnStrayBody>,
) -> Result<Json<StrayDepositResponse>, ApiError> {
    let v = app
        .engine
        .return_quarantined_deposit(staff.identity(), &id, body.to.as_deref(), &body.reason)
        .await?;
    Ok(Json(v.into()))
}
