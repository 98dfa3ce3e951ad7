//! Paying a session from a phone wallet of this service (issue #50 item 4): on the
//! payment page the payer enters their phone number, receives a one-time code by SMS
//! and gives it back; the session is then paid from that wallet.
//!
//! The rules, all here (the server only maps HTTP to these two calls):
//! - **Who may pay.** Money-out is gated as the spec gates it (spec 1 "Wallet ownership
//!   and consent"): the code, sent to the wallet's phone, proves the holder and consents
//!   to this one payment of this session. The codes are the wallets'
//!   ([`PhoneWalletPayments`], on the link flow's guards and policy: the same request
//!   limits per payer, per phone and per tenant, the same wrong-code lockout).
//! - **Which wallet.** A phone keys one wallet of the whole service (spec 1 item 2:
//!   tenants are members of it), so there is nothing to pick: its one balance pays. The
//!   payment is made under the session's tenant when that tenant operates the wallet,
//!   else under the wallet's primary member ([`crate::model::WalletPayer::originator`]).
//! - **How.** Both sides are on this service's ledger, so the payment is a ledger move,
//!   instant and without a chain fee for the payer: the wallet's custody account on one
//!   of the session's networks (the first, in the session's order, whose token the
//!   session takes and whose balance covers the amount) pays the session exactly as a
//!   deposit on that network would: it is recorded as a [`SessionDeposit`] through the
//!   one deposit path (`deposits::decide`), so the state machine, the over- and
//!   underpayment rules and the webhooks are a deposit's. Its sweep then moves the
//!   tokens from the wallet's address to the treasury (the service's custody, at the
//!   service's cost), as a deposit's moves them from the session's address.
//! - **Exactly once.** The deposit's id derives from the consumed challenge and the
//!   code is used up in the same commit as the credit: a code pays once, and a replay
//!   is CODE_ALREADY_USED.
//! - **What it pays.** What is due when the code is confirmed, at most the amount the
//!   SMS named (a session partly paid meanwhile costs less, never more).
//! - **Live sessions only.** A test session is paid by simulated deposits alone
//!   (PHONE_PAYMENT_UNAVAILABLE).

use super::{CheckoutEngine, MAX_RETRIES};
use crate::engine::deposits::{DepositFact, DepositStage};
use crate::error::{CheckoutError, CheckoutResult};
use crate::model::{Mode, Session, SessionDeposit, WalletPayer, accounts, integer_id};
use crate::state::SessionStatus;
use serde::{Deserialize, Serialize};
use stablecoin_core::CoreError;
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::kernel::phone_pay::{
    PaymentCodeCheck, PaymentCodeRequest, PaymentConsent, PhoneWalletPayments,
};
use stablecoin_core::ports::{Versioned, get_record};
use std::sync::Arc;

/// The answer to a code request: the same whether or not the phone holds a wallet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PhonePaymentCodeView {
    /// The phone, masked: the code went there if it holds a wallet of this service.
    pub sent_to: String,
    /// When the code stops working, RFC 3339 UTC.
    pub expires_at: String,
}

/// A phone payment made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PhonePaymentView {
    /// The session paid.
    pub session_id: String,
    /// Its status after the payment (`paid` once covered).
    pub status: String,
    /// What the wallet paid, 6 places.
    pub amount: String,
    /// The token paid.
    pub token: String,
    /// The network whose balance paid.
    pub network: String,
    /// The deposit's id in the payments webhooks (`deposit_id`).
    pub deposit_id: u64,
    /// `ledger:<deposit_id>`: a payment on the ledger has no chain transaction.
    pub tx_hash: String,
}

/// The `tx_hash` of a payment made on the ledger.
pub fn ledger_hash(deposit_id: u64) -> String {
    format!("ledger:{deposit_id}")
}

fn payer_err(e: CoreError) -> CheckoutError {
    match e {
        CoreError::InvalidPhone { .. }
        | CoreError::CodeInvalid { .. }
        | CoreError::CodeExpired
        | CoreError::CodeAlreadyUsed
        | CoreError::TooManyAttempts { .. }
        | CoreError::RateLimited { .. }
        | CoreError::NotAMember => CheckoutError::Payer(e),
        other => other.into(),
    }
}

impl CheckoutEngine {
    /// This checkout with the wallets it takes phone payments from (the wallet engine,
    /// on the same kernel). Without, both phone payment calls answer
    /// PHONE_PAYMENT_UNAVAILABLE.
    pub fn with_phone_wallets(mut self, wallets: Arc<dyn PhoneWalletPayments>) -> Self {
        self.phone_wallets = Some(wallets);
        self
    }

    /// True when payers can pay from a phone wallet here (the page offers it).
    pub fn phone_payments_enabled(&self) -> bool {
        self.phone_wallets.is_some()
    }

    fn wallets(&self) -> CheckoutResult<&Arc<dyn PhoneWalletPayments>> {
        self.phone_wallets
            .as_ref()
            .ok_or(CheckoutError::PhonePaymentUnavailable)
    }

    /// The session if a phone wallet may pay it now, with what is due.
    async fn payable(&self, id: &str) -> CheckoutResult<(Versioned<Session>, Micros)> {
        let v = self
            .load(id)
            .await?
            .ok_or_else(|| CheckoutError::NotFound {
                kind: "session",
                id: id.chars().take(64).collect(),
            })?;
        let s = &v.record;
        if s.mode != Mode::Live {
            return Err(CheckoutError::PhonePaymentUnavailable);
        }
        let due = Micros::new(s.amount.get().saturating_sub(s.applied_total().get()));
        if s.status != SessionStatus::Pending || self.now() >= s.expires_at || due.is_zero() {
            let status = if s.status == SessionStatus::Pending && !due.is_zero() {
                "expired"
            } else {
                s.status.as_str()
            };
            return Err(CheckoutError::InvalidState {
                status: status.into(),
            });
        }
        Ok((v, due))
    }

    /// Sends the one-time code that pays session `id` from the wallet of `phone_number`
    /// (the payer's page, unauthenticated: its id is the capability). The answer is the
    /// same whether or not the phone holds a wallet here.
    pub async fn request_phone_payment(
        &self,
        id: &str,
        phone_number: &str,
    ) -> CheckoutResult<PhonePaymentCodeView> {
        let wallets = self.wallets()?;
        let phone = Phone::parse(phone_number).map_err(|e| payer_err(e.into()))?;
        let (v, due) = self.payable(id).await?;
        let s = v.record;
        let sent = wallets
            .request_payment_code(&PaymentCodeRequest {
                tenant: s.tenant.clone(),
                phone,
                payee: s.id.clone(),
                payee_name: self.business_name(&s).await?,
                amount: due,
                currency: s.currency.clone(),
            })
            .await
            .map_err(payer_err)?;
        Ok(PhonePaymentCodeView {
            sent_to: sent.sent_to,
            expires_at: sent.expires_at.to_rfc3339(),
        })
    }

    /// Confirms a phone payment of session `id` with the code sent to `phone_number`:
    /// the session is paid from that wallet at once (see the module's rules). A wrong
    /// code is counted by the wallets and refused (CODE_INVALID, then
    /// TOO_MANY_ATTEMPTS); nothing moves then.
    pub async fn confirm_phone_payment(
        &self,
        id: &str,
        phone_number: &str,
        code: &str,
    ) -> CheckoutResult<PhonePaymentView> {
        let wallets = self.wallets()?;
        let phone = Phone::parse(phone_number).map_err(|e| payer_err(e.into()))?;
        if code.trim().is_empty() {
            return Err(CheckoutError::MissingParameter { field: "code" });
        }
        for _ in 0..MAX_RETRIES {
            let (session, due) = self.payable(id).await?;
            let consent = wallets
                .check_payment_code(&PaymentCodeCheck {
                    tenant: session.record.tenant.clone(),
                    phone: phone.clone(),
                    payee: session.record.id.clone(),
                    code: code.to_string(),
                })
                .await
                .map_err(payer_err)?;
            let amount = due.min(consent.amount);
            let (fact, payer) = self
                .phone_deposit(&session.record, &consent, amount)
                .await?;
            let existing = get_record::<SessionDeposit>(
                &*self.kernel.ports().store,
                &SessionDeposit::record_id(fact.deposit_id),
            )
            .await?;
            if existing.is_some() {
                // Only a consumed challenge makes this id, so it cannot already exist.
                return Err(CheckoutError::Payer(CoreError::CodeAlreadyUsed));
            }
            let stage = DepositStage::Confirmed {
                safe_to_credit: true,
            };
            let Some((mut batch, _)) = self.decide(&fact, stage, None, session, Some(payer))?
            else {
                return Err(CheckoutError::Conflict {
                    what: format!("session {id}"),
                });
            };
            batch.puts.extend(consent.puts);
            batch.unchanged.extend(consent.unchanged);
            match self.commit(batch).await {
                Ok(()) => {
                    let s = self.load(id).await?.map(|v| v.record);
                    return Ok(PhonePaymentView {
                        session_id: id.to_string(),
                        status: s.map(|s| s.status.as_str().to_string()).unwrap_or_default(),
                        amount: fact.amount.to_decimal_string(),
                        token: fact.token.to_string(),
                        network: fact.network,
                        deposit_id: fact.deposit_id,
                        tx_hash: ledger_hash(fact.deposit_id),
                    });
                }
                // The session, the challenge or the wallet moved: decide again (the
                // code was not used up).
                Err(CheckoutError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("session {id}"),
        })
    }

    /// The deposit a consented payment of `amount` makes: on the first of the session's
    /// networks where the wallet has an address and enough of a token the session takes.
    async fn phone_deposit(
        &self,
        s: &Session,
        consent: &PaymentConsent,
        amount: Micros,
    ) -> CheckoutResult<(DepositFact, WalletPayer)> {
        let ledger = &self.kernel.ports().ledger;
        let wallet = WalletId(consent.wallet.0.clone());
        for option in s.options.iter().filter(|o| s.accepts(o.token)) {
            let Some(rail) = self
                .kernel
                .rails()
                .map(|r| r.id())
                .find(|r| r.name() == option.network)
            else {
                continue;
            };
            let Some(address) = consent.addresses.get(&option.network) else {
                continue;
            };
            let account = accounts::wallet_on(&wallet, rail, option.token);
            let available = ledger
                .balance(&account.id)
                .await
                .map(|b| b.available())
                .unwrap_or(0);
            if available < i128::from(amount.get()) {
                continue;
            }
            let deposit_id = integer_id(&["phone_wallet", &consent.challenge_id]);
            let fact = DepositFact {
                deposit_id,
                network: option.network.clone(),
                address: option.address.clone(),
                token: option.token,
                amount,
                tx_hash: Some(ledger_hash(deposit_id)),
                confirmations: 1,
                detected_by: "phone_wallet".into(),
            };
            let payer = WalletPayer {
                wallet: wallet.0.clone(),
                address: address.0.clone(),
                originator: consent.originator.clone(),
                challenge: consent.challenge_id.clone(),
            };
            return Ok((fact, payer));
        }
        Err(CheckoutError::InsufficientFunds)
    }
}
