//! `GET /api/v1/checkout/list` (spec 2.5, 4.4) over a real payment-session store.
//!
//! Payment sessions are records of kind `payment_session` in the configured `Store`,
//! owned by the business's tenant and filterable by status. Nothing creates sessions yet
//! (the checkout gateway is not part of this server), so the list is empty until a
//! session writer exists; the query, filters and paging are real.

use super::paging;
use super::types::*;
use crate::app::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use axum::Json;
use axum::extract::State;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{ListQuery, Record};

/// Session statuses (spec 3.3).
pub const SESSION_STATUSES: [&str; 4] = ["pending", "paid", "expired", "failed"];

/// A stored payment session: the spec 2.5 item plus ownership and time.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredPaymentSession {
    /// The owning tenant's id (`ten_...`): the business key's tenant, the only one that
    /// lists it.
    pub tenant: String,
    /// When the session was stored; the list is newest first by it.
    pub created_at: Timestamp,
    /// The session as `GET /api/v1/checkout/list` returns it.
    pub session: PaymentSession,
}

impl Record for StoredPaymentSession {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::PAYMENT_SESSION;
    fn id(&self) -> String {
        self.session.session_id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.session.status.clone())
    }
}

/// List the business's payment sessions, newest first.
///
/// Business keys only (`live_sk_` / `test_sk_`). `status` filters by pending, paid,
/// expired or failed; `limit` 1-100 (default 20), `page` from 1. No session writer
/// exists yet, so the list is empty.
#[utoipa::path(get, path = "/api/v1/checkout/list", tag = "checkout",
    params(CheckoutListQuery),
    responses(
        (status = 200, description = "A page of payment sessions", body = CheckoutList),
        (status = 400, description = "Bad status, limit or page", body = ErrorBody)),
    security(("business_key" = [])))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<CheckoutListQuery>,
) -> Result<Json<CheckoutList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) if SESSION_STATUSES.contains(&s) => Some(s.to_string()),
        Some(_) => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "status must be one of pending, paid, expired, failed",
            )
            .with_param("status"));
        }
    };
    let (skip, take) = p.window();
    let (records, total) = app
        .storage
        .store
        .list(&ListQuery {
            kind: StoredPaymentSession::KIND.into(),
            tenant: caller.tenant().0.clone(),
            subkind: None,
            status,
            limit: take,
            offset: skip,
        })
        .await
        .map_err(|e| stablecoin_core::CoreError::Storage(e.to_string()))?;
    let payments = records
        .iter()
        .map(|r| StoredPaymentSession::from_stored(r).map(|s| s.session))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(CheckoutList {
        limit: p.limit,
        page: p.page,
        total,
        payments,
    }))
}
