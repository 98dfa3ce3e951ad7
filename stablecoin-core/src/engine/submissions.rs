//! Submitting many claimed operations of one rail together: one commit records them all
//! SUBMITTING (before the side effect, as for one), one [`Rail::submit_batch`] call puts
//! them on chain (EVM: as few `handleOps` bundles as the limits allow), and one commit
//! records every outcome. A payment the rail refuses is failed on its own (its holds
//! voided, its event emitted); it never fails the others.
//!
//! Swaps go to their venue one by one (`worker::advance`): a venue executes orders, not
//! payments.

use super::worker::TickReport;
use super::{Engine, Operation};
use crate::domain::state::{OpEvent, OpKind, OpStatus, transition};
use crate::error::CoreResult;
use crate::ports::claim::hold_through_side_effect;
use crate::ports::rail::{Rail, RailError};
use crate::ports::record::{Record, Versioned};
use crate::ports::store::Batch;
use std::sync::Arc;

impl Engine {
    /// Whether `op` is submitted through its rail's batch path now.
    pub(crate) fn batch_submittable(op: &Operation) -> bool {
        op.kind != OpKind::Swap && matches!(op.status, OpStatus::Queued | OpStatus::Pending)
    }

    /// Submits `ops` (all due for their first submission, all on `rail`) as one batch.
    pub(crate) async fn submit_group(
        &self,
        rail: &Arc<dyn Rail>,
        ops: Vec<Versioned<Operation>>,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        let mut staged = Vec::with_capacity(ops.len());
        let mut batch = Batch {
            background: true,
            ..Default::default()
        };
        for v in ops {
            let mut op = v.record;
            op.status = transition(op.kind, op.status, OpEvent::Claim)?;
            op.submitted_at = Some(now);
            op.updated_at = now;
            if op.payment.valid_until.is_none() {
                op.payment.valid_until = Some(now.plus_millis(self.config.payment_validity_ms));
            }
            // Not due while the batch is out (the claim rule); a crash leaves SUBMITTING,
            // which the next claim resolves by asking the rail.
            op.next_check_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
            batch.puts.push(op.update(v.version)?);
            staged.push((op, v.version + 1));
        }
        self.commit(batch).await?;
        let payments: Vec<_> = staged.iter().map(|(op, _)| op.payment.clone()).collect();
        let answers = rail.submit_batch(&payments).await;
        let mut done = Batch {
            background: true,
            ..Default::default()
        };
        let mut refused = Vec::new();
        for ((mut op, version), answer) in staged.into_iter().zip(answers) {
            match answer {
                Ok(sub) => {
                    op.status = transition(op.kind, op.status, OpEvent::Submitted)?;
                    op.tx_hash = sub.tx_hash.or(op.tx_hash);
                    report.submitted += 1;
                }
                Err(RailError::Rejected { reason }) => {
                    refused.push((op, version, reason));
                    continue;
                }
                Err(_) => {
                    op.status = transition(op.kind, op.status, OpEvent::OutcomeUnknown)?;
                    report.unknown += 1;
                }
            }
            op.next_check_at = Some(now.plus_millis(self.config.poll_interval_ms));
            op.updated_at = now;
            done.puts.push(op.update(version)?);
        }
        if !done.puts.is_empty() {
            self.commit(done).await?;
        }
        for (op, version, reason) in refused {
            if let Err(e) = self.fail(op, version, reason, report).await {
                report.errors.push(e.to_string());
            }
        }
        Ok(())
    }
}
