//! The inbound deposit scanner: every rail's transfers into customer wallets from outside
//! the service, recorded once (DETECTED below the confirmation depth, CONFIRMED and
//! credited at it), each rail on its own, with `transfer.received` and the payments
//! family's `wallet.deposit.*` in the commit that records it.

use super::worker::{DepositRecord, DepositStatus, TickReport};
use super::{Engine, Operation, accounts, store_err};
use crate::domain::consent::Wallet;
use crate::domain::events::DomainEvent;
use crate::domain::payments_events::{
    DepositEventKind, DepositFields, deposit_payload, integer_id, placeholder_hash,
};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::record::{Record, get_record, get_record_by_unique};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{Batch, OutboxEvent};
use serde::{Deserialize, Serialize};

/// Persisted scan position of one rail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ScanCursor {
    rail: String,
    cursor: String,
    created_at: Timestamp,
}

impl Record for ScanCursor {
    const KIND: &'static str = crate::ports::kinds::kind::SCAN_CURSOR;
    fn id(&self) -> String {
        self.rail.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

impl Engine {
    /// Credits confirmed inbound deposits from outside the service to wallets, once each.
    /// Each rail on its own: one chain's outage must not stop the others' deposits.
    pub(super) async fn scan_inbound(&self, report: &mut TickReport) {
        for (id, rail) in self.kernel.rail_map().iter() {
            if !rail.monitors_inbound() {
                // Switched off on purpose (Solana without SOLANA_SCAN_ENABLED): its
                // readiness says so; an error every tick would say nothing new.
                continue;
            }
            if let Err(e) = self.scan_rail(*id, rail, report).await {
                report.errors.push(format!("scan {}: {e}", id.name()));
            }
        }
    }

    async fn scan_rail(
        &self,
        id: crate::ports::rail::RailId,
        rail: &std::sync::Arc<dyn crate::ports::rail::Rail>,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let name = id.name();
        let cur = get_record::<ScanCursor>(&*self.ports().store, &name).await?;
        let cursor = cur
            .as_ref()
            .map(|v| v.record.cursor.clone())
            .unwrap_or_default();
        let batch = match rail.scan(&cursor, &[], self.config.batch_limit).await {
            Ok(b) => b,
            Err(e) => return Err(super::rail_err(e)),
        };
        let treasury = self.service_address(rail, KeyPurpose::Treasury).await?;
        for inbound in &batch.inbound {
            // Internal movements (fundings, P2P transfers) are settled by their own
            // operation; crediting them here would count them twice.
            if inbound.from == treasury
                || get_record_by_unique::<Wallet>(
                    &*self.ports().store,
                    &Wallet::address_key(&name, &inbound.from),
                )
                .await?
                .is_some()
                || self
                    .ports()
                    .store
                    .get_by_unique(&Operation::tx_key(&id, &inbound.tx_hash))
                    .await
                    .map_err(store_err)?
                    .is_some()
            {
                continue;
            }
            let Some(w) = get_record_by_unique::<Wallet>(
                &*self.ports().store,
                &Wallet::address_key(&name, &inbound.to),
            )
            .await?
            else {
                continue;
            };
            let w = w.record;
            let dep_id = format!("{name}:{}:{}", inbound.tx_hash, inbound.index);
            let existing = get_record::<DepositRecord>(&*self.ports().store, &dep_id).await?;
            if existing
                .as_ref()
                .is_some_and(|v| v.record.status == DepositStatus::Confirmed)
            {
                continue;
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
                report.polled += 1;
                if existing.is_none() {
                    let outbox =
                        self.deposit_events(&w, &dep, inbound, DepositEventKind::Detected)?;
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
                continue;
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
                outbox.extend(self.deposit_events(
                    &w,
                    &dep,
                    inbound,
                    DepositEventKind::Detected,
                )?);
            }
            outbox.extend(self.deposit_events(
                &w,
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
                Ok(_) => report.deposits += 1,
                Err(CoreError::Conflict { .. }) => {} // credited by a concurrent scanner
                Err(e) => return Err(e),
            }
        }
        if batch.cursor != cursor {
            let now = self.now();
            let rec = ScanCursor {
                rail: name.clone(),
                cursor: batch.cursor.clone(),
                created_at: now,
            };
            let put = match &cur {
                Some(v) => rec.update(v.version)?,
                None => rec.insert()?,
            };
            // A lost race means another scanner advanced it: fine, deposits dedupe.
            let _ = self
                .commit(Batch {
                    puts: vec![put],
                    background: true,
                    ..Default::default()
                })
                .await;
        }
        Ok(())
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
