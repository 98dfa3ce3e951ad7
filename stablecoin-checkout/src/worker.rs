//! The checkout's background work, one [`CheckoutEngine::tick`] at a time: deposits
//! into session addresses (checkout's share of the kernel's inbound router,
//! `inbound.rs`), then the sessions whose expiry came, then sweeps, then refunds
//! (`refund_worker.rs`).

use crate::engine::CheckoutEngine;
use crate::error::{CheckoutResult, store_err};
use crate::model::Session;
use crate::state::{ExpiryDecision, decide_expiry};
use stablecoin_core::kernel::{RoundReport, Worker};
use stablecoin_core::ports::{Batch, Record, Versioned};

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckoutTickReport {
    /// Deposits into session addresses recorded or advanced.
    pub deposits: usize,
    /// Sessions ended by their expiry (expired or failed underpaid).
    pub closed: usize,
    /// Sweeps that reached the treasury.
    pub swept: usize,
    /// Refunds that reached a final state (completed, failed, expired).
    pub refunds: usize,
    /// Errors met (the tick goes on with the next item).
    pub errors: Vec<String>,
}

impl CheckoutTickReport {
    /// How many items the round moved, of every kind.
    pub fn moved(&self) -> usize {
        self.deposits + self.closed + self.swept + self.refunds
    }
}

impl CheckoutEngine {
    /// One round, checkout on its own: deposits into session addresses (through a
    /// router of checkout alone, [`CheckoutEngine::inbound_router`]), then expiries and
    /// sweeps. Errors are reported, not fatal.
    pub async fn tick(&self) -> CheckoutTickReport {
        let mut report = self.scan_standalone().await;
        let work = self.tick_work().await;
        report.deposits += work.deposits;
        report.closed += work.closed;
        report.swept += work.swept;
        report.refunds += work.refunds;
        report.errors.extend(work.errors);
        report
    }

    /// Expiries, then sweeps: a round without the inbound scan (on a shared runtime the
    /// kernel's router scans for every product).
    pub(crate) async fn tick_work(&self) -> CheckoutTickReport {
        let mut report = CheckoutTickReport::default();
        if let Err(e) = self.expire_due(&mut report).await {
            report.errors.push(format!("expiry: {e}"));
        }
        if let Err(e) = self.sweep_due(&mut report).await {
            report.errors.push(format!("sweeps: {e}"));
        }
        if let Err(e) = self.refunds_due(&mut report).await {
            report.errors.push(format!("refunds: {e}"));
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
            total.refunds += r.refunds;
            total.errors.extend(r.errors);
            if idle {
                break;
            }
        }
        total
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
        let r = self.tick_work().await;
        RoundReport {
            progressed: r.moved(),
            errors: r.errors,
            more_due: false,
        }
    }
}
