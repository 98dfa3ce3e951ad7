//! `POST /api/v1/fx/quote` (spec 2.3, 4.2).

use super::token;
use super::types::*;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody, at};
use crate::extract::ApiJson;
use crate::sandbox::simulated;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use stablecoin_core::CoreError;
use stablecoin_core::domain::fx::parse_fiat_amount;
use stablecoin_core::domain::money::Currency;

/// Get an FX conversion quote: a locked rate from local fiat to a stablecoin.
///
/// The quote expires 60 seconds after creation (check `expires_at`) and is redeemed once
/// by passing `quote_id` to `POST /v1/transfers/send`. Sandbox: simulated (the quote
/// lives in memory for its 60 s and can be redeemed by a sandbox send).
#[utoipa::path(post, path = "/api/v1/fx/quote", tag = "fx",
    request_body = QuoteBody,
    responses(
        (status = 200, description = "The quote", body = QuoteResponse),
        (status = 400, description = "Bad amount, currency or token; INVALID_AMOUNT also when the amount converts to less than 0.000001 token at the current rate", body = ErrorBody),
        (status = 503, description = "RATE_SOURCE_ERROR: the rate feed is unreachable or failed; RATE_STALE: the feed's rate is older than its maximum age (nothing is quoted at a stale rate)", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn quote(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<QuoteBody>,
) -> Result<Json<QuoteResponse>, ApiError> {
    let fiat = parse_fiat_amount(&body.fiat_amount.0).map_err(CoreError::from)?;
    let currency = Currency::parse(body.local_currency.trim()).map_err(at("local_currency"))?;
    let tok = token(
        "target_token",
        body.target_token.as_deref().unwrap_or("USDC"),
    )?;
    if caller.is_sandbox() {
        let v = app
            .engine
            .sandbox()
            .quote(caller.tenant(), fiat, currency, tok)
            .await?;
        return Ok(Json(simulated(&app, "/api/v1/fx/quote", v)));
    }
    Ok(Json(
        app.engine
            .quote(caller.tenant(), fiat, currency, tok)
            .await?
            .into(),
    ))
}
