//! Swaps of a wallet's USDC for USDT (or back) at the venue of its chain: the engine's
//! `swap` and the reads. Every rule (membership, quote, slippage, liquidity) is the
//! engine's; this maps HTTP to it.

use super::types::*;
use super::{accepted, amount, network, paging, phone, token};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery, IdempotencyKey};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use stablecoin_core::domain::state::OpKind;
use stablecoin_core::engine::{DEFAULT_SLIPPAGE_BPS, Engine, SwapRequest};

/// Swap a wallet's USDC for USDT, or USDT for USDC.
///
/// Member of the wallet only. The venue of the wallet's chain (a Uniswap V2 pool, or the
/// treasury venue where the chain has no DEX) quotes `amount_in` now; the swap trades
/// nothing for less than the quote less `max_slippage_bps` (`min_amount_out`).
/// `amount_in` is held from the wallet at once. 202 with the swap (`sw_`, QUEUED) and a
/// `Location`; it ends SETTLED with `amount_out` read from the chain, or FAILED with
/// `error_reason` and nothing moved. `swap.settled` / `swap.failed` report it. Sandbox
/// keys: 403 SANDBOX_UNSUPPORTED (a swap is not simulated).
#[utoipa::path(post, path = "/v1/swaps", tag = "transfers",
    request_body = SwapBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/swaps/{id}"))),
        (status = 400, description = "INVALID_PARAMETER (token_out equal to token_in, max_slippage_bps above 1000), INVALID_AMOUNT", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER: nothing is written; SANDBOX_UNSUPPORTED for a test key; SCREENING_HIT: sanctions screening lists the venue's counterparty (audited); POLICY_DENIED: a spending policy refuses the amount given (`rule_id`; nothing held); APPROVAL_REQUIRED: above a policy's approval threshold, held for a second approver (`approval_id`)", body = ErrorBody),
        (status = 404, description = "No wallet for this phone", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS; INSUFFICIENT_LIQUIDITY: the venue cannot fill it now", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY; SWAPS_UNAVAILABLE: no venue serves the wallets' chain", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_swap(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SwapBody>,
) -> Result<Response, ApiError> {
    let req = SwapRequest {
        phone_number: phone("phone_number", &body.phone_number)?,
        token_in: token("token_in", &body.token_in)?,
        token_out: token("token_out", &body.token_out)?,
        amount_in: amount(&body.amount_in)?,
        max_slippage_bps: body.max_slippage_bps.unwrap_or(DEFAULT_SLIPPAGE_BPS),
    };
    if caller.is_sandbox() {
        app.engine.sandbox().swap(caller.tenant(), &req).await?;
    }
    let op = app
        .engine
        .swap_on(
            caller.tenant(),
            network(body.network.as_deref())?,
            &req,
            key.as_deref(),
        )
        .await?;
    app.metrics.operation_accepted("swap");
    let loc = format!("/v1/swaps/{}", op.id);
    Ok(accepted(op.into(), Some(loc)))
}

/// List the caller's swaps, newest first.
#[utoipa::path(get, path = "/v1/swaps", tag = "transfers",
    params(SwapListQuery),
    responses(
        (status = 200, description = "A page of swaps", body = SwapList),
        (status = 400, description = "Bad status, limit or page", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_swaps(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<SwapListQuery>,
) -> Result<Json<SwapList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let status = q
        .status
        .as_deref()
        .map(|name| Engine::operation_status(OpKind::Swap, name))
        .transpose()?;
    let (skip, take) = p.window();
    let (swaps, total) = app
        .engine
        .list_operations(caller.tenant(), OpKind::Swap, status, take, skip)
        .await?;
    Ok(Json(SwapList {
        limit: p.limit,
        page: p.page,
        total,
        swaps: swaps.iter().map(|op| op.view().into()).collect(),
    }))
}
