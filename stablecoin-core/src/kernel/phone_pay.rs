//! Paying a product (a checkout session) from a phone wallet of this service: what a
//! product asks of the wallets (issue #50 item 4).
//!
//! Why a trait in the kernel: checkout stands on the kernel, not on the wallet engine
//! (docs/architecture.md rule 4), yet the wallet side of such a payment is the wallet
//! engine's: the wallet a phone keys, its one-time codes and their guards. The wallet
//! engine implements [`PhoneWalletPayments`]; a host that runs both products hands it to
//! checkout (`CheckoutEngine::with_phone_wallets`).
//!
//! Money-out is gated as the spec gates it: the code, sent by SMS to the wallet's phone,
//! proves the holder and consents to this one payment (its payee and amount), exactly as
//! a link code consents to a link. The request and the check count on the same guards,
//! with the same policy, as the link flow (`domain::otp`): per subject (purpose
//! `checkout_pay`, the payee's tenant, the payer), per destination phone, per tenant.
//!
//! No enumeration: a phone that keys no wallet (or a wallet no tenant operates, whose
//! money no one may move out) gets the same answer to a request, its guards counted the
//! same, and a challenge whose code is never sent, so every later answer (a wrong code,
//! an expired one, the lockout) is the same as for a phone that holds one.

use crate::domain::chain::ChainAddress;
use crate::domain::ids::{TenantId, WalletId};
use crate::domain::money::Micros;
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use crate::error::CoreResult;
use crate::ports::store::{Put, Unchanged};
use async_trait::async_trait;
use std::collections::BTreeMap;

/// A code asked for to pay `amount` to `payee`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentCodeRequest {
    /// The payee's tenant: its SMS quota pays for the code.
    pub tenant: TenantId,
    /// The payer's phone.
    pub phone: Phone,
    /// What is paid (a session id): the code consents to it alone.
    pub payee: String,
    /// The payee's name, in the SMS.
    pub payee_name: String,
    /// The amount, in micro-units, named in the SMS and bound to the code.
    pub amount: Micros,
    /// The currency named in the SMS (`USDC`, `USDT`, `USD`).
    pub currency: String,
}

/// The answer to a request, the same whether or not the phone holds a wallet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentCodeSent {
    /// The phone, masked (`+225•••••••01`).
    pub sent_to: String,
    /// When the code stops working.
    pub expires_at: Timestamp,
}

/// A code given to pay `payee`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentCodeCheck {
    /// The payee's tenant (the subject's).
    pub tenant: TenantId,
    /// The payer's phone.
    pub phone: Phone,
    /// What is paid.
    pub payee: String,
    /// The code as typed.
    pub code: String,
}

/// A right code: the holder's consent to pay `amount` from `wallet`. Nothing is written
/// yet: the caller commits `puts` (the consumed challenge, the cleared guard) and checks
/// `unchanged` (the wallet as read) in the same batch as the payment, so the code is
/// used up exactly when the payment is made.
#[derive(Clone, Debug)]
pub struct PaymentConsent {
    /// The paying wallet.
    pub wallet: WalletId,
    /// Its addresses, per rail name.
    pub addresses: BTreeMap<String, ChainAddress>,
    /// The tenant the payment is made under: the payee's tenant when it operates the
    /// wallet, otherwise the wallet's primary member.
    pub originator: TenantId,
    /// The consumed challenge's id (one payment per code).
    pub challenge_id: String,
    /// The amount the code consented to.
    pub amount: Micros,
    /// Commit with the payment.
    pub puts: Vec<Put>,
    /// Check with the payment.
    pub unchanged: Vec<Unchanged>,
}

/// The wallet side of paying from a phone wallet; the wallet engine implements it.
#[async_trait]
pub trait PhoneWalletPayments: Send + Sync {
    /// Opens a challenge and sends its code to the phone's wallet holder, or, for a phone
    /// that holds no wallet that may pay, opens one whose code is never sent. Refused
    /// while the subject is locked out (TOO_MANY_ATTEMPTS) and past the request limits
    /// (RATE_LIMITED), nothing counted then.
    async fn request_payment_code(&self, req: &PaymentCodeRequest) -> CoreResult<PaymentCodeSent>;

    /// Checks a code: a wrong one (or one for another payee, or none requested) is
    /// counted on the subject's guard, committed, and refused (CODE_INVALID, then
    /// TOO_MANY_ATTEMPTS); an expired one is CODE_EXPIRED. A right one is the consent.
    async fn check_payment_code(&self, req: &PaymentCodeCheck) -> CoreResult<PaymentConsent>;
}
