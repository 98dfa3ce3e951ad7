//! The tenant's approver key (issue #51, the two-person rule's tenant side): staff
//! issue it, it lists the tenant's requests held above a policy's approval threshold
//! and approves them. Thin handlers over the engine (`Engine::issue_approver_key`,
//! `authenticate_approver`, `list_policy_approvals`, `approve_policy_request_by_key`),
//! which holds every guarantee: an approver key opens no other route (so it never made
//! the request it approves), a tenant key does not approve, each approval is audited and
//! carried out once.

use super::paging;
use super::policies::ApprovalView;
use crate::auth::{API_KEY_HEADER, Caller, Staff};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_core::CoreError;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::engine::KeyKind;
use utoipa::{IntoParams, ToSchema};

/// Requires an approver key in `X-API-Key` (`Engine::authenticate_approver`): a tenant
/// key is 403 KEY_OUT_OF_SCOPE here, as an approver key is everywhere else.
pub async fn require_approver_key(
    State(app): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let secret = req
        .headers()
        .get(API_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .unwrap_or("");
    if secret.is_empty() {
        return crate::caller::missing_key().into_response();
    }
    match KeyKind::classify(secret) {
        None => {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "MALFORMED_API_KEY",
                "X-API-Key is not a key: an approver key reads svc_sk_live_...",
            )
            .into_response();
        }
        Some((KeyKind::Business, _)) => {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "KEY_KIND_NOT_ALLOWED",
                "this endpoint needs a tenant's approver key (svc_sk_live_...)",
            )
            .into_response();
        }
        Some(_) => {}
    }
    match app.engine.authenticate_approver(secret).await {
        Ok(ctx) => {
            req.extensions_mut().insert(Caller(ctx));
            next.run(req).await
        }
        Err(CoreError::InvalidApiKey) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_API_KEY",
            "the API key is unknown",
        )
        .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Paging and status of the held requests.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ApprovalListParams {
    /// 1-100, default 20.
    #[param(value_type = super::schemas::ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = super::schemas::ListPage, required = false)]
    pub page: Option<String>,
    /// `PENDING` (default) or `APPROVED`.
    #[param(required = false, pattern = "^(PENDING|APPROVED)$")]
    pub status: Option<String>,
}

/// A page of held requests.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApprovalList {
    /// Page size.
    pub limit: u32,
    /// 1-based page.
    pub page: u32,
    /// Of this status in all.
    pub total: u64,
    /// Newest first. A PENDING one past its `expires_at` can no longer be approved.
    pub approvals: Vec<ApprovalView>,
}

/// Approver key: list the tenant's requests held for approval.
///
/// Needs the tenant's approver key (issued by the service's staff); a tenant key is 403
/// KEY_OUT_OF_SCOPE.
#[utoipa::path(get, path = "/v1/policy-approvals", tag = "policies",
    params(ApprovalListParams),
    responses(
        (status = 200, description = "A page of held requests", body = ApprovalList),
        (status = 400, description = "INVALID_PARAMETER (status, limit, page)", body = ErrorBody),
        (status = 401, description = "MISSING_API_KEY, MALFORMED_API_KEY, INVALID_API_KEY, API_KEY_REVOKED", body = ErrorBody),
        (status = 403, description = "KEY_OUT_OF_SCOPE: not an approver key; SANDBOX_UNSUPPORTED: the account is in test mode", body = ErrorBody)),
    security(("approver_key" = [])))]
pub async fn list_approvals(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ApprovalListParams>,
) -> Result<Json<ApprovalList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let status = match q.status.as_deref().map(str::trim) {
        None | Some("PENDING") => "PENDING",
        Some("APPROVED") => "APPROVED",
        Some(_) => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "status must be PENDING or APPROVED",
            )
            .with_param("status"));
        }
    };
    let (offset, count) = p.window();
    let (approvals, total) = app
        .engine
        .list_policy_approvals(caller.tenant(), status, count, offset)
        .await?;
    Ok(Json(ApprovalList {
        limit: p.limit,
        page: p.page,
        total,
        approvals: approvals.into_iter().map(ApprovalView::from).collect(),
    }))
}

/// Approver key: approve a request held above a policy's approval threshold.
///
/// The second person of the two-person rule, on the tenant's side: the request was made
/// with a tenant key, and only an approver key (which opens no other route, so it never
/// makes requests) approves it. It is carried out now, exactly as asked, through every
/// other check again (policies, funds, screening); the approval and its audit entry
/// (`policy.approve`, by `key:<approver key id>`) commit with the operation, so it is
/// carried out once: a second or concurrent approval is 409 INVALID_STATE. Another
/// tenant's request is 404.
#[utoipa::path(post, path = "/v1/policy-approvals/{id}/approve", tag = "policies",
    params(("id" = String, Path, description = "Approval id (`apr_...`)")),
    responses(
        (status = 200, description = "Approved and carried out", body = ApprovalView),
        (status = 401, description = "MISSING_API_KEY, MALFORMED_API_KEY, INVALID_API_KEY, API_KEY_REVOKED", body = ErrorBody),
        (status = 403, description = "KEY_OUT_OF_SCOPE: not an approver key; SANDBOX_UNSUPPORTED; POLICY_DENIED: another rule now refuses it; SCREENING_HIT", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: already approved, or expired", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS", body = ErrorBody)),
    security(("approver_key" = [])))]
pub async fn approve(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<ApprovalView>, ApiError> {
    let a = app
        .engine
        .approve_policy_request_by_key(&caller.0, &id)
        .await?;
    Ok(Json(a.into()))
}

/// A newly issued approver key: the secret is in this response only.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApproverKeyView {
    /// `key_...`: names it for revocation.
    pub key_id: String,
    /// `svc_sk_live_...`, shown once.
    pub api_key: String,
    /// The tenant it approves for.
    pub tenant_id: String,
}

/// Staff: issue a tenant an approver key.
///
/// An approver key only lists and approves the tenant's requests held above a policy's
/// approval threshold (`/v1/policy-approvals`); every other route refuses it (403
/// KEY_OUT_OF_SCOPE). Staff issue it, so a tenant key alone cannot make both halves of
/// an approval. Audited `approver_key.issue`; revoked like any key.
#[utoipa::path(post, path = "/admin/v1/tenants/{id}/approver-keys", tag = "admin",
    params(("id" = String, Path, description = "Tenant id")),
    responses(
        (status = 201, description = "Issued (the secret is shown once)", body = ApproverKeyView),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tenant; ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn issue_approver_key(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
) -> Result<Response, ApiError> {
    let issued = app
        .engine
        .issue_approver_key(&staff.id, &TenantId(id))
        .await?;
    let view = ApproverKeyView {
        key_id: issued.key.id.0.clone(),
        tenant_id: issued.key.tenant.0.clone(),
        api_key: issued.secret.clone(),
    };
    let mut res = (StatusCode::CREATED, Json(view)).into_response();
    res.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(res)
}
