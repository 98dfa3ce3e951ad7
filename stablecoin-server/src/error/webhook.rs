//! The answer of a webhook management error (`/v1/webhook-endpoints`, the dashboard's
//! webhook settings).

use super::ApiError;
use axum::http::StatusCode;
use stablecoin_webhooks::WebhookError;

impl ApiError {
    /// The answer of a webhook error. A function, not `From`: the server's one `From` is
    /// for every product error ([`stablecoin_core::kernel::ProductError`]), which would
    /// overlap, and `WebhookError` answers unlike the products: its internal failures
    /// say `INTERNAL`, and its refusals show their text unscrubbed (an invalid URL is
    /// the caller's own).
    pub fn webhook(e: WebhookError) -> Self {
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
