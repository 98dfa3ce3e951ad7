//! Sanctions screening at admission (issue #51): the one rule every product applies
//! before it holds anything for an outbound payment.
//!
//! Why in the kernel: wallets (sends, withdrawals, swaps), escrow (payouts) and checkout
//! all build [`RailPayment`]s on one kernel; screening them here is one rule, written
//! once, that an embedder of any product gets without a host doing anything.
//!
//! The rule: every address a payment pays (each leg's destination) is screened before
//! the use case commits. A hit is refused (SCREENING_HIT) and audited (`screening.hit`
//! in the staff audit log, with the list and its entry). A screen that cannot answer is
//! refused (SCREENING_UNAVAILABLE, audited `screening.unavailable`) when the gate fails
//! closed, and let through, audited `screening.skipped`, when it fails open. Without a
//! gate nothing is screened (an SDK default; the reference server configures one).
//! Screening runs inside a use case's idempotent decision: a replay answers what was
//! decided, and a retried refusal is screened again.

use super::Kernel;
use super::staff::StaffAuditEntry;
use crate::domain::chain::{ChainAddress, RailId};
use crate::error::{CoreError, CoreResult};
use crate::ports::rail::RailPayment;
use crate::ports::record::Record;
use crate::ports::screening::{Screening, ScreeningVerdict, normalize_address};
use crate::ports::store::Batch;
use std::sync::Arc;

/// The audit actor of screening decisions: the service itself, not a person.
pub const SCREENING_ACTOR: &str = "screening";

/// What the gate does when the screen answers Unavailable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScreeningFailMode {
    /// Refuse (SCREENING_UNAVAILABLE): a payment is never sent unscreened. Production.
    Closed,
    /// Let the payment through, audited `screening.skipped`. For development, or a
    /// deployment whose compliance officer accepts the risk during a vendor outage.
    Open,
}

/// A screen and its fail mode: what [`Kernel::set_screening`] installs.
#[derive(Clone)]
pub struct ScreeningGate {
    /// The adapter asked.
    pub screen: Arc<dyn Screening>,
    /// What an Unavailable answer does.
    pub fail_mode: ScreeningFailMode,
}

impl Kernel {
    /// Installs (or, with `None`, removes) the screening gate of every product built on
    /// this kernel, clones included.
    pub fn set_screening(&self, gate: Option<ScreeningGate>) {
        if let Ok(mut g) = self.inner.screening.write() {
            *g = gate;
        }
    }

    /// The installed gate, if any.
    pub fn screening(&self) -> Option<ScreeningGate> {
        self.inner.screening.read().ok().and_then(|g| g.clone())
    }

    /// Screens every destination of `payment` on `rail` for `operation` (what the audit
    /// entry names: `send`, `withdrawal`, `escrow.payout`, ...) of `tenant`. `Ok` when
    /// each is clear (or unscreened by an open gate); SCREENING_HIT or
    /// SCREENING_UNAVAILABLE otherwise, audited. Writes nothing for a clear payment.
    pub async fn screen_payment(
        &self,
        tenant: &str,
        operation: &str,
        rail: RailId,
        payment: &RailPayment,
    ) -> CoreResult<()> {
        let to: Vec<&ChainAddress> = payment.legs.iter().map(|l| &l.to).collect();
        self.screen_addresses(tenant, operation, &payment.id, rail, &to)
            .await
    }

    /// [`Kernel::screen_payment`] of bare addresses, for a use case that has not built
    /// its payment yet; `subject` is what the audit entry's note names (an operation id).
    pub async fn screen_addresses(
        &self,
        tenant: &str,
        operation: &str,
        subject: &str,
        rail: RailId,
        addresses: &[&ChainAddress],
    ) -> CoreResult<()> {
        let Some(gate) = self.screening() else {
            return Ok(());
        };
        let mut seen = std::collections::BTreeSet::new();
        for address in addresses {
            if !seen.insert(normalize_address(&address.0)) {
                continue;
            }
            let verdict = gate.screen.screen(rail, address).await;
            let target = format!("{}:{}", rail.name(), address.0);
            let context = format!(
                "{operation} {subject} of tenant {tenant}; screen {}",
                gate.screen.name()
            );
            match verdict {
                ScreeningVerdict::Clear => {}
                ScreeningVerdict::Hit { list, reference } => {
                    let note = format!("{context}; list {list}; entry {reference}");
                    self.audit_screening("screening.hit", &target, &note)
                        .await?;
                    return Err(CoreError::ScreeningHit { list, reference });
                }
                ScreeningVerdict::Unavailable { reason } => {
                    let reason = crate::domain::redact::urls(&reason);
                    let note = format!("{context}; {reason}");
                    match gate.fail_mode {
                        ScreeningFailMode::Closed => {
                            self.audit_screening("screening.unavailable", &target, &note)
                                .await?;
                            return Err(CoreError::ScreeningUnavailable { reason });
                        }
                        ScreeningFailMode::Open => {
                            self.audit_screening("screening.skipped", &target, &note)
                                .await?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Commits one audit entry on its own: a refusal writes nothing else. If it cannot
    /// be written the request fails (STORAGE_ERROR) rather than pass unaudited.
    async fn audit_screening(&self, action: &str, target: &str, note: &str) -> CoreResult<()> {
        let target: String = target.chars().take(200).collect();
        let note: String = note.chars().take(2000).collect();
        let entry = StaffAuditEntry::new(
            SCREENING_ACTOR,
            action,
            &target,
            Some(&note),
            self.now(),
            self.random10(),
        )?;
        let batch = Batch {
            puts: vec![entry.insert()?],
            ..Default::default()
        };
        // A new audit entry under a fresh id: any failure is the store's (the kernel does
        // not map ledger errors, which an audit entry cannot raise).
        self.commit(batch)
            .await
            .map(|_| ())
            .map_err(|e| crate::error::CoreError::Storage(e.to_string()))
    }
}
