//! `/v1/tron/*` and `/v1/solana/*`: the parallel native rails (spec 1.4, 1.5).
//!
//! What is real here: authentication, request validation, the sandbox rule (these
//! mutations have no simulation: SANDBOX_UNSUPPORTED), the readiness gate of the sends
//! (503 RAIL_NOT_READY until the rail reports READY, spec 7), TRON provisioning, USDT
//! balance reads and sponsored sends (the engine's TRON transfers, no fee, spec 8.4).
//! What is not: the engine has no Solana wallets or transfers yet, so those answer 501
//! NOT_IMPLEMENTED rather than pretend.

use super::types::*;
use super::users::required_phone;
use super::{accepted, phone, require_ready, token};
use crate::app::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery, IdempotencyKey};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use stablecoin_core::CoreError;
use stablecoin_core::domain::fx::{QuoteRef, parse_quote_ref};
use stablecoin_core::domain::money::Token;
use stablecoin_core::engine::SendRequest;
use stablecoin_core::ports::RailId;

async fn provision(
    app: &AppState,
    caller: &Caller,
    body: &PhoneBody,
    rail: RailId,
) -> Result<Response, ApiError> {
    let p = phone("phone_number", &body.phone_number)?;
    if caller.is_sandbox() {
        return Err(ApiError::sandbox_unsupported(&format!(
            "{} provisioning",
            rail.name()
        )));
    }
    app.engine.rail(rail)?;
    if rail == RailId::Solana {
        // Solana provisioning finalizes the customer's token accounts (rent paid by the
        // service) before it succeeds; the engine does not drive that yet.
        return Err(ApiError::not_implemented(
            "solana wallet provisioning (the engine has no Solana wallets yet)",
        ));
    }
    let view = app.engine.provision_on(caller.tenant(), &p, rail).await?;
    Ok(Json(ProvisionResponse::from(view)).into_response())
}

async fn balance(
    app: &AppState,
    caller: &Caller,
    q: &BalanceQuery,
    rail: RailId,
) -> Result<Response, ApiError> {
    let p = required_phone(q.phone_number.as_deref())?;
    app.engine.rail(rail)?;
    if rail == RailId::Solana {
        return Err(ApiError::not_implemented(
            "solana balance reads (the engine has no Solana wallets yet)",
        ));
    }
    let (w, address, b) = app
        .engine
        .balances_on(caller.tenant(), &p, rail, &[Token::Usdt])
        .await?;
    Ok(Json(TronBalanceResponse {
        phone_number: w.phone.to_string(),
        address: address.0,
        rail: rail.name(),
        balance_usdt: b[0].to_decimal_string(),
    })
    .into_response())
}

async fn send(
    app: &AppState,
    caller: &Caller,
    body: &SendBody,
    rail: RailId,
    tokens: &[Token],
    idempotency_key: Option<&str>,
) -> Result<Response, ApiError> {
    let from = phone("from_phone_number", &body.from_phone_number)?;
    let to = phone("to_phone_number", &body.to_phone_number)?;
    let t = token("token", &body.token)?;
    if !tokens.contains(&t) {
        return Err(ApiError::bad_request(
            "UNKNOWN_TOKEN",
            format!(
                "{} supports only {}",
                rail.name(),
                tokens
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        )
        .with_param("token"));
    }
    if let QuoteRef::DirectCrypto { token: qt, .. } = parse_quote_ref(&body.quote_id)?
        && qt != t
    {
        return Err(CoreError::QuoteTokenMismatch {
            quote_token: qt.to_string(),
            token: t.to_string(),
        }
        .into());
    }
    if caller.is_sandbox() {
        return Err(ApiError::sandbox_unsupported(&format!(
            "a {} send",
            rail.name()
        )));
    }
    require_ready(app, rail).await?;
    if rail == RailId::Solana {
        return Err(ApiError::not_implemented(
            "solana sponsored sends (the engine has no Solana transfers yet)",
        ));
    }
    let req = SendRequest {
        from_phone_number: from,
        to_phone_number: to,
        token: t,
        quote_id: body.quote_id.clone(),
    };
    let op = app
        .engine
        .send_on(caller.tenant(), rail, &req, idempotency_key)
        .await?;
    app.metrics.operation_accepted("transfer");
    let loc = format!("/v1/transfers/{}", op.id);
    Ok(accepted(op.into(), Some(loc)))
}

/// Provision a TRON address (`T...`) for a phone number.
///
/// The phone's wallet is provisioned or adopted exactly as by `/v1/users/provision`
/// (same outcomes and consent rules); its TRON address derives from the wallet's key, so
/// it is durable (the same wallet always answers the same `T...`, across phone changes).
/// Offline: no TRX, no activation (the service activates the account at its first
/// sponsored send). Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/tron/users/provision", tag = "tron",
    request_body = PhoneBody,
    responses(
        (status = 200, description = "The wallet and its TRON address", body = ProvisionResponse),
        (status = 403, description = "SANDBOX_UNSUPPORTED", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: TRON is not configured", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn tron_provision(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<PhoneBody>,
) -> Result<Response, ApiError> {
    provision(&app, &caller, &body, RailId::Tron).await
}

/// Read a TRON wallet's live USDT balance (a TRC-20 read: works with zero TRX).
///
/// Members only (403 NOT_A_MEMBER otherwise); 404 when the wallet has no TRON address
/// yet (provision it on TRON first).
#[utoipa::path(get, path = "/v1/tron/users/balance", tag = "tron",
    params(BalanceQuery),
    responses(
        (status = 200, description = "Live USDT balance", body = TronBalanceResponse),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet, or no TRON address for it yet", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: TRON is not configured or unreachable", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn tron_balance(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<BalanceQuery>,
) -> Result<Response, ApiError> {
    balance(&app, &caller, &q, RailId::Tron).await
}

/// Send native TRC-20 USDT between phone-keyed wallets, sponsored.
///
/// Member of the sender's wallet only; the sender must have a TRON address (provision
/// it on TRON) and USDT on it. The recipient gets the whole amount: the service activates
/// the sender's account if needed and lends it Energy/Bandwidth, charges no TRON fee and
/// applies no EVM tenant fee (spec 8.4). A recipient without a TRON address gets one in
/// the same request (a phone never seen gets a wallet). 202 with the transfer (`tr_`,
/// QUEUED, `rail: tron`); poll `/v1/transfers/{id}`. 503 RAIL_NOT_READY until
/// `/health/ready` reports `tron: READY`. Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/tron/transfers/send", tag = "tron",
    request_body = SendBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/transfers/{id}"))),
        (status = 400, description = "UNKNOWN_TOKEN (TRON moves USDT only) and other bad input", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER, SANDBOX_UNSUPPORTED", body = ErrorBody),
        (status = 404, description = "No sender wallet, no TRON address for it, or no such quote", body = ErrorBody),
        (status = 409, description = "QUOTE_ALREADY_USED", body = ErrorBody),
        (status = 410, description = "QUOTE_EXPIRED", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS (TRON balance), SAME_WALLET, QUOTE_TOKEN_MISMATCH", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: TRON is not READY", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn tron_send(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    send(
        &app,
        &caller,
        &body,
        RailId::Tron,
        &[Token::Usdt],
        key.as_deref(),
    )
    .await
}

/// Provision a Solana wallet (USDC and USDT token accounts, rent paid by the service).
/// Not implemented yet (501).
#[utoipa::path(post, path = "/v1/solana/users/provision", tag = "solana",
    request_body = PhoneBody,
    responses(
        (status = 501, description = "NOT_IMPLEMENTED: the engine has no Solana wallets yet", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: Solana is not configured", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn solana_provision(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<PhoneBody>,
) -> Result<Response, ApiError> {
    provision(&app, &caller, &body, RailId::Solana).await
}

/// Read a Solana wallet's USDC and USDT balances. Not implemented yet (501).
#[utoipa::path(get, path = "/v1/solana/users/balance", tag = "solana",
    params(BalanceQuery),
    responses(
        (status = 501, description = "NOT_IMPLEMENTED: the engine has no Solana wallets yet", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: Solana is not configured", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn solana_balance(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<BalanceQuery>,
) -> Result<Response, ApiError> {
    balance(&app, &caller, &q, RailId::Solana).await
}

/// Send SPL USDC or USDT with the service as fee payer.
///
/// 503 RAIL_NOT_READY until `/health/ready` reports `solana: READY`. When READY: 501 (the
/// engine has no Solana transfers yet).
#[utoipa::path(post, path = "/v1/solana/transfers/send", tag = "solana",
    request_body = SendBody,
    responses(
        (status = 501, description = "NOT_IMPLEMENTED: Solana is READY but the engine has no Solana transfers yet", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: Solana is not READY", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn solana_send(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    send(
        &app,
        &caller,
        &body,
        RailId::Solana,
        &[Token::Usdc, Token::Usdt],
        key.as_deref(),
    )
    .await
}
