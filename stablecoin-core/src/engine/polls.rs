//! Polling submitted operations, many to one commit.
//!
//! A poll asks the rail where one payment stands and decides its next state: settled
//! (its holds posted, its events emitted), failed (its holds voided), or still on its
//! way (polled again later). Each decision is a [`Batch`]. The worker polls every claimed
//! operation side by side ([`Engine::poll_all`]) and commits their decisions as ONE
//! batch: under load a tick settles dozens of payments, and one commit for all of them
//! is one writer round and one durable flush instead of dozens.
//!
//! Atomicity is the price: one decision that cannot commit (its record changed behind
//! the claim, a ledger check refuses it) would fail the others. So a refused merged
//! commit falls back to one commit per decision, and only the faulty one is left due.

use super::sponsorship::Metered;
use super::worker::TickReport;
use super::{Engine, Operation};
use crate::error::CoreResult;
use crate::ports::rail::{Rail, SubmissionStatus};
use crate::ports::record::{Record, Versioned};
use crate::ports::store::Batch;
use std::sync::Arc;

/// What one poll decided: the commit that records it, and what it counts for.
pub(crate) struct PollStep {
    pub batch: Batch,
    pub report: TickReport,
    /// A confirmed payment's cost to add to its tenant's sponsorship budget, in the same
    /// commit as the settlement (see `sponsorship.rs`).
    pub meter: Option<Metered>,
}

impl Engine {
    /// One poll of `op` (SUBMITTED or SUBMISSION_UNKNOWN, read at `version`): the commit
    /// its answer calls for, not yet made.
    ///
    /// The reconciler never resubmits: a payment whose submission is unknown is resolved
    /// by asking the rail about the same id. It is failed on `NotFound` only once it can
    /// no longer land (after its deadline and the grace), never on a timer alone.
    pub(crate) async fn poll_step(
        &self,
        rail: &Arc<dyn Rail>,
        mut op: Operation,
        version: u64,
    ) -> CoreResult<PollStep> {
        let now = self.now();
        let mut report = TickReport::default();
        let later = Some(now.plus_millis(self.config.poll_interval_ms));
        let status = match self.op_status(rail, &mut op).await {
            Ok(s) => s,
            Err(e) => {
                op.next_check_at = later;
                report
                    .errors
                    .push(format!("{}: {}", op.id.0, super::rail_err(e)));
                return Ok(PollStep {
                    batch: Self::update_only(&op, version)?,
                    report,
                    meter: None,
                });
            }
        };
        let mut meter = None;
        let batch = match status {
            SubmissionStatus::Confirmed {
                tx_hash,
                block,
                created_recipient_account,
                cost,
            } => {
                meter = self.to_meter(&op.tenant, op.rail, cost).await?;
                op.tx_hash = Some(tx_hash);
                op.block = Some(block);
                op.created_recipient_account = created_recipient_account;
                report.settled += 1;
                self.settlement(op, version).await?
            }
            SubmissionStatus::Failed {
                reason,
                tx_hash,
                cost,
            } => {
                // A payment that failed on chain still cost the sponsor (a reverted user
                // operation's gas, a failed transaction's fee, Energy an attempt burnt):
                // metered in the same commit as the failure, like a settlement's.
                meter = self.to_meter(&op.tenant, op.rail, cost).await?;
                op.tx_hash = tx_hash.or(op.tx_hash);
                report.failed += 1;
                self.failure(op, version, reason)?
            }
            SubmissionStatus::Pending { tx_hash } => {
                report.polled += 1;
                op.tx_hash = tx_hash.or(op.tx_hash);
                op.next_check_at = later;
                Self::update_only(&op, version)?
            }
            SubmissionStatus::NotFound => {
                // A proof only after the deadline: until then the payment may still be
                // on its way (another worker inside `submit`, a node that has not seen
                // it). A payment without a deadline (recorded before deadlines existed)
                // is never failed here.
                if op.payment.past_deadline(now, self.config.unknown_grace_ms) {
                    report.failed += 1;
                    let reason = "the payment never reached the network before its deadline";
                    self.failure(op, version, reason.to_string())?
                } else {
                    op.next_check_at = later;
                    Self::update_only(&op, version)?
                }
            }
        };
        Ok(PollStep {
            batch,
            report,
            meter,
        })
    }

    /// Commits one poll's decision with its metering (a fresh read of the budget it
    /// meters, so decisions committed one after the other each count).
    pub(crate) async fn commit_step(&self, step: PollStep) -> CoreResult<TickReport> {
        let mut batch = step.batch;
        if let Some(m) = &step.meter {
            batch.puts.extend(self.meter_puts(&[m]).await?);
        }
        self.commit(batch).await?;
        Ok(step.report)
    }

    /// Whether `op` is advanced by a poll (and so may share the polls' commit).
    pub(crate) fn pollable(op: &Operation) -> bool {
        use crate::domain::state::OpStatus;
        matches!(op.status, OpStatus::Submitted | OpStatus::SubmissionUnknown)
    }

    /// Polls `ops` side by side and commits every decision in one batch (one per
    /// decision if the merged one is refused).
    pub(crate) async fn poll_all(&self, ops: Vec<Versioned<Operation>>) -> TickReport {
        let mut report = TickReport::default();
        let steps = futures_util::future::join_all(ops.into_iter().map(|v| async move {
            let id = v.record.id.0.clone();
            let step = match self.rail(v.record.rail) {
                Ok(rail) => {
                    let rail = rail.clone();
                    self.poll_step(&rail, v.record, v.version).await
                }
                Err(e) => Err(e),
            };
            (id, step)
        }))
        .await;
        let mut decided = Vec::with_capacity(steps.len());
        for (id, step) in steps {
            match step {
                Ok(s) => decided.push((id, s)),
                Err(e) => report.errors.push(format!("{id}: {e}")),
            }
        }
        if decided.is_empty() {
            return report;
        }
        let mut merged = Batch {
            background: true,
            ..Default::default()
        };
        for (_, s) in &decided {
            let b = s.batch.clone();
            merged.unchanged.extend(b.unchanged);
            merged.puts.extend(b.puts);
            merged.accounts.extend(b.accounts);
            merged.ledger.extend(b.ledger);
            merged.outbox.extend(b.outbox);
        }
        // Every cost of the tick, one budget update per (tenant, rail): two settlements
        // of one tenant in one commit must not update its budget from the same version.
        let metered: Vec<&Metered> = decided
            .iter()
            .filter_map(|(_, s)| s.meter.as_ref())
            .collect();
        let merged_ok = if metered.is_empty() {
            true
        } else {
            match self.meter_puts(&metered).await {
                Ok(puts) => {
                    merged.puts.extend(puts);
                    true
                }
                Err(_) => false,
            }
        };
        if merged_ok && self.commit(merged).await.is_ok() {
            for (_, s) in decided {
                report.absorb(s.report);
            }
            return report;
        }
        for (id, s) in decided {
            match self.commit_step(s).await {
                Ok(r) => report.absorb(r),
                Err(e) => report.errors.push(format!("{id}: {e}")),
            }
        }
        report
    }

    /// The commit of `op`'s new state alone (read at `version`), as background work.
    pub(crate) fn update_only(op: &Operation, version: u64) -> CoreResult<Batch> {
        Ok(Batch {
            puts: vec![op.update(version)?],
            background: true,
            ..Default::default()
        })
    }
}
