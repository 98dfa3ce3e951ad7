//! `/admin/v1/stray-deposits`: real money that reached a sandbox address (a test
//! checkout session's, a simulated escrow's), recorded by the scanner and owed back
//! (issue #48 item 3, `stablecoin_core::kernel::stray`).
//!
//! Handlers only decode and encode: recording is the products' inbound handlers', the
//! two-person rule, the audit entry and the on-chain return are the core engine's
//! (`Engine::return_stray_deposit`, `Engine::advance_stray_returns`).

use super::paging;
use crate::auth::Staff;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stablecoin_core::engine::StrayView;
use utoipa::{IntoParams, ToSchema};

/// `limit`, `page` and `status` of the stray deposit list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StrayListParams {
    /// 1-100, default 20.
    #[param(value_type = super::schemas::ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = super::schemas::ListPage, required = false)]
    pub page: Option<String>,
    /// Only this status: `held`, `proposed`, `returning` or `returned` (`releasing` and
    /// `released` are quarantined deposits' only, listed at
    /// `/admin/v1/quarantined-deposits`).
    #[param(value_type = super::schemas::StrayStatusName, required = false)]
    pub status: Option<String>,
}

/// A staff return as decided or proposed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StrayReturnResponse {
    /// Where the money goes.
    pub to: String,
    /// Why, in staff's words.
    pub reason: String,
    /// Above the single-approval cap: who proposed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub proposed_by: Option<String>,
    /// Whose call decided it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approved_by: Option<String>,
    /// Payment attempts so far.
    pub attempts: u32,
    /// The return's transaction, once known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_hash: Option<String>,
    /// The last failure of an attempt (retried).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub last_error: Option<String>,
    /// When it confirmed (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub returned_at: Option<String>,
}

/// A real deposit to a sandbox address.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StrayDepositResponse {
    /// `sd_...`, the same for the same transfer.
    pub id: String,
    /// `held` (owed, waiting for staff), `proposed` (a return, or a quarantined
    /// deposit's release, awaits a second staff identity), `returning` (being sent),
    /// `returned`; a quarantined deposit also `releasing` (its product is crediting
    /// it) and `released`.
    #[schema(example = "held")]
    pub status: String,
    /// The tenant whose sandbox showed the address (never credited); for a quarantined
    /// deposit, the tenant of the wallet, deal or session it was sent to.
    pub tenant_id: String,
    /// `checkout_test_session` or `escrow_simulation`; for a quarantined deposit
    /// `wallet`, `escrow_deal` or `checkout_session`.
    pub origin: String,
    /// The owner: `cs_...`, `esc_...` (or `wal_...`).
    pub origin_id: String,
    /// The network.
    pub network: String,
    /// The sandbox address.
    pub address: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// Received, 6 decimals.
    pub amount: String,
    /// What the ledger still owes for it (`stray:<id>:<TOKEN>`, or
    /// `quarantine:<id>:<TOKEN>`), 6 decimals: the amount until the return confirms
    /// (or the release is credited), then `0.000000`.
    pub owed: String,
    /// The sender: where a return goes by default.
    pub from: String,
    /// The transaction that brought it, and the transfer's index in it.
    pub tx_hash: String,
    /// The transfer's index in the transaction.
    pub index: u32,
    /// When the scanner recorded it (RFC 3339).
    pub detected_at: String,
    /// The staff return, once proposed or decided.
    #[serde(rename = "return", skip_serializing_if = "Option::is_none", default)]
    pub returned: Option<StrayReturnResponse>,
    /// Set on a quarantined deposit (`/admin/v1/quarantined-deposits`): why the
    /// sanctions screen held it, and staff's release.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quarantine: Option<super::quarantined_deposits::QuarantineResponse>,
}

impl From<StrayView> for StrayDepositResponse {
    fn from(v: StrayView) -> Self {
        let d = v.deposit;
        StrayDepositResponse {
            id: d.id,
            status: d.status.as_str().into(),
            tenant_id: d.tenant,
            origin: d.origin,
            origin_id: d.origin_id,
            network: d.rail,
            address: d.address,
            token: d.token.as_str().into(),
            amount: d.amount.to_decimal_string(),
            owed: v.owed.to_decimal_string(),
            from: d.from,
            tx_hash: d.tx_hash,
            index: d.index,
            detected_at: d.detected_at.to_rfc3339(),
            returned: d.returned.map(|r| StrayReturnResponse {
                to: r.to,
                reason: r.reason,
                proposed_by: r.proposed_by,
                approved_by: r.approved_by,
                attempts: r.attempt,
                tx_hash: r.tx_hash,
                last_error: r.last_error,
                returned_at: r.returned_at.map(|t| t.to_rfc3339()),
            }),
            quarantine: d.quarantine.map(Into::into),
        }
    }
}

/// A page of stray deposits, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StrayDepositList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Stray deposits matching the filter.
    pub total: u64,
    /// This page.
    pub stray_deposits: Vec<StrayDepositResponse>,
}

/// A staff return of a stray deposit.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReturnStrayBody {
    /// Why (1 to 2000 characters): what staff checked with the sender.
    #[schema(example = "sender confirmed by e-mail: paid a sandbox page by mistake")]
    pub reason: String,
    /// Where to send it, an address of the deposit's network; default: the sender.
    #[serde(default)]
    pub to: Option<String>,
}

/// Staff: the real deposits that reached sandbox addresses, newest first.
#[utoipa::path(get, path = "/admin/v1/stray-deposits", tag = "admin",
    params(StrayListParams),
    responses(
        (status = 200, description = "A page of stray deposits", body = StrayDepositList),
        (status = 400, description = "INVALID_PARAMETER (limit, page, status), INVALID_QUERY (an unknown parameter)", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED", body = ErrorBody),
        (status = 404, description = "ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn list_stray_deposits(
    State(app): State<AppState>,
    _staff: Staff,
    ApiQuery(q): ApiQuery<StrayListParams>,
) -> Result<Json<StrayDepositList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let (rows, total) = app
        .engine
        .stray_deposits(q.status.as_deref(), p.limit, p.page)
        .await?;
    Ok(Json(StrayDepositList {
        limit: p.limit,
        page: p.page,
        total,
        stray_deposits: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Staff: return a stray deposit to its sender (or `to`), signed by the sandbox
/// address's own key and sponsored.
///
/// Recorded (`returning`) before anything is sent; the workers send it and retry it
/// under a new payment id only once an attempt can no longer land. Up to the
/// single-approval cap one staff identity decides; above it the first call proposes
/// (`proposed`) and a different identity repeating it with the same destination
/// decides. Audited (`stray.return.proposed`, `stray.return`) in the decision's commit.
/// Repeating a decided return to the same destination answers it again.
#[utoipa::path(post, path = "/admin/v1/stray-deposits/{id}/return", tag = "admin",
    params(("id" = String, Path, description = "Stray deposit id (`sd_...`)")),
    request_body = ReturnStrayBody,
    responses(
        (status = 200, description = "The stray deposit after the decision", body = StrayDepositResponse),
        (status = 400, description = "INVALID_PARAMETER (reason, to), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 403, description = "SCREENING_HIT: sanctions screening lists a destination (audited): the destination is listed; nothing is returned", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: already returned elsewhere; SECOND_APPROVER_REQUIRED; APPROVAL_MISMATCH (to); CONFLICT", body = ErrorBody),
        (status = 503, description = "SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn return_stray_deposit(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ReturnStrayBody>,
) -> Result<Json<StrayDepositResponse>, ApiError> {
    let v = app
        .engine
        .return_stray_deposit(staff.identity(), &id, body.to.as_deref(), &body.reason)
        .await?;
    Ok(Json(v.into()))
}
