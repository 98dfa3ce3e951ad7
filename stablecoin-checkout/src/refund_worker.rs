//! The refunds' background work: claim links that expire, and refunds sent from the
//! treasury's address on their network.
//!
//! Sent as a checkout sweep is sent (`crate::sweep`, the model): SUBMITTING committed
//! before the rail call with the claim held through it, the payment submitted under the
//! attempt's id (rails are idempotent by it, and sponsor its gas as any send of the
//! service's), then polled with the kernel's one poll rule
//! (`stablecoin_core::kernel::attempts`). Unlike a sweep, a refund gives up: after
//! [`MAX_ATTEMPTS`] attempts that could not land it fails with the last reason, and its
//! money goes back where it came from. It gives up only from `pending`, when no attempt
//! can still land.

use crate::engine::CheckoutEngine;
use crate::error::CheckoutResult;
use crate::events;
use crate::model::{Mode, accounts};
use crate::refund_model::{Refund, refund_account};
use crate::refund_state::{RefundEvent, RefundStatus, transition};
use crate::worker::CheckoutTickReport;
use stablecoin_core::kernel::attempts::{self, AttemptNext, POLL_MS, RETRY_MS};
use stablecoin_core::ports::{
    Batch, ChainAddress, KeyPurpose, LedgerTransfer, LegRole, PaymentLeg, Phase as LedgerPhase,
    Rail, RailError, RailPayment, Record, Versioned, hold_through_side_effect,
};
use std::sync::Arc;

/// Attempts a refund makes before it fails and its money goes back.
pub const MAX_ATTEMPTS: u32 = 5;
/// How long one refund payment may take to land (its deadline).
const VALIDITY_MS: i64 = 10 * 60_000;

impl CheckoutEngine {
    /// Advances the due refunds (one claim page).
    pub(crate) async fn refunds_due(&self, report: &mut CheckoutTickReport) -> CheckoutResult<()> {
        for v in self.claim_due_page::<Refund>().await? {
            let id = v.record.id.clone();
            match self.advance_refund(v).await {
                Ok(true) => report.refunds += 1,
                Ok(false) => {}
                // Another writer (the payer's claim) moved it: its turn is next round.
                Err(crate::error::CheckoutError::Conflict { .. }) => {}
                Err(e) => report.errors.push(format!("{id}: {e}")),
            }
        }
        Ok(())
    }

    async fn save_refund(
        &self,
        r: &Refund,
        version: u64,
        outbox: Option<&str>,
    ) -> CheckoutResult<u64> {
        self.save_refund_metered(r, version, outbox, Vec::new())
            .await
    }

    /// [`Self::save_refund`] with the sponsorship budget updates of what the attempt
    /// cost, in the same commit.
    async fn save_refund_metered(
        &self,
        r: &Refund,
        version: u64,
        outbox: Option<&str>,
        metering: Vec<stablecoin_core::ports::Put>,
    ) -> CheckoutResult<u64> {
        let mut puts = vec![r.update(version)?];
        puts.extend(metering);
        let mut batch = Batch {
            puts,
            background: true,
            ..Default::default()
        };
        if let Some(name) = outbox {
            let s = self.load(&r.session).await?.map(|v| v.record);
            if let Some(s) = s {
                batch.outbox.push(events::refund_event(
                    self.new_id("evt"),
                    &s,
                    r,
                    name,
                    self.now(),
                ));
            }
        }
        self.commit(batch).await?;
        Ok(version + 1)
    }

    /// One step of a refund; `true` when it reached a final state.
    async fn advance_refund(&self, v: Versioned<Refund>) -> CheckoutResult<bool> {
        let Versioned {
            record: mut r,
            mut version,
        } = v;
        let now = self.now();
        match r.status {
            RefundStatus::Completed | RefundStatus::Failed | RefundStatus::Expired => {
                r.due_at = None;
                self.save_refund(&r, version, None).await?;
                Ok(false)
            }
            RefundStatus::AwaitingClaim => match r.claim_expires_at {
                Some(until) if now < until => {
                    r.due_at = Some(until);
                    self.save_refund(&r, version, None).await?;
                    Ok(false)
                }
                _ => {
                    self.return_refund(r, version, RefundEvent::Expire, None)
                        .await?;
                    Ok(true)
                }
            },
            RefundStatus::Pending if r.mode == Mode::Test => {
                // A test refund moves nothing: it completes with a simulated hash.
                r.status = transition(r.status, RefundEvent::Submit)?;
                r.status = transition(r.status, RefundEvent::Landed)?;
                r.attempt = 1;
                r.tx_hash = Some(format!("sim_{}", r.id));
                r.completed_at = Some(now);
                r.updated_at = now;
                r.due_at = None;
                self.save_refund(&r, version, Some(events::REFUND_COMPLETED))
                    .await?;
                Ok(true)
            }
            RefundStatus::Pending if r.attempt >= MAX_ATTEMPTS => {
                let why = r
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "the payment could not be sent".into());
                self.return_refund(
                    r,
                    version,
                    RefundEvent::GiveUp,
                    Some(format!("{MAX_ATTEMPTS} attempts failed: {why}")),
                )
                .await?;
                Ok(true)
            }
            RefundStatus::Pending => {
                let (Some(network), Some(to)) = (r.network.clone(), r.address.clone()) else {
                    // No destination: nothing can be sent; it fails and goes back.
                    self.return_refund(
                        r,
                        version,
                        RefundEvent::GiveUp,
                        Some("no destination".into()),
                    )
                    .await?;
                    return Ok(true);
                };
                let Some(rail) = self.rail_named(&network) else {
                    r.last_error = Some("network not configured".into());
                    r.attempt += 1;
                    r.due_at = Some(now.plus_millis(RETRY_MS));
                    self.save_refund(&r, version, None).await?;
                    return Ok(false);
                };
                let from_address = match rail.address_for(&KeyPurpose::Treasury).await {
                    Ok(a) => a,
                    Err(e) => {
                        r.last_error = Some(e.to_string());
                        r.due_at = Some(now.plus_millis(RETRY_MS));
                        self.save_refund(&r, version, None).await?;
                        return Ok(false);
                    }
                };
                r.attempt += 1;
                r.payment = Some(RailPayment {
                    id: format!("{}_{}", r.id, r.attempt),
                    from: KeyPurpose::Treasury,
                    from_address,
                    token: r.token,
                    legs: vec![PaymentLeg {
                        to: ChainAddress(to),
                        amount: r.amount,
                        role: LegRole::Recipient,
                    }],
                    valid_until: Some(now.plus_millis(VALIDITY_MS)),
                });
                self.submit_refund(&rail, r, version).await
            }
            RefundStatus::Submitting | RefundStatus::Submitted => {
                let rail = r.network.as_deref().and_then(|n| self.rail_named(n));
                let (Some(rail), Some(payment)) = (rail, r.payment.clone()) else {
                    r.last_error = Some("network not configured".into());
                    r.due_at = Some(now.plus_millis(RETRY_MS));
                    self.save_refund(&r, version, None).await?;
                    return Ok(false);
                };
                let status = rail.status(&payment.id).await;
                match attempts::after_poll(status, &payment, now) {
                    AttemptNext::Landed { tx_hash, cost } => {
                        let metering = self
                            .kernel
                            .sponsorship_puts(&r.tenant, rail.id(), cost)
                            .await?;
                        self.complete_refund(r, version, tx_hash, metering).await?;
                        Ok(true)
                    }
                    AttemptNext::PollAgain { due_at, error } => {
                        if error.is_some() {
                            r.last_error = error;
                        }
                        r.due_at = Some(due_at);
                        self.save_refund(&r, version, None).await?;
                        Ok(false)
                    }
                    AttemptNext::NewAttempt {
                        due_at,
                        error,
                        cost,
                    } => {
                        let metering = self
                            .kernel
                            .sponsorship_puts(&r.tenant, rail.id(), cost)
                            .await?;
                        // A write-ahead SUBMITTING whose payment can never land counts
                        // as sent and lost.
                        if r.status == RefundStatus::Submitting {
                            r.status = transition(r.status, RefundEvent::Sent)?;
                        }
                        r.status = transition(r.status, RefundEvent::AttemptLost)?;
                        if error.is_some() {
                            r.last_error = error;
                        }
                        r.due_at = Some(due_at);
                        self.save_refund_metered(&r, version, None, metering)
                            .await?;
                        Ok(false)
                    }
                    AttemptNext::SubmitAgain => {
                        r.status = transition(r.status, RefundEvent::Resubmit)?;
                        version = self.save_refund(&r, version, None).await?;
                        self.submit_refund(&rail, r, version).await
                    }
                }
            }
        }
    }

    fn rail_named(&self, network: &str) -> Option<Arc<dyn Rail>> {
        self.kernel
            .rails()
            .find(|x| x.id().name() == network)
            .cloned()
    }

    /// Commits SUBMITTING (held through the call), then submits the current payment.
    async fn submit_refund(
        &self,
        rail: &Arc<dyn Rail>,
        mut r: Refund,
        version: u64,
    ) -> CheckoutResult<bool> {
        let Some(payment) = r.payment.clone() else {
            return Ok(false);
        };
        let now = self.now();
        if r.status == RefundStatus::Pending {
            r.status = transition(r.status, RefundEvent::Submit)?;
        }
        r.updated_at = now;
        r.due_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
        let version = self.save_refund(&r, version, None).await?;
        let now = self.now();
        let mut announce = None;
        match rail.submit(&payment).await {
            Ok(sub) => {
                r.status = transition(r.status, RefundEvent::Sent)?;
                if sub.tx_hash.is_some() {
                    r.tx_hash = sub.tx_hash;
                }
                r.due_at = Some(now.plus_millis(POLL_MS));
                if r.attempt == 1 {
                    announce = Some(events::REFUND_SUBMITTED);
                }
            }
            Err(RailError::Rejected { reason }) => {
                // Nothing was sent: the next attempt later, under a new id.
                r.status = transition(r.status, RefundEvent::Rejected)?;
                r.last_error = Some(reason);
                r.due_at = Some(now.plus_millis(RETRY_MS));
            }
            Err(e) => {
                // Unknown outcome: ask the rail.
                r.status = transition(r.status, RefundEvent::Sent)?;
                r.last_error = Some(e.to_string());
                r.due_at = Some(now.plus_millis(POLL_MS));
            }
        }
        r.updated_at = now;
        self.save_refund(&r, version, announce).await?;
        Ok(false)
    }

    /// The refund landed: final, and its money leaves the ledger to the chain.
    async fn complete_refund(
        &self,
        mut r: Refund,
        version: u64,
        tx_hash: String,
        metering: Vec<stablecoin_core::ports::Put>,
    ) -> CheckoutResult<()> {
        let now = self.now();
        r.status = transition(r.status, RefundEvent::Landed)?;
        r.tx_hash = Some(tx_hash);
        r.completed_at = Some(now);
        r.updated_at = now;
        r.due_at = None;
        let mut puts = vec![r.update(version)?];
        puts.extend(metering);
        let mut batch = Batch {
            puts,
            background: true,
            ..Default::default()
        };
        if r.mode == Mode::Live
            && let Some(network) = &r.network
        {
            let hold = refund_account(&r.id, r.token);
            let out = accounts::chain_in(network, r.token);
            batch.ledger.push(LedgerTransfer {
                id: format!("{}:out", r.id),
                debit: hold.id.clone(),
                credit: out.id.clone(),
                amount: r.amount,
                phase: LedgerPhase::Single,
            });
            batch.accounts.push(hold);
            batch.accounts.push(out);
        }
        if let Some(s) = self.load(&r.session).await? {
            batch.outbox.push(events::refund_event(
                self.new_id("evt"),
                &s.record,
                &r,
                events::REFUND_COMPLETED,
                now,
            ));
        }
        self.commit(batch).await
    }
}
