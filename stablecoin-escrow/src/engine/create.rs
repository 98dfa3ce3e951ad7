//! Creating a deal: request validation, the parties' linked wallets, admission (TRON
//! deposits enabled, readiness READY), a fresh deal address, and the one batch that stores
//! the deal with its first history entry, its `escrow.created` event and the idempotency
//! record. The sandbox variant validates the same way and stores nothing.

use super::{EscrowEngine, MAX_RETRIES, clean_text, require_tenant_key};
use crate::error::{EscrowError, EscrowResult, rail_err, store_err};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::EscrowState;
use crate::view::*;
use serde_json::json;
use stablecoin_core::domain::consent::Wallet;
use stablecoin_core::domain::ids::{EscrowId, TenantId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::kernel::idempotency::{IdempotencyError, KeyedRequest, Lookup};
use stablecoin_core::kernel::stray::SandboxAddress;
use stablecoin_core::ports::{
    Batch, KeyPurpose, RailId, Record, StoreError, get_record, get_record_by_unique,
};

/// Longest partner `reference`.
const MAX_REFERENCE: usize = 200;

/// A validated create request.
struct ValidCreate {
    buyer_phone: Phone,
    seller_phone: Phone,
    amount: Micros,
    token: Token,
    reference: String,
    funding_window_secs: u64,
    auto_release_after_secs: Option<u64>,
}

impl EscrowEngine {
    /// `POST /v1/escrows`. A sandbox (test) key gets [`simulate_create`](Self::simulate_create).
    ///
    /// Checks, in order: the request (400 class), the parties' wallets (`NOT_FOUND`,
    /// `NOT_A_MEMBER`, `SAME_WALLET`), admission (`ESCROW_UNAVAILABLE` when TRON deposits
    /// are disabled, `RAIL_NOT_READY` unless TRON readiness is READY). Nothing is stored
    /// unless every check passes; then the deal, its first history entry, the
    /// `escrow.created` event and the idempotency record are one batch.
    pub async fn create(
        &self,
        auth: &AuthContext,
        req: &CreateEscrowRequest,
        idempotency_key: Option<&str>,
    ) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        if auth.is_sandbox() {
            return self.simulate_create(auth, req).await;
        }
        let valid = self.validate_create(req)?;
        let at = KeyedRequest::new(&auth.tenant.0, idempotency_key, "escrow.create");
        let keyed = match self.kernel().idempotency_lookup(at, req).await? {
            Lookup::Replay(found) => return Ok(found),
            Lookup::Run(keyed) => keyed,
        };
        let (buyer, seller) = self.parties(&auth.tenant, &valid).await?;
        self.admit().await?;
        let actor = Actor::Tenant {
            tenant: auth.tenant.clone(),
            api_key_id: auth.key_id.clone(),
        };
        for _ in 0..MAX_RETRIES {
            let now = self.now();
            let id = EscrowId::generate(now.millis(), self.random10());
            let address = self
                .inner
                .rail
                .address_for(&KeyPurpose::EscrowDeal(id.0.clone()))
                .await
                .map_err(rail_err)?;
            if self.address_taken(&address).await? {
                continue;
            }
            let mut deal = new_deal(
                id,
                &auth.tenant,
                &valid,
                buyer.clone(),
                seller.clone(),
                address,
                &self.inner.config,
                now,
            );
            let mut batch = Batch::default();
            let data = json!({
                "amount": deal.amount.to_base_units_string(),
                "escrow_address": deal.escrow_address.0,
                "funding_expires_at": deal.funding_expires_at.to_rfc3339(),
            });
            self.push_event(
                &mut batch,
                &mut deal,
                EscrowEventType::Created,
                None,
                &actor,
                None,
                None,
                Some(data),
                now,
            )?;
            batch.puts.push(deal.insert()?);
            self.record_party_addresses([&buyer, &seller], &mut batch)
                .await?;
            self.queue_put(&mut batch, &deal).await?;
            let view = EscrowView::from_deal(&deal);
            match self.kernel().commit_keyed(&keyed, batch, view).await {
                Ok(view) => return Ok(view),
                // The id or the address is taken (a clash of ids): never reuse, draw again.
                Err(IdempotencyError::Store(
                    StoreError::VersionConflict { .. } | StoreError::UniqueViolation { .. },
                )) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(EscrowError::Conflict {
            what: "a fresh escrow id and address".into(),
        })
    }

    /// Sandbox create: the same validation and wallet checks as a live create (no
    /// admission check: nothing live happens), and a realistic view with a fresh `esc_`
    /// id and `simulated: true`. No deal is stored and no event is written, so the id can
    /// never be fetched, funded or acted on. Its `escrow_address` is derived from the
    /// sandbox key branch (`escrow/sandbox/<id>`) that no deal uses, and reserved as a
    /// [`SandboxAddress`] the escrow scanner owns: real money sent to it anyway is
    /// recorded as a stray deposit and returnable (issue #48).
    pub async fn simulate_create(
        &self,
        auth: &AuthContext,
        req: &CreateEscrowRequest,
    ) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        let valid = self.validate_create(req)?;
        let (buyer, seller) = self.parties(&auth.tenant, &valid).await?;
        let now = self.now();
        let id = EscrowId::generate(now.millis(), self.random10());
        let purpose = KeyPurpose::EscrowDeal(format!("sandbox/{id}"));
        let address = self
            .inner
            .rail
            .address_for(&purpose)
            .await
            .map_err(rail_err)?;
        let reserved = SandboxAddress {
            rail: self.inner.rail.id().name(),
            address: address.0.clone(),
            purpose,
            tenant: auth.tenant.0.clone(),
            origin: crate::deposits::STRAY_ORIGIN.into(),
            origin_id: id.0.clone(),
            created_at: now,
        };
        self.commit(Batch {
            puts: vec![reserved.insert()?],
            ..Default::default()
        })
        .await?;
        let deal = new_deal(
            id,
            &auth.tenant,
            &valid,
            buyer,
            seller,
            address,
            &self.inner.config,
            now,
        );
        let mut view = EscrowView::from_deal(&deal);
        view.simulated = true;
        Ok(view)
    }

    fn validate_create(&self, req: &CreateEscrowRequest) -> EscrowResult<ValidCreate> {
        let c = &self.inner.config;
        let phone = |field: &'static str, s: &str| {
            Phone::parse(s).map_err(|e| EscrowError::InvalidPhone {
                field,
                reason: e.reason,
            })
        };
        let buyer_phone = phone("buyer_phone_number", &req.buyer_phone_number)?;
        let seller_phone = phone("seller_phone_number", &req.seller_phone_number)?;
        let amount = Micros::parse_whole_tokens(&req.amount)?;
        let input = || req.amount.chars().take(64).collect::<String>();
        if amount.is_zero() {
            return Err(EscrowError::InvalidAmount {
                input: input(),
                reason: "amount must be greater than zero".into(),
            });
        }
        if amount > c.max_amount {
            return Err(EscrowError::InvalidAmount {
                input: input(),
                reason: format!(
                    "amount exceeds the escrow limit of {} tokens",
                    c.max_amount.get() / 1_000_000
                ),
            });
        }
        let token = match req.token.as_deref() {
            None => Token::Usdt,
            Some(s) => {
                let t: Token = s.parse()?;
                if t != Token::Usdt {
                    return Err(EscrowError::UnsupportedToken {
                        token: t.to_string(),
                    });
                }
                t
            }
        };
        let reference =
            clean_text("reference", Some(&req.reference), MAX_REFERENCE)?.ok_or_else(|| {
                EscrowError::MissingParameter {
                    field: "reference",
                    reason: "the partner reference of the deal".into(),
                }
            })?;
        let funding_window_secs = match req.funding_window_secs {
            None => c.default_funding_window_secs,
            Some(s) if (c.min_funding_window_secs..=c.max_funding_window_secs).contains(&s) => s,
            Some(_) => {
                return Err(EscrowError::InvalidParameter {
                    field: "funding_window_secs",
                    reason: format!(
                        "must be between {} and {} seconds",
                        c.min_funding_window_secs, c.max_funding_window_secs
                    ),
                });
            }
        };
        let auto_release_after_secs = match req.auto_release_after_secs {
            None => None,
            Some(s)
                if (c.min_auto_release_after_secs..=c.max_auto_release_after_secs).contains(&s) =>
            {
                Some(s)
            }
            Some(_) => {
                return Err(EscrowError::InvalidParameter {
                    field: "auto_release_after_secs",
                    reason: format!(
                        "must be between {} and {} seconds, or absent for no automatic release",
                        c.min_auto_release_after_secs, c.max_auto_release_after_secs
                    ),
                });
            }
        };
        if buyer_phone == seller_phone {
            return Err(EscrowError::SameWallet);
        }
        Ok(ValidCreate {
            buyer_phone,
            seller_phone,
            amount,
            token,
            reference,
            funding_window_secs,
            auto_release_after_secs,
        })
    }

    async fn parties(
        &self,
        tenant: &TenantId,
        v: &ValidCreate,
    ) -> EscrowResult<(PartyWallet, PartyWallet)> {
        let buyer = self
            .party_wallet(tenant, &v.buyer_phone, Party::Buyer)
            .await?;
        let seller = self
            .party_wallet(tenant, &v.seller_phone, Party::Seller)
            .await?;
        if buyer.wallet == seller.wallet {
            return Err(EscrowError::SameWallet);
        }
        Ok((buyer, seller))
    }

    /// Records each party's TRON address on its wallet, in the deal's own batch, where
    /// the wallet has none yet (it comes from the rail's derivation then).
    ///
    /// Why: the inbound scan credits a wallet only at the addresses its record holds,
    /// from the block its cursor has reached. A payout to an address only derived went
    /// where no scan looked; when the wallet was later provisioned on TRON, the cursor
    /// had passed that block and the payout was never credited (the chain held more
    /// than the ledger for good: the whole-service simulator's seed 241). Recorded with
    /// the deal, the address is watched from before any payout exists; and a refused
    /// create still stores nothing. A wallet changed meanwhile fails the commit with a
    /// version conflict, and the create draws again with the wallet read afresh.
    async fn record_party_addresses(
        &self,
        parties: [&PartyWallet; 2],
        batch: &mut Batch,
    ) -> EscrowResult<()> {
        let name = RailId::Tron.name();
        for p in parties {
            let Some(v) =
                get_record::<Wallet>(&*self.inner.kernel.ports().store, &p.wallet.0).await?
            else {
                continue;
            };
            if v.record.address(&name).is_some() {
                continue;
            }
            let mut w = v.record;
            w.addresses.insert(name.clone(), p.address.clone());
            w.updated_at = self.now();
            batch.puts.push(w.update(v.version)?);
        }
        Ok(())
    }

    /// The party's wallet must exist and the tenant must be a member of it; its TRON
    /// address comes from the wallet record if core stored one, else from the rail (and
    /// is recorded with the deal: [`Self::record_party_addresses`]).
    async fn party_wallet(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        party: Party,
    ) -> EscrowResult<PartyWallet> {
        let (field, name) = match party {
            Party::Buyer => ("buyer_phone_number", "buyer"),
            Party::Seller => ("seller_phone_number", "seller"),
        };
        let w = get_record_by_unique::<Wallet>(
            &*self.inner.kernel.ports().store,
            &Wallet::phone_key(phone),
        )
        .await?
        .ok_or_else(|| EscrowError::NotFound {
            kind: "wallet",
            id: phone.masked(),
            field: Some(field),
        })?
        .record;
        if !w.is_member(tenant) {
            return Err(EscrowError::NotAMember { party: name });
        }
        let address = match w.address(&RailId::Tron.name()) {
            Some(a) => a.clone(),
            None => self
                .inner
                .rail
                .address_for(&KeyPurpose::Wallet(w.id.0.clone()))
                .await
                .map_err(rail_err)?,
        };
        Ok(PartyWallet {
            wallet: w.id,
            phone: w.phone,
            address,
        })
    }

    /// Admission (spec 1.6): TRON deposits enabled and sponsored payouts READY.
    async fn admit(&self) -> EscrowResult<()> {
        if !self.inner.config.deposits_enabled {
            return Err(EscrowError::EscrowUnavailable {
                reason: "TRON deposits are disabled for escrow".into(),
            });
        }
        self.require_can_send().await
    }

    /// Whether an address already belongs to a deal or a customer wallet.
    async fn address_taken(
        &self,
        address: &stablecoin_core::ports::ChainAddress,
    ) -> EscrowResult<bool> {
        let store = &self.inner.kernel.ports().store;
        let deal = store
            .get_by_unique(&Deal::address_key(address))
            .await
            .map_err(store_err)?;
        let wallet = store
            .get_by_unique(&Wallet::address_key(&RailId::Tron.name(), address))
            .await
            .map_err(store_err)?;
        Ok(deal.is_some() || wallet.is_some())
    }
}

#[allow(clippy::too_many_arguments)]
fn new_deal(
    id: EscrowId,
    tenant: &TenantId,
    v: &ValidCreate,
    buyer: PartyWallet,
    seller: PartyWallet,
    escrow_address: stablecoin_core::ports::ChainAddress,
    config: &EscrowConfig,
    now: Timestamp,
) -> Deal {
    Deal {
        id,
        tenant: tenant.clone(),
        state: EscrowState::Created,
        payout: None,
        amount: v.amount,
        token: v.token,
        rail: RailId::Tron.name(),
        network: config.network.clone(),
        chain_id: config.chain_id,
        reference: v.reference.clone(),
        buyer,
        seller,
        escrow_address,
        funding_expires_at: now.plus_secs(v.funding_window_secs as i64),
        auto_release_after_secs: v.auto_release_after_secs,
        auto_release_at: None,
        auto_release_attempted: false,
        applied: Micros::ZERO,
        deposited: Default::default(),
        deposit_count: 0,
        recoverable: Vec::new(),
        recoveries: Vec::new(),
        payout_attempts: 0,
        recovery_attempts: 0,
        payout_tx_hash: None,
        payout_failure_reason: None,
        funded_at: None,
        released_at: None,
        refunded_at: None,
        disputed_at: None,
        dispute_reason: None,
        resolution_note: None,
        pending_resolution: None,
        pending_recovery: None,
        cancelled_at: None,
        expired_at: None,
        history_len: 0,
        created_at: now,
        updated_at: now,
    }
}
