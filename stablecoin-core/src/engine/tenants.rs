//! Tenants, their API keys, pricing and treasury: the wallet engine's use cases over the
//! kernel's identity types (`kernel/auth.rs`).
//!
//! API keys are shown once at issue and stored only as a SHA-256 hash (a key is 160
//! random bits, so a fast hash is enough: there is nothing to brute-force). The prefix
//! selects the mode: `svc_sk_live_` / `svc_sk_test_` for tenant keys, `live_sk_` /
//! `test_sk_` for checkout business keys (spec 5.2, 5.3).

use super::{Engine, accounts, store_err};
use crate::domain::fees::TenantPricing;
use crate::domain::ids::{ApiKeyId, TenantId};
use crate::domain::money::{Micros, Token};
use crate::error::{CoreError, CoreResult};
use crate::kernel::auth::{
    ApiKey, AuthContext, IssuedKey, KeyKind, KeyMode, KeyRole, Tenant, sha256_hex,
};
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::rail::ChainAddress;
use crate::ports::record::{Record, get_record, get_record_by_unique};
use crate::ports::store::Batch;

/// The highest tenant fee a tenant may set for itself (its dashboard); above it, the
/// service staff set the pricing (`stablecoin-server pricing set`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeeCeiling {
    /// Highest `fee_bps` of a PERCENTAGE fee.
    pub max_bps: u32,
    /// Highest FLAT fee, micro-units.
    pub max_flat_micros: u64,
}

/// The audit actor of a change made with an API key (the dashboard): `key:<key id>`.
pub fn key_actor(key_id: &ApiKeyId) -> String {
    format!("key:{}", key_id.0)
}

/// Refuses a fee address that is not an EVM address (`0x` and 40 hex digits): a tenant
/// fee is paid only on EVM transfers (spec 8.4), on every configured EVM chain, whose
/// addresses all have this form. Anything else would be accepted today and fail every
/// fee-bearing transfer later.
pub fn check_fee_address(address: &ChainAddress) -> CoreResult<()> {
    let ok = address
        .0
        .strip_prefix("0x")
        .is_some_and(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(CoreError::InvalidParameter {
            field: "fee_address",
            reason:
                "must be an EVM address (0x and 40 hex digits): tenant fees are paid on EVM chains"
                    .into(),
        })
    }
}

impl Engine {
    /// Creates a tenant named `name` (trimmed, 1 to 200 characters) with no pricing and no
    /// keys.
    pub async fn create_tenant(&self, name: &str) -> CoreResult<Tenant> {
        let name = name.trim();
        if name.is_empty() || name.len() > 200 {
            return Err(CoreError::InvalidParameter {
                field: "name",
                reason: "must be 1 to 200 characters".into(),
            });
        }
        let now = self.now();
        let tenant = Tenant {
            id: TenantId(self.new_id(TenantId::PREFIX)),
            name: name.to_string(),
            pricing: TenantPricing::None,
            fee_address: None,
            created_at: now,
            updated_at: now,
            test_mode: false,
            sponsorship_budgets: false,
            spending_policies: Some(false),
        };
        self.commit(Batch {
            puts: vec![tenant.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(tenant)
    }

    /// A tenant record; reused from memory for `EngineConfig::read_cache_ms` (the
    /// kernel's tenant cache, shared with the products built on it).
    pub async fn tenant(&self, id: &TenantId) -> CoreResult<Tenant> {
        self.kernel.tenant(id).await
    }

    /// Issues a new key of `kind` and `mode` for an existing tenant: 160 random bits after
    /// the prefix. Only the returned [`IssuedKey`] holds the secret.
    pub async fn issue_api_key(
        &self,
        tenant: &TenantId,
        kind: KeyKind,
        mode: KeyMode,
    ) -> CoreResult<IssuedKey> {
        self.tenant(tenant).await?;
        let issued = self.new_api_key(tenant, kind, mode, None);
        self.commit(Batch {
            puts: vec![issued.key.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(issued)
    }

    /// A new key, not stored: for a caller that commits it in its own batch (a checkout
    /// business and its keys are one commit). `business` scopes a business key to one
    /// checkout business. See [`Kernel::new_api_key`](crate::kernel::Kernel::new_api_key).
    pub fn new_api_key(
        &self,
        tenant: &TenantId,
        kind: KeyKind,
        mode: KeyMode,
        business: Option<String>,
    ) -> IssuedKey {
        self.kernel.new_api_key(tenant, kind, mode, business)
    }

    /// Revokes a key of `tenant`; revoking twice is harmless.
    pub async fn revoke_api_key(&self, tenant: &TenantId, key_id: &ApiKeyId) -> CoreResult<ApiKey> {
        let Some(v) = get_record::<ApiKey>(&*self.ports().store, &key_id.0).await? else {
            return Err(CoreError::NotFound {
                kind: "api_key",
                id: key_id.0.clone(),
            });
        };
        if &v.record.tenant != tenant {
            return Err(CoreError::NotFound {
                kind: "api_key",
                id: key_id.0.clone(),
            });
        }
        if v.record.revoked_at.is_some() {
            return Ok(v.record);
        }
        let now = self.now();
        let mut key = v.record;
        key.revoked_at = Some(now);
        let mut puts = vec![key.update(v.version)?];
        // Every active key issued, directly or not, by a session of this one goes too.
        let mut gone = vec![key.id.clone()];
        let all = self.all_api_keys(tenant).await?;
        let mut i = 0;
        while i < gone.len() {
            for (k, version) in &all {
                if k.revoked_at.is_none()
                    && k.issued_by.as_ref() == Some(&gone[i])
                    && !gone.contains(&k.id)
                {
                    let mut child = k.clone();
                    child.revoked_at = Some(now);
                    puts.push(child.update(*version)?);
                    gone.push(k.id.clone());
                }
            }
            i += 1;
        }
        self.commit(Batch {
            puts,
            ..Default::default()
        })
        .await?;
        // Refused from now on in this process (others: within `read_cache_ms`).
        self.auth_cache
            .remove_where(|ctx| gone.contains(&ctx.key_id));
        Ok(key)
    }

    /// Every key of `tenant` with its stored version.
    async fn all_api_keys(&self, tenant: &TenantId) -> CoreResult<Vec<(ApiKey, u64)>> {
        let mut out = Vec::new();
        loop {
            let (recs, total) = self
                .ports()
                .store
                .list(&crate::ports::store::ListQuery {
                    kind: ApiKey::KIND.into(),
                    subkind: None,
                    tenant: tenant.0.clone(),
                    status: None,
                    limit: 100,
                    offset: out.len(),
                })
                .await
                .map_err(store_err)?;
            let n = recs.len();
            for r in &recs {
                out.push((ApiKey::from_stored(r)?, r.version));
            }
            if n == 0 || out.len() as u64 >= total {
                return Ok(out);
            }
        }
    }

    /// Issues a tenant key from a dashboard session signed in with `by`: of `by`'s own
    /// mode only (a test session never mints a live key), never a business key, and
    /// recorded as issued by `by`, so revoking `by` revokes it too.
    pub async fn issue_api_key_by(&self, by: &AuthContext, mode: KeyMode) -> CoreResult<IssuedKey> {
        if by.kind != KeyKind::Tenant || mode != by.mode {
            return Err(CoreError::KeyOutOfScope {
                reason: "a session issues tenant keys of its own key's mode only".into(),
            });
        }
        let parent = self.api_key(&by.tenant, &by.key_id).await?;
        if parent.revoked_at.is_some() {
            return Err(CoreError::ApiKeyRevoked);
        }
        let mut issued = self.new_api_key(&by.tenant, KeyKind::Tenant, mode, None);
        issued.key.issued_by = Some(by.key_id.clone());
        self.commit(Batch {
            puts: vec![issued.key.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(issued)
    }

    /// Revokes `target` for a dashboard session signed in with `by`: only `by` itself or
    /// a key issued (directly or not) from `by`'s sessions. Other keys of the tenant are
    /// revoked by the service (`stablecoin-server`'s CLI), so a leaked key cannot lock the
    /// tenant out of its other keys.
    pub async fn revoke_api_key_by(
        &self,
        by: &AuthContext,
        target: &ApiKeyId,
    ) -> CoreResult<ApiKey> {
        let mut at = self.api_key(&by.tenant, target).await?;
        let mut hops = 0;
        while at.id != by.key_id {
            match at.issued_by.clone() {
                Some(parent) if hops < 64 => {
                    at = self.api_key(&by.tenant, &parent).await?;
                    hops += 1;
                }
                _ => {
                    return Err(CoreError::KeyOutOfScope {
                        reason: "a session revokes its own key and the keys it issued only".into(),
                    });
                }
            }
        }
        self.revoke_api_key(&by.tenant, target).await
    }

    /// A tenant's API keys (never their secrets), newest first, and the total: for a
    /// console that lists them to revoke one. Only `tenant`'s keys are ever read.
    pub async fn list_api_keys(
        &self,
        tenant: &TenantId,
        limit: usize,
        offset: usize,
    ) -> CoreResult<(Vec<ApiKey>, u64)> {
        let (recs, total) = self
            .ports()
            .store
            .list(&crate::ports::store::ListQuery {
                kind: ApiKey::KIND.into(),
                subkind: None,
                tenant: tenant.0.clone(),
                status: None,
                limit,
                offset,
            })
            .await
            .map_err(store_err)?;
        let keys = recs
            .iter()
            .map(ApiKey::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((keys, total))
    }

    /// One of `tenant`'s API keys by id; another tenant's is `NOT_FOUND`, exactly like a
    /// missing one. A console session names its key by id and asks here, on every
    /// request, whether it was revoked since.
    pub async fn api_key(&self, tenant: &TenantId, key_id: &ApiKeyId) -> CoreResult<ApiKey> {
        match get_record::<ApiKey>(&*self.ports().store, &key_id.0).await? {
            Some(v) if &v.record.tenant == tenant => Ok(v.record),
            _ => Err(CoreError::NotFound {
                kind: "api_key",
                id: key_id.0.clone(),
            }),
        }
    }

    /// Establishes the caller from a presented key.
    ///
    /// A key that authenticated is remembered for `EngineConfig::read_cache_ms`
    /// (`read_cache`): revoking it in this process takes effect at once, elsewhere
    /// (the CLI) within that time. Unknown and revoked keys are never remembered.
    pub async fn authenticate(&self, secret: &str) -> CoreResult<AuthContext> {
        let Some((kind, mode)) = KeyKind::classify(secret) else {
            return Err(CoreError::InvalidApiKey);
        };
        let hash = sha256_hex(secret);
        let now = self.now().millis();
        if let Some(ctx) = self.auth_cache.get(&hash, now) {
            return Ok(ctx);
        }
        let Some(v) =
            get_record_by_unique::<ApiKey>(&*self.ports().store, &ApiKey::hash_key(&hash)).await?
        else {
            return Err(CoreError::InvalidApiKey);
        };
        if v.record.revoked_at.is_some() {
            return Err(CoreError::ApiKeyRevoked);
        }
        // An approver key opens nothing a tenant key opens (so it is never cached here
        // either): only `Engine::authenticate_approver` accepts it.
        if v.record.role == KeyRole::Approver {
            return Err(CoreError::KeyOutOfScope {
                reason:
                    "an approver key only lists and approves held requests (/v1/policy-approvals)"
                        .into(),
            });
        }
        // Account test mode makes every key of the tenant a test key (spec 1 "Sandbox
        // mode"): decided here, once, so every use case sees the same mode.
        let mode = if self.tenant(&v.record.tenant).await?.test_mode {
            KeyMode::Test
        } else {
            mode
        };
        let ctx = AuthContext {
            tenant: v.record.tenant,
            key_id: v.record.id,
            kind,
            mode,
            business: v.record.business,
        };
        self.auth_cache.put(hash, ctx.clone(), now);
        Ok(ctx)
    }

    /// Turns `tenant`'s account test mode on or off, audited (action `test_mode.set`) as
    /// by `actor` in the same commit. While on, every key of the tenant authenticates as
    /// a test key ([`Engine::authenticate`]): live keys are simulated or refused exactly
    /// as test keys are, and nothing live is written or sent for them. Operations
    /// accepted before finish as they would have. Takes effect at once in this process
    /// (its key and tenant caches are cleared for the tenant); in other processes within
    /// `EngineConfig::read_cache_ms`, as a revocation does.
    pub async fn set_test_mode_as(
        &self,
        actor: &str,
        tenant: &TenantId,
        on: bool,
    ) -> CoreResult<Tenant> {
        let Some(v) = get_record::<Tenant>(&*self.ports().store, &tenant.0).await? else {
            return Err(CoreError::NotFound {
                kind: "tenant",
                id: tenant.0.clone(),
            });
        };
        let mut t = v.record;
        if t.test_mode == on {
            return Ok(t);
        }
        t.test_mode = on;
        t.updated_at = self.now();
        let note = if on { "on" } else { "off" };
        let audit = self.audit_entry(actor, "test_mode.set", &t.id.0, Some(note))?;
        self.commit(Batch {
            puts: vec![t.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        self.kernel.forget_tenant(tenant);
        self.auth_cache.remove_where(|ctx| &ctx.tenant == tenant);
        Ok(t)
    }

    /// A tenant's own change of its account test mode (API, dashboard) with the key
    /// `by`, audited as by `key:<key id>`. Only a key issued live may change it, whatever
    /// the account's mode now: a test key (one handed to a developer) never takes the
    /// account live, and a live key can always bring it back.
    pub async fn set_test_mode_by(&self, by: &AuthContext, on: bool) -> CoreResult<Tenant> {
        let key = self.api_key(&by.tenant, &by.key_id).await?;
        if key.revoked_at.is_some() {
            return Err(CoreError::ApiKeyRevoked);
        }
        if key.kind != KeyKind::Tenant || key.mode != KeyMode::Live {
            return Err(CoreError::sandbox_unsupported(
                "account test mode changes (a live tenant key changes it)",
            ));
        }
        self.set_test_mode_as(&key_actor(&by.key_id), &by.tenant, on)
            .await
    }

    /// Sets a tenant's own fee (spec 8). A non-`None` pricing needs the EVM address the
    /// tenant controls, where the fee is paid in the same batch as the transfer.
    /// Audited as by `cli` (the service's own command); see [`Engine::set_pricing_as`].
    pub async fn set_pricing(
        &self,
        tenant: &TenantId,
        pricing: TenantPricing,
        fee_address: Option<ChainAddress>,
    ) -> CoreResult<Tenant> {
        self.set_pricing_as(
            crate::kernel::staff::STAFF_ACTOR_CLI,
            tenant,
            pricing,
            fee_address,
        )
        .await
    }

    /// A tenant's own change of its pricing (the dashboard, signed in with `by`): live
    /// keys only, at most `ceiling` (a higher fee is FEE_ABOVE_CEILING: service staff
    /// set it), audited as by `key:<key id>`.
    pub async fn set_pricing_by(
        &self,
        by: &AuthContext,
        pricing: TenantPricing,
        fee_address: Option<ChainAddress>,
        ceiling: FeeCeiling,
    ) -> CoreResult<Tenant> {
        by.require_live("pricing changes")?;
        pricing.validate()?;
        match pricing {
            TenantPricing::Percentage { fee_bps, .. } if fee_bps > ceiling.max_bps => {
                return Err(CoreError::FeeAboveCeiling {
                    reason: format!(
                        "fee_bps {fee_bps} is above {}; ask the service to set it",
                        ceiling.max_bps
                    ),
                });
            }
            TenantPricing::Flat { fee_flat_micros }
                if fee_flat_micros > ceiling.max_flat_micros =>
            {
                return Err(CoreError::FeeAboveCeiling {
                    reason: format!(
                        "a flat fee of {} is above {}; ask the service to set it",
                        Micros(fee_flat_micros).to_decimal_string(),
                        Micros(ceiling.max_flat_micros).to_decimal_string()
                    ),
                });
            }
            _ => {}
        }
        self.set_pricing_as(&key_actor(&by.key_id), &by.tenant, pricing, fee_address)
            .await
    }

    /// Sets a tenant's own fee, audited (staff audit log, action `pricing.set`) as by
    /// `actor` in the same commit. The fee address must be an EVM address
    /// ([`check_fee_address`]).
    pub async fn set_pricing_as(
        &self,
        actor: &str,
        tenant: &TenantId,
        pricing: TenantPricing,
        fee_address: Option<ChainAddress>,
    ) -> CoreResult<Tenant> {
        pricing.validate()?;
        if pricing != TenantPricing::None && fee_address.is_none() {
            return Err(CoreError::InvalidPricing {
                reason: "a tenant fee needs fee_address, the EVM address that receives it".into(),
            });
        }
        if let Some(a) = &fee_address {
            check_fee_address(a)?;
        }
        let Some(v) = get_record::<Tenant>(&*self.ports().store, &tenant.0).await? else {
            return Err(CoreError::NotFound {
                kind: "tenant",
                id: tenant.0.clone(),
            });
        };
        let mut t = v.record;
        let note = format!(
            "{} to {}",
            serde_json::to_string(&pricing).unwrap_or_default(),
            fee_address.as_ref().map_or("no address", |a| a.0.as_str())
        );
        t.pricing = pricing;
        t.fee_address = fee_address;
        t.updated_at = self.now();
        let audit = self.audit_entry(actor, "pricing.set", &t.id.0, Some(&note))?;
        self.commit(Batch {
            puts: vec![t.update(v.version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        self.kernel.forget_tenant(tenant);
        Ok(t)
    }

    /// Credits a tenant's treasury after the service confirmed its fiat receipt.
    /// Idempotent by `reference` (the fiat receipt's id): crediting it twice moves value once.
    ///
    /// The embedding program's own call (seeding, tests, its own back office): it names
    /// no staff member and has no cap. Staff crediting by hand go through
    /// [`Engine::credit_treasury_as_staff`] (the CLI's `treasury credit`), which proves
    /// who they are, applies the two-person rule and audits.
    pub async fn credit_treasury(
        &self,
        tenant: &TenantId,
        token: Token,
        amount: Micros,
        reference: &str,
    ) -> CoreResult<Micros> {
        if amount.is_zero() {
            return Err(CoreError::InvalidAmount {
                input: "0".into(),
                reason: "amount must be greater than zero".into(),
            });
        }
        let reference = reference.trim();
        if reference.is_empty() || reference.len() > 200 {
            return Err(CoreError::InvalidParameter {
                field: "reference",
                reason: "must be 1 to 200 characters".into(),
            });
        }
        self.tenant(tenant).await?;
        let from = accounts::fiat_in(token);
        let to = accounts::treasury(tenant, token);
        let batch = Batch {
            accounts: vec![from.clone(), to.clone()],
            ledger: vec![LedgerTransfer {
                id: format!("credit:{tenant}:{reference}"),
                debit: from.id,
                credit: to.id,
                amount,
                phase: Phase::Single,
            }],
            ..Default::default()
        };
        self.commit_raw(batch).await.map_err(|e| match e {
            crate::ports::store::StoreError::Ledger(
                crate::ports::ledger::LedgerError::TransferExists { .. },
            ) => CoreError::InvalidParameter {
                field: "reference",
                reason: "this reference was already credited with another amount or token".into(),
            },
            other => store_err(other),
        })?;
        self.treasury_balance(tenant, token).await
    }

    /// Available treasury balance (posted minus holds).
    pub async fn treasury_balance(&self, tenant: &TenantId, token: Token) -> CoreResult<Micros> {
        self.available(&accounts::treasury(tenant, token).id).await
    }

    pub(crate) async fn available(&self, account: &str) -> CoreResult<Micros> {
        match self.ports().ledger.balance(account).await {
            Ok(b) => Ok(Micros(b.available().max(0) as u64)),
            Err(crate::ports::ledger::LedgerError::UnknownAccount { .. }) => Ok(Micros::ZERO),
            Err(e) => Err(CoreError::Storage(e.to_string())),
        }
    }
}
