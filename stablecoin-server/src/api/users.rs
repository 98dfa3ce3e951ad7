//! `/v1/users/*`: EVM wallets keyed by phone (spec 1 "Wallet ownership and consent", 4.5).

use super::types::*;
use super::{accepted, amount, network, phone, token};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody, at};
use crate::extract::{ApiJson, ApiQuery, IdempotencyKey};
use crate::sandbox::simulated;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use stablecoin_core::engine::{FundRequest, WithdrawRequest};

/// A code of the shape the engine sends (`CODE_DIGITS` digits). Anything else can never be
/// right, so it is refused as input (400) before the engine counts an attempt.
fn code_ok(code: &str) -> Result<&str, ApiError> {
    use stablecoin_core::domain::consent::CODE_DIGITS;
    let c = code.trim();
    if c.len() != CODE_DIGITS || !c.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::bad_request(
            "INVALID_PARAMETER",
            "code must be the one-time code the customer received (6 digits)",
        )
        .with_param("code"));
    }
    Ok(c)
}

/// Provision an EVM wallet for a phone number.
///
/// Offline (no gas): derives the wallet's counterfactual address. Outcome PROVISIONED (new
/// wallet, the caller is its first member), ADOPTED (an unaffiliated wallet created by an
/// inbound transfer now belongs to the caller), ALREADY_EXISTS (the caller already
/// operates it) or LINK_REQUIRED (another tenant's wallet: same address, no operating
/// rights; see link/request). Sandbox: simulated.
#[utoipa::path(post, path = "/v1/users/provision", tag = "users",
    request_body = ProvisionBody,
    responses((status = 200, description = "The wallet and the provisioning outcome", body = ProvisionResponse)),
    security(("tenant_key" = [])))]
pub async fn provision(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ProvisionBody>,
) -> Result<Json<ProvisionResponse>, ApiError> {
    let p = phone("phone_number", &body.phone_number)?;
    if caller.is_sandbox() {
        let v = app.engine.sandbox().provision(caller.tenant(), &p).await?;
        return Ok(Json(simulated(&app, "/v1/users/provision", v)));
    }
    Ok(Json(
        app.engine
            .provision_for_customer(caller.tenant(), &p, body.customer_id.as_deref())
            .await?
            .into(),
    ))
}

/// Fund a customer wallet from the tenant's treasury balance.
///
/// Money-in is open: any tenant may fund any provisioned wallet. The treasury is held at
/// once (422 INSUFFICIENT_FUNDS otherwise) and the transfer settles on chain
/// asynchronously: 202 with the funding (`fd_` id, QUEUED) and a `Location` to read it.
/// Sandbox: simulated (no `Location`: nothing is stored).
#[utoipa::path(post, path = "/v1/users/fund", tag = "users",
    request_body = FundBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/fundings/{id}"))),
        (status = 404, description = "No wallet for this phone", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: the wallets' chain is not READY", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn fund(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<FundBody>,
) -> Result<Response, ApiError> {
    let req = FundRequest {
        phone_number: phone("phone_number", &body.phone_number)?,
        token: token("token", &body.token)?,
        amount: amount(&body.amount)?,
    };
    if caller.is_sandbox() {
        let v = app.engine.sandbox().fund(caller.tenant(), &req).await?;
        return Ok(accepted(simulated(&app, "/v1/users/fund", v), None));
    }
    let op = app
        .engine
        .fund_on(
            caller.tenant(),
            network(body.network.as_deref())?,
            &req,
            key.as_deref(),
        )
        .await?;
    app.metrics.operation_accepted("funding");
    let loc = format!("/v1/fundings/{}", op.id);
    Ok(accepted(op.into(), Some(loc)))
}

/// Read a wallet's live on-chain USDC and USDT balances.
///
/// Members only (403 NOT_A_MEMBER otherwise): a balance is the customer's private data.
#[utoipa::path(get, path = "/v1/users/balance", tag = "users",
    params(EvmBalanceQuery),
    responses(
        (status = 200, description = "Live balances", body = BalanceResponse),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet for this phone", body = ErrorBody),
        (status = 502, description = "RAIL_ERROR: the chain read failed", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: the wallets' chain is not configured", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn balance(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EvmBalanceQuery>,
) -> Result<Json<BalanceResponse>, ApiError> {
    let p = required_phone(q.phone_number.as_deref())?;
    if q.network.as_deref().map(str::trim) == Some("all") {
        let chains = app.engine.evm_balances(caller.tenant(), &p).await?;
        let (usdc, usdt) = stablecoin_core::engine::sum_balances(&chains)
            .ok_or_else(|| ApiError::internal("balance sum"))?;
        let address = chains
            .first()
            .map(|c| c.address.clone())
            .unwrap_or_default();
        return Ok(Json(BalanceResponse {
            phone_number: p.to_string(),
            address,
            rail: "all".into(),
            balance_usdc: usdc.to_decimal_string(),
            balance_usdt: usdt.to_decimal_string(),
            chains: Some(chains.into_iter().map(Into::into).collect()),
        }));
    }
    let rail = app
        .engine
        .evm_rail_for(network(q.network.as_deref())?)?
        .id();
    Ok(Json(
        app.engine
            .usdc_usdt_balance_on(caller.tenant(), &p, rail)
            .await?
            .into(),
    ))
}

pub(crate) fn required_phone(
    v: Option<&str>,
) -> Result<stablecoin_core::domain::phone::Phone, ApiError> {
    match v {
        Some(s) => phone("phone_number", s),
        None => Err(ApiError::bad_request(
            "INVALID_QUERY",
            "query parameter phone_number is required",
        )
        .with_param("phone_number")),
    }
}

/// Withdraw (off-ramp): sweep tokens to the service treasury, then pay out fiat by mobile
/// money.
///
/// Member only. 202 with the withdrawal (`wd_` id, PENDING) and a `Location`; it moves
/// through SUBMITTING, SUBMITTED, CRYPTO_RECEIVED, PAYOUT_SUBMITTING to COMPLETED (or
/// REFUNDED when the payout cannot be delivered). Sandbox: SANDBOX_UNSUPPORTED. In sim
/// mode the payout provider is simulated and delivers at once.
#[utoipa::path(post, path = "/v1/users/withdraw", tag = "users",
    request_body = WithdrawBody,
    responses(
        (status = 202, description = "Accepted; poll Location", body = OperationResponse,
            headers(("Location" = String, description = "/v1/withdrawals/{id}"))),
        (status = 403, description = "NOT_A_MEMBER or SANDBOX_UNSUPPORTED; SCREENING_HIT: sanctions screening lists a destination (audited); POLICY_DENIED: a spending policy refuses it (`rule_id` names the rule; audited); APPROVAL_REQUIRED: above a policy's approval threshold, held as `approval_id` until staff approve it", body = ErrorBody),
        (status = 404, description = "No wallet for this phone", body = ErrorBody),
        (status = 400, description = "INVALID_AMOUNT also when the amount converts, at the current rate, to less than one unit the payout provider pays (a minor unit of the payout currency; M-Pesa: a whole shilling)", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: the wallets' chain is not READY; RATE_SOURCE_ERROR: no rate for the payout currency; RATE_STALE: the feed's rate is older than its maximum age; WITHDRAWALS_UNAVAILABLE: this deployment has no payout provider; SCREENING_UNAVAILABLE: the sanctions screen could not answer and the deployment fails closed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn withdraw(
    State(app): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<WithdrawBody>,
) -> Result<Response, ApiError> {
    let req = withdraw_request(
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
        let v = app.engine.sandbox().withdraw(caller.tenant(), &req).await?;
        return Ok(accepted(simulated(&app, "/v1/users/withdraw", v), None));
    }
    let op = app
        .engine
        .withdraw_on(
            caller.tenant(),
            network(body.network.as_deref())?,
            &req,
            key.as_deref(),
        )
        .await?;
    app.metrics.operation_accepted("withdrawal");
    let loc = format!("/v1/withdrawals/{}", op.id);
    Ok(accepted(op.into(), Some(loc)))
}

/// A withdrawal request from its body's `[phone_number, token, amount, payout_currency]`
/// (the EVM and the TRON route's alike). A provider paying one currency (M-Pesa: KES)
/// would refuse any other only after the sweep: it is refused here, before anything is
/// held (UNKNOWN_CURRENCY).
pub(crate) fn withdraw_request(
    app: &AppState,
    caller: &Caller,
    [phone_number, token_name, token_amount, payout_currency]: [&String; 4],
) -> Result<WithdrawRequest, ApiError> {
    let req = WithdrawRequest {
        phone_number: phone("phone_number", phone_number)?,
        token: token("token", token_name)?,
        amount: amount(token_amount)?,
        payout_currency: payout_currency.clone(),
    };
    stablecoin_core::domain::money::Currency::parse(&req.payout_currency)
        .map_err(at("payout_currency"))?;
    if let Some(pays) = app.config.payouts.currency()
        && !caller.is_sandbox()
        && req.payout_currency != pays
    {
        return Err(ApiError::bad_request(
            "UNKNOWN_CURRENCY",
            format!("the payout provider pays {pays} only"),
        )
        .with_param("payout_currency"));
    }
    Ok(req)
}

/// Ask the customer for consent: send a one-time code to the wallet's phone.
///
/// For a wallet that belongs to another tenant (LINK_REQUIRED). Sandbox: simulated (no
/// SMS).
#[utoipa::path(post, path = "/v1/users/link/request", tag = "users",
    request_body = PhoneBody,
    responses(
        (status = 200, description = "Code sent", body = ChallengeResponse),
        (status = 404, description = "No wallet for this phone", body = ErrorBody),
        (status = 409, description = "ALREADY_A_MEMBER", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED (codes per wallet, phone or tenant) or TOO_MANY_ATTEMPTS (locked out); see Retry-After", body = ErrorBody),
        (status = 502, description = "NOTIFIER_ERROR: the SMS gateway failed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn link_request(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<PhoneBody>,
) -> Result<Json<ChallengeResponse>, ApiError> {
    let p = phone("phone_number", &body.phone_number)?;
    if caller.is_sandbox() {
        let v = app
            .engine
            .sandbox()
            .link_request(caller.tenant(), &p)
            .await?;
        return Ok(Json(simulated(&app, "/v1/users/link/request", v)));
    }
    Ok(Json(
        app.engine.link_request(caller.tenant(), &p).await?.into(),
    ))
}

/// Confirm consent with the code: the caller becomes a member of the wallet.
///
/// Existing members receive `user.linked`. Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/users/link/confirm", tag = "users",
    request_body = ConfirmBody,
    responses(
        (status = 200, description = "Linked (outcome LINKED)", body = ProvisionResponse),
        (status = 404, description = "No wallet or no open request", body = ErrorBody),
        (status = 409, description = "ALREADY_A_MEMBER, CODE_ALREADY_USED", body = ErrorBody),
        (status = 410, description = "CODE_EXPIRED", body = ErrorBody),
        (status = 422, description = "CODE_INVALID", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: locked out after too many wrong codes (Retry-After)", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn link_confirm(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ConfirmBody>,
) -> Result<Json<ProvisionResponse>, ApiError> {
    let p = phone("phone_number", &body.phone_number)?;
    let code = code_ok(&body.code)?;
    if caller.is_sandbox() {
        let v = app
            .engine
            .sandbox()
            .link_confirm(caller.tenant(), &p, code)
            .await?;
        return Ok(Json(simulated(&app, "/v1/users/link/confirm", v)));
    }
    Ok(Json(
        app.engine
            .link_confirm(caller.tenant(), &p, code)
            .await?
            .into(),
    ))
}

/// Start a phone-number change: a one-time code goes to the NEW number.
///
/// Member only. Sandbox: simulated (no SMS).
#[utoipa::path(post, path = "/v1/users/phone-change/request", tag = "users",
    request_body = PhoneChangeBody,
    responses(
        (status = 200, description = "Code sent to the new number", body = ChallengeResponse),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet for this phone", body = ErrorBody),
        (status = 409, description = "PHONE_IN_USE", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED (codes per wallet, phone or tenant) or TOO_MANY_ATTEMPTS (locked out); see Retry-After", body = ErrorBody),
        (status = 502, description = "NOTIFIER_ERROR: the SMS gateway failed", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn phone_change_request(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<PhoneChangeBody>,
) -> Result<Json<ChallengeResponse>, ApiError> {
    let p = phone("phone_number", &body.phone_number)?;
    let new = phone("new_phone_number", &body.new_phone_number)?;
    if caller.is_sandbox() {
        let v = app
            .engine
            .sandbox()
            .phone_change_request(caller.tenant(), &p, &new)
            .await?;
        return Ok(Json(simulated(&app, "/v1/users/phone-change/request", v)));
    }
    Ok(Json(
        app.engine
            .phone_change_request(caller.tenant(), &p, &new)
            .await?
            .into(),
    ))
}

/// Confirm the phone change with the code sent to the new number.
///
/// The wallet address, balance and history are kept; every member receives
/// `user.phone_changed`. Sandbox: SANDBOX_UNSUPPORTED.
#[utoipa::path(post, path = "/v1/users/phone-change/confirm", tag = "users",
    request_body = ConfirmBody,
    responses(
        (status = 200, description = "Changed (outcome PHONE_CHANGED; phone_number is the new number)", body = ProvisionResponse),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet or no open request", body = ErrorBody),
        (status = 409, description = "PHONE_IN_USE", body = ErrorBody),
        (status = 410, description = "CODE_EXPIRED", body = ErrorBody),
        (status = 422, description = "CODE_INVALID", body = ErrorBody),
        (status = 429, description = "TOO_MANY_ATTEMPTS: locked out after too many wrong codes (Retry-After)", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn phone_change_confirm(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ConfirmBody>,
) -> Result<Json<ProvisionResponse>, ApiError> {
    let p = phone("phone_number", &body.phone_number)?;
    let code = code_ok(&body.code)?;
    if caller.is_sandbox() {
        let v = app
            .engine
            .sandbox()
            .phone_change_confirm(caller.tenant(), &p, code)
            .await?;
        return Ok(Json(simulated(&app, "/v1/users/phone-change/confirm", v)));
    }
    Ok(Json(
        app.engine
            .phone_change_confirm(caller.tenant(), &p, code)
            .await?
            .into(),
    ))
}
