//! The limit per client address on the public pay pages' forms (issue #50): a payment
//! link's button (each post opens a session: a record, a fresh deposit address per
//! network, a claim on the scanner's attention) and a refund's claim. Both are public and
//! keyless, like the payment page; without a limit one address could open sessions
//! without end. Each counts in the public routes' limiter
//! ([`crate::api::phone_payments::limiter`], in PostgreSQL when the server runs on it, so
//! every node counts together) under its own key: [`PER_IP`] each, per address.
//!
//! `GET`s are not counted: they write nothing (a link's page opens no session; previews
//! fetch it).

use crate::rate_limit::{Budget, Class};
use crate::sign_in_throttle::Client;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Posts of one form kind one client address may make: 20 per 10 minutes (a payer opens
/// one session, or claims one refund; a household behind one address a few).
pub const PER_IP: Budget = crate::api::phone_payments::PER_IP;

/// The middleware of the link and refund-claim routes.
pub async fn limit_posts(
    State(app): State<AppState>,
    client: Client,
    req: Request,
    next: Next,
) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let what = if req.uri().path().starts_with("/pay/refunds/") {
        "refund_claim"
    } else {
        "link_open"
    };
    let key = format!("{what}:{}", client.source());
    let d = app.phone_pay_limiter.check(&key, Class::Write).await;
    if d.allowed {
        return next.run(req).await;
    }
    let minutes = d.retry_after_s.div_ceil(60).max(1);
    let mut body = super::pay::head("Too many requests", false);
    body.push_str(&format!(
        "<main id=\"rate-limited\" class=\"card\" data-code=\"RATE_LIMITED\">\n\
         <h1>Too many requests</h1>\n\
         <p>Too many requests came from your network. Try again in {minutes} minutes.</p>\n\
         </main>\n</body>\n</html>\n"
    ));
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_string()),
            (header::CONTENT_SECURITY_POLICY, super::pay::CSP.to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (header::RETRY_AFTER, d.retry_after_s.to_string()),
        ],
        body,
    )
        .into_response()
}
