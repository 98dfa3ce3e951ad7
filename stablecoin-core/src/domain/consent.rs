//! Wallet ownership and consent (spec 1, "Wallet ownership and consent").
//!
//! A wallet is keyed by phone and belongs to the system; tenants are its members.
//! Money-in is open to any tenant; money-out (transfers, withdrawals, phone change) is
//! gated on membership. A tenant becomes a member by provisioning a new or unaffiliated
//! wallet, or by the customer's consent: a one-time code sent by SMS.

use crate::domain::RuleError;
use crate::domain::chain::ChainAddress;
use crate::domain::ids::{ChallengeId, TenantId, WalletId};
use crate::domain::otp::CodeKey;
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use subtle::ConstantTimeEq;

/// How long a one-time code stays valid.
pub const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// Digits of a one-time code.
pub const CODE_DIGITS: usize = 6;

/// Outcome of `POST /v1/users/provision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProvisionOutcome {
    /// No wallet had this phone: a new one was created with the tenant as its first member.
    Provisioned,
    /// An unaffiliated wallet (created by an inbound transfer) had this phone; the tenant
    /// became its first member.
    Adopted,
    /// The tenant is already a member of the phone's wallet; nothing changed.
    AlreadyExists,
    /// The phone's wallet belongs to other tenants: this one becomes a member only with
    /// the customer's consent (a link code).
    LinkRequired,
}

impl ProvisionOutcome {
    /// The wire form (`PROVISIONED`, ...), equal to the serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisionOutcome::Provisioned => "PROVISIONED",
            ProvisionOutcome::Adopted => "ADOPTED",
            ProvisionOutcome::AlreadyExists => "ALREADY_EXISTS",
            ProvisionOutcome::LinkRequired => "LINK_REQUIRED",
        }
    }
}

/// A phone-keyed customer wallet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wallet {
    /// `wal_...`, never reused; the addresses derive from it.
    pub id: WalletId,
    /// The customer's phone in E.164 (unique across wallets; changes only by a confirmed
    /// phone change).
    pub phone: Phone,
    /// Address per rail name (`"polygon"`, `"tron"`, ...). Addresses never change, even
    /// when the phone does: they derive from the wallet id, not the phone.
    pub addresses: BTreeMap<String, ChainAddress>,
    /// Member tenants in the order they joined; the first is the primary member.
    pub members: Vec<TenantId>,
    /// The tenant that provisioned it; `None` when created on the fly by an inbound
    /// transfer (an unaffiliated wallet, adoptable by the first tenant to provision it).
    pub created_by: Option<TenantId>,
    /// When the wallet was created (by provisioning or by an inbound transfer).
    pub created_at: Timestamp,
    /// Last change of members or phone.
    pub updated_at: Timestamp,
    /// Each member tenant's own customer id for this wallet (tenant id -> customer id),
    /// attached at provisioning: the `customer_id` of the payments webhooks. A member
    /// without one is reported under the wallet id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub customer_ids: BTreeMap<String, String>,
}

impl Wallet {
    /// The list every wallet record is stored in (the store's `tenant` of the record).
    /// Reserved: tenant ids are `ten_...`, so no tenant's list is this one.
    pub const LIST_OWNER: &'static str = "_system";

    /// `tenant`'s customer id of this wallet, or the wallet id when it attached none.
    pub fn customer_id_for(&self, tenant: &TenantId) -> String {
        self.customer_ids
            .get(&tenant.0)
            .cloned()
            .unwrap_or_else(|| self.id.0.clone())
    }
    /// True when `tenant` may move this wallet's money out.
    pub fn is_member(&self, tenant: &TenantId) -> bool {
        self.members.contains(tenant)
    }
    /// The first member (the one that provisioned or adopted it); `None` while
    /// unaffiliated.
    pub fn primary(&self) -> Option<&TenantId> {
        self.members.first()
    }
    /// Money-out gate (transfers, withdrawals, phone change).
    pub fn require_member(&self, tenant: &TenantId) -> Result<(), RuleError> {
        if self.is_member(tenant) {
            Ok(())
        } else {
            Err(RuleError::NotAMember)
        }
    }
    /// The wallet's address on the rail named `rail`; `None` if it has none there.
    pub fn address(&self, rail: &str) -> Option<&ChainAddress> {
        self.addresses.get(rail)
    }
}

/// What provisioning a phone does for `tenant`, given the wallet that phone may have.
pub fn provision_outcome(existing: Option<&Wallet>, tenant: &TenantId) -> ProvisionOutcome {
    match existing {
        None => ProvisionOutcome::Provisioned,
        Some(w) if w.is_member(tenant) => ProvisionOutcome::AlreadyExists,
        Some(w) if w.members.is_empty() => ProvisionOutcome::Adopted,
        Some(_) => ProvisionOutcome::LinkRequired,
    }
}

/// What a challenge's code authorises once confirmed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChallengePurpose {
    /// Make `tenant` a member of `wallet`; the code goes to the wallet's phone.
    Link,
    /// Re-key `wallet` to `new_phone`; the code goes to the NEW number.
    PhoneChange {
        /// The number the wallet moves to; it must not key another wallet.
        new_phone: Phone,
    },
    /// Pay a checkout session from the wallet of the phone the code went to (issue #50
    /// item 4): the code is the holder's consent to this one payment, of `amount`
    /// micro-units to `session`, and to nothing else.
    CheckoutPay {
        /// The session paid (`cs_...`).
        session: String,
        /// The amount the SMS named, in micro-units.
        amount: crate::domain::money::Micros,
    },
}

impl ChallengePurpose {
    /// The purpose's name in keys and guard scopes (`link`, `phone_change`,
    /// `checkout_pay`).
    pub fn kind(&self) -> &'static str {
        match self {
            ChallengePurpose::Link => "link",
            ChallengePurpose::PhoneChange { .. } => "phone_change",
            ChallengePurpose::CheckoutPay { .. } => "checkout_pay",
        }
    }
}

/// A one-time-code challenge. The code is never stored, only its salted hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    /// `otp_...`; part of the hashed input, so a code is bound to its challenge.
    pub id: ChallengeId,
    /// The tenant that requested it (and alone may confirm it).
    pub tenant: TenantId,
    /// The wallet the code acts on.
    pub wallet: WalletId,
    /// What confirming it does.
    pub purpose: ChallengePurpose,
    /// The number the code was sent to (the wallet's phone, or the new one for a phone
    /// change).
    pub sent_to: Phone,
    /// hex HMAC-SHA256 of `"<challenge id>:<code>"` under the server's [`CodeKey`]. The
    /// 6-digit space is small, so the real protection is the subject's failure limit
    /// (`domain::otp`) and the expiry; the keyed hash keeps codes out of backups and
    /// logs, and a database dump alone cannot recover them.
    pub code_hash: String,
    /// When the code was requested.
    pub created_at: Timestamp,
    /// `created_at` + [`CODE_TTL_MS`]; a code is refused from this instant on.
    pub expires_at: Timestamp,
    /// Codes tried against this challenge (for the record; the limit is the subject's,
    /// counted across challenges by its `OtpGuard`).
    pub attempts: u32,
    /// When the right code was confirmed; a consumed challenge refuses every later code.
    pub consumed_at: Option<Timestamp>,
    /// Set when a newer request for the same (tenant, wallet, purpose) replaced it.
    pub superseded: bool,
}

impl Challenge {
    /// A challenge for a code whose keyed hash is `code_hash` ([`CodeKey::hash_code`] of
    /// this id and the code).
    pub fn new(
        id: ChallengeId,
        tenant: TenantId,
        wallet: WalletId,
        purpose: ChallengePurpose,
        sent_to: Phone,
        code_hash: String,
        now: Timestamp,
    ) -> Self {
        Challenge {
            id,
            tenant,
            wallet,
            purpose,
            sent_to,
            code_hash,
            created_at: now,
            expires_at: now.plus_millis(CODE_TTL_MS),
            attempts: 0,
            consumed_at: None,
            superseded: false,
        }
    }

    /// Neither consumed nor superseded: the challenge that holds its purpose's open key
    /// (a code may still confirm it).
    pub fn is_open(&self) -> bool {
        self.consumed_at.is_none() && !self.superseded
    }

    /// Checks a code against this challenge alone, counting the attempt: `Ok(true)` and
    /// consumed when it matches, `Ok(false)` when it is wrong (the caller counts the
    /// failure on the subject's guard and persists both), `Err` when the challenge can no
    /// longer be used whatever the code.
    pub fn verify(&mut self, key: &CodeKey, code: &str, now: Timestamp) -> Result<bool, RuleError> {
        if self.consumed_at.is_some() {
            return Err(RuleError::CodeAlreadyUsed);
        }
        if self.superseded || now >= self.expires_at {
            return Err(RuleError::CodeExpired);
        }
        self.attempts = self.attempts.saturating_add(1);
        let given = key.hash_code(&self.id, code.trim());
        let matches = bool::from(given.as_bytes().ct_eq(self.code_hash.as_bytes()));
        if matches {
            self.consumed_at = Some(now);
        }
        Ok(matches)
    }
}

/// A 6-digit code from 8 random bytes (modulo bias below 10^-13).
pub fn code_from_random(random: [u8; 8]) -> String {
    let n = u64::from_le_bytes(random) % 10u64.pow(CODE_DIGITS as u32);
    format!("{n:0width$}", width = CODE_DIGITS)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    // The store impls live in engine/records.rs; these tests check what they claim.
    use crate::ports::record::Record;

    fn wallet(members: Vec<TenantId>) -> Wallet {
        Wallet {
            id: WalletId("wal_x".into()),
            phone: Phone::parse("+2250700000001").unwrap(),
            addresses: BTreeMap::new(),
            members,
            created_by: None,
            created_at: Timestamp(0),
            updated_at: Timestamp(0),
            customer_ids: BTreeMap::new(),
        }
    }

    #[test]
    fn outcomes() {
        let a = TenantId("ten_a".into());
        let b = TenantId("ten_b".into());
        assert_eq!(provision_outcome(None, &a), ProvisionOutcome::Provisioned);
        assert_eq!(
            provision_outcome(Some(&wallet(vec![])), &a),
            ProvisionOutcome::Adopted
        );
        assert_eq!(
            provision_outcome(Some(&wallet(vec![a.clone()])), &a),
            ProvisionOutcome::AlreadyExists
        );
        assert_eq!(
            provision_outcome(Some(&wallet(vec![a.clone()])), &b),
            ProvisionOutcome::LinkRequired
        );
        assert_eq!(
            wallet(vec![a.clone()])
                .require_member(&b)
                .unwrap_err()
                .code(),
            "NOT_A_MEMBER"
        );
        assert!(
            wallet(vec![a.clone(), b.clone()])
                .require_member(&b)
                .is_ok()
        );
    }

    fn challenge(code: &str) -> Challenge {
        Challenge::new(
            ChallengeId("otp_1".into()),
            TenantId("ten_a".into()),
            WalletId("wal_x".into()),
            ChallengePurpose::Link,
            Phone::parse("+2250700000001").unwrap(),
            key().hash_code(&ChallengeId("otp_1".into()), code),
            Timestamp(1_000),
        )
    }

    fn key() -> CodeKey {
        CodeKey::new([9; 32])
    }

    #[test]
    fn code_is_hashed_and_single_use() {
        let mut c = challenge("123456");
        assert!(!c.code_hash.contains("123456"));
        assert_eq!(c.verify(&key(), "123456", Timestamp(2_000)), Ok(true));
        assert_eq!(
            c.verify(&key(), "123456", Timestamp(2_000))
                .unwrap_err()
                .code(),
            "CODE_ALREADY_USED"
        );
        assert!(c.unique_keys().is_empty());
    }

    #[test]
    fn a_wrong_code_is_counted_and_leaves_the_challenge_open() {
        let mut c = challenge("123456");
        assert_eq!(c.verify(&key(), "000000", Timestamp(2_000)), Ok(false));
        assert_eq!(c.verify(&key(), "000000", Timestamp(2_000)), Ok(false));
        assert_eq!((c.attempts, c.consumed_at), (2, None));
        assert!(!c.unique_keys().is_empty(), "still the open challenge");
        assert_eq!(c.verify(&key(), " 123456 ", Timestamp(2_000)), Ok(true));
        let other_key = CodeKey::new([8; 32]);
        let mut c = challenge("123456");
        assert_eq!(
            c.verify(&other_key, "123456", Timestamp(2_000)),
            Ok(false),
            "the hash is keyed: another server key does not match"
        );
    }

    #[test]
    fn codes_expire() {
        let mut c = challenge("123456");
        let at = Timestamp(1_000 + CODE_TTL_MS);
        assert_eq!(
            c.verify(&key(), "123456", at).unwrap_err().code(),
            "CODE_EXPIRED"
        );
        assert_eq!(c.attempts, 0);
    }

    #[test]
    fn codes_have_six_digits() {
        assert_eq!(code_from_random([0; 8]), "000000");
        assert_eq!(code_from_random([0xff; 8]).len(), 6);
    }
}
