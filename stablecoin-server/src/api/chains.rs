//! `/v1/tron/*` and `/v1/solana/*`: the parallel native rails (spec 1.4, 1.5).
//!
//! Request decoding, then the engine's wallets on the rail: provisioning (Solana: both
//! ATAs finalized first), live balance reads (of the tokens the rail carries: TRON USDT;
//! Solana USDC and USDT) and sponsored sends with no fee (spec 1.4, 1.5, 8.4). The rules
//! are the engine's: the tokens a rail carries (UNKNOWN_TOKEN), the readiness gate of
//! the sends (503 RAIL_NOT_READY until the rail reports READY, spec 7), and the sandbox
//! (these mutations have no simulation: SANDBOX_UNSUPPORTED).

use super::schemas::{
    CurrencyCode, PhoneNumber, SolanaSendBody, TokenAmount, TronSendBody, TronToken,
};
use super::types::*;
use super::users::required_phone;
use super::{accepted, phone, token};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery, IdempotencyKey};
use crate::sandbox::simulated;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
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
        let v = app
            .engine
            .sandbox()
            .provision_on(caller.tenant(), &p, rail)
            .await?;
        let route = format!("/v1/{}/users/provision", rail.name());
        let r: ProvisionResponse = simulated(app, &route, v);
        return Ok(Json(r).into_response());
    }
    let view = app.engine.provision_on(caller.tenant(), &p, rail).await?;
    Ok(Json(ProvisionResponse::from(view)).into_response())
}

/// The wallet's balances on `rail` (the tokens the rail carries), in the route's shape.
async fn balance(
    app: &AppState,
    caller: &Caller,
    q: &BalanceQuery,
    rail: RailId,
) -> Result<Response, ApiError> {
    let p = required_phone(q.phone_number.as_deref())?;
    let v = app.engine.balance_on(caller.tenant(), &p, rail).await?;
    if rail == RailId::Tron {
        return Ok(Json(TronBalanceResponse {
            balance_usdt: v.of(Token::Usdt).to_decimal_string(),
            phone_number: v.phone_number,
            address: v.address,
            rail: v.rail,
        })
        .into_response());
    }
    Ok(Json(BalanceResponse {
        balance_usdc: v.of(Token::Usdc).to_decimal_string(),
        balance_usdt: v.of(Token::Usdt).to_decimal_string(),
        phone_number: v.phone_number,
        address: v.address,
        rail: v.rail,
        chains: None,
    })
    .into_response())
}

async fn send(
    app: &AppState,
    caller: &Caller,
    body: &SendBody,
    rail: RailId,
    idempotency_key: Option<&str>,
) -> Result<Response, ApiError> {
    // The route names the chain; an EVM network selector here is a mistake, not a hint.
    if body.network.is_some() {
        return Err(ApiError::bad_request(
            "UNKNOWN_FIELD",
            format!(
                "network: not accepted on /v1/{}/transfers/send",
                rail.name()
            ),
        )
        .with_param("network"));
    }
    let req = SendRequest {
        from_phone_number: phone("from_phone_number", &body.from_phone_number)?,
        to_phone_number: phone("to_phone_number", &body.to_phone_number)?,
        token: token("token", &body.token)?,
        quote_id: body.quote_id.clone(),
    };
    if caller.is_sandbox() {
        let v = app
            .engine
            .sandbox()
            .send_on(caller.tenant(), rail, &req)
            .await?;
        let route = format!("/v1/{}/transfers/send", rail.name());
        return Ok(accepted(simulated(app, &route, v), None));
    }
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
        (status = 502, description = "RAIL_ERROR: the chain read failed", body = ErrorBody),
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
    request_body = TronSendBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/transfers/{id}"))),
        (status = 400, description = "UNKNOWN_TOKEN (TRON moves USDT only), AMOUNT_TOO_SMALL (below the rail's minimum send) and other bad input", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER, SANDBOX_UNSUPPORTED; SCREENING_HIT: sanctions screening lists a destination (audited); POLICY_DENIED: a spending policy refuses it (`rule_id` names the rule; audited); APPROVAL_REQUIRED: above a policy's approval threshold, held as `approval_id` until staff approve it", body = ErrorBody),
        (status = 404, description = "No sender wallet, no TRON address for it, or no such quote", body = ErrorBody),
        (status = 409, description = "QUOTE_ALREADY_USED", body = ErrorBody),
        (status = 410, description = "QUOTE_EXPIRED", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS (TRON balance), SAME_WALLET, QUOTE_TOKEN_MISMATCH", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: TRON is not READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn tron_send(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    send(&app, &caller, &body, RailId::Tron, key.as_deref()).await
}

/// `POST /v1/tron/users/withdraw`: the EVM withdrawal body without the EVM `network`
/// selector (the route names the chain). Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TronWithdrawBody {
    /// The wallet debited; the payout goes to this number's mobile-money account.
    #[schema(value_type = PhoneNumber)]
    pub phone_number: String,
    /// `target_token` is accepted as the same field.
    #[serde(alias = "target_token")]
    #[schema(value_type = TronToken)]
    pub token: String,
    /// Tokens taken from the wallet's TRON address and converted for the payout.
    #[schema(value_type = TokenAmount)]
    pub amount: String,
    /// Fiat currency of the mobile-money payout (spec 2.6).
    #[schema(value_type = CurrencyCode)]
    pub payout_currency: String,
}

/// Withdraw (off-ramp) from a wallet's TRON address: sweep its USDT to the service
/// treasury's TRON address, then pay out fiat by mobile money.
///
/// As `/v1/users/withdraw`, on TRON: member only; the sweep is a sponsored TRC-20
/// transfer (the customer needs no TRX); a payout the provider refuses is refunded to
/// the wallet's TRON address. 202 with the withdrawal (`wd_`, PENDING, `rail: tron`) and
/// a `Location`; it moves through SUBMITTING, SUBMITTED, CRYPTO_RECEIVED,
/// PAYOUT_SUBMITTING to COMPLETED (or REFUNDED). 503 RAIL_NOT_READY until
/// `/health/ready` reports `tron: READY`. Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/tron/users/withdraw", tag = "tron",
    request_body = TronWithdrawBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/withdrawals/{id}"))),
        (status = 400, description = "UNKNOWN_TOKEN (TRON moves USDT only), UNKNOWN_CURRENCY (the payout provider pays another currency), INVALID_AMOUNT (also when the amount converts, at the current rate, to less than one unit the provider pays) and other bad input", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER, SANDBOX_UNSUPPORTED; SCREENING_HIT: sanctions screening lists a destination (audited); POLICY_DENIED: a spending policy refuses it (`rule_id` names the rule; audited); APPROVAL_REQUIRED: above a policy's approval threshold, held as `approval_id` until staff approve it", body = ErrorBody),
        (status = 404, description = "No wallet for this phone, or no TRON address for it", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: TRON is not READY; RATE_SOURCE_ERROR, RATE_STALE: no usable rate for the payout currency; WITHDRAWALS_UNAVAILABLE: this deployment has no payout provider; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn tron_withdraw(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<TronWithdrawBody>,
) -> Result<Response, ApiError> {
    let req = super::users::withdraw_request(
        &app,
        &caller,
        [
            &body.phone_number,
            &body.token,
            &body.amount,
            &body.payout_currency,
        ],
    )?;
    if caller.is_sandbox() {
        return Err(
            stablecoin_core::error::CoreError::sandbox_unsupported("a tron withdrawal").into(),
        );
    }
    let op = app
        .engine
        .withdraw_from(caller.tenant(), RailId::Tron, &req, key.as_deref())
        .await?;
    app.metrics.operation_accepted("withdrawal");
    let loc = format!("/v1/withdrawals/{}", op.id);
    Ok(accepted(op.into(), Some(loc)))
}

/// Provision a Solana wallet: a durable base58 address and its USDC and USDT associated
/// token accounts, finalized before the response (spec 4.3).
///
/// The phone's wallet is provisioned or adopted exactly as by `/v1/users/provision`
/// (same outcomes and consent rules); its Solana address derives from the wallet's key.
/// The service pays the rent (non-reclaimable) and every fee: the customer needs zero
/// SOL, and there is no activation or contract deployment. Repeating it is harmless (an
/// existing account is not created again). Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/solana/users/provision", tag = "solana",
    request_body = PhoneBody,
    responses(
        (status = 200, description = "The wallet and its Solana address; both ATAs exist", body = ProvisionResponse),
        (status = 403, description = "SANDBOX_UNSUPPORTED", body = ErrorBody),
        (status = 502, description = "RAIL_ERROR: creating the token accounts failed", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: Solana is not configured or unreachable", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn solana_provision(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<PhoneBody>,
) -> Result<Response, ApiError> {
    provision(&app, &caller, &body, RailId::Solana).await
}

/// Read a Solana wallet's live USDC and USDT balances (its ATAs at `confirmed`; a
/// missing ATA reads 0).
///
/// Members only (403 NOT_A_MEMBER otherwise); 404 when the wallet has no Solana address
/// yet (provision it on Solana first).
#[utoipa::path(get, path = "/v1/solana/users/balance", tag = "solana",
    params(BalanceQuery),
    responses(
        (status = 200, description = "Live USDC and USDT balances", body = BalanceResponse),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet, or no Solana address for it yet", body = ErrorBody),
        (status = 502, description = "RAIL_ERROR: the chain read failed", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: Solana is not configured or unreachable", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn solana_balance(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<BalanceQuery>,
) -> Result<Response, ApiError> {
    balance(&app, &caller, &q, RailId::Solana).await
}

/// Send SPL USDC or USDT between phone-keyed wallets, the service paying every fee.
///
/// Member of the sender's wallet only; the sender must have a Solana address (provision
/// it on Solana) and the token on it (deposits are credited by receipt monitoring). The
/// recipient gets the whole amount: no service or tenant fee applies off EVM. A
/// recipient without a Solana address gets one in the same request (a phone never seen
/// gets a wallet); if its token account does not exist the payment opens it, the service
/// paying the rent, and the settled transfer reports `created_recipient_ata: true`. 202
/// with the transfer (`tr_`, QUEUED, `rail: solana`); poll `/v1/transfers/{id}`. 503
/// RAIL_NOT_READY until `/health/ready` reports `solana: READY`. Sandbox:
/// SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/solana/transfers/send", tag = "solana",
    request_body = SolanaSendBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/transfers/{id}"))),
        (status = 400, description = "UNKNOWN_TOKEN (USDC and USDT only), AMOUNT_TOO_SMALL (below the rail's minimum send) and other bad input", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER, SANDBOX_UNSUPPORTED; SCREENING_HIT: sanctions screening lists a destination (audited); POLICY_DENIED: a spending policy refuses it (`rule_id` names the rule; audited); APPROVAL_REQUIRED: above a policy's approval threshold, held as `approval_id` until staff approve it", body = ErrorBody),
        (status = 404, description = "No sender wallet, no Solana address for it, or no such quote", body = ErrorBody),
        (status = 409, description = "QUOTE_ALREADY_USED", body = ErrorBody),
        (status = 410, description = "QUOTE_EXPIRED", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS (Solana balance), SAME_WALLET, QUOTE_TOKEN_MISMATCH", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: Solana is not READY; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn solana_send(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    send(&app, &caller, &body, RailId::Solana, key.as_deref()).await
}
