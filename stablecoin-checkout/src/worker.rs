//! The checkout's background work, one [`CheckoutEngine::tick`] at a time: scan every
//! network that watches deposits for transfers into session addresses, and end the
//! sessions whose expiry came.

use crate::engine::{CheckoutEngine, DepositFact, DepositStage};
use crate::error::{CheckoutResult, rail_err, store_err};
use crate::model::{Mode, ScanCursor, Session, integer_id};
use crate::state::{ExpiryDecision, decide_expiry};
use stablecoin_core::kernel::{RoundReport, Worker};
use stablecoin_core::ports::{Batch, Rail, Record, Versioned, get_record, get_record_by_unique};
use std::sync::Arc;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckoutTickReport {
    /// Deposits into session addresses recorded or advanced.
    pub deposits: usize,
    /// Sessions ended by their expiry (expired or failed underpaid).
    pub closed: usize,
    /// Sweeps that reached the treasury.
    pub swept: usize,
    /// Errors met (the tick goes on with the next item).
    pub errors: Vec<String>,
}

impl CheckoutTickReport {
    /// How many items the round moved, of every kind.
    pub fn moved(&self) -> usize {
        self.deposits + self.closed + self.swept
    }
}

impl CheckoutEngine {
    /// One round: scan, then expiries. Errors are reported, not fatal.
    pub async fn tick(&self) -> CheckoutTickReport {
        let mut report = CheckoutTickReport::default();
        let rails: Vec<Arc<dyn Rail>> = self.kernel.rails().cloned().collect();
        for rail in rails {
            if !rail.monitors_inbound() {
                continue;
            }
            if let Err(e) = self.scan(&rail, &mut report).await {
                report
                    .errors
                    .push(format!("scan {}: {e}", rail.id().name()));
            }
        }
        if let Err(e) = self.expire_due(&mut report).await {
            report.errors.push(format!("expiry: {e}"));
        }
        if let Err(e) = self.sweep_due(&mut report).await {
            report.errors.push(format!("sweeps: {e}"));
        }
        report
    }

    /// Ticks until a round does nothing or `max_rounds` ran (tests).
    pub async fn settle_all(&self, max_rounds: usize) -> CheckoutTickReport {
        let mut total = CheckoutTickReport::default();
        for _ in 0..max_rounds {
            let r = self.tick().await;
            let idle = r.moved() == 0;
            total.deposits += r.deposits;
            total.closed += r.closed;
            total.swept += r.swept;
            total.errors.extend(r.errors);
            if idle {
                break;
            }
        }
        total
    }

    /// Every inbound transfer after the cursor; those to a live session's address are
    /// recorded (detected below the confirmation depth, credited at it). Found through
    /// the store's unique address index, so the scan costs the same for ten sessions or
    /// ten million. The cursor is saved after the page's deposits are recorded.
    async fn scan(
        &self,
        rail: &Arc<dyn Rail>,
        report: &mut CheckoutTickReport,
    ) -> CheckoutResult<()> {
        let network = rail.id().name();
        let store = &*self.kernel.ports().store;
        let cur = get_record::<ScanCursor>(store, &network).await?;
        let cursor = cur
            .as_ref()
            .map(|v| v.record.cursor.clone())
            .unwrap_or_default();
        let page = rail
            .scan(&cursor, &[], self.config.batch_limit)
            .await
            .map_err(rail_err)?;
        for inbound in &page.inbound {
            let Some(s) = get_record_by_unique::<Session>(
                store,
                &Session::address_key(&network, &inbound.to.0),
            )
            .await?
            else {
                continue;
            };
            if s.record.mode != Mode::Live {
                // Test sessions are paid only by simulated deposits.
                continue;
            }
            let index = inbound.index.to_string();
            let fact = DepositFact {
                deposit_id: integer_id(&[&network, &inbound.tx_hash, &index]),
                network: network.clone(),
                address: inbound.to.0.clone(),
                token: inbound.token,
                amount: inbound.amount,
                tx_hash: Some(inbound.tx_hash.clone()),
                confirmations: inbound.confirmations,
                detected_by: format!("checkout-scanner-{network}"),
            };
            let stage = if inbound.confirmed {
                DepositStage::Confirmed {
                    safe_to_credit: true,
                }
            } else {
                DepositStage::Detected
            };
            match self.record_deposit(&fact, stage, Mode::Live).await {
                Ok(crate::engine::DepositOutcome::AlreadyRecorded)
                | Ok(crate::engine::DepositOutcome::UnknownAddress) => {}
                Ok(_) => report.deposits += 1,
                Err(e) => report
                    .errors
                    .push(format!("deposit {}: {e}", fact.deposit_id)),
            }
        }
        if page.cursor != cursor {
            let rec = ScanCursor {
                network,
                cursor: page.cursor.clone(),
                created_at: self.now(),
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

    /// Sessions whose expiry (or confirmation grace) came: each is claimed by one worker
    /// and ended, or given a later look.
    async fn expire_due(&self, report: &mut CheckoutTickReport) -> CheckoutResult<()> {
        let now = self.now();
        let claimed = self
            .kernel
            .ports()
            .store
            .claim_due(
                Session::KIND,
                0,
                &self.config.worker_id,
                now,
                self.config.claim_lease_ms,
                self.config.batch_limit,
            )
            .await
            .map_err(store_err)?;
        for rec in claimed {
            let v = Versioned {
                record: Session::from_stored(&rec)?,
                version: rec.version,
            };
            let mut batch = Batch {
                background: true,
                ..Default::default()
            };
            let mut closes = false;
            if v.record.status.is_final() {
                let mut s = v.record.clone();
                s.due_at = None;
                batch.puts.push(s.update(v.version)?);
            } else {
                let s = &v.record;
                match decide_expiry(
                    now,
                    s.expires_at,
                    self.config.confirm_grace_ms,
                    s.amount,
                    s.applied_total(),
                    s.pending,
                ) {
                    ExpiryDecision::NotYet(at) | ExpiryDecision::AwaitConfirmations(at) => {
                        let mut s = s.clone();
                        s.due_at = Some(at);
                        batch.puts.push(s.update(v.version)?);
                    }
                    ExpiryDecision::Apply(event) => {
                        self.close_unpaid(v.clone(), event, now, &mut batch)?;
                        closes = true;
                    }
                }
            }
            match self.commit(batch).await {
                Ok(()) => {
                    if closes {
                        report.closed += 1;
                    }
                }
                // A deposit changed it meanwhile: it is looked at again when due.
                Err(crate::error::CheckoutError::Conflict { .. }) => {}
                Err(e) => report.errors.push(format!("{}: {e}", v.record.id)),
            }
        }
        Ok(())
    }
}

/// Checkout as one [`Worker`] of the kernel's [`stablecoin_core::kernel::Runtime`]: a
/// round is a [`CheckoutEngine::tick`] (scan, expiries, sweeps).
#[async_trait::async_trait]
impl Worker for CheckoutEngine {
    fn name(&self) -> &str {
        "checkout"
    }
    async fn round(&self) -> RoundReport {
        let r = self.tick().await;
        RoundReport {
            progressed: r.moved(),
            errors: r.errors,
            more_due: false,
        }
    }
}
