//! Escrow's share of the inbound transfers: the kernel's router
//! ([`stablecoin_core::kernel::inbound`]) hands escrow every transfer on TRON to an
//! address a deal reserved; each confirmed one is recorded once (dedupe by
//! `tron:<tx>:<index>`) and classified by [`classify_deposit`] in the same batch as its
//! ledger entries, the deal update, its history entries and events.

use crate::engine::{EscrowEngine, MAX_RETRIES, overflow};
use crate::error::{EscrowError, EscrowResult, store_err};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::{Action, classify_deposit, transition};
use crate::worker::EscrowTickReport;
use async_trait::async_trait;
use serde_json::json;
use stablecoin_core::kernel::inbound::{
    InboundError, InboundHandler, InboundOutcome, InboundRouter,
};
use stablecoin_core::kernel::quarantine::QuarantineOwner;
use stablecoin_core::kernel::stray::{SandboxAddress, SandboxOwner, record_stray};
use stablecoin_core::ports::{
    Batch, Inbound, LedgerTransfer, Phase as LedgerPhase, RailId, Record, StoredRecord, Versioned,
};
use std::sync::Arc;

/// Escrow's name in the inbound router (its position's key in the TRON cursor record).
/// Persisted: never renamed.
pub const ESCROW_PRODUCT: &str = "escrow";

/// Whether a deposit was recorded by this call or before it.
enum Recorded {
    /// Now; `funded` when it made the deal FUNDED.
    Now { funded: bool },
    /// By an earlier scan or a concurrent one.
    Before,
}

impl EscrowEngine {
    /// A router of the kernel's rails (escrow watches TRON's) feeding escrow alone: what [`EscrowEngine::tick`]
    /// pumps when escrow runs on its own.
    pub fn inbound_router(&self) -> InboundRouter {
        self.inner
            .kernel
            .inbound_router(self.inner.config.batch_limit)
            .with_handler(Arc::new(self.clone()))
    }

    /// One pump of [`EscrowEngine::inbound_router`], as a tick's report (deposits
    /// recorded, deals funded, transfers still below the confirmation depth).
    pub(crate) async fn scan_standalone(&self) -> EscrowTickReport {
        let r = self.inbound_router().pump().await;
        let mine = r.of(ESCROW_PRODUCT);
        EscrowTickReport {
            deposits: mine.credited,
            polled: mine.detected,
            funded: mine.completed,
            errors: r.errors,
            ..Default::default()
        }
    }

    /// One transfer into the address of deal `owner`: below the confirmation depth it
    /// waits for a later page; at it, it is recorded once.
    async fn take_inbound(
        &self,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<InboundOutcome, InboundError> {
        if !inbound.confirmed {
            return Ok(InboundOutcome::Detected);
        }
        let dep_id = DepositRecord::make_id(&inbound.tx_hash, inbound.index);
        let seen = self
            .inner
            .kernel
            .ports()
            .store
            .get(DepositRecord::KIND, &dep_id)
            .await
            .map_err(|e| InboundError::Retry(e.to_string()))?;
        if seen.is_some() {
            return Ok(InboundOutcome::Ignored);
        }
        match self.record_deposit(&owner.id, &dep_id, inbound).await {
            Ok(Recorded::Now { funded }) => Ok(InboundOutcome::Credited { completes: funded }),
            Ok(Recorded::Before) => Ok(InboundOutcome::Ignored),
            Err(e) => Err(InboundError::Retry(e.to_string())),
        }
    }

    /// Records one confirmed transfer into deal `deal_id` (once: `dep_id` dedupes), with
    /// its ledger moves, history and events in one batch, retried on a lost race.
    async fn record_deposit(
        &self,
        deal_id: &str,
        dep_id: &str,
        inbound: &Inbound,
    ) -> EscrowResult<Recorded> {
        let actor = Actor::Chain {
            rail: "tron".into(),
        };
        for _ in 0..MAX_RETRIES {
            let Versioned {
                record: mut deal,
                version,
            } = self.load_any(deal_id).await?;
            let now = self.now();
            let from = deal.phase();
            let d = classify_deposit(
                from,
                deal.token,
                deal.amount,
                deal.applied,
                deal.funding_expires_at,
                now,
                inbound.token,
                inbound.amount,
            );
            let mut batch = Batch::default();
            let chain_in = accounts::chain_in(inbound.token);
            batch.accounts.push(chain_in.clone());
            if !d.applied.is_zero() {
                let held = accounts::held(&deal.id, deal.token);
                batch.ledger.push(LedgerTransfer {
                    id: format!("escrow_dep:{dep_id}:applied"),
                    debit: chain_in.id.clone(),
                    credit: held.id.clone(),
                    amount: d.applied,
                    phase: LedgerPhase::Single,
                });
                batch.accounts.push(held);
                deal.applied = deal.applied.checked_add(d.applied).ok_or_else(overflow)?;
            }
            if let Some(kind) = d.recoverable_kind
                && !d.recoverable.is_zero()
            {
                let bucket = accounts::bucket(&deal.id, kind, inbound.token);
                batch.ledger.push(LedgerTransfer {
                    id: format!("escrow_dep:{dep_id}:recoverable"),
                    debit: chain_in.id.clone(),
                    credit: bucket.id.clone(),
                    amount: d.recoverable,
                    phase: LedgerPhase::Single,
                });
                batch.accounts.push(bucket);
                deal.add_recoverable(kind, inbound.token, d.recoverable)
                    .ok_or_else(overflow)?;
            }
            let total = deal
                .deposited_of(inbound.token)
                .checked_add(inbound.amount)
                .ok_or_else(overflow)?;
            deal.deposited.insert(inbound.token, total);
            deal.deposit_count += 1;
            let dep = DepositRecord {
                id: dep_id.to_string(),
                deal: deal.id.clone(),
                tenant: deal.tenant.clone(),
                tx_hash: inbound.tx_hash.clone(),
                index: inbound.index,
                from: inbound.from.clone(),
                token: inbound.token,
                amount: inbound.amount,
                block: inbound.block,
                kind: d.kind,
                applied: d.applied,
                recoverable: d.recoverable,
                recoverable_kind: d.recoverable_kind,
                recorded_at: now,
            };
            let data = json!({
                "deposit_id": dep.id,
                "tx_hash": dep.tx_hash,
                "index": dep.index,
                "from_address": dep.from.0,
                "block": dep.block,
                "token": dep.token.as_str(),
                "kind": dep.kind.as_str(),
                "amount": dep.amount.to_base_units_string(),
                "applied": dep.applied.to_base_units_string(),
                "recoverable": dep.recoverable.to_base_units_string(),
                "recoverable_kind": dep.recoverable_kind.map(|k| k.as_str()),
                "funded_amount": deal.applied.to_base_units_string(),
            });
            self.push_event(
                &mut batch,
                &mut deal,
                EscrowEventType::DepositRecorded,
                Some(from),
                &actor,
                None,
                None,
                Some(data),
                now,
            )?;
            if d.funds {
                let before = deal.phase();
                let to = transition(before, Action::Fund)?;
                deal.set_phase(to);
                deal.funded_at = Some(now);
                deal.auto_release_at = deal
                    .auto_release_after_secs
                    .map(|s| now.plus_secs(s as i64));
                let data = json!({
                    "funded_amount": deal.applied.to_base_units_string(),
                    "auto_release_at": deal.auto_release_at.map(|t| t.to_rfc3339()),
                });
                self.push_event(
                    &mut batch,
                    &mut deal,
                    EscrowEventType::Funded,
                    Some(before),
                    &actor,
                    None,
                    None,
                    Some(data),
                    now,
                )?;
            }
            batch.puts.push(dep.insert()?);
            batch.puts.push(deal.update(version)?);
            self.queue_put(&mut batch, &deal).await?;
            batch.background = true;
            match self.commit(batch).await {
                Ok(()) => return Ok(Recorded::Now { funded: d.funds }),
                Err(EscrowError::Conflict { .. }) => {
                    // Recorded by a concurrent scanner, or the deal moved: look again.
                    if self
                        .inner
                        .kernel
                        .ports()
                        .store
                        .get(DepositRecord::KIND, dep_id)
                        .await
                        .map_err(store_err)?
                        .is_some()
                    {
                        return Ok(Recorded::Before);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(EscrowError::Conflict {
            what: format!("deposit {dep_id}"),
        })
    }
}

/// What shows a simulated deal's address, in a stray deposit and its address record.
pub const STRAY_ORIGIN: &str = "escrow_simulation";

/// Escrow as a product of the shared runtime: deals own their addresses, on TRON only.
#[async_trait]
impl InboundHandler for EscrowEngine {
    fn product(&self) -> &'static str {
        ESCROW_PRODUCT
    }

    /// Deals, and the addresses of simulated deals (`sandbox_address`): a real
    /// transfer to one is a stray deposit, owed back (`stablecoin_core::kernel::stray`).
    fn owns(&self, kind: &str) -> bool {
        kind == Deal::KIND || kind == SandboxAddress::KIND
    }

    fn watches(&self, rail: RailId) -> bool {
        rail == RailId::Tron
    }

    async fn on_inbound(
        &self,
        rail: RailId,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<InboundOutcome, InboundError> {
        if owner.kind == SandboxAddress::KIND {
            let a = SandboxAddress::from_stored(owner)
                .map_err(|e| InboundError::Skip(format!("sandbox address {}: {e}", owner.id)))?;
            let owner = SandboxOwner {
                tenant: a.tenant,
                purpose: a.purpose,
                origin: STRAY_ORIGIN,
                origin_id: a.origin_id,
            };
            return record_stray(self.kernel(), rail, &owner, inbound).await;
        }
        self.take_inbound(owner, inbound).await
    }

    /// A deal quarantines (its key signs a return; its tenant is told); a simulated
    /// deal's address does not (a real deposit there is a stray, owed back anyway).
    async fn quarantine_owner(
        &self,
        _rail: RailId,
        owner: &StoredRecord,
        _inbound: &Inbound,
    ) -> Result<Option<QuarantineOwner>, InboundError> {
        if owner.kind != Deal::KIND {
            return Ok(None);
        }
        let deal = Deal::from_stored(owner)
            .map_err(|e| InboundError::Retry(format!("escrow {}: {e}", owner.id)))?;
        Ok(Some(QuarantineOwner {
            tenants: vec![deal.tenant.0.clone()],
            purpose: stablecoin_core::ports::KeyPurpose::EscrowDeal(deal.id.0.clone()),
            origin: "escrow_deal",
            origin_id: deal.id.0,
        }))
    }
}
