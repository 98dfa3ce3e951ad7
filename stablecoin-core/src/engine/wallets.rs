//! Provisioning, consent linking, phone change and balance reads of EVM wallets.

use super::Engine;
use crate::domain::consent::*;
use crate::domain::events::DomainEvent;
use crate::domain::ids::{EventId, TenantId, WalletId};
use crate::domain::limits::TenantQuota;
use crate::domain::money::{Micros, Token};
use crate::domain::phone::Phone;
use crate::error::{CoreError, CoreResult};
use crate::ports::rail::{ChainAddress, Rail, RailId};
use crate::ports::record::{Record, Versioned, get_record, get_record_by_unique};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{Batch, OutboxEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Response of `POST /v1/users/provision`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvisionView {
    /// `wal_...`.
    pub wallet_id: String,
    /// The customer's phone, E.164.
    pub phone_number: String,
    /// The wallet's address on `rail`.
    pub address: String,
    /// The rail name (`"polygon"`, `"tron"`, ...).
    pub rail: String,
    /// [`ProvisionOutcome`] in its wire form (`PROVISIONED`, `ADOPTED`, ...).
    pub outcome: String,
}

/// Response of the link and phone-change requests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChallengeView {
    /// `otp_...`, to confirm with the code.
    pub challenge_id: String,
    /// The masked number the code went to (`+225*****0001`).
    pub sent_to: String,
    /// RFC 3339 UTC; the code is refused from then on.
    pub expires_at: String,
}

/// Response of `GET /v1/users/balance`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceView {
    /// The customer's phone, E.164.
    pub phone_number: String,
    /// The wallet's address on `rail`.
    pub address: String,
    /// The rail name read (`"polygon"`, ...).
    pub rail: String,
    /// USDC on chain, 6 decimals (`"12.500000"`); zero where the rail has no USDC.
    pub balance_usdc: String,
    /// USDT on chain, 6 decimals; zero where the rail has no USDT.
    pub balance_usdt: String,
}

/// The USDC and USDT of several chains' balances added up (`None` on overflow or a
/// malformed amount, which no engine view produces).
pub fn sum_balances(chains: &[BalanceView]) -> Option<(Micros, Micros)> {
    let mut usdc = Micros::ZERO;
    let mut usdt = Micros::ZERO;
    for c in chains {
        usdc = usdc.checked_add(Micros::parse_decimal(&c.balance_usdc).ok()?)?;
        usdt = usdt.checked_add(Micros::parse_decimal(&c.balance_usdt).ok()?)?;
    }
    Some((usdc, usdt))
}

/// Live balances of a wallet on one rail (`GET /v1/tron/users/balance`,
/// `GET /v1/solana/users/balance`): one per token the rail carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RailBalanceView {
    /// The customer's phone, E.164.
    pub phone_number: String,
    /// The wallet's address on `rail`.
    pub address: String,
    /// The rail name read (`"tron"`, `"solana"`, ...).
    pub rail: String,
    /// Per token the rail carries, in micro-units.
    pub balances: BTreeMap<Token, crate::domain::money::Micros>,
}

impl RailBalanceView {
    /// The balance of `token`; zero for a token the rail does not carry (the wallet holds
    /// none of it there).
    pub fn of(&self, token: Token) -> crate::domain::money::Micros {
        self.balances.get(&token).copied().unwrap_or_default()
    }
}

impl Engine {
    pub(crate) async fn wallet_by_phone(
        &self,
        phone: &Phone,
    ) -> CoreResult<Option<Versioned<Wallet>>> {
        Ok(get_record_by_unique::<Wallet>(&*self.ports().store, &Wallet::phone_key(phone)).await?)
    }

    /// The wallet of `phone` for a decision that the commit re-checks
    /// (`Batch::unchanged` with [`Versioned::unchanged`]): taken from the wallet cache
    /// when it has it, read and cached otherwise. A missing wallet is never cached.
    ///
    /// Why only there: a transfer reads two wallets by phone, and those reads were the
    /// largest part of its API-side CPU (every commit makes SQLite's reader page cache
    /// stale). A cached copy is safe only where a stale one fails the commit instead of
    /// deciding wrongly; every other read goes to the store.
    pub(crate) async fn wallet_by_phone_checked(
        &self,
        phone: &Phone,
    ) -> CoreResult<Option<Versioned<Wallet>>> {
        let key = Wallet::phone_key(phone);
        let now = self.now().millis();
        if let Some(found) = self.wallet_cache.get(&key, now) {
            return Ok(Some(found));
        }
        let found = get_record_by_unique::<Wallet>(&*self.ports().store, &key).await?;
        if let Some(v) = &found {
            self.wallet_cache.put(key, v.clone(), now);
        }
        Ok(found)
    }

    /// Drops the cached copies of the wallets `batch` updates (by id: a phone change
    /// re-keys a wallet). Not needed for safety (a stale copy fails its commit), but it
    /// spares the next transfer of a changed wallet a failed commit and a retry. A new
    /// wallet cannot be cached yet, so inserts (every provision, every transfer to a new
    /// phone) skip the scan of the cache.
    pub(crate) fn forget_changed_wallets(&self, batch: &Batch) {
        let changed: Vec<&str> = batch
            .puts
            .iter()
            .filter(|p| p.expected_version.is_some() && p.record.kind == Wallet::KIND)
            .map(|p| p.record.id.as_str())
            .collect();
        if !changed.is_empty() {
            self.wallet_cache
                .remove_where(|v| changed.contains(&v.record.id.0.as_str()));
        }
    }

    /// Drops the cached copy of `phone`'s wallet (after a commit found it stale).
    pub(crate) fn forget_wallet(&self, phone: &Phone) {
        self.wallet_cache.remove(&Wallet::phone_key(phone));
    }

    pub(crate) async fn require_wallet(&self, phone: &Phone) -> CoreResult<Versioned<Wallet>> {
        self.wallet_by_phone(phone)
            .await?
            .ok_or_else(|| no_wallet(phone))
    }

    /// A new wallet for `phone` with its address on every rail (offline derivation).
    pub(crate) async fn new_wallet(
        &self,
        phone: &Phone,
        member: Option<&TenantId>,
    ) -> CoreResult<Wallet> {
        let now = self.now();
        let id = WalletId(self.new_id(WalletId::PREFIX));
        let mut addresses = BTreeMap::new();
        let purpose = KeyPurpose::Wallet(id.0.clone());
        // Its smart-account address on every enabled EVM chain (offline derivation), so
        // a deposit on any of them is matched from the first block.
        self.evm_rail()?;
        for evm in self.evm_rails() {
            let address = evm.address_for(&purpose).await.map_err(super::rail_err)?;
            addresses.insert(evm.id().name(), address);
        }
        Ok(Wallet {
            id,
            phone: phone.clone(),
            addresses,
            members: member.into_iter().cloned().collect(),
            created_by: member.cloned(),
            created_at: now,
            updated_at: now,
            customer_ids: BTreeMap::new(),
        })
    }

    /// Records the wallet's address on every enabled EVM chain it has none on yet (a
    /// chain enabled after the wallet was created); whether any was added.
    async fn add_evm_addresses(&self, w: &mut Wallet) -> CoreResult<bool> {
        let purpose = KeyPurpose::Wallet(w.id.0.clone());
        let mut added = false;
        for evm in self.evm_rails() {
            let name = evm.id().name();
            if w.address(&name).is_none() {
                let a = evm.address_for(&purpose).await.map_err(super::rail_err)?;
                w.addresses.insert(name, a);
                added = true;
            }
        }
        Ok(added)
    }

    /// `POST /v1/users/provision`: offline, no gas (spec 1, 4.5).
    pub async fn provision(&self, tenant: &TenantId, phone: &Phone) -> CoreResult<ProvisionView> {
        self.provision_for_customer(tenant, phone, None).await
    }

    /// [`Engine::provision`], attaching the tenant's own `customer_id` to the wallet
    /// (1 to 128 printable characters): the `customer_id` of the payments webhooks
    /// (`wallet.deposit.*`, `wallet.transfer.*`). Attached for a member only (PROVISIONED,
    /// ADOPTED, ALREADY_EXISTS, where a new id replaces the old); LINK_REQUIRED attaches
    /// nothing.
    pub async fn provision_for_customer(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        customer_id: Option<&str>,
    ) -> CoreResult<ProvisionView> {
        if let Some(c) = customer_id
            && (c.is_empty() || c.chars().count() > 128 || c.chars().any(char::is_control))
        {
            return Err(CoreError::InvalidParameter {
                field: "customer_id",
                reason: "1 to 128 characters, no control characters".into(),
            });
        }
        let rail = self.evm_rail()?.id().name();
        let attach = |w: &mut Wallet| match customer_id {
            Some(c) if w.customer_ids.get(&tenant.0).map(String::as_str) != Some(c) => {
                w.customer_ids.insert(tenant.0.clone(), c.to_string());
                true
            }
            _ => false,
        };
        for _ in 0..3 {
            let existing = self.wallet_by_phone(phone).await?;
            let outcome = provision_outcome(existing.as_ref().map(|v| &v.record), tenant);
            let (wallet, put) = match (outcome, existing) {
                (ProvisionOutcome::Provisioned, _) => {
                    let mut w = self.new_wallet(phone, Some(tenant)).await?;
                    attach(&mut w);
                    let put = w.insert()?;
                    (w, Some(put))
                }
                (ProvisionOutcome::Adopted, Some(v)) => {
                    let mut w = v.record;
                    w.members.push(tenant.clone());
                    attach(&mut w);
                    self.add_evm_addresses(&mut w).await?;
                    w.updated_at = self.now();
                    let put = w.update(v.version)?;
                    (w, Some(put))
                }
                (ProvisionOutcome::AlreadyExists, Some(v)) => {
                    let mut w = v.record;
                    let added = self.add_evm_addresses(&mut w).await?;
                    if attach(&mut w) | added {
                        w.updated_at = self.now();
                        let put = w.update(v.version)?;
                        (w, Some(put))
                    } else {
                        (w, None)
                    }
                }
                (_, Some(v)) => (v.record, None),
                (_, None) => unreachable!("only PROVISIONED has no existing wallet"),
            };
            if let Some(put) = put {
                match self
                    .commit(Batch {
                        puts: vec![put],
                        ..Default::default()
                    })
                    .await
                {
                    Ok(_) => {}
                    // Two tenants provisioned the same phone at once: decide again.
                    Err(CoreError::Conflict { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            let address = wallet
                .address(&rail)
                .map(|a| a.0.clone())
                .unwrap_or_default();
            return Ok(ProvisionView {
                wallet_id: wallet.id.0.clone(),
                phone_number: wallet.phone.to_string(),
                address,
                rail: rail.clone(),
                outcome: outcome.as_str().into(),
            });
        }
        Err(CoreError::Conflict {
            what: format!("wallet for {}", phone.masked()),
            record: Some(Wallet::KIND.into()),
        })
    }

    /// `POST /v1/tron/users/provision`, `POST /v1/solana/users/provision`: the phone's
    /// wallet, provisioned or adopted under the same consent rules as
    /// [`Engine::provision`], and its address on `rail_id`. The address derives from the
    /// wallet's key (not the phone), so it is durable: the same wallet always gets the
    /// same address, across phone changes too. It is recorded on the wallet so the rail's
    /// deposits find their wallet. On Solana it returns once the wallet's USDC and USDT
    /// token accounts are finalized (rent paid by the service).
    pub async fn provision_on(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        rail_id: RailId,
    ) -> CoreResult<ProvisionView> {
        let rail = self.rail(rail_id)?.clone();
        let mut view = self.provision(tenant, phone).await?;
        let wallet_id = WalletId(view.wallet_id.clone());
        if rail.prepare_wallet_pays_rent() {
            self.count_rent(tenant, &wallet_id, rail_id).await?;
        }
        view.address = self.wallet_address_on(&wallet_id, &rail).await?.0;
        view.rail = rail_id.name();
        Ok(view)
    }

    /// Counts a wallet's first rent-paying preparation on `rail_id` against the tenant's
    /// quota (`EngineConfig::rent_quota`), or refuses it (RATE_LIMITED) when the quota
    /// is spent. A wallet that already has its address there costs nothing more and is
    /// not counted. Counted before the rail is asked, so a preparation that then fails
    /// still counts: the quota errs on the side of the service's money.
    async fn count_rent(
        &self,
        tenant: &TenantId,
        wallet_id: &WalletId,
        rail_id: RailId,
    ) -> CoreResult<()> {
        let name = rail_id.name();
        let prepared = get_record::<Wallet>(&*self.ports().store, &wallet_id.0)
            .await?
            .is_some_and(|v| v.record.address(&name).is_some());
        if prepared {
            return Ok(());
        }
        for _ in 0..5 {
            let now = self.now();
            let id = TenantQuota::id_of(tenant, rail_id);
            let read = get_record::<TenantQuota>(&*self.ports().store, &id).await?;
            let (mut quota, version) = match read {
                Some(v) => (v.record, Some(v.version)),
                None => (TenantQuota::new(tenant, rail_id, now), None),
            };
            quota.count(now, &self.config.rent_quota)?;
            let put = match version {
                Some(v) => quota.update(v)?,
                None => quota.insert()?,
            };
            match self
                .commit(Batch {
                    puts: vec![put],
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(()),
                // Another provisioning of this tenant counted first: count again.
                Err(CoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CoreError::Conflict {
            what: format!("rent quota of tenant {}", tenant.0),
            record: Some(TenantQuota::KIND.into()),
        })
    }

    /// The wallet's address on `rail`, derived once and recorded on the wallet, with
    /// the chain-side preparation done (Solana: both ATAs finalized, spec 4.3). The
    /// preparation runs on every call, not only the first: it is idempotent, and a
    /// wallet whose address a send recorded (opening only the sent token's account) must
    /// be completed when it is provisioned.
    async fn wallet_address_on(
        &self,
        wallet_id: &WalletId,
        rail: &std::sync::Arc<dyn Rail>,
    ) -> CoreResult<ChainAddress> {
        let name = rail.id().name();
        let purpose = KeyPurpose::Wallet(wallet_id.0.clone());
        rail.prepare_wallet(&purpose)
            .await
            .map_err(super::rail_err)?;
        for _ in 0..3 {
            let v = get_record::<Wallet>(&*self.ports().store, &wallet_id.0)
                .await?
                .ok_or_else(|| CoreError::NotFound {
                    kind: "wallet",
                    id: wallet_id.0.clone(),
                })?;
            if let Some(a) = v.record.address(&name) {
                return Ok(a.clone());
            }
            let address = rail.address_for(&purpose).await.map_err(super::rail_err)?;
            let mut w = v.record;
            w.addresses.insert(name.clone(), address.clone());
            w.updated_at = self.now();
            match self
                .commit(Batch {
                    puts: vec![w.update(v.version)?],
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(address),
                // Changed meanwhile (a member linked, another request recorded it): read
                // again.
                Err(CoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CoreError::Conflict {
            what: format!("wallet {} address on {name}", wallet_id.0),
            record: Some(Wallet::KIND.into()),
        })
    }

    /// `GET /v1/users/balance`: a live on-chain read. Members only: a balance is the
    /// customer's private data, and consent is what makes a tenant a member.
    pub async fn balance(&self, tenant: &TenantId, phone: &Phone) -> CoreResult<BalanceView> {
        let rail = self.evm_rail()?.id();
        self.usdc_usdt_balance_on(tenant, phone, rail).await
    }

    /// Live USDC and USDT balances on `rail` in the `/v1/users/balance` shape (also
    /// `GET /v1/solana/users/balance`): [`Engine::balance_on`], a token the rail does not
    /// carry reading zero.
    pub async fn usdc_usdt_balance_on(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        rail: RailId,
    ) -> CoreResult<BalanceView> {
        let v = self.balance_on(tenant, phone, rail).await?;
        Ok(BalanceView {
            balance_usdc: v.of(Token::Usdc).to_decimal_string(),
            balance_usdt: v.of(Token::Usdt).to_decimal_string(),
            phone_number: v.phone_number,
            address: v.address,
            rail: v.rail,
        })
    }

    /// Live USDC and USDT balances on every enabled EVM chain (primary first), members
    /// only; a chain where the wallet has no address yet is skipped (provisioning again
    /// records it). The sum is the caller's to take: [`sum_balances`].
    pub async fn evm_balances(
        &self,
        tenant: &TenantId,
        phone: &Phone,
    ) -> CoreResult<Vec<BalanceView>> {
        let w = self.require_wallet(phone).await?.record;
        w.require_member(tenant)?;
        let mut out = Vec::new();
        for rail in self.evm_rails() {
            if w.address(&rail.id().name()).is_none() {
                continue;
            }
            out.push(self.usdc_usdt_balance_on(tenant, phone, rail.id()).await?);
        }
        Ok(out)
    }

    /// Live balances of the phone's wallet on `rail`, of every token the rail carries
    /// ([`Rail::tokens`]: TRON USDT; Solana and EVM chains USDC and USDT as configured),
    /// members only; 404 while the wallet has no address on the rail. Which tokens a
    /// rail's balance shows is the rail's, not the caller's, to say.
    pub async fn balance_on(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        rail: RailId,
    ) -> CoreResult<RailBalanceView> {
        let tokens = self.rail(rail)?.tokens();
        let (w, address, b) = self.balances_on(tenant, phone, rail, &tokens).await?;
        Ok(RailBalanceView {
            phone_number: w.phone.to_string(),
            address: address.0,
            rail: rail.name(),
            balances: tokens.into_iter().zip(b).collect(),
        })
    }

    /// Live balances of the phone's wallet on `rail_id` (`GET /v1/users/balance`,
    /// `GET /v1/tron/users/balance`), members only. A wallet without an address on the
    /// rail yet is 404: it is provisioned there first.
    pub async fn balances_on(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        rail_id: RailId,
        tokens: &[Token],
    ) -> CoreResult<(Wallet, ChainAddress, Vec<crate::domain::money::Micros>)> {
        let rail = self.rail(rail_id)?;
        let w = self.require_wallet(phone).await?.record;
        w.require_member(tenant)?;
        let name = rail_id.name();
        let address = w
            .address(&name)
            .cloned()
            .ok_or_else(|| CoreError::NotFound {
                kind: "wallet address",
                id: name.clone(),
            })?;
        let mut out = Vec::with_capacity(tokens.len());
        for t in tokens {
            out.push(rail.balance(&address, *t).await.map_err(super::rail_err)?);
        }
        Ok((w, address, out))
    }

    /// Whether a phone has a wallet.
    pub async fn wallet_exists(&self, phone: &Phone) -> bool {
        matches!(self.wallet_by_phone(phone).await, Ok(Some(_)))
    }

    /// A wallet by id, for hosts and tests.
    pub async fn wallet(&self, id: &WalletId) -> CoreResult<Wallet> {
        get_record::<Wallet>(&*self.ports().store, &id.0)
            .await?
            .map(|v| v.record)
            .ok_or_else(|| CoreError::NotFound {
                kind: "wallet",
                id: id.0.clone(),
            })
    }

    /// An outbox event whose payload is already in its wire shape (the payments family's
    /// wallet facts, `domain::payments_events`).
    pub(crate) fn raw_event(
        &self,
        tenant: &TenantId,
        name: &str,
        payload: serde_json::Value,
    ) -> OutboxEvent {
        OutboxEvent {
            id: self.new_id(EventId::PREFIX),
            tenant: tenant.0.clone(),
            event_type: name.to_string(),
            occurred_at: self.now(),
            payload,
        }
    }

    pub(crate) fn event(&self, tenant: &TenantId, event: DomainEvent) -> CoreResult<OutboxEvent> {
        Ok(OutboxEvent {
            id: self.new_id(EventId::PREFIX),
            tenant: tenant.0.clone(),
            event_type: event.name().to_string(),
            occurred_at: self.now(),
            payload: serde_json::to_value(&event)
                .map_err(|e| CoreError::Storage(format!("encode event: {e}")))?,
        })
    }
}

/// The error for a phone that has no wallet (its number masked).
pub(crate) fn no_wallet(phone: &Phone) -> CoreError {
    CoreError::NotFound {
        kind: "wallet",
        id: phone.masked(),
    }
}
