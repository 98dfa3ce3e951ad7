//! `POST /admin/v1/withdrawals/{id}/payout/resolve`: a named staff member resolves a
//! withdrawal's payout that no provider answers for (issue #44).
//!
//! The engine settles a payout only on the word of the provider that took it; after a
//! switch of provider (to `disabled` or another account), or when M-Pesa answers "not
//! found" for a payout it may hold, the withdrawal stays in flight until staff, having
//! checked with the provider, decide. The decision and its audit entry are one commit
//! in the engine (`Engine::resolve_payout`); this handler only decodes and encodes.

use super::types::OperationResponse;
use crate::auth::Staff;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use stablecoin_core::engine::{PayoutDecision, ResolvePayoutRequest};
use utoipa::ToSchema;

/// A staff decision on a payout in flight.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolvePayoutBody {
    /// `completed`: the provider paid it (COMPLETED now, `reference` required);
    /// `refunded`: the provider holds no payment and never will (the tokens are refunded
    /// on chain; REFUNDED once the refund confirms).
    #[schema(example = "refunded")]
    pub outcome: String,
    /// The provider's reference of the payment staff checked (`completed` only).
    #[serde(default)]
    pub reference: Option<String>,
    /// Why: what staff checked with the provider (1 to 2000 characters).
    #[schema(example = "Daraja portal: no transaction under this OriginatorConversationID")]
    pub reason: String,
}

/// Staff: resolve the payout of a withdrawal in flight (PAYOUT_SUBMITTING or
/// PAYOUT_UNKNOWN, no refund under way).
///
/// Only a named staff account (`stf_sk_...`) may decide, never the shared admin token:
/// the audit log must say who. Audited as `withdrawal.payout.complete` or
/// `withdrawal.payout.refund`, in the same commit as the decision.
#[utoipa::path(post, path = "/admin/v1/withdrawals/{id}/payout/resolve", tag = "admin",
    params(("id" = String, Path, description = "Withdrawal id (`wd_...`)")),
    request_body = ResolvePayoutBody,
    responses(
        (status = 200, description = "The withdrawal after the decision", body = OperationResponse),
        (status = 400, description = "INVALID_PARAMETER (outcome, reference, reason, staff: the shared admin token cannot decide), MISSING_PARAMETER (reference), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: the payout is not in flight, or a refund is under way; CONFLICT", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_resolve_payout(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ResolvePayoutBody>,
) -> Result<Response, ApiError> {
    let decision = match body.outcome.as_str() {
        "completed" => match body.reference {
            Some(reference) => PayoutDecision::Completed { reference },
            None => {
                return Err(ApiError::bad_request(
                    "MISSING_PARAMETER",
                    "reference is required to mark a payout completed",
                )
                .with_param("reference"));
            }
        },
        "refunded" => PayoutDecision::Refunded,
        _ => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "outcome must be completed or refunded",
            )
            .with_param("outcome"));
        }
    };
    let req = ResolvePayoutRequest {
        decision,
        reason: body.reason,
    };
    let op = app.engine.resolve_payout(&staff.id, &id, &req).await?;
    Ok((StatusCode::OK, Json(OperationResponse::from(op))).into_response())
}
