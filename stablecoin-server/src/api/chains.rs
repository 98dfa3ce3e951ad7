//! `/v1/tron/*` and `/v1/solana/*`: the parallel native rails (spec 1.4, 1.5).
//!
//! What is real here: authentication, request validation, the sandbox rule (these
//! mutations have no simulation: SANDBOX_UNSUPPORTED), the readiness gate of the sends
//! (503 RAIL_NOT_READY until the rail reports READY, spec 7), and TRON provisioning and
//! USDT balance reads on the engine's wallets. What is not: the engine has no TRON or
//! Solana transfers and no Solana wallets yet, so those answer 501 NOT_IMPLEMENTED
//! rather than pretend.

use super::types::*;
use super::users::required_phone;
use super::{phone, require_ready, token};
use crate::app::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use stablecoin_core::CoreError;
use stablecoin_core::domain::fx::{QuoteRef, parse_quote_ref};
use stablecoin_core::domain::money::Token;
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
) -> Result<Response, ApiError> {
    phone("from_phone_number", &body.from_phone_number)?;
    phone("to_phone_number", &body.to_phone_number)?;
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
    Err(ApiError::not_implemented(&format!(
        "{} sponsored sends (the engine has no {} transfers yet)",
        rail.name(),
        rail.name()
    )))
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

/// Send native TRC-20 USDT with sponsored Energy/Bandwidth.
///
/// 503 RAIL_NOT_READY until `/health/ready` reports `tron: READY` (INBOUND_READY means
/// sends are unavailable). When READY: 501 (the engine has no TRON transfers yet).
#[utoipa::path(post, path = "/v1/tron/transfers/send", tag = "tron",
    request_body = SendBody,
    responses(
        (status = 501, description = "NOT_IMPLEMENTED: TRON is READY but the engine has no TRON transfers yet", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: TRON is not READY", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn tron_send(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    send(&app, &caller, &body, RailId::Tron, &[Token::Usdt]).await
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
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    send(
        &app,
        &caller,
        &body,
        RailId::Solana,
        &[Token::Usdc, Token::Usdt],
    )
    .await
}
