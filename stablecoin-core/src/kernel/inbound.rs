//! The inbound router: one scan of each rail page feeds every product (KERNEL.md §2.1,
//! `kernel/inbound.rs`).
//!
//! Why: the wallet engine, escrow and checkout each used to scan every chain page for
//! transfers into their own addresses, through three cursors and three address
//! namespaces that only convention kept apart. Here there is one of each:
//!
//! - **One address namespace.** A product reserves each of its deposit addresses with
//!   the unique key [`address_key`] (`addr:{rail}:{address}`) on the record that owns it
//!   (a wallet, a deal, a payment session). The store's unique index then answers "whose
//!   is this address?" in one read, and refuses at commit an address two products claim.
//! - **One scan.** [`InboundRouter::pump`] reads a page of each rail once, finds each
//!   transfer's owner with that one read, and hands it to the [`InboundHandler`] of the
//!   product whose record kind owns it.
//! - **One cursor record per rail, one position per product in it** ([`ScanPositions`]).
//!   A product whose handler fails on a transfer keeps its position at the page's start
//!   (the page is offered to it again on the next pump) while the others move on: a
//!   failing product holds back only itself. Products at the same position share one
//!   scan, so in steady state every rail is scanned once per pump; a product held back
//!   scans alone until it reaches the others' position (cursors are positions on the
//!   chain, so two products caught up to the same height hold the same cursor).
//!
//! Handlers are idempotent (each product dedupes a deposit by its transaction and
//! index), so a page offered twice, after a crash or a lost race on the cursor record
//! between two nodes, records nothing twice.

use super::quarantine::{self, InboundScreen, QUARANTINE_SUBKIND, QuarantineOwner};
use super::stray::{STRAY_LIST_OWNER, StrayDeposit, StrayStatus};
use crate::domain::chain::RailId;
use crate::domain::time::Timestamp;
use crate::ports::Clock;
use crate::ports::kinds::{self, kind, namespace};
use crate::ports::rail::{Inbound, Rail};
use crate::ports::record::{Record, get_record};
use crate::ports::store::{Batch, ListQuery, Store, StoreError, StoredRecord};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The unique key that reserves `address` on `rail` for one product's record; every
/// product's deposit addresses share this one namespace.
///
/// EVM addresses are hex, whose letter case is only a checksum (EIP-55): they are keyed
/// lower-cased, so the checksummed and the plain form of one address are one key. Base58
/// addresses (TRON, Solana) are case-sensitive, and two that differ only in case are two
/// accounts on chain: they are keyed exactly as written. (Folding them would credit a
/// transfer to a case variant of a customer's address, money the service never
/// received, to that customer.)
pub fn address_key(rail: &str, address: &str) -> String {
    kinds::key(
        namespace::ADDRESS,
        format_args!("{rail}:{}", canonical_address(rail, address)),
    )
}

/// `address` as [`address_key`] keys it on `rail`.
pub fn canonical_address(rail: &str, address: &str) -> String {
    if is_hex_rail(rail) {
        address.to_ascii_lowercase()
    } else {
        address.to_string()
    }
}

/// Whether `rail` (a [`RailId::name`]) writes hex addresses: every EVM chain.
fn is_hex_rail(rail: &str) -> bool {
    matches!(rail, "polygon" | "base" | "bsc") || rail.starts_with("evm-")
}

/// What a product did with one inbound transfer to an address it owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboundOutcome {
    /// Recorded at the confirmation depth: credited (or applied) now. `completes` when
    /// it completed what its owner waited for (a deal funded, a session paid).
    Credited {
        /// The owner's funding is complete with it.
        completes: bool,
    },
    /// Seen below the confirmation depth: recorded or left for a later page.
    Detected,
    /// Nothing to do (recorded before, an internal movement, a test-mode owner, ...).
    Ignored,
}

/// Why a product could not take one inbound transfer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    /// Worth trying again (the store, a conflict, an outage): the product's position
    /// stays before the transfer's page.
    #[error("{0}")]
    Retry(String),
    /// Never takeable (an amount past what a ledger holds, ...): reported, and the
    /// product's position moves past it, so one bad transfer cannot stop its deposits.
    #[error("{0}")]
    Skip(String),
}

/// One product's share of the inbound transfers: the transfers to addresses its records
/// own.
#[async_trait]
pub trait InboundHandler: Send + Sync {
    /// The product's name, its position's key in the cursor record (`wallet`, `escrow`,
    /// `checkout`). Persisted: never renamed.
    fn product(&self) -> &'static str;
    /// Whether records of `kind` are this product's address owners.
    fn owns(&self, kind: &str) -> bool;
    /// Whether the product takes deposits on `rail` at all.
    fn watches(&self, rail: RailId) -> bool {
        let _ = rail;
        true
    }
    /// One transfer on `rail` into an address `owner` reserved (with [`address_key`]):
    /// record it once, in one commit with its ledger moves and events.
    async fn on_inbound(
        &self,
        rail: RailId,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<InboundOutcome, InboundError>;
    /// Who `owner` is for the sanctions quarantine of a deposit from a flagged sender
    /// (`kernel::quarantine`): its tenants and the key of its address. `None` (the
    /// default) when the product does not quarantine for this owner: its transfers are
    /// then not screened by the router (a test-mode owner, whose real deposits are
    /// strays, or a product that has not opted in).
    ///
    /// Also `None` for a transfer the product does not take as a deposit (an internal
    /// movement its own operation settles): quarantining it would count it twice.
    async fn quarantine_owner(
        &self,
        rail: RailId,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<Option<QuarantineOwner>, InboundError> {
        let _ = (rail, owner, inbound);
        Ok(None)
    }
}

/// Where each product stands in one rail's inbound transfers (kind `scan_cursor`, id the
/// rail's name). Written by one pump at a time per rail: a pump that loses the race for
/// it leaves the winner's positions (its pages are offered again, and dedupe).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPositions {
    /// The rail's name.
    pub rail: String,
    /// Each product's [`crate::ports::rail::Rail::scan`] cursor, by product name; a
    /// product not listed starts from the rail's configured start (cursor `""`).
    pub positions: BTreeMap<String, String>,
    /// When the record was first written.
    pub created_at: Timestamp,
}

impl Record for ScanPositions {
    const KIND: &'static str = kind::SCAN_CURSOR;
    fn id(&self) -> String {
        self.rail.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// What one product got from a pump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProductInbound {
    /// Transfers credited at the confirmation depth.
    pub credited: usize,
    /// Transfers seen below it.
    pub detected: usize,
    /// Credited transfers that completed their owner's funding (deals funded, ...).
    pub completed: usize,
}

/// What one pump did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InboundReport {
    /// Per product name.
    pub products: BTreeMap<&'static str, ProductInbound>,
    /// Rails or transfers that failed (the pump went on with the next).
    pub errors: Vec<String>,
    /// A page came back full: more is probably waiting.
    pub more_due: bool,
    /// Deposits from flagged senders recorded in quarantine (`kernel::quarantine`).
    pub quarantined: usize,
    /// Quarantined deposits staff released that their products credited.
    pub released: usize,
}

impl InboundReport {
    /// What `product` got (zero if nothing).
    pub fn of(&self, product: &str) -> ProductInbound {
        self.products.get(product).cloned().unwrap_or_default()
    }

    /// Transfers credited or detected, of every product.
    pub fn moved(&self) -> usize {
        self.products
            .values()
            .map(|p| p.credited + p.detected)
            .sum::<usize>()
            + self.quarantined
            + self.released
    }
}

/// The one scanner: the rails, the products' handlers, and the store that holds their
/// positions and address keys.
#[derive(Clone)]
pub struct InboundRouter {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    rails: Vec<Arc<dyn Rail>>,
    handlers: Vec<Arc<dyn InboundHandler>>,
    page_limit: usize,
    /// The kernel whose screening gate screens each transfer's sender; `None` for a
    /// router built without one (nothing screened).
    kernel: Option<super::Kernel>,
}

impl InboundRouter {
    /// A router over `rails`, `page_limit` transfers per scan, feeding no product yet
    /// (add each with [`InboundRouter::with_handler`]).
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        rails: Vec<Arc<dyn Rail>>,
        page_limit: usize,
    ) -> Self {
        InboundRouter {
            store,
            clock,
            rails,
            handlers: Vec::new(),
            page_limit: page_limit.max(1),
            kernel: None,
        }
    }

    /// The same router screening senders through `kernel`'s gate (when one is
    /// installed) and releasing what staff released (`kernel::quarantine`).
    /// [`super::Kernel::inbound_router`] builds every router this way.
    pub fn with_kernel(mut self, kernel: super::Kernel) -> Self {
        self.kernel = Some(kernel);
        self
    }

    /// The same router feeding `handler` too.
    pub fn with_handler(mut self, handler: Arc<dyn InboundHandler>) -> Self {
        self.handlers.push(handler);
        self
    }

    /// One page of every rail that monitors deposits, to every product that watches it.
    /// Each rail on its own: one chain's outage stops no other's deposits.
    pub async fn pump(&self) -> InboundReport {
        let mut report = InboundReport::default();
        self.release_due(&mut report).await;
        for rail in &self.rails {
            if !rail.monitors_inbound() {
                // Switched off on purpose (Solana without SOLANA_SCAN_ENABLED): its
                // readiness says so; an error every pump would say nothing new.
                continue;
            }
            let watching: Vec<&dyn InboundHandler> = self
                .handlers
                .iter()
                .map(|h| &**h)
                .filter(|h| h.watches(rail.id()))
                .collect();
            if watching.is_empty() {
                continue;
            }
            if let Err(e) = self.pump_rail(&**rail, &watching, &mut report).await {
                report
                    .errors
                    .push(format!("scan {}: {e}", rail.id().name()));
            }
        }
        report
    }

    /// One rail: a scan per distinct position of the watching products (one in steady
    /// state), then the positions saved in one write.
    async fn pump_rail(
        &self,
        rail: &dyn Rail,
        watching: &[&dyn InboundHandler],
        report: &mut InboundReport,
    ) -> Result<(), String> {
        let name = rail.id().name();
        let stored = get_record::<ScanPositions>(&*self.store, &name)
            .await
            .map_err(|e| crate::error::CoreError::from(e).to_string())?;
        let mut positions = stored
            .as_ref()
            .map(|v| v.record.positions.clone())
            .unwrap_or_default();
        let mut groups: BTreeMap<String, Vec<&dyn InboundHandler>> = BTreeMap::new();
        for h in watching {
            let from = positions.get(h.product()).cloned().unwrap_or_default();
            groups.entry(from).or_default().push(*h);
        }
        let mut moved = false;
        for (from, group) in groups {
            let page = match rail.scan(&from, &[], self.page_limit).await {
                Ok(page) => page,
                Err(e) => {
                    report.errors.push(format!("scan {name}: {e}"));
                    continue;
                }
            };
            report.more_due |= page.inbound.len() >= self.page_limit;
            let held = self.deliver(rail.id(), &page.inbound, &group, report).await;
            if page.cursor == from {
                continue;
            }
            for h in group.iter().filter(|h| !held.contains(h.product())) {
                positions.insert(h.product().to_string(), page.cursor.clone());
                moved = true;
            }
        }
        if moved {
            self.save(&name, stored, positions).await?;
        }
        Ok(())
    }

    /// Hands each transfer of a page to the product that owns its address; the products
    /// that must see the page again (a transfer failed worth a retry, or the owner read
    /// failed).
    async fn deliver(
        &self,
        rail: RailId,
        page: &[Inbound],
        group: &[&dyn InboundHandler],
        report: &mut InboundReport,
    ) -> BTreeSet<&'static str> {
        let mut held = BTreeSet::new();
        let name = rail.name();
        for inbound in page {
            let owner = match self
                .store
                .get_by_unique(&address_key(&name, &inbound.to.0))
                .await
            {
                Ok(Some(owner)) => owner,
                Ok(None) => continue,
                Err(e) => {
                    report.errors.push(format!("scan {name}: {e}"));
                    return group.iter().map(|h| h.product()).collect();
                }
            };
            let Some(h) = group.iter().find(|h| h.owns(&owner.kind)) else {
                continue;
            };
            if held.contains(h.product()) {
                continue;
            }
            if let Some(kernel) = &self.kernel {
                let screened = match h.quarantine_owner(rail, &owner, inbound).await {
                    Ok(q) => {
                        quarantine::screen_inbound(kernel, rail, h.product(), q, inbound).await
                    }
                    Err(e) => Err(e),
                };
                match screened {
                    Ok(InboundScreen::Deliver) => {}
                    Ok(InboundScreen::Withheld) => continue,
                    Ok(InboundScreen::Quarantined) => {
                        report.quarantined += 1;
                        continue;
                    }
                    Err(e) => {
                        report.errors.push(format!(
                            "screening deposit {name}:{}:{}: {e}",
                            inbound.tx_hash, inbound.index
                        ));
                        if let InboundError::Retry(_) = e {
                            held.insert(h.product());
                        }
                        continue;
                    }
                }
            }
            let counts = report.products.entry(h.product()).or_default();
            match h.on_inbound(rail, &owner, inbound).await {
                Ok(InboundOutcome::Credited { completes }) => {
                    counts.credited += 1;
                    counts.completed += usize::from(completes);
                }
                Ok(InboundOutcome::Detected) => counts.detected += 1,
                Ok(InboundOutcome::Ignored) => {}
                Err(e) => {
                    report.errors.push(format!(
                        "{} deposit {name}:{}:{}: {e}",
                        h.product(),
                        inbound.tx_hash,
                        inbound.index
                    ));
                    if let InboundError::Retry(_) = e {
                        held.insert(h.product());
                    }
                }
            }
        }
        held
    }

    /// Hands each quarantined deposit staff released (RELEASING) to its product, then
    /// closes its quarantine account (RELEASED) in one commit. The product credits by
    /// its own dedupe, so a crash between the two credits nothing twice: the next pump
    /// finds it recorded (`Ignored`) and closes the account.
    async fn release_due(&self, report: &mut InboundReport) {
        let Some(kernel) = &self.kernel else {
            return;
        };
        let rows = match self
            .store
            .list(&ListQuery {
                kind: StrayDeposit::KIND.into(),
                tenant: STRAY_LIST_OWNER.into(),
                subkind: Some(QUARANTINE_SUBKIND.into()),
                status: Some(StrayStatus::Releasing.as_str().into()),
                limit: self.page_limit,
                offset: 0,
            })
            .await
        {
            Ok((rows, _)) => rows,
            Err(e) => {
                report.errors.push(format!("quarantine releases: {e}"));
                return;
            }
        };
        for r in rows {
            match self.release_one(kernel, &r).await {
                Ok(true) => report.released += 1,
                Ok(false) => {}
                Err(e) => report.errors.push(format!("release of {}: {e}", r.id)),
            }
        }
    }

    /// One released deposit; `true` when its account closed now.
    async fn release_one(&self, kernel: &super::Kernel, r: &StoredRecord) -> Result<bool, String> {
        let s = StrayDeposit::from_stored(r).map_err(|e| e.to_string())?;
        let product = s
            .quarantine
            .as_ref()
            .map(|q| q.product.clone())
            .unwrap_or_default();
        let Some(h) = self.handlers.iter().find(|h| h.product() == product) else {
            // The product does not run in this router (a standalone engine's): the
            // router that feeds it releases it.
            return Ok(false);
        };
        let rail = self
            .rails
            .iter()
            .find(|x| x.id().name() == s.rail)
            .ok_or_else(|| format!("network {} not configured", s.rail))?;
        let owner = self
            .store
            .get_by_unique(&address_key(&s.rail, &s.address))
            .await
            .map_err(|e| e.to_string())?
            .filter(|o| h.owns(&o.kind))
            .ok_or_else(|| format!("no {product} owns {} any more", s.address))?;
        match h.on_inbound(rail.id(), &owner, &s.inbound()).await {
            Ok(InboundOutcome::Credited { .. } | InboundOutcome::Ignored) => {}
            Ok(InboundOutcome::Detected) => {
                return Err("its product saw it below the confirmation depth".into());
            }
            Err(e) => return Err(e.to_string()),
        }
        let batch = quarantine::released_batch(kernel, s, r.version).map_err(|e| e.to_string())?;
        match kernel.commit(batch).await {
            Ok(_) => Ok(true),
            // Closed by another pump meanwhile.
            Err(StoreError::VersionConflict { .. }) => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Writes the positions. A lost race means another pump moved them: fine, its pages
    /// dedupe.
    async fn save(
        &self,
        rail: &str,
        stored: Option<crate::ports::record::Versioned<ScanPositions>>,
        positions: BTreeMap<String, String>,
    ) -> Result<(), String> {
        let rec = ScanPositions {
            rail: rail.to_string(),
            positions,
            created_at: stored
                .as_ref()
                .map_or_else(|| self.clock.now(), |v| v.record.created_at),
        };
        let put = match &stored {
            Some(v) => rec.update(v.version),
            None => rec.insert(),
        }
        .map_err(|e| crate::error::CoreError::from(e).to_string())?;
        let batch = Batch {
            puts: vec![put],
            background: true,
            ..Default::default()
        };
        match self.store.commit(batch).await {
            Ok(_) => Ok(()),
            Err(StoreError::VersionConflict { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[async_trait]
impl super::Worker for InboundRouter {
    fn name(&self) -> &str {
        "inbound"
    }

    async fn round(&self) -> super::RoundReport {
        let r = self.pump().await;
        super::RoundReport {
            progressed: r.moved(),
            more_due: r.more_due,
            errors: r.errors,
        }
    }
}
