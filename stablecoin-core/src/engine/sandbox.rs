//! Sandbox mode (spec 1 "Sandbox mode"): what a test key's mutations do, as
//! [`Engine::sandbox`].
//!
//! A sandbox never moves money. The supported mutations (EVM provisioning, funding, the
//! EVM transfer, the FX quote, the link and phone-change requests) check the request as
//! the live use case does (a token the rail carries, a well-formed quote of the right
//! token, two different phones), price it with the same domain functions and the
//! tenant's real pricing, and answer the live use case's view with an id marked `_sim_`
//! (`tr_sim_...`). Nothing is stored, no rail executes anything, no SMS is sent, and the
//! ids cannot be read back ([`Engine::operation_of_kind`] answers NOT_FOUND). The
//! simulation does not check balances, wallets or membership. Every other mutation
//! answers SANDBOX_UNSUPPORTED after the same request checks.
//!
//! Simulated FX quotes live in this engine's memory for their 60 seconds, so a sandbox
//! transfer redeems one once, with live's rules and errors (`Quote::check_usable`); they
//! are never written to the store, and live and sandbox quotes do not cross.

use super::admission::{check_quote, check_token, direct_token_matches};
use super::{ChallengeView, FundRequest, SendRequest};
use super::{Engine, OperationView, ProvisionView, SendView, WithdrawRequest, rail_err};
use crate::domain::consent::{CODE_TTL_MS, ProvisionOutcome};
use crate::domain::fees::split_fees;
use crate::domain::fx::{Quote, QuoteRef, QuoteView, parse_quote_ref};
use crate::domain::ids::{ChallengeId, QuoteId, TenantId, WalletId};
use crate::domain::money::{Currency, Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::state::{OpKind, initial_status};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::rail::RailId;
use crate::ports::signer::KeyPurpose;
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::sync::Mutex;

/// Simulated quotes held at once, at most (expired and used ones are dropped first).
const MAX_QUOTES: usize = 10_000;

/// What marks a simulated id: `<prefix>_sim_<26 characters>`, never a valid stored id.
const SIM: &str = "_sim";

/// The sandbox face of an [`Engine`]: the mutations a test key may call, each with the
/// name and arguments of the live use case (no idempotency key: nothing is stored to
/// replay).
pub struct Sandbox<'a> {
    engine: &'a Engine,
}

impl Engine {
    /// The sandbox (test-key) face of this engine (see the module documentation). A host
    /// sends a test key's mutations here and a live key's to the engine itself.
    pub fn sandbox(&self) -> Sandbox<'_> {
        Sandbox { engine: self }
    }
}

impl Sandbox<'_> {
    fn sim_id(&self, prefix: &str) -> String {
        self.engine.new_id(&format!("{prefix}{SIM}"))
    }

    /// [`Engine::provision`], simulated: a new wallet id and its address on the EVM rail
    /// (an offline derivation), outcome PROVISIONED. Nothing is read or stored.
    pub async fn provision(&self, _tenant: &TenantId, phone: &Phone) -> CoreResult<ProvisionView> {
        let rail = self.engine.evm_rail()?;
        let wallet_id = self.sim_id(WalletId::PREFIX);
        let address = rail
            .address_for(&KeyPurpose::Wallet(wallet_id.clone()))
            .await
            .map_err(rail_err)?;
        Ok(ProvisionView {
            wallet_id,
            phone_number: phone.to_string(),
            address: address.0,
            rail: rail.id().name(),
            outcome: ProvisionOutcome::Provisioned.as_str().into(),
        })
    }

    /// [`Engine::provision_on`]: simulated on the EVM rail of `/v1/users/*`, as
    /// [`Sandbox::provision`]; SANDBOX_UNSUPPORTED on any other rail (provisioning there
    /// prepares accounts on chain, which a simulation cannot stand in for).
    pub async fn provision_on(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        rail: RailId,
    ) -> CoreResult<ProvisionView> {
        if self.engine.evm_rail()?.id() == rail {
            return self.provision(tenant, phone).await;
        }
        Err(CoreError::sandbox_unsupported(format!(
            "{} provisioning",
            rail.name()
        )))
    }

    /// [`Engine::fund`], simulated: the funding as accepted (QUEUED), with the live
    /// checks of the request (positive amount, a token the rail carries). The treasury
    /// and the wallet are not read.
    pub async fn fund(&self, _tenant: &TenantId, req: &FundRequest) -> CoreResult<OperationView> {
        let rail = self.engine.check_fund(req, None)?.id();
        let mut op = self.operation(OpKind::Funding, rail, req.token, req.amount);
        op.to_phone_number = Some(req.phone_number.to_string());
        Ok(op)
    }

    /// [`Engine::send`], simulated on the EVM rail.
    pub async fn send(&self, tenant: &TenantId, req: &SendRequest) -> CoreResult<SendView> {
        let rail = self.engine.evm_rail()?.id();
        self.send_on(tenant, rail, req).await
    }

    /// [`Engine::send_on`]. On the EVM rail of `/v1/users/*`: simulated, priced with the
    /// tenant's pricing (`split_fees`, as live), the amount from a `DIRECT_CRYPTO` quote
    /// or from a simulated FX quote (`fx_sim_...`, redeemed once; a live quote is
    /// NOT_FOUND here). On any other rail: the live request checks, then
    /// SANDBOX_UNSUPPORTED (a sponsored send on TRON or Solana has no simulation).
    pub async fn send_on(
        &self,
        tenant: &TenantId,
        rail_id: RailId,
        req: &SendRequest,
    ) -> CoreResult<SendView> {
        let rail = self.engine.evm_rail()?;
        if rail.id() != rail_id {
            // An unconfigured rail has no token set to check; it has no simulation
            // either way.
            if let Ok(r) = self.engine.rail(rail_id) {
                check_token(&**r, req.token)?;
            }
            check_quote(req)?;
            return Err(CoreError::sandbox_unsupported(format!(
                "a {} send",
                rail_id.name()
            )));
        }
        check_token(&**rail, req.token)?;
        let (amount, quote_id) = match parse_quote_ref(&req.quote_id) {
            Ok(QuoteRef::DirectCrypto { token, amount }) => {
                direct_token_matches(token, req.token)?;
                (amount, None)
            }
            // A live quote cannot be redeemed by a simulation.
            Ok(QuoteRef::Fx(id)) => {
                return Err(CoreError::NotFound {
                    kind: "sandbox quote",
                    id: id.0,
                });
            }
            Err(_) if is_sim_quote_id(&req.quote_id) => {
                let now = self.engine.now();
                let amount =
                    self.engine
                        .sandbox_quotes
                        .redeem(tenant, &req.quote_id, req.token, now)?;
                (amount, Some(req.quote_id.clone()))
            }
            Err(e) => return Err(e.into()),
        };
        self.engine.config.min_send.check(rail_id, amount)?;
        if req.from_phone_number == req.to_phone_number {
            return Err(CoreError::SameWallet);
        }
        let pricing = self.engine.tenant(tenant).await?.pricing;
        let fees = split_fees(amount, &pricing)?;
        let mut op = self.operation(OpKind::Transfer, rail_id, req.token, amount);
        op.recipient_amount = Some(fees.recipient.to_decimal_string());
        op.service_fee = Some(fees.service_fee.to_decimal_string());
        op.tenant_fee = Some(fees.tenant_fee.to_decimal_string());
        op.tenant_fee_waived = Some(fees.tenant_fee_waived);
        op.from_phone_number = Some(req.from_phone_number.to_string());
        op.to_phone_number = Some(req.to_phone_number.to_string());
        op.quote_id = quote_id;
        Ok(op)
    }

    /// [`Engine::quote`], simulated: priced exactly as live (`fx_sim_...` id), kept in
    /// memory for its 60 seconds so a sandbox send can redeem it once; never stored.
    pub async fn quote(
        &self,
        tenant: &TenantId,
        fiat_amount: Decimal,
        currency: Currency,
        token: Token,
    ) -> CoreResult<QuoteView> {
        let id = QuoteId(self.sim_id(QuoteId::PREFIX));
        let q = self
            .engine
            .price_quote(id, tenant, fiat_amount, currency, token)
            .await?;
        let view = q.view();
        self.engine.sandbox_quotes.insert(q, self.engine.now());
        Ok(view)
    }

    /// [`Engine::link_request`], simulated: the challenge as if a code went to `phone`
    /// (no SMS, nothing stored, the wallet not read).
    pub async fn link_request(
        &self,
        _tenant: &TenantId,
        phone: &Phone,
    ) -> CoreResult<ChallengeView> {
        Ok(self.challenge(phone))
    }

    /// [`Engine::phone_change_request`], simulated: the challenge as if a code went to
    /// the new number (no SMS, nothing stored, the wallet not read).
    pub async fn phone_change_request(
        &self,
        _tenant: &TenantId,
        _phone: &Phone,
        new_phone: &Phone,
    ) -> CoreResult<ChallengeView> {
        Ok(self.challenge(new_phone))
    }

    /// [`Engine::link_confirm`]: SANDBOX_UNSUPPORTED (no simulated code can be confirmed).
    pub async fn link_confirm(
        &self,
        _tenant: &TenantId,
        _phone: &Phone,
        _code: &str,
    ) -> CoreResult<ProvisionView> {
        Err(CoreError::sandbox_unsupported("link confirmation"))
    }

    /// [`Engine::phone_change_confirm`]: SANDBOX_UNSUPPORTED.
    pub async fn phone_change_confirm(
        &self,
        _tenant: &TenantId,
        _phone: &Phone,
        _code: &str,
    ) -> CoreResult<ProvisionView> {
        Err(CoreError::sandbox_unsupported("phone-change confirmation"))
    }

    /// [`Engine::withdraw`]: SANDBOX_UNSUPPORTED (an off-ramp pays out real fiat).
    pub async fn withdraw(
        &self,
        _tenant: &TenantId,
        _req: &WithdrawRequest,
    ) -> CoreResult<OperationView> {
        Err(CoreError::sandbox_unsupported("a withdrawal"))
    }

    /// Swaps are not simulated: a test key is refused rather than shown a trade whose
    /// price no venue gave.
    pub async fn swap(
        &self,
        _tenant: &TenantId,
        _req: &crate::engine::SwapRequest,
    ) -> CoreResult<OperationView> {
        Err(CoreError::sandbox_unsupported("a swap"))
    }

    fn challenge(&self, sent_to: &Phone) -> ChallengeView {
        ChallengeView {
            challenge_id: self.sim_id(ChallengeId::PREFIX),
            sent_to: sent_to.masked(),
            expires_at: self.engine.now().plus_millis(CODE_TTL_MS).to_rfc3339(),
        }
    }

    /// A simulated operation as accepted: the live initial state, now.
    fn operation(&self, kind: OpKind, rail: RailId, token: Token, amount: Micros) -> OperationView {
        let at = self.engine.now().to_rfc3339();
        OperationView {
            id: self.sim_id(kind.id_prefix()),
            object: kind.as_str().into(),
            status: initial_status(kind).as_str().into(),
            error_reason: None,
            rail: rail.name(),
            token: token.as_str().into(),
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
            swap_id: None,
            reason: None,
            token_in: None,
            token_out: None,
            amount_in: None,
            quoted_amount_out: None,
            min_amount_out: None,
            amount_out: None,
            venue: None,
        }
    }
}

/// A simulated quote's id (`fx_sim_...`): refused by live's parser, redeemable here.
fn is_sim_quote_id(id: &str) -> bool {
    id.len() <= 64 && id.starts_with(&format!("{}{SIM}_", QuoteId::PREFIX))
}

/// Simulated FX quotes, in memory only.
#[derive(Default)]
pub(crate) struct SimQuotes(Mutex<HashMap<String, Quote>>);

impl SimQuotes {
    fn insert(&self, q: Quote, now: Timestamp) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MAX_QUOTES {
            m.retain(|_, q| q.expires_at > now && q.used_at.is_none());
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
        m.insert(q.id.0.clone(), q);
    }

    /// Redeems a simulated quote of `tenant` once, with live's rules and errors.
    fn redeem(
        &self,
        tenant: &TenantId,
        id: &str,
        token: Token,
        now: Timestamp,
    ) -> CoreResult<Micros> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(q) = m.get_mut(id).filter(|q| &q.tenant == tenant) else {
            return Err(CoreError::NotFound {
                kind: "sandbox quote",
                id: id.to_string(),
            });
        };
        q.check_usable(now, token)?;
        q.mark_used(now, "sandbox");
        Ok(q.expected_out)
    }
}
