//! The wallet product's share of inbound transfers (its [`InboundHandler`]): transfers
//! into customer wallets from outside the service, recorded once (DETECTED below the
//! confirmation depth, CONFIRMED and credited at it), with `transfer.received` and the
//! payments family's `wallet.deposit.*` in the commit that records it. The scan itself is
//! the kernel's ([`crate::kernel::inbound`]).

use super::worker::{DepositRecord, DepositStatus, TickReport};
use super::{Engine, Operation, accounts, store_err};
use crate::domain::chain::RailId;
use crate::domain::consent::Wallet;
use crate::domain::events::DomainEvent;
use crate::domain::payments_events::{
    DepositEventKind, DepositFields, deposit_payload, integer_id, placeholder_hash,
};
use crate::error::{CoreError, CoreResult};
use crate::kernel::inbound::{InboundError, InboundHandler, InboundOutcome, InboundRouter};
use crate::kernel::quarantine::QuarantineOwner;
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::rail::Inbound;
use crate::ports::record::{Record, get_record};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{Batch, OutboxEvent, StoredRecord};
use async_trait::async_trait;
use std::sync::Arc;

/// The wallet product's name in the kernel's inbound router (its position's key in each
/// rail's cursor record). Persisted: never renamed.
pub const WALLET_PRODUCT: &str = "wallet";

impl Engine {
    /// A router of this engine's rails feeding the wallet product alone: what
    /// [`Engine::tick`] pumps when the engine runs on its own. On a shared runtime one
    /// router feeds every product instead ([`crate::kernel::Runtime::products`]).
    pub fn inbound_router(&self) -> InboundRouter {
        self.kernel
            .inbound_router(self.config.batch_limit)
            .with_handler(Arc::new(self.clone()))
    }

    /// Credits confirmed inbound deposits from outside the service to wallets, once each,
    /// through a router of the wallet product alone.
    pub(super) async fn scan_inbound(&self, report: &mut TickReport) {
        let r = self.inbound_router().pump().await;
        let mine = r.of(WALLET_PRODUCT);
        report.deposits += mine.credited;
        report.polled += mine.detected;
        report.errors.extend(r.errors);
    }

    /// Whether `inbound` is an internal movement (a funding from the treasury, a P2P
    /// transfer from another wallet, any transfer of an operation): settled by its own
    /// operation, so crediting it as a deposit (or quarantining it) would count it
    /// twice.
    async fn is_internal(&self, id: RailId, inbound: &Inbound) -> CoreResult<bool> {
        let name = id.name();
        let rail = self.rail(id)?.clone();
        let treasury = self.service_address(&rail, KeyPurpose::Treasury).await?;
        let from_wallet = match self
            .ports()
            .store
            .get_by_unique(&Wallet::address_key(&name, &inbound.from))
            .await
            .map_err(store_err)?
        {
            Some(owner) => owner.kind == Wallet::KIND,
            None => false,
        };
        Ok(inbound.from == treasury
            || from_wallet
            || self
                .ports()
                .store
                .get_by_unique(&Operation::tx_key(&id, &inbound.tx_hash))
                .await
                .map_err(store_err)?
                .is_some())
    }

    /// One inbound transfer to wallet `w` on `rail`: recorded once as DETECTED below the
    /// confirmation depth, CONFIRMED and credited at it.
    async fn credit_inbound(
        &self,
        id: RailId,
        w: &Wallet,
        inbound: &Inbound,
    ) -> CoreResult<InboundOutcome> {
        let name = id.name();
        if self.is_internal(id, inbound).await? {
            return Ok(InboundOutcome::Ignored);
        }
        let dep_id = format!("{name}:{}:{}", inbound.tx_hash, inbound.index);
        let existing = get_record::<DepositRecord>(&*self.ports().store, &dep_id).await?;
        if existing
            .as_ref()
            .is_some_and(|v| v.record.status == DepositStatus::Confirmed)
        {
            return Ok(InboundOutcome::Ignored);
        }
        let now = self.now();
        let mut dep = match &existing {
            Some(v) => v.record.clone(),
            None => DepositRecord {
                id: dep_id.clone(),
                wallet: w.id.0.clone(),
                rail: name.clone(),
                address: inbound.to.0.clone(),
                tx_hash: inbound.tx_hash.clone(),
                amount: inbound.amount,
                token: inbound.token,
                status: DepositStatus::Detected,
                confirmations: inbound.confirmations,
                created_at: now,
                detected_at: Some(now),
                confirmed_at: None,
            },
        };
        dep.confirmations = inbound.confirmations;
        if !inbound.confirmed {
            // Seen but below the confirmation depth: recorded once as DETECTED,
            // credited on a later scan.
            if existing.is_none() {
                let outbox = self.deposit_events(w, &dep, inbound, DepositEventKind::Detected)?;
                let res = self
                    .commit(Batch {
                        puts: vec![dep.insert()?],
                        outbox,
                        background: true,
                        ..Default::default()
                    })
                    .await;
                match res {
                    Ok(_) | Err(CoreError::Conflict { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(InboundOutcome::Detected);
        }
        dep.status = DepositStatus::Confirmed;
        dep.confirmed_at = Some(now);
        let put = match &existing {
            Some(v) => dep.update(v.version)?,
            None => dep.insert()?,
        };
        let from = accounts::chain_in(&name, inbound.token);
        let to = self.wallet_account(&w.id, id, inbound.token);
        // The payments family's view of the same deposit: detected (when this scan
        // is the first to see it) then confirmed, the crediting event.
        let mut outbox = Vec::new();
        if existing.is_none() {
            outbox.extend(self.deposit_events(w, &dep, inbound, DepositEventKind::Detected)?);
        }
        outbox.extend(self.deposit_events(
            w,
            &dep,
            inbound,
            DepositEventKind::Confirmed {
                safe_to_credit: true,
            },
        )?);
        for m in &w.members {
            outbox.push(self.event(
                m,
                DomainEvent::TransferReceived {
                    transfer_id: format!("dep_{}", dep_id.replace(':', "_")),
                    recipient_wallet: inbound.to.0.clone(),
                    amount: inbound.amount,
                    token: inbound.token,
                    tx_hash: inbound.tx_hash.clone(),
                    rail: name.clone(),
                    settled_at: now,
                },
            )?);
        }
        let res = self
            .commit(Batch {
                background: true,
                puts: vec![put],
                accounts: vec![from.clone(), to.clone()],
                ledger: vec![LedgerTransfer {
                    id: format!("dep:{dep_id}"),
                    debit: from.id,
                    credit: to.id,
                    amount: inbound.amount,
                    phase: Phase::Single,
                }],
                outbox,
                ..Default::default()
            })
            .await;
        match res {
            Ok(_) => Ok(InboundOutcome::Credited { completes: false }),
            // Credited by a concurrent scanner.
            Err(CoreError::Conflict { .. }) => Ok(InboundOutcome::Ignored),
            Err(e) => Err(e),
        }
    }

    /// A `wallet.deposit.*` event of a wallet deposit for each member, under that
    /// member's own customer id (an unaffiliated wallet has no one to tell).
    fn deposit_events(
        &self,
        w: &crate::domain::consent::Wallet,
        dep: &DepositRecord,
        inbound: &crate::ports::rail::Inbound,
        kind: DepositEventKind,
    ) -> CoreResult<Vec<OutboxEvent>> {
        let index = inbound.index.to_string();
        let detected_at = dep.detected_at.unwrap_or(dep.created_at);
        let mut out = Vec::new();
        for m in &w.members {
            let fields = DepositFields {
                customer_id: w.customer_id_for(m),
                deposit_id: integer_id(&[&dep.rail, &dep.tx_hash, &index]),
                address: dep.address.clone(),
                network: dep.rail.clone(),
                token: dep.token,
                amount: dep.amount,
                tx_hash: Some(dep.tx_hash.clone()),
                placeholder: placeholder_hash(detected_at, &dep.address),
                confirmations: inbound.confirmations,
                detected_at,
                confirmed_at: dep.confirmed_at,
                detected_by: format!("scanner-{}", dep.rail),
            };
            let (name, payload) = deposit_payload(kind, &fields);
            out.push(self.raw_event(m, name, payload));
        }
        Ok(out)
    }
}

#[async_trait]
impl InboundHandler for Engine {
    fn product(&self) -> &'static str {
        WALLET_PRODUCT
    }

    fn owns(&self, kind: &str) -> bool {
        kind == Wallet::KIND
    }

    async fn on_inbound(
        &self,
        rail: RailId,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<InboundOutcome, InboundError> {
        let wallet: Wallet = owner
            .body
            .decode()
            .map_err(|e| InboundError::Retry(format!("wallet {}: {e}", owner.id)))?;
        self.credit_inbound(rail, &wallet, inbound)
            .await
            .map_err(|e| InboundError::Retry(e.to_string()))
    }

    /// Every wallet quarantines (its key signs a return; its members are told), except
    /// for an internal movement, which its operation settles.
    async fn quarantine_owner(
        &self,
        rail: RailId,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<Option<QuarantineOwner>, InboundError> {
        let wallet: Wallet = owner
            .body
            .decode()
            .map_err(|e| InboundError::Retry(format!("wallet {}: {e}", owner.id)))?;
        if self
            .is_internal(rail, inbound)
            .await
            .map_err(|e| InboundError::Retry(e.to_string()))?
        {
            return Ok(None);
        }
        Ok(Some(QuarantineOwner {
            tenants: wallet.members.iter().map(|m| m.0.clone()).collect(),
            purpose: KeyPurpose::Wallet(wallet.id.0.clone()),
            origin: "wallet",
            origin_id: wallet.id.0.clone(),
        }))
    }
}
