//! Staff reads, releases and returns of quarantined deposits: deposits from a source the
//! sanctions screen flagged, held apart by the inbound router (`kernel::quarantine`,
//! issue #51).
//!
//! A release is a staff decision that credits money, so it follows the stray returns'
//! and treasury credits' rules: a named identity, the audit entry in the decision's own
//! commit, and the two-person rule above `EngineConfig::topup_single_approval_max` (the
//! first call proposes, a different identity repeating it decides). A decided release
//! is RELEASING: the inbound router hands the transfer to its product on its next pump
//! and closes the quarantine account (RELEASED). A return is a stray return
//! ([`Engine::return_stray_deposit`]): screened, so a return to a listed sender is
//! refused (SCREENING_HIT) and staff name where the money goes instead.

use super::{Engine, StaffIdentity, StrayView};
use crate::error::{CoreError, CoreResult};
use crate::kernel::quarantine::{QUARANTINE_SUBKIND, QuarantineRelease};
use crate::kernel::stray::StrayStatus;
use crate::ports::record::{Record, Versioned};
use crate::ports::store::Batch;

impl Engine {
    /// A page of quarantined deposits, newest first, optionally of one status (`held`,
    /// `proposed`, `releasing`, `released`, `returning`, `returned`), and the total.
    pub async fn quarantined_deposits(
        &self,
        status: Option<&str>,
        limit: u32,
        page: u32,
    ) -> CoreResult<(Vec<StrayView>, u64)> {
        self.list_strays(
            Some(QUARANTINE_SUBKIND),
            status,
            "must be held, proposed, releasing, released, returning or returned",
            limit,
            page,
        )
        .await
    }

    /// One quarantined deposit (NOT_FOUND for a stray or an unknown id).
    pub async fn quarantined_deposit(&self, id: &str) -> CoreResult<StrayView> {
        let v = self.load_quarantined(id).await?;
        self.stray_view(v.record).await
    }

    async fn load_quarantined(
        &self,
        id: &str,
    ) -> CoreResult<Versioned<crate::kernel::stray::StrayDeposit>> {
        let v = self.load_stray(id).await.map_err(|e| match e {
            CoreError::NotFound { id, .. } => CoreError::NotFound {
                kind: "quarantined deposit",
                id,
            },
            e => e,
        })?;
        if v.record.quarantine.is_none() {
            return Err(CoreError::NotFound {
                kind: "quarantined deposit",
                id: id.chars().take(64).collect(),
            });
        }
        Ok(v)
    }

    /// `staff` releases quarantined deposit `id` to the wallet, deal or session it was
    /// sent to, because of `reason`, under the two-person rule above the single-approval
    /// cap; audited in the same commit (`quarantine.release.proposed`,
    /// `quarantine.release`). A repeat of a decided release answers it again. Refusals
    /// write nothing.
    pub async fn release_quarantined_deposit(
        &self,
        staff: &StaffIdentity,
        id: &str,
        reason: &str,
    ) -> CoreResult<StrayView> {
        let reason = crate::kernel::staff::clean("reason", reason, 2000, true)?;
        let Versioned {
            record: mut s,
            version,
        } = self.load_quarantined(id).await?;
        let refused = |from: StrayStatus| CoreError::InvalidTransition {
            machine: "quarantined_deposit",
            from: from.as_str().into(),
            event: "release".into(),
        };
        let pending = s.quarantine.as_ref().and_then(|q| q.release.clone());
        let proposed_by = match (s.status, &pending) {
            (StrayStatus::Releasing | StrayStatus::Released, _) => {
                return self.stray_view(s).await;
            }
            (StrayStatus::Held, _) => None,
            (StrayStatus::Proposed, Some(r)) if s.returned.is_none() => {
                let p = r.proposed_by.clone().unwrap_or_default();
                if p == staff.id() {
                    return Err(CoreError::SecondApproverRequired { proposed_by: p });
                }
                Some(p)
            }
            // A return proposed or under way: one decision at a time.
            (status, _) => return Err(refused(status)),
        };
        let propose = proposed_by.is_none() && s.amount > self.config.topup_single_approval_max;
        let note = format!(
            "{} {} from {} to {} {}: {reason}",
            s.amount.to_decimal_string(),
            s.token,
            s.from,
            s.origin,
            s.origin_id
        );
        let action = if propose {
            "quarantine.release.proposed"
        } else {
            "quarantine.release"
        };
        let audit = self.audit_entry(staff.id(), action, &s.id, Some(&note))?;
        let release = QuarantineRelease {
            reason,
            proposed_by: if propose {
                Some(staff.id().to_string())
            } else {
                proposed_by
            },
            approved_by: (!propose).then(|| staff.id().to_string()),
            released_at: None,
            last_error: None,
        };
        if let Some(q) = s.quarantine.as_mut() {
            q.release = Some(release);
        }
        s.status = if propose {
            StrayStatus::Proposed
        } else {
            StrayStatus::Releasing
        };
        self.commit(Batch {
            puts: vec![s.update(version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        self.stray_view(s).await
    }

    /// `staff` returns quarantined deposit `id` to `to` (default: its sender): a stray
    /// return ([`Engine::return_stray_deposit`]), screened like any payment.
    pub async fn return_quarantined_deposit(
        &self,
        staff: &StaffIdentity,
        id: &str,
        to: Option<&str>,
        reason: &str,
    ) -> CoreResult<StrayView> {
        self.load_quarantined(id).await?;
        self.return_stray_deposit(staff, id, to, reason).await
    }
}
