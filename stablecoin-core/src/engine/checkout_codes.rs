//! The wallet side of paying a checkout session from a phone wallet
//! ([`crate::kernel::phone_pay`]): one-time codes of purpose `checkout_pay`, on the
//! same guards and policy as the link flow (`engine::consent`, `domain::otp`).
//!
//! Who pays: a phone keys one wallet of the whole service (spec 1 item 2: wallets are
//! system-wide, its tenants are members of it), so there is no wallet to pick. The
//! wallet pays when a tenant operates it; the payment is made under the payee's tenant
//! when it is a member, otherwise under the wallet's primary member. A wallet no tenant
//! operates (created on the fly by an inbound transfer) is treated as no wallet: the
//! spec lets no one move its money out.
//!
//! The subject of the guards is (purpose, payee's tenant, payer): the payer is the
//! wallet's id, or for a phone without a payable wallet a stand-in derived from the
//! phone, so a phone without a wallet meets the same limits, lockout and answers.

use super::Engine;
use super::consent::{MAX_RACE_RETRIES, lost_version_race};
use crate::domain::RuleError;
use crate::domain::consent::{Challenge, ChallengePurpose, Wallet};
use crate::domain::ids::{ChallengeId, TenantId, WalletId};
use crate::domain::otp::GuardScope;
use crate::domain::phone::Phone;
use crate::error::{CoreError, CoreResult};
use crate::kernel::phone_pay::{
    PaymentCodeCheck, PaymentCodeRequest, PaymentCodeSent, PaymentConsent, PhoneWalletPayments,
};
use crate::ports::claim::hold_through_side_effect;
use crate::ports::record::{Record, Versioned, get_record_by_unique};
use crate::ports::services::{SmsKind, SmsMessage};
use crate::ports::store::Batch;
use async_trait::async_trait;

/// The purpose's name in keys and guard scopes.
const PURPOSE: &str = "checkout_pay";

/// The phone's wallet when it may pay (a tenant operates it), read fresh.
async fn payable_wallet(engine: &Engine, phone: &Phone) -> CoreResult<Option<Versioned<Wallet>>> {
    Ok(engine
        .wallet_by_phone(phone)
        .await?
        .filter(|v| !v.record.members.is_empty()))
}

/// The payer of the guards and the open challenge: the wallet, or a stand-in for the
/// phone (`nowallet_<E.164>`: never a wallet id, which are `wal_...`).
fn payer(phone: &Phone, wallet: Option<&Versioned<Wallet>>) -> WalletId {
    match wallet {
        Some(v) => v.record.id.clone(),
        None => WalletId(format!("nowallet_{phone}")),
    }
}

fn subject(tenant: &TenantId, payer: &WalletId) -> GuardScope {
    GuardScope::Subject {
        purpose: PURPOSE.into(),
        tenant: tenant.clone(),
        wallet: payer.clone(),
    }
}

#[async_trait]
impl PhoneWalletPayments for Engine {
    async fn request_payment_code(&self, req: &PaymentCodeRequest) -> CoreResult<PaymentCodeSent> {
        let policy = &self.config.otp;
        let code = self.random_code();
        let text = format!(
            "{code} is your code to pay {} {} to {} from your wallet. It expires in 10 minutes. Never share it.",
            req.amount.to_decimal_string(),
            req.currency,
            req.payee_name.chars().take(60).collect::<String>(),
        );
        let mut tries = 0;
        let (challenge, sms) = loop {
            let now = self.now();
            let wallet = payable_wallet(self, &req.phone).await?;
            let payer = payer(&req.phone, wallet.as_ref());
            let mut subject_guard = self.guard(subject(&req.tenant, &payer), now).await?;
            subject_guard.guard.check_not_locked(now)?;
            let mut phone_guard = self
                .guard(
                    GuardScope::Phone {
                        phone: req.phone.clone(),
                    },
                    now,
                )
                .await?;
            let mut quota = self
                .guard(
                    GuardScope::Tenant {
                        tenant: req.tenant.clone(),
                    },
                    now,
                )
                .await?;
            subject_guard
                .guard
                .count_request(now, policy, policy.max_requests_per_subject)?;
            phone_guard
                .guard
                .count_request(now, policy, policy.max_requests_per_phone)?;
            quota
                .guard
                .count_request(now, policy, policy.max_requests_per_tenant)?;
            let id = ChallengeId(self.new_id(ChallengeId::PREFIX));
            let code_hash = self.code_key.hash_code(&id, &code);
            let challenge = Challenge::new(
                id,
                req.tenant.clone(),
                payer.clone(),
                ChallengePurpose::CheckoutPay {
                    session: req.payee.clone(),
                    amount: req.amount,
                },
                req.phone.clone(),
                code_hash,
                now,
            );
            let mut puts = vec![subject_guard.put()?, phone_guard.put()?, quota.put()?];
            let open_key = Challenge::open_key(PURPOSE, &req.tenant, &payer);
            if let Some(old) =
                get_record_by_unique::<Challenge>(&*self.ports().store, &open_key).await?
            {
                let mut o = old.record;
                o.superseded = true;
                puts.push(o.update(old.version)?);
            }
            puts.push(challenge.insert()?);
            // Only a holder of a payable wallet is sent the code; the stand-in's code
            // exists only as its hash, so no one can ever give it.
            let sms = match &wallet {
                Some(_) => {
                    let (sms, put) = self.queue_sms(
                        &req.phone,
                        SmsMessage {
                            kind: SmsKind::PaymentCode,
                            text: text.clone(),
                        },
                        Some(req.tenant.0.clone()),
                        Some(&challenge.id),
                        hold_through_side_effect(now, self.config.claim_lease_ms),
                    )?;
                    puts.push(put);
                    Some(sms)
                }
                None => None,
            };
            match self
                .commit(Batch {
                    puts,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => break (challenge, sms),
                Err(CoreError::Conflict { .. }) if tries < MAX_RACE_RETRIES => tries += 1,
                Err(e) => return Err(e),
            }
        };
        if let Some(sms) = sms {
            // As in the link flow: a gateway failing for now leaves the message queued
            // for the worker. A refusal for good is not told apart here: the answer must
            // not depend on whether the phone holds a wallet.
            let _ = self
                .deliver_sms(
                    Versioned {
                        record: sms,
                        version: 1,
                    },
                    false,
                )
                .await;
        }
        Ok(PaymentCodeSent {
            sent_to: req.phone.masked(),
            expires_at: challenge.expires_at,
        })
    }

    async fn check_payment_code(&self, req: &PaymentCodeCheck) -> CoreResult<PaymentConsent> {
        let mut tries = 0;
        loop {
            let now = self.now();
            let wallet = payable_wallet(self, &req.phone).await?;
            let payer = payer(&req.phone, wallet.as_ref());
            let mut guard = self.guard(subject(&req.tenant, &payer), now).await?;
            guard.guard.check_not_locked(now)?;
            let key = Challenge::open_key(PURPOSE, &req.tenant, &payer);
            let open = get_record_by_unique::<Challenge>(&*self.ports().store, &key).await?;
            let mut puts = Vec::new();
            let consent = match open {
                Some(v) => {
                    let mut challenge = v.record;
                    let matched = challenge.verify(&self.code_key, &req.code, now)?;
                    let for_this = match &challenge.purpose {
                        ChallengePurpose::CheckoutPay { session, amount }
                            if session == &req.payee =>
                        {
                            Some(*amount)
                        }
                        _ => None,
                    };
                    match (matched, for_this, &wallet) {
                        (true, Some(amount), Some(w)) => Some((challenge, v.version, amount, w)),
                        _ => {
                            // A code of another payment is no code for this one: it
                            // stays unused, and the guess counts.
                            if matched {
                                challenge.consumed_at = None;
                            }
                            puts.push(challenge.update(v.version)?);
                            None
                        }
                    }
                }
                None => None,
            };
            let Some((challenge, version, amount, w)) = consent else {
                let refusal: RuleError = guard.guard.count_failure(now, &self.config.otp);
                puts.push(guard.put()?);
                match self
                    .commit(Batch {
                        puts,
                        ..Default::default()
                    })
                    .await
                {
                    Ok(_) => return Err(refusal.into()),
                    Err(e) if lost_version_race(&e) && tries < MAX_RACE_RETRIES => {
                        tries += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            };
            guard.guard.clear_failures(now);
            let originator = if w.record.is_member(&req.tenant) {
                req.tenant.clone()
            } else {
                w.record
                    .primary()
                    .cloned()
                    .ok_or_else(|| CoreError::from(RuleError::NotAMember))?
            };
            return Ok(PaymentConsent {
                wallet: w.record.id.clone(),
                addresses: w.record.addresses.clone(),
                originator,
                challenge_id: challenge.id.0.clone(),
                amount,
                puts: vec![challenge.update(version)?, guard.put()?],
                unchanged: vec![w.unchanged()],
            });
        }
    }
}
