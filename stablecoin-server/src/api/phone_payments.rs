//! Paying a checkout session from a phone wallet of this service, over JSON (issue #50
//! item 4); the hosted page (`crate::pages::phone_pay`) makes the same two calls.
//!
//! Public and unauthenticated, like the payment page: the session id (80 random bits)
//! is the capability. Every rule (who may pay, from which balance, exactly once, the
//! code's limits and lockout) is the checkout engine's and the wallets'; here only the
//! HTTP-level limit per client address ([`PER_IP`]) is added, before the engine is
//! asked, so one address cannot spread guesses over many phones or sessions.

use crate::api::types::{ConfirmBody, PhoneBody};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::rate_limit::{Budget, Class, RateLimiter, RateLimits};
use crate::sign_in_throttle::Client;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use stablecoin_checkout::{PhonePaymentCodeView, PhonePaymentView};

/// Phone-payment requests (code requests and confirmations together) one client
/// address may make: 20 per 10 minutes. The one-time codes' own limits (5 codes per
/// payer, 10 per phone an hour; 5 wrong codes a day, then an hour's lockout) apply
/// behind it.
pub const PER_IP: Budget = Budget {
    quota: 20,
    window_s: 600,
};

/// The limiter of [`PER_IP`]: in the database when it is PostgreSQL (every node
/// counts together), else in this process.
pub fn limiter(pg: Option<stablecoin_store::PgStore>) -> RateLimiter {
    let limits = RateLimits {
        enabled: true,
        money: PER_IP,
        write: PER_IP,
        read: PER_IP,
    };
    match pg {
        Some(pg) => RateLimiter::shared(limits, pg),
        None => RateLimiter::new(limits),
    }
}

/// Counts one phone-payment request of `client`: `429 RATE_LIMITED` with `Retry-After`
/// past [`PER_IP`].
pub async fn per_ip(app: &AppState, client: &Client) -> Result<(), ApiError> {
    let key = format!("phone_pay:{}", client.source());
    let d = app.phone_pay_limiter.check(&key, Class::Write).await;
    if d.allowed {
        return Ok(());
    }
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMITED",
        format!(
            "too many phone payment requests from this address; retry after {} s",
            d.retry_after_s
        ),
    );
    e.retry_after_secs = Some(d.retry_after_s as i64);
    Err(e)
}

/// Send the one-time code that pays a session from the wallet of `phone_number`.
///
/// The answer is the same whether or not the phone holds a wallet here (no code is
/// sent to one that does not, and no later answer tells them apart). Limits: 20
/// requests per client address per 10 minutes, and the link flow's code limits (5 per
/// payer and 10 per phone an hour, the session's tenant's hourly quota; 429
/// RATE_LIMITED with Retry-After), and its lockout after 5 wrong codes (429
/// TOO_MANY_ATTEMPTS).
#[utoipa::path(post, path = "/api/v1/pay/{session_id}/phone-payment/code", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_... (the payment page's id)")),
    request_body = PhoneBody,
    responses(
        (status = 202, description = "If the phone holds a wallet here, a code is on its way", body = PhonePaymentCodeView),
        (status = 400, description = "INVALID_PHONE, or a malformed body", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: the session is paid, expired, failed or cancelled", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED (per address, payer, phone or tenant) or TOO_MANY_ATTEMPTS (locked out), with Retry-After", body = ErrorBody),
        (status = 403, description = "PHONE_PAYMENT_UNAVAILABLE: a test session (paid by simulated deposits only), or no wallets here", body = ErrorBody)))]
pub async fn request_code(
    State(app): State<AppState>,
    client: Client,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<PhoneBody>,
) -> Result<(StatusCode, Json<PhonePaymentCodeView>), ApiError> {
    per_ip(&app, &client).await?;
    let v = app
        .checkout
        .request_phone_payment(&id, &body.phone_number)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(v)))
}

/// Confirm a phone payment with the code: the session is paid from the wallet at once.
///
/// A ledger payment between two parties of this service: no chain fee for the payer,
/// recorded on the session like any deposit (its `tx_hash` is `ledger:<deposit_id>`),
/// with the same `wallet.deposit.*` and `payment.confirmed` webhooks. A code pays once.
#[utoipa::path(post, path = "/api/v1/pay/{session_id}/phone-payment/confirm", tag = "checkout",
    params(("session_id" = String, Path, description = "cs_... (the payment page's id)")),
    request_body = ConfirmBody,
    responses(
        (status = 200, description = "Paid from the wallet", body = PhonePaymentView),
        (status = 400, description = "INVALID_PHONE, MISSING_PARAMETER, or a malformed body", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "INVALID_STATE (no longer payable), CODE_ALREADY_USED, or a concurrent update", body = ErrorBody),
        (status = 410, description = "CODE_EXPIRED", body = ErrorBody),
        (status = 422, description = "CODE_INVALID (wrong code, or none requested for this session), or INSUFFICIENT_FUNDS (the wallet holds too little on the session's networks)", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED (per address) or TOO_MANY_ATTEMPTS (locked out after 5 wrong codes), with Retry-After", body = ErrorBody),
        (status = 403, description = "PHONE_PAYMENT_UNAVAILABLE: a test session (paid by simulated deposits only), or no wallets here", body = ErrorBody)))]
pub async fn confirm(
    State(app): State<AppState>,
    client: Client,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<ConfirmBody>,
) -> Result<Json<PhonePaymentView>, ApiError> {
    per_ip(&app, &client).await?;
    Ok(Json(
        app.checkout
            .confirm_phone_payment(&id, &body.phone_number, &body.code)
            .await?,
    ))
}
