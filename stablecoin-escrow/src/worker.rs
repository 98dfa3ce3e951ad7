//! Background work of escrow, one round per [`EscrowEngine::tick`], in this order:
//!
//! 1. **Deposits** (`deposits.rs`, escrow's share of the kernel's inbound router): every
//!    confirmed transfer to a deal address is recorded once (dedupe by
//!    `tron:<tx>:<index>`) and classified by `classify_deposit` in the same batch as its
//!    ledger entries, the deal update, its history entries and events. Scanning first
//!    means a deposit confirmed before the funding window closes is counted before the
//!    expiry runs.
//! 2. **Due deals**: CREATED deals at `funding_expires_at` expire; FUNDED deals at
//!    `auto_release_at` claim a release to the seller (once).
//! 3. **Payouts**: queued payouts are submitted (only while the rail can send, with a
//!    deadline of [`PAYOUT_VALIDITY_MS`]); submitted ones are polled; an unknown outcome
//!    is resolved only by asking the rail about the same payment id (never by submitting
//!    under a new id), and the rail's `NotFound` fails a payout only after its deadline.
//!    A confirmed or failed payout settles the deal in one batch with its ledger post or
//!    void.

use crate::engine::{EscrowEngine, MAX_RETRIES, overflow};
use crate::error::{EscrowError, EscrowResult, rail_err};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::{Action, EscrowState, PayoutPurpose, transition};
use serde_json::json;
use stablecoin_core::kernel::{RoundReport, Worker};
use stablecoin_core::ports::{
    Batch, LedgerTransfer, Phase as LedgerPhase, RailError, Record, SubmissionStatus, Versioned,
    get_record, hold_through_side_effect,
};

/// What one [`EscrowEngine::tick`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EscrowTickReport {
    /// Confirmed deposits recorded.
    pub deposits: usize,
    /// Deals that became FUNDED.
    pub funded: usize,
    /// CREATED deals expired at `funding_expires_at`.
    pub expired: usize,
    /// FUNDED deals whose release to the seller was claimed at `auto_release_at`.
    pub auto_released: usize,
    /// Payouts the rail accepted (`submit` answered `Ok`).
    pub submitted: usize,
    /// Payouts confirmed on chain, each settled with its deal and ledger post.
    pub settled: usize,
    /// Payouts that failed (refused, reverted, or provably never landing past their
    /// deadline), each settled with its deal and ledger void.
    pub failed: usize,
    /// Payouts whose submission outcome became unknown (resolved later by asking the
    /// rail, never by resubmitting under a new id).
    pub unknown: usize,
    /// Payouts polled and deposits seen, still below the confirmation depth.
    pub polled: usize,
    /// Queued payouts left waiting because the rail cannot send now.
    pub waiting: usize,
    /// Errors met; each left its record for a later round.
    pub errors: Vec<String>,
}

impl EscrowTickReport {
    /// Nothing moved forward (waiting payouts do not count: they need the rail back).
    pub fn is_idle(&self) -> bool {
        self.moved() == 0
    }

    /// How many items the round moved, of every kind (waiting payouts aside).
    pub fn moved(&self) -> usize {
        self.deposits
            + self.funded
            + self.expired
            + self.auto_released
            + self.submitted
            + self.settled
            + self.failed
            + self.unknown
            + self.polled
    }

    pub(crate) fn add(&mut self, r: EscrowTickReport) {
        self.deposits += r.deposits;
        self.funded += r.funded;
        self.expired += r.expired;
        self.auto_released += r.auto_released;
        self.submitted += r.submitted;
        self.settled += r.settled;
        self.failed += r.failed;
        self.unknown += r.unknown;
        self.polled += r.polled;
        self.waiting += r.waiting;
        self.errors.extend(r.errors);
    }
}

/// How long after its first submission a payout may still be included on chain (its
/// `valid_until`; the TRON rail caps the transfer's expiration at it).
pub const PAYOUT_VALIDITY_MS: i64 = 600_000;

enum Outcome {
    Confirmed,
    Failed(String),
}

impl EscrowEngine {
    /// One round of every escrow worker, escrow on its own: deposits (through a router
    /// of escrow alone, [`EscrowEngine::inbound_router`]), due deals, payouts. Errors on
    /// one record are reported, not fatal.
    pub async fn tick(&self) -> EscrowTickReport {
        let mut report = self.scan_standalone().await;
        report.add(self.tick_work().await);
        report
    }

    /// Due deals, then payouts: a round without the inbound scan (on a shared runtime
    /// the kernel's router scans for every product).
    pub(crate) async fn tick_work(&self) -> EscrowTickReport {
        let mut report = EscrowTickReport::default();
        let cfg = &self.inner.config;
        match self
            .inner
            .kernel
            .ports()
            .store
            .claim_due(
                Deal::KIND,
                0,
                &cfg.worker_id,
                self.now(),
                cfg.claim_lease_ms,
                cfg.batch_limit,
            )
            .await
        {
            Ok(claimed) => {
                for rec in claimed {
                    let id = rec.id.clone();
                    let res = match Deal::from_stored(&rec) {
                        Ok(deal) => {
                            self.due_deal(
                                Versioned {
                                    record: deal,
                                    version: rec.version,
                                },
                                &mut report,
                            )
                            .await
                        }
                        Err(e) => Err(e.into()),
                    };
                    if let Err(e) = res {
                        report.errors.push(format!("{id}: {e}"));
                    }
                }
            }
            Err(e) => report.errors.push(e.to_string()),
        }
        match self
            .inner
            .kernel
            .ports()
            .store
            .claim_due(
                PayoutRecord::KIND,
                0,
                &cfg.worker_id,
                self.now(),
                cfg.claim_lease_ms,
                cfg.batch_limit,
            )
            .await
        {
            Ok(claimed) => {
                for rec in claimed {
                    let id = rec.id.clone();
                    let res = match PayoutRecord::from_stored(&rec) {
                        Ok(p) => {
                            self.advance_payout(
                                Versioned {
                                    record: p,
                                    version: rec.version,
                                },
                                &mut report,
                            )
                            .await
                        }
                        Err(e) => Err(e.into()),
                    };
                    if let Err(e) = res {
                        report.errors.push(format!("{id}: {e}"));
                    }
                }
            }
            Err(e) => report.errors.push(e.to_string()),
        }
        report
    }

    /// Ticks until a round does nothing (or `max_rounds`), for tests and examples. Payouts
    /// wait `poll_interval_ms` between polls: use 0 (or move the clock) to drive them here.
    pub async fn settle_all(&self, max_rounds: usize) -> EscrowTickReport {
        let mut total = EscrowTickReport::default();
        for _ in 0..max_rounds {
            let r = self.tick().await;
            let idle = r.is_idle();
            total.add(r);
            if idle {
                break;
            }
        }
        total
    }

    // ---- due deals ---------------------------------------------------------------------

    async fn due_deal(
        &self,
        mut v: Versioned<Deal>,
        report: &mut EscrowTickReport,
    ) -> EscrowResult<()> {
        let id = v.record.id.0.clone();
        for _ in 0..MAX_RETRIES {
            let now = self.now();
            let deal = &v.record;
            let action = match (deal.state, &deal.payout) {
                (EscrowState::Created, _) if now >= deal.funding_expires_at => Action::Expire,
                (EscrowState::Funded, None)
                    if !deal.auto_release_attempted
                        && deal.auto_release_at.is_some_and(|t| now >= t) =>
                {
                    Action::AutoRelease
                }
                _ => return Ok(()),
            };
            if action == Action::AutoRelease && !self.inner.rail.readiness().await.can_send() {
                // The one automatic attempt waits for the rail: the deal stays due and is
                // claimed again when the lease lapses.
                report.waiting += 1;
                return Ok(());
            }
            let job = if action == Action::Expire {
                "funding_expiry"
            } else {
                "auto_release"
            };
            match self
                .apply_action(v, action, &Actor::system(job), None, None, None, Vec::new())
                .await
            {
                Ok(_) => {
                    if action == Action::Expire {
                        report.expired += 1;
                    } else {
                        report.auto_released += 1;
                    }
                    return Ok(());
                }
                Err(EscrowError::Conflict { .. }) => v = self.load_any(&id).await?,
                Err(EscrowError::ScreeningHit { .. }) if action == Action::AutoRelease => {
                    // The seller's wallet is listed (audited `screening.hit` by the
                    // kernel, once): the one automatic attempt is spent, and the deal
                    // stays FUNDED for a person (a refund, a dispute, a staff decision),
                    // never retried and re-audited every round.
                    let fresh = self.load_any(&id).await?;
                    match self.spend_auto_release(fresh).await {
                        Ok(()) => return Ok(()),
                        Err(EscrowError::Conflict { .. }) => v = self.load_any(&id).await?,
                        Err(e) => return Err(e),
                    }
                }
                // Unavailable (fail closed): the deal stays due and is tried again when
                // the lease lapses, as while the rail cannot send.
                Err(EscrowError::ScreeningUnavailable { .. }) if action == Action::AutoRelease => {
                    report.waiting += 1;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        Err(EscrowError::Conflict {
            what: format!("escrow {id}"),
        })
    }

    /// Marks the deal's one automatic release as attempted, without a payout.
    async fn spend_auto_release(&self, v: Versioned<Deal>) -> EscrowResult<()> {
        let Versioned {
            record: mut deal,
            version,
        } = v;
        deal.auto_release_attempted = true;
        let mut batch = Batch {
            puts: vec![deal.update(version)?],
            background: true,
            ..Default::default()
        };
        self.queue_put(&mut batch, &deal).await?;
        self.commit(batch).await
    }

    // ---- payouts -----------------------------------------------------------------------

    async fn save_payout(&self, p: &PayoutRecord, version: u64) -> EscrowResult<u64> {
        self.commit(Batch {
            puts: vec![p.update(version)?],
            background: true,
            ..Default::default()
        })
        .await?;
        Ok(version + 1)
    }

    async fn advance_payout(
        &self,
        v: Versioned<PayoutRecord>,
        report: &mut EscrowTickReport,
    ) -> EscrowResult<()> {
        let Versioned {
            record: mut p,
            mut version,
        } = v;
        let cfg = &self.inner.config;
        let rail = &self.inner.rail;
        let now = self.now();
        match p.status {
            PayoutStatus::Queued => {
                if !rail.readiness().await.can_send() {
                    // Nothing was sent: try again later, the claim stays with the deal.
                    p.next_check_at = Some(now.plus_millis(cfg.send_retry_ms));
                    p.updated_at = now;
                    self.save_payout(&p, version).await?;
                    report.waiting += 1;
                    return Ok(());
                }
                p.status = PayoutStatus::Submitting;
                p.submitted_at = Some(now);
                p.updated_at = now;
                // The payout's deadline, stored before it is first sent: the rail never
                // lets it land later, which is what lets a NotFound fail it (below).
                if p.payment.valid_until.is_none() {
                    p.payment.valid_until = Some(now.plus_millis(PAYOUT_VALIDITY_MS));
                }
                // Durable before the side effect, and not due while we submit (the claim
                // rule shared with the engine): a crash now leaves SUBMITTING, which a
                // later round resolves by asking the rail.
                p.next_check_at = Some(hold_through_side_effect(now, cfg.claim_lease_ms));
                version = self.save_payout(&p, version).await?;
                match rail.submit(&p.payment).await {
                    Ok(sub) => {
                        p.status = PayoutStatus::Submitted;
                        p.tx_hash = sub.tx_hash.or(p.tx_hash);
                        report.submitted += 1;
                    }
                    Err(RailError::Rejected { reason }) => {
                        return self
                            .finish_payout(p, version, Outcome::Failed(reason), None, report)
                            .await;
                    }
                    Err(_) => {
                        p.status = PayoutStatus::Unknown;
                        report.unknown += 1;
                    }
                }
                p.next_check_at = Some(now.plus_millis(cfg.poll_interval_ms));
                p.updated_at = now;
                self.save_payout(&p, version).await?;
                Ok(())
            }
            PayoutStatus::Submitting => {
                // Found mid-submit (a crash): the outcome is unknown.
                p.status = PayoutStatus::Unknown;
                p.next_check_at = Some(now);
                p.updated_at = now;
                report.unknown += 1;
                self.save_payout(&p, version).await?;
                Ok(())
            }
            PayoutStatus::Submitted | PayoutStatus::Unknown => {
                let status = match rail.status(&p.id).await {
                    Ok(s) => s,
                    Err(e) => {
                        p.next_check_at = Some(now.plus_millis(cfg.poll_interval_ms));
                        self.save_payout(&p, version).await?;
                        return Err(rail_err(e));
                    }
                };
                match status {
                    SubmissionStatus::Confirmed {
                        tx_hash,
                        block,
                        cost,
                        ..
                    } => {
                        p.tx_hash = Some(tx_hash);
                        p.block = Some(block);
                        self.finish_payout(p, version, Outcome::Confirmed, cost, report)
                            .await
                    }
                    SubmissionStatus::Failed {
                        reason,
                        tx_hash,
                        cost,
                    } => {
                        p.tx_hash = tx_hash.or(p.tx_hash);
                        self.finish_payout(p, version, Outcome::Failed(reason), cost, report)
                            .await
                    }
                    SubmissionStatus::Pending { tx_hash } => {
                        report.polled += 1;
                        p.tx_hash = tx_hash.or(p.tx_hash);
                        p.next_check_at = Some(now.plus_millis(cfg.poll_interval_ms));
                        self.save_payout(&p, version).await?;
                        Ok(())
                    }
                    SubmissionStatus::NotFound => {
                        // A proof only once the payout's deadline (plus the grace for the
                        // clocks) has passed, as for the engine's operations: before, a
                        // submit still in flight in another worker may land. A payout
                        // recorded before deadlines existed is never failed here.
                        if p.payment.past_deadline(now, cfg.unknown_grace_ms) {
                            let reason = "the payout never reached the network".to_string();
                            self.finish_payout(p, version, Outcome::Failed(reason), None, report)
                                .await
                        } else {
                            report.polled += 1;
                            p.next_check_at = Some(now.plus_millis(cfg.poll_interval_ms));
                            self.save_payout(&p, version).await?;
                            Ok(())
                        }
                    }
                }
            }
            PayoutStatus::Confirmed | PayoutStatus::Failed => Ok(()),
        }
    }

    /// Records a payout's final outcome with the deal's transition, the ledger post or
    /// void, the history entry, the event and the metering of what it cost (`cost`, in
    /// the tenant's sponsorship budget), in one batch.
    async fn finish_payout(
        &self,
        mut p: PayoutRecord,
        mut p_version: u64,
        outcome: Outcome,
        cost: Option<stablecoin_core::ports::SponsorCost>,
        report: &mut EscrowTickReport,
    ) -> EscrowResult<()> {
        let actor = Actor::system("payout");
        for _ in 0..MAX_RETRIES {
            let now = self.now();
            let Versioned {
                record: mut deal,
                version: deal_version,
            } = self.load_any(&p.deal.0).await?;
            let from = deal.phase();
            let mut batch = Batch::default();
            p.updated_at = now;
            p.next_check_at = None;
            let hold = p.hold.clone();
            let (ledger_id, phase) = match &outcome {
                Outcome::Confirmed => {
                    p.status = PayoutStatus::Confirmed;
                    p.settled_at = Some(now);
                    (
                        format!("{}:post", p.id),
                        LedgerPhase::Post {
                            pending_id: hold.id.clone(),
                        },
                    )
                }
                Outcome::Failed(reason) => {
                    p.status = PayoutStatus::Failed;
                    p.error_reason = Some(reason.clone());
                    (
                        format!("{}:void", p.id),
                        LedgerPhase::Void {
                            pending_id: hold.id.clone(),
                        },
                    )
                }
            };
            batch.ledger.push(LedgerTransfer {
                id: ledger_id,
                debit: hold.debit,
                credit: hold.credit,
                amount: hold.amount,
                phase,
            });
            let payout_data = |p: &PayoutRecord| {
                json!({
                    "payout_id": p.id,
                    "tx_hash": p.tx_hash,
                    "block": p.block,
                    "amount": p.amount.to_base_units_string(),
                    "token": p.token.as_str(),
                    "to": p.to.as_str(),
                    "to_address": p.payment.legs.first().map(|l| l.to.0.clone()),
                    "error_reason": p.error_reason,
                })
            };
            let (event, reason) = match p.kind {
                PayoutKind::Deal(purpose) => {
                    let claim = match &deal.payout {
                        Some(c) if c.payout_id == p.id => c.clone(),
                        _ => {
                            return Err(EscrowError::Storage(format!(
                                "payout {} is not the one {} has claimed",
                                p.id, deal.id
                            )));
                        }
                    };
                    match &outcome {
                        Outcome::Confirmed => {
                            let to = transition(from, Action::PayoutConfirmed)?;
                            deal.set_phase(to);
                            deal.payout = None;
                            deal.payout_tx_hash = p.tx_hash.clone();
                            deal.payout_failure_reason = None;
                            if let Some(note) = claim.resolution_note {
                                deal.resolution_note = Some(note);
                            }
                            match purpose {
                                PayoutPurpose::Release => {
                                    deal.released_at = Some(now);
                                    (EscrowEventType::Released, None)
                                }
                                PayoutPurpose::Refund => {
                                    deal.refunded_at = Some(now);
                                    (EscrowEventType::Refunded, None)
                                }
                            }
                        }
                        Outcome::Failed(reason) => {
                            let to = transition(from, Action::PayoutFailed)?;
                            deal.set_phase(to);
                            deal.payout = None;
                            deal.payout_failure_reason = Some(reason.clone());
                            (EscrowEventType::PayoutFailed, Some(reason.clone()))
                        }
                    }
                }
                PayoutKind::Recovery(kind) => {
                    if let Some(r) = deal.recoveries.iter_mut().find(|r| r.payout_id == p.id) {
                        r.status = p.status;
                        r.tx_hash = p.tx_hash.clone();
                    }
                    match &outcome {
                        Outcome::Confirmed => (EscrowEventType::Recovered, None),
                        Outcome::Failed(reason) => {
                            // Nothing moved: the balance is recoverable again.
                            deal.add_recoverable(kind, p.token, p.amount)
                                .ok_or_else(overflow)?;
                            (EscrowEventType::RecoveryFailed, Some(reason.clone()))
                        }
                    }
                }
            };
            let data = payout_data(&p);
            self.push_event(
                &mut batch,
                &mut deal,
                event,
                Some(from),
                &actor,
                None,
                reason,
                Some(data),
                now,
            )?;
            batch.puts.push(p.update(p_version)?);
            batch.puts.push(deal.update(deal_version)?);
            self.queue_put(&mut batch, &deal).await?;
            batch.puts.extend(
                self.inner
                    .kernel
                    .sponsorship_puts(&p.tenant, self.inner.rail.id(), cost)
                    .await?,
            );
            batch.background = true;
            match self.commit(batch).await {
                Ok(()) => {
                    match outcome {
                        Outcome::Confirmed => report.settled += 1,
                        Outcome::Failed(_) => report.failed += 1,
                    }
                    return Ok(());
                }
                Err(EscrowError::Conflict { .. }) => {
                    let Some(cur) =
                        get_record::<PayoutRecord>(&*self.inner.kernel.ports().store, &p.id)
                            .await?
                    else {
                        return Err(EscrowError::Storage(format!("payout {} vanished", p.id)));
                    };
                    if cur.record.status.is_terminal() {
                        return Ok(()); // another worker recorded it
                    }
                    p_version = cur.version;
                }
                Err(e) => return Err(e),
            }
        }
        Err(EscrowError::Conflict {
            what: format!("payout {}", p.id),
        })
    }
}

/// Escrow as one [`Worker`] of the kernel's [`stablecoin_core::kernel::Runtime`]: a
/// round is an [`EscrowEngine::tick`] without the inbound scan (the runtime's one router
/// hands escrow its deposits, [`stablecoin_core::kernel::Runtime::products`]). Escrow's
/// rounds claim a batch at most, so they never report `more_due`; the runtime runs them
/// every interval.
#[async_trait::async_trait]
impl Worker for EscrowEngine {
    fn name(&self) -> &str {
        "escrow"
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
