//! Transfers and the reads of every asynchronous operation.

use super::types::*;
use super::{accepted, network, paging, phone, token};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, IdempotencyKey};
use crate::sandbox::simulated;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use stablecoin_core::domain::state::OpKind;
use stablecoin_core::engine::{Engine, SendRequest};

/// Send a peer-to-peer transfer between phone-keyed wallets.
///
/// Member of the sender's wallet only. The amount comes from `quote_id`: an `fx_` quote's
/// `expected_out` (single use, 60 s) or the amount in `DIRECT_CRYPTO:{TOKEN}:{amount}`.
/// The sender is debited exactly the amount; the recipient receives it minus the service
/// fee (0.30%, capped at 1.20) and the tenant's fee. A phone never provisioned gets a
/// wallet on the fly. 202 with the transfer (`tr_`, QUEUED) and a `Location`. Sandbox:
/// simulated.
#[utoipa::path(post, path = "/v1/transfers/send", tag = "transfers",
    request_body = SendBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/transfers/{id}"))),
        (status = 400, description = "AMOUNT_TOO_SMALL: below the rail's minimum send", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER; SCREENING_HIT: sanctions screening lists a destination (audited); POLICY_DENIED: a spending policy refuses it (`rule_id` names the rule; audited); APPROVAL_REQUIRED: above a policy's approval threshold, held as `approval_id` until staff approve it", body = ErrorBody),
        (status = 404, description = "No sender wallet, or no such quote for this tenant", body = ErrorBody),
        (status = 409, description = "QUOTE_ALREADY_USED", body = ErrorBody),
        (status = 410, description = "QUOTE_EXPIRED", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS, SAME_WALLET, QUOTE_TOKEN_MISMATCH", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: the wallets' chain is not READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn send(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    let req = SendRequest {
        from_phone_number: phone("from_phone_number", &body.from_phone_number)?,
        to_phone_number: phone("to_phone_number", &body.to_phone_number)?,
        token: token("token", &body.token)?,
        quote_id: body.quote_id.clone(),
    };
    if caller.is_sandbox() {
        let v = app.engine.sandbox().send(caller.tenant(), &req).await?;
        return Ok(accepted(simulated(&app, "/v1/transfers/send", v), None));
    }
    let rail = app
        .engine
        .evm_rail_for(network(body.network.as_deref())?)?
        .id();
    let op = app
        .engine
        .send_on(caller.tenant(), rail, &req, key.as_deref())
        .await?;
    app.metrics.operation_accepted("transfer");
    let loc = format!("/v1/transfers/{}", op.id);
    Ok(accepted(op.into(), Some(loc)))
}

/// One operation of the caller, of one kind (`Engine::operation_of_kind`: anything else,
/// a simulated id among them, is 404).
pub(crate) async fn read_operation(
    app: &AppState,
    caller: &Caller,
    id: &str,
    kind: OpKind,
) -> Result<Json<OperationResponse>, ApiError> {
    let op = app
        .engine
        .operation_of_kind(caller.tenant(), id, kind)
        .await?;
    Ok(Json(op.view().into()))
}

/// Read a transfer.
#[utoipa::path(get, path = "/v1/transfers/{id}", tag = "transfers",
    params(("id" = String, Path, description = "Transfer id (`tr_...`)")),
    responses(
        (status = 200, description = "The transfer", body = OperationResponse),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_transfer(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<OperationResponse>, ApiError> {
    read_operation(&app, &caller, &id, OpKind::Transfer).await
}

/// Read a funding.
#[utoipa::path(get, path = "/v1/fundings/{id}", tag = "transfers",
    params(("id" = String, Path, description = "Funding id (`fd_...`)")),
    responses(
        (status = 200, description = "The funding", body = OperationResponse),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_funding(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<OperationResponse>, ApiError> {
    read_operation(&app, &caller, &id, OpKind::Funding).await
}

/// Read a withdrawal.
#[utoipa::path(get, path = "/v1/withdrawals/{id}", tag = "transfers",
    params(("id" = String, Path, description = "Withdrawal id (`wd_...`)")),
    responses(
        (status = 200, description = "The withdrawal", body = OperationResponse),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_withdrawal(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<OperationResponse>, ApiError> {
    read_operation(&app, &caller, &id, OpKind::Withdrawal).await
}

/// Read a swap: the same status fields as the swap webhooks under their names (spec 6.1:
/// `swap_id`, `status`, `token_in`, `token_out`, `amount_in`, `tx_hash` once broadcast,
/// `reason` once FAILED, `updated_at`), plus `amount_out` once SETTLED, which the webhook
/// does not carry. `id` and `error_reason` stay as aliases of `swap_id` and `reason`.
#[utoipa::path(get, path = "/v1/swaps/{id}", tag = "transfers",
    params(("id" = String, Path, description = "Swap id (`sw_...`)")),
    responses(
        (status = 200, description = "The swap", body = OperationResponse),
        (status = 404, description = "Not found for this tenant", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_swap(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<OperationResponse>, ApiError> {
    read_operation(&app, &caller, &id, OpKind::Swap).await
}

/// List the caller's transfers, newest first.
#[utoipa::path(get, path = "/v1/transfers", tag = "transfers",
    params(TransferListQuery),
    responses(
        (status = 200, description = "A page of transfers", body = TransferList),
        (status = 400, description = "Bad status, limit or page", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_transfers(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<TransferListQuery>,
) -> Result<Json<TransferList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let status = q
        .status
        .as_deref()
        .map(|name| Engine::operation_status(OpKind::Transfer, name))
        .transpose()?;
    let (skip, take) = p.window();
    let (transfers, total) = app
        .engine
        .list_operations(caller.tenant(), OpKind::Transfer, status, take, skip)
        .await?;
    Ok(Json(TransferList {
        limit: p.limit,
        page: p.page,
        total,
        transfers: transfers.iter().map(|op| op.view().into()).collect(),
    }))
}
