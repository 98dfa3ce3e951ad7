//! Who calls: tenants, their API keys and the caller a key establishes. Tenants are
//! every product's identity (a wallet send, an escrow deal and a checkout business all
//! belong to one), so the types and the two operations the products share live here:
//! [`Kernel::tenant`] (read through the short-lived tenant cache, `read_cache`) and
//! [`Kernel::new_api_key`]. The wallet engine keeps the rest of the tenant use cases
//! (create, issue, revoke, authenticate, pricing) and delegates these two.
//!
//! API keys are shown once at issue and stored only as a SHA-256 hash (a key is 160
//! random bits, so a fast hash is enough: there is nothing to brute-force). The prefix
//! selects the mode: `svc_sk_live_` / `svc_sk_test_` for tenant keys, `live_sk_` /
//! `test_sk_` for checkout business keys (spec 5.2, 5.3).

use super::Kernel;
use crate::domain::consent::hex;
use crate::domain::fees::TenantPricing;
use crate::domain::ids::{ApiKeyId, TenantId};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::rail::ChainAddress;
use crate::ports::record::{Record, get_record};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// A fintech that uses the service through its API keys; owns wallets' memberships,
/// operations and webhooks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    /// `ten_...`.
    pub id: TenantId,
    /// Display name, 1 to 200 characters.
    pub name: String,
    /// The tenant's own fee on its transfers (see `Engine::set_pricing`).
    pub pricing: TenantPricing,
    /// EVM address the tenant controls, where its fee goes (spec 8).
    pub fee_address: Option<ChainAddress>,
    /// When the tenant was created.
    pub created_at: Timestamp,
    /// Last change of pricing, fee address or test mode.
    pub updated_at: Timestamp,
    /// Account test mode (spec 1 "Sandbox mode"): while set, every key of the tenant
    /// authenticates as a test key, so its live keys mutate nothing live. Absent in
    /// records written before it existed: off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test_mode: bool,
    /// Whether staff ever set a sponsorship budget for the tenant (issue #51 item 4):
    /// only then are its payments' costs metered and its sends checked against budgets,
    /// so a tenant without budgets pays no budget read on any path (the tenant record is
    /// already read, and cached, where it is needed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sponsorship_budgets: bool,
    /// Whether the tenant may have spending policies (issue #47): `Some(false)` for a
    /// tenant that never created one, so its sends, withdrawals, swaps, escrow payouts
    /// and refunds skip the policy read (a list query that was ~12% of the server's CPU
    /// per accepted send); `Some(true)` from its first policy on, set in that policy's
    /// commit. `None` in records written before the field existed: unknown, so the
    /// policies are read as before (never a skipped check for an older tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spending_policies: Option<bool>,
}

impl Tenant {
    /// Whether a request of this tenant must read its spending policies.
    pub fn may_have_policies(&self) -> bool {
        self.spending_policies != Some(false)
    }
}

impl Record for Tenant {
    const KIND: &'static str = crate::ports::kinds::kind::TENANT;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.id.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// Whether an API key moves real money or only simulates (sandbox, see
/// [`Engine::sandbox`](crate::engine::Engine::sandbox)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyMode {
    /// Real operations on the configured rails.
    Live,
    /// Sandbox: mutations are checked and priced but nothing is stored or sent.
    Test,
}

/// Which API a key opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// Wallet, transfer, FX and escrow API (`svc_sk_*`).
    Tenant,
    /// Checkout business key (`live_sk_*` / `test_sk_*`).
    Business,
}

impl KeyKind {
    /// The secret's prefix for this kind and mode (`svc_sk_live_`, `test_sk_`, ...).
    pub fn prefix(self, mode: KeyMode) -> &'static str {
        match (self, mode) {
            (KeyKind::Tenant, KeyMode::Live) => "svc_sk_live_",
            (KeyKind::Tenant, KeyMode::Test) => "svc_sk_test_",
            (KeyKind::Business, KeyMode::Live) => "live_sk_",
            (KeyKind::Business, KeyMode::Test) => "test_sk_",
        }
    }

    /// Splits a presented key into kind and mode by prefix, checking its shape.
    pub fn classify(secret: &str) -> Option<(KeyKind, KeyMode)> {
        let kinds = [
            (KeyKind::Tenant, KeyMode::Live),
            (KeyKind::Tenant, KeyMode::Test),
            (KeyKind::Business, KeyMode::Live),
            (KeyKind::Business, KeyMode::Test),
        ];
        kinds.into_iter().find(|(k, m)| {
            secret.strip_prefix(k.prefix(*m)).is_some_and(|rest| {
                rest.len() == 32
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            })
        })
    }
}

/// An issued API key as stored: only a hash of the secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    /// `key_...`: names the key in lists and revocation (never the secret).
    pub id: ApiKeyId,
    /// The tenant the key acts for.
    pub tenant: TenantId,
    /// Which API it opens.
    pub kind: KeyKind,
    /// Live or sandbox.
    pub mode: KeyMode,
    /// hex SHA-256 of the secret.
    pub hash: String,
    /// First characters of the secret, for humans (`svc_sk_test_ab12...`).
    pub hint: String,
    /// When it was issued.
    pub created_at: Timestamp,
    /// When it was revoked; a revoked key never authenticates again.
    pub revoked_at: Option<Timestamp>,
    /// The checkout business (`biz_...`) a business key belongs to; `None` for tenant
    /// keys and for business keys issued before businesses existed, which act for the
    /// tenant's default business.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business: Option<String>,
    /// The key whose dashboard session issued this one (`None`: issued by the service,
    /// the CLI or the API). Revoking that key revokes this one with it, so a leaked key
    /// cannot leave behind keys that outlive its own revocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_by: Option<ApiKeyId>,
    /// What the key may do: every tenant route ([`KeyRole::Standard`]), or only list and
    /// approve the requests held by a policy's approval threshold ([`KeyRole::Approver`]).
    #[serde(default, skip_serializing_if = "KeyRole::is_standard")]
    pub role: KeyRole,
}

/// What a tenant key may do (issue #51, the two-person rule's tenant side).
///
/// Why a role and not a new key kind: an approver key has the tenant key's shape
/// (`svc_sk_live_...`), so nothing that classifies or stores keys changes; what it may
/// do is decided where keys are authenticated. `Engine::authenticate` refuses an
/// approver key (KEY_OUT_OF_SCOPE), so it opens no wallet, transfer, policy or dashboard
/// route and can never make the request it approves; only
/// `Engine::authenticate_approver` accepts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyRole {
    /// Every route of the key's kind.
    #[default]
    Standard,
    /// Lists and approves held requests of its tenant; nothing else.
    Approver,
}

impl KeyRole {
    /// True for [`KeyRole::Standard`] (the stored form leaves it out).
    pub fn is_standard(&self) -> bool {
        *self == KeyRole::Standard
    }
}

impl ApiKey {
    /// The unique key that finds an API key by the hash of its secret.
    pub fn hash_key(hash: &str) -> String {
        crate::ports::kinds::key(crate::ports::kinds::namespace::API_KEY, hash)
    }
}

impl Record for ApiKey {
    const KIND: &'static str = crate::ports::kinds::kind::API_KEY;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(
            if self.revoked_at.is_some() {
                "revoked"
            } else {
                "active"
            }
            .into(),
        )
    }
    fn unique_keys(&self) -> Vec<String> {
        vec![ApiKey::hash_key(&self.hash)]
    }
}

/// A newly issued key: the secret is shown once and never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedKey {
    /// The stored record.
    pub key: ApiKey,
    /// The full secret to give the tenant; it cannot be recovered later.
    pub secret: String,
}

impl fmt::Debug for IssuedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedKey")
            .field("key", &self.key)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Who is calling, established from an API key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthContext {
    /// The tenant every call of this key acts for.
    pub tenant: TenantId,
    /// The key used (for audit and revocation).
    pub key_id: ApiKeyId,
    /// Which API the key opens.
    pub kind: KeyKind,
    /// Live or sandbox: decides whether a mutation runs or is simulated. The key's own
    /// mode, except that every key of a tenant in account test mode
    /// ([`Tenant::test_mode`]) acts as [`KeyMode::Test`].
    pub mode: KeyMode,
    /// The checkout business of a business key ([`ApiKey::business`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business: Option<String>,
}

impl AuthContext {
    /// True for a test key, or any key of a tenant in account test mode: its mutations
    /// go to [`Engine::sandbox`](crate::engine::Engine::sandbox).
    pub fn is_sandbox(&self) -> bool {
        self.mode == KeyMode::Test
    }

    /// SANDBOX_UNSUPPORTED for a test key: `what` is a mutation that has no simulation
    /// (webhook endpoint changes, replays: a sandbox must not change what live receives).
    /// The engine's own use cases answer this through [`Engine::sandbox`](crate::engine::Engine::sandbox).
    pub fn require_live(&self, what: &str) -> CoreResult<()> {
        if self.is_sandbox() {
            return Err(CoreError::sandbox_unsupported(what));
        }
        Ok(())
    }
}

pub(crate) fn sha256_hex(s: &str) -> String {
    hex(&Sha256::digest(s.as_bytes()))
}

pub(crate) fn base32_lower(bytes: &[u8]) -> String {
    const A: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in bytes {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(A[((acc >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(A[((acc << (5 - bits)) & 31) as usize] as char);
    }
    out
}

impl Kernel {
    /// A tenant record; reused from memory for the kernel's read-cache window
    /// (`EngineConfig::read_cache_ms` when the wallet engine built the kernel).
    pub async fn tenant(&self, id: &TenantId) -> CoreResult<Tenant> {
        let now = self.now().millis();
        if let Some(t) = self.tenant_cache().get(id, now) {
            return Ok(t);
        }
        let t = get_record::<Tenant>(&*self.ports().store, &id.0)
            .await?
            .map(|v| v.record)
            .ok_or_else(|| CoreError::NotFound {
                kind: "tenant",
                id: id.0.clone(),
            })?;
        self.tenant_cache().put(id.clone(), t.clone(), now);
        Ok(t)
    }

    /// Drops a tenant from the cache after this process changed it (its pricing).
    pub(crate) fn forget_tenant(&self, id: &TenantId) {
        self.tenant_cache().remove(id);
    }

    /// A new key, not stored: for a caller that commits it in its own batch (a checkout
    /// business and its keys are one commit). `business` scopes a business key to one
    /// checkout business. 160 random bits after the prefix; only the returned
    /// [`IssuedKey`] holds the secret.
    pub fn new_api_key(
        &self,
        tenant: &TenantId,
        kind: KeyKind,
        mode: KeyMode,
        business: Option<String>,
    ) -> IssuedKey {
        let mut raw = [0u8; 20];
        self.ports().entropy.fill(&mut raw);
        let body = base32_lower(&raw);
        let secret = format!("{}{}", kind.prefix(mode), body);
        let key = ApiKey {
            id: ApiKeyId(self.new_id(ApiKeyId::PREFIX)),
            tenant: tenant.clone(),
            kind,
            mode,
            hash: sha256_hex(&secret),
            hint: format!("{}{}...", kind.prefix(mode), &body[..4]),
            created_at: self.now(),
            revoked_at: None,
            business,
            issued_by: None,
            role: KeyRole::Standard,
        };
        IssuedKey { key, secret }
    }
}
