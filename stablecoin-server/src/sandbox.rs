//! Sandbox mode (spec 1 "Sandbox mode"): test keys (`svc_sk_test_`) never move money.
//!
//! Supported mutations (EVM provision, fund, transfer send, FX quote, link and
//! phone-change requests) validate the request exactly as live does, then answer a
//! simulated response marked `"simulated": true` whose ids carry a `_sim_` marker
//! (`tr_sim_...`): nothing is stored, no rail is asked to execute anything, no SMS is sent,
//! and the ids cannot be fetched later (the reads answer 404). Every other mutation
//! answers `403 SANDBOX_UNSUPPORTED`. Reads pass through to the normal handlers.
//!
//! Simulated FX quotes live in process memory for their 60-second lifetime, so a
//! sandbox transfer can redeem one once (as live does); they are never written to the
//! store. A simulation checks the request's shape and prices it with the tenant's real
//! pricing; it does not check balances or wallet membership.

use crate::api::types::{ChallengeResponse, OperationResponse, ProvisionResponse, QuoteResponse};
use crate::app::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use rust_decimal::Decimal;
use stablecoin_core::CoreError;
use stablecoin_core::domain::fees::split_fees;
use stablecoin_core::domain::fx::{QuoteRef, make_quote, parse_quote_ref};
use stablecoin_core::domain::ids::{QuoteId, make_id};
use stablecoin_core::domain::money::{Currency, Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{FundRequest, SendRequest};
use stablecoin_core::ports::KeyPurpose;
use std::collections::HashMap;
use std::sync::Mutex;

/// How long a one-time code lives (matches the engine's 10 minutes).
const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// Upper bound on simulated quotes held at once (expired ones are dropped first).
const MAX_QUOTES: usize = 10_000;

struct SimQuote {
    tenant: String,
    token: Token,
    amount: Micros,
    expires_at: Timestamp,
    used: bool,
}

/// Simulated FX quotes, in memory only.
#[derive(Default)]
pub struct SandboxQuotes(Mutex<HashMap<String, SimQuote>>);

fn now(app: &AppState) -> Timestamp {
    app.engine.ports().clock.now()
}

/// A simulated id: `<prefix>_sim_<26 chars>`, never a valid stored id.
pub fn sim_id(app: &AppState, prefix: &str) -> String {
    let mut r = [0u8; 10];
    app.engine.ports().entropy.fill(&mut r);
    make_id(&format!("{prefix}_sim"), now(app).millis(), r)
}

fn record(app: &AppState, route: &str) {
    app.metrics.simulation(route);
}

pub async fn provision(app: &AppState, phone: &Phone) -> Result<ProvisionResponse, ApiError> {
    record(app, "/v1/users/provision");
    let rail = app.engine.evm_rail()?;
    let wallet_id = sim_id(app, "wal");
    // An offline derivation (no chain state is read or written).
    let address = rail
        .address_for(&KeyPurpose::Wallet(wallet_id.clone()))
        .await
        .map_err(|e| ApiError::from(CoreError::Rail(e.to_string())))?;
    Ok(ProvisionResponse {
        wallet_id,
        phone_number: phone.to_string(),
        address: address.0,
        rail: rail.id().name(),
        outcome: "PROVISIONED".into(),
        simulated: true,
    })
}

pub fn challenge(app: &AppState, route: &str, to: &Phone) -> ChallengeResponse {
    record(app, route);
    ChallengeResponse {
        challenge_id: sim_id(app, "otp"),
        sent_to: to.masked(),
        expires_at: now(app).plus_millis(CODE_TTL_MS).to_rfc3339(),
        simulated: true,
    }
}

fn operation(
    app: &AppState,
    prefix: &str,
    object: &str,
    token: Token,
    amount: Micros,
) -> Result<OperationResponse, ApiError> {
    let at = now(app).to_rfc3339();
    Ok(OperationResponse {
        id: sim_id(app, prefix),
        object: object.into(),
        status: "QUEUED".into(),
        error_reason: None,
        rail: app.engine.evm_rail()?.id().name(),
        token: token.to_string(),
        amount: amount.to_decimal_string(),
        recipient_amount: None,
        service_fee: None,
        tenant_fee: None,
        tenant_fee_waived: None,
        from_phone_number: None,
        to_phone_number: None,
        quote_id: None,
        tx_hash: None,
        created_at: at.clone(),
        updated_at: at,
        settled_at: None,
        payout_currency: None,
        payout_amount: None,
        payout_reference: None,
        refund_tx_hash: None,
        created_recipient_ata: None,
        simulated: true,
    })
}

pub fn fund(app: &AppState, req: &FundRequest) -> Result<OperationResponse, ApiError> {
    record(app, "/v1/users/fund");
    let mut op = operation(app, "fd", "funding", req.token, req.amount)?;
    op.to_phone_number = Some(req.phone_number.to_string());
    Ok(op)
}

pub async fn send(
    app: &AppState,
    caller: &Caller,
    req: &SendRequest,
) -> Result<OperationResponse, ApiError> {
    let (amount, quote_id) = match parse_quote_ref(&req.quote_id) {
        Ok(QuoteRef::DirectCrypto { token, amount }) => {
            if token != req.token {
                return Err(CoreError::QuoteTokenMismatch {
                    quote_token: token.to_string(),
                    token: req.token.to_string(),
                }
                .into());
            }
            (amount, None)
        }
        Ok(QuoteRef::Fx(id)) => {
            // A live quote cannot be redeemed by a simulation.
            return Err(CoreError::NotFound {
                kind: "sandbox quote",
                id: id.0,
            }
            .into());
        }
        Err(e) if req.quote_id.starts_with("fx_sim_") && req.quote_id.len() <= 64 => {
            drop(e);
            let amount =
                app.sandbox
                    .redeem(&caller.tenant().0, &req.quote_id, req.token, now(app))?;
            (amount, Some(req.quote_id.clone()))
        }
        Err(e) => return Err(e.into()),
    };
    if req.from_phone_number == req.to_phone_number {
        return Err(CoreError::SameWallet.into());
    }
    let tenant = app.engine.tenant(caller.tenant()).await?;
    let fees = split_fees(amount, &tenant.pricing)?;
    record(app, "/v1/transfers/send");
    let mut op = operation(app, "tr", "transfer", req.token, amount)?;
    op.recipient_amount = Some(fees.recipient.to_decimal_string());
    op.service_fee = Some(fees.service_fee.to_decimal_string());
    op.tenant_fee = Some(fees.tenant_fee.to_decimal_string());
    op.tenant_fee_waived = Some(fees.tenant_fee_waived);
    op.from_phone_number = Some(req.from_phone_number.to_string());
    op.to_phone_number = Some(req.to_phone_number.to_string());
    op.quote_id = quote_id;
    Ok(op)
}

pub async fn quote(
    app: &AppState,
    caller: &Caller,
    fiat: Decimal,
    currency: Currency,
    token: Token,
) -> Result<QuoteResponse, ApiError> {
    let rate = app
        .engine
        .ports()
        .rates
        .rate(currency, token)
        .await
        .map_err(|e| CoreError::RateSource(e.0))?;
    let at = now(app);
    let q = make_quote(
        QuoteId(sim_id(app, "fx")),
        caller.tenant().clone(),
        currency,
        token,
        fiat,
        rate,
        at,
    )?;
    app.sandbox.insert(
        q.id.0.clone(),
        SimQuote {
            tenant: caller.tenant().0.clone(),
            token,
            amount: q.expected_out,
            expires_at: q.expires_at,
            used: false,
        },
        at,
    );
    record(app, "/api/v1/fx/quote");
    let mut v: QuoteResponse = q.view().into();
    v.simulated = true;
    Ok(v)
}

impl SandboxQuotes {
    fn insert(&self, id: String, q: SimQuote, now: Timestamp) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MAX_QUOTES {
            m.retain(|_, q| q.expires_at > now && !q.used);
        }
        if m.len() >= MAX_QUOTES {
            // Still full of live quotes: drop the one expiring first.
            if let Some(k) = m
                .iter()
                .min_by_key(|(_, q)| q.expires_at)
                .map(|(k, _)| k.clone())
            {
                m.remove(&k);
            }
        }
        m.insert(id, q);
    }

    /// Redeems a simulated quote once, with live's rules and errors.
    fn redeem(
        &self,
        tenant: &str,
        id: &str,
        token: Token,
        now: Timestamp,
    ) -> Result<Micros, ApiError> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(q) = m.get_mut(id).filter(|q| q.tenant == tenant) else {
            return Err(CoreError::NotFound {
                kind: "sandbox quote",
                id: id.to_string(),
            }
            .into());
        };
        if q.used {
            return Err(CoreError::QuoteAlreadyUsed {
                quote_id: id.into(),
            }
            .into());
        }
        if now >= q.expires_at {
            return Err(CoreError::QuoteExpired {
                quote_id: id.into(),
            }
            .into());
        }
        if q.token != token {
            return Err(CoreError::QuoteTokenMismatch {
                quote_token: q.token.to_string(),
                token: token.to_string(),
            }
            .into());
        }
        q.used = true;
        Ok(q.amount)
    }
}
