//! Consent flows behind one-time codes: linking a tenant to a wallet and moving a wallet
//! to a new phone number (spec 1, "Wallet ownership and consent").
//!
//! Every request and every code tried is counted on the guards of `domain::otp`, in the
//! same batch as the challenge it concerns, with version checks. A commit that loses a
//! race is retried from a fresh read, so concurrent guesses are each counted once and
//! the answer to a code never depends on timing: a wrong code is `CODE_INVALID` (or
//! `TOO_MANY_ATTEMPTS` once the subject is locked out), a right one succeeds unless the
//! subject is locked out.

use super::Engine;
use super::sms::{Attempt, SmsStatus};
use super::wallets::{ChallengeView, ProvisionView};
use crate::domain::consent::{Challenge, ChallengePurpose, Wallet, code_from_random};
use crate::domain::events::DomainEvent;
use crate::domain::ids::{ChallengeId, TenantId, WalletId};
use crate::domain::otp::{GuardScope, OtpGuard};
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::claim::hold_through_side_effect;
use crate::ports::record::{Record, Versioned, get_record, get_record_by_unique};
use crate::ports::services::{SmsKind, SmsMessage};
use crate::ports::store::{Batch, Put};

/// Times a flow re-reads and tries again after its commit lost a race. Past this the
/// caller gets `CONFLICT`, whether its code was right or wrong.
pub(super) const MAX_RACE_RETRIES: usize = 16;

/// A guard as read (or new, with no version yet).
pub(super) struct ReadGuard {
    pub(super) guard: OtpGuard,
    version: Option<u64>,
}

impl ReadGuard {
    pub(super) fn put(&self) -> CoreResult<Put> {
        Ok(match self.version {
            Some(v) => self.guard.update(v)?,
            None => self.guard.insert()?,
        })
    }
}

/// A code that matched its open challenge: the consumed challenge and the cleared guard,
/// to commit with the change the code authorises.
struct CheckedCode {
    challenge: Versioned<Challenge>,
    guard: ReadGuard,
}

impl CheckedCode {
    fn puts(&self) -> CoreResult<Vec<Put>> {
        Ok(vec![
            self.challenge.record.update(self.challenge.version)?,
            self.guard.put()?,
        ])
    }
}

/// True for a commit that lost a race on a record version: read again and retry.
pub(super) fn lost_version_race(e: &CoreError) -> bool {
    matches!(
        e,
        CoreError::Conflict {
            record: Some(_),
            ..
        }
    )
}

impl Engine {
    pub(super) fn random_code(&self) -> String {
        let mut b = [0u8; 8];
        self.ports().entropy.fill(&mut b);
        code_from_random(b)
    }

    pub(super) async fn guard(&self, scope: GuardScope, now: Timestamp) -> CoreResult<ReadGuard> {
        Ok(
            match get_record::<OtpGuard>(&*self.ports().store, &scope.guard_id()).await? {
                Some(v) => ReadGuard {
                    guard: v.record,
                    version: Some(v.version),
                },
                None => ReadGuard {
                    guard: OtpGuard::new(scope, now),
                    version: None,
                },
            },
        )
    }

    fn subject(purpose: &str, tenant: &TenantId, wallet: &WalletId) -> GuardScope {
        GuardScope::Subject {
            purpose: purpose.to_string(),
            tenant: tenant.clone(),
            wallet: wallet.clone(),
        }
    }

    /// Opens a challenge, replacing any open one of the same (purpose, tenant, wallet),
    /// and sends its code. Refused while the subject is locked out, and past the request
    /// limits per subject, per destination phone and per tenant (nothing is counted or
    /// sent then). The SMS is an outbox record of the challenge's own commit
    /// (`engine::sms`), sent right after it, so a code that reaches a phone can always
    /// be confirmed and a crash after the commit delays the SMS without losing it.
    async fn open_challenge(
        &self,
        tenant: &TenantId,
        wallet: &Wallet,
        purpose: ChallengePurpose,
        send_to: &Phone,
        sms_kind: SmsKind,
    ) -> CoreResult<ChallengeView> {
        let policy = &self.config.otp;
        let code = self.random_code();
        let text = match sms_kind {
            SmsKind::PhoneChangeCode => {
                format!(
                    "Your code to move your wallet to this number is {code}. It expires in 10 minutes."
                )
            }
            _ => format!(
                "Your code to link your wallet is {code}. It expires in 10 minutes. Never share it."
            ),
        };
        let mut tries = 0;
        let (challenge, sms) = loop {
            let now = self.now();
            let mut subject = self
                .guard(Self::subject(purpose.kind(), tenant, &wallet.id), now)
                .await?;
            subject.guard.check_not_locked(now)?;
            let mut phone = self
                .guard(
                    GuardScope::Phone {
                        phone: send_to.clone(),
                    },
                    now,
                )
                .await?;
            let mut quota = self
                .guard(
                    GuardScope::Tenant {
                        tenant: tenant.clone(),
                    },
                    now,
                )
                .await?;
            subject
                .guard
                .count_request(now, policy, policy.max_requests_per_subject)?;
            phone
                .guard
                .count_request(now, policy, policy.max_requests_per_phone)?;
            quota
                .guard
                .count_request(now, policy, policy.max_requests_per_tenant)?;
            let id = ChallengeId(self.new_id(ChallengeId::PREFIX));
            let code_hash = self.code_key.hash_code(&id, &code);
            let challenge = Challenge::new(
                id,
                tenant.clone(),
                wallet.id.clone(),
                purpose.clone(),
                send_to.clone(),
                code_hash,
                now,
            );
            let mut puts = vec![subject.put()?, phone.put()?, quota.put()?];
            let open_key = Challenge::open_key(purpose.kind(), tenant, &wallet.id);
            if let Some(old) =
                get_record_by_unique::<Challenge>(&*self.ports().store, &open_key).await?
            {
                let mut o = old.record;
                o.superseded = true;
                puts.push(o.update(old.version)?);
            }
            puts.push(challenge.insert()?);
            // The SMS is a record of the same commit, held for this request to send
            // (no worker claims it before one lease has passed): a crash after the
            // commit leaves it queued, and a worker sends it then.
            let (sms, sms_put) = self.queue_sms(
                send_to,
                SmsMessage {
                    kind: sms_kind,
                    text: text.clone(),
                },
                Some(tenant.0.clone()),
                Some(&challenge.id),
                hold_through_side_effect(now, self.config.claim_lease_ms),
            )?;
            puts.push(sms_put);
            let batch = Batch {
                puts,
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(_) => break (challenge, sms),
                // A concurrent request took the open key or moved a guard: count again.
                Err(CoreError::Conflict { .. }) if tries < MAX_RACE_RETRIES => tries += 1,
                Err(e) => return Err(e),
            }
        };
        // A gateway that fails for now leaves the message queued: the worker retries it
        // with backoff and the request still answers (the code is on its way). Only a
        // message that will never be sent (refused for good) fails the request. An
        // outcome that could not be recorded leaves it queued too: the worker resolves
        // it once the hold has passed.
        let sent = self
            .deliver_sms(
                Versioned {
                    record: sms,
                    version: 1,
                },
                false,
            )
            .await;
        if let Ok(Attempt::Ended(SmsStatus::GaveUp)) = sent {
            return Err(CoreError::Notifier(
                "the SMS gateway refused the message".into(),
            ));
        }
        Ok(ChallengeView {
            challenge_id: challenge.id.0,
            sent_to: send_to.masked(),
            expires_at: challenge.expires_at.to_rfc3339(),
        })
    }

    /// Checks a code against the subject's open challenge. A wrong code is counted on the
    /// subject's guard (and may lock it out) before the error is returned; a right one
    /// comes back as a [`CheckedCode`] for the caller to commit with its change. While
    /// the subject is locked out no code is even compared.
    async fn check_code(
        &self,
        kind: &str,
        tenant: &TenantId,
        wallet: &WalletId,
        code: &str,
    ) -> CoreResult<CheckedCode> {
        let key = Challenge::open_key(kind, tenant, wallet);
        let mut tries = 0;
        loop {
            let now = self.now();
            let mut guard = self.guard(Self::subject(kind, tenant, wallet), now).await?;
            guard.guard.check_not_locked(now)?;
            let Some(v) = get_record_by_unique::<Challenge>(&*self.ports().store, &key).await?
            else {
                return Err(CoreError::NotFound {
                    kind: "challenge",
                    id: format!("open {kind} request"),
                });
            };
            let mut challenge = v.record;
            if challenge.verify(&self.code_key, code, now)? {
                guard.guard.clear_failures(now);
                return Ok(CheckedCode {
                    challenge: Versioned {
                        record: challenge,
                        version: v.version,
                    },
                    guard,
                });
            }
            let refusal = guard.guard.count_failure(now, &self.config.otp);
            let batch = Batch {
                puts: vec![challenge.update(v.version)?, guard.put()?],
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(_) => return Err(refusal.into()),
                // Another guess or request moved the guard or the challenge first: read
                // again, so this guess is counted too.
                Err(e) if lost_version_race(&e) && tries < MAX_RACE_RETRIES => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// `POST /v1/users/link/request`: a code to the wallet's phone.
    pub async fn link_request(
        &self,
        tenant: &TenantId,
        phone: &Phone,
    ) -> CoreResult<ChallengeView> {
        let w = self.require_wallet(phone).await?.record;
        if w.is_member(tenant) {
            return Err(CoreError::AlreadyAMember);
        }
        let to = w.phone.clone();
        self.open_challenge(tenant, &w, ChallengePurpose::Link, &to, SmsKind::LinkCode)
            .await
    }

    /// `POST /v1/users/link/confirm`: the code makes the caller a member; the existing
    /// members receive `user.linked`.
    pub async fn link_confirm(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        code: &str,
    ) -> CoreResult<ProvisionView> {
        let rail = self.evm_rail()?.id().name();
        let mut tries = 0;
        loop {
            let wv = self.require_wallet(phone).await?;
            if wv.record.is_member(tenant) {
                return Err(CoreError::AlreadyAMember);
            }
            let checked = self.check_code("link", tenant, &wv.record.id, code).await?;
            let now = self.now();
            let mut w = wv.record.clone();
            let existing = w.members.clone();
            w.members.push(tenant.clone());
            w.updated_at = now;
            let address = w.address(&rail).map(|a| a.0.clone()).unwrap_or_default();
            let mut outbox = Vec::new();
            for m in &existing {
                outbox.push(self.event(
                    m,
                    DomainEvent::UserLinked {
                        wallet_address: address.clone(),
                        new_merchant_id: tenant.0.clone(),
                        linked_at: now,
                    },
                )?);
            }
            let mut puts = checked.puts()?;
            puts.push(w.update(wv.version)?);
            let batch = Batch {
                puts,
                outbox,
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(_) => {
                    return Ok(ProvisionView {
                        wallet_id: w.id.0.clone(),
                        phone_number: w.phone.to_string(),
                        address,
                        rail,
                        outcome: "LINKED".into(),
                    });
                }
                Err(e) if lost_version_race(&e) && tries < MAX_RACE_RETRIES => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// `POST /v1/users/phone-change/request`: member only; the code goes to the NEW number.
    pub async fn phone_change_request(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        new_phone: &Phone,
    ) -> CoreResult<ChallengeView> {
        let w = self.require_wallet(phone).await?.record;
        w.require_member(tenant)?;
        if phone == new_phone || self.wallet_by_phone(new_phone).await?.is_some() {
            return Err(CoreError::PhoneInUse {
                phone: new_phone.masked(),
            });
        }
        self.open_challenge(
            tenant,
            &w,
            ChallengePurpose::PhoneChange {
                new_phone: new_phone.clone(),
            },
            new_phone,
            SmsKind::PhoneChangeCode,
        )
        .await
    }

    /// `POST /v1/users/phone-change/confirm`: re-keys the wallet; address, balance and
    /// history stay; every member receives `user.phone_changed`.
    pub async fn phone_change_confirm(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        code: &str,
    ) -> CoreResult<ProvisionView> {
        let rail = self.evm_rail()?.id().name();
        let mut tries = 0;
        loop {
            let wv = self.require_wallet(phone).await?;
            wv.record.require_member(tenant)?;
            let checked = self
                .check_code("phone_change", tenant, &wv.record.id, code)
                .await?;
            let ChallengePurpose::PhoneChange { new_phone } =
                checked.challenge.record.purpose.clone()
            else {
                return Err(CoreError::NotFound {
                    kind: "challenge",
                    id: checked.challenge.record.id.0.clone(),
                });
            };
            let now = self.now();
            let mut w = wv.record.clone();
            w.phone = new_phone;
            w.updated_at = now;
            let address = w.address(&rail).map(|a| a.0.clone()).unwrap_or_default();
            let mut outbox = Vec::new();
            for m in &w.members {
                outbox.push(self.event(
                    m,
                    DomainEvent::UserPhoneChanged {
                        wallet_address: address.clone(),
                        changed_by_merchant_id: tenant.0.clone(),
                        changed_at: now,
                    },
                )?);
            }
            let mut puts = checked.puts()?;
            puts.push(w.update(wv.version)?);
            let batch = Batch {
                puts,
                outbox,
                ..Default::default()
            };
            // The unique phone key moves with the update: if the new number got a wallet
            // in the meantime the commit fails (a taken key) and nothing changes.
            match self.commit(batch).await {
                Ok(_) => {
                    return Ok(ProvisionView {
                        wallet_id: w.id.0.clone(),
                        phone_number: w.phone.to_string(),
                        address,
                        rail,
                        outcome: "PHONE_CHANGED".into(),
                    });
                }
                Err(e) if lost_version_race(&e) && tries < MAX_RACE_RETRIES => tries += 1,
                Err(CoreError::Conflict { .. }) => {
                    return Err(CoreError::PhoneInUse {
                        phone: w.phone.masked(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }
}
