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
use crate::domain::money::Token;
use crate::error::{CoreError, CoreResult};
use crate::kernel::quarantine::{QUARANTINE_SUBKIND, QuarantineRelease};
use crate::kernel::stray::{STRAY_LIST_OWNER, StrayDeposit, StrayStatus};
use crate::ports::kinds::kind;
use crate::ports::record::{Record, Versioned};
use crate::ports::store::{Batch, ListQuery, StoredRecord};
use std::collections::BTreeMap;

/// The statuses in which a quarantined deposit's tokens are still in its quarantine
/// account: not yet credited by a release (RELEASED) nor paid out by a return
/// (RETURNED).
pub const QUARANTINE_OPEN: [StrayStatus; 4] = [
    StrayStatus::Held,
    StrayStatus::Proposed,
    StrayStatus::Releasing,
    StrayStatus::Returning,
];

/// Records read per store page when every open quarantined deposit is read.
const OPEN_PAGE: usize = 500;

/// What quarantine holds, for `/metrics`: read from the records at scrape time, so
/// right on every node and after a restart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuarantineTotals {
    /// Quarantined deposits per status, every status listed (zero included).
    pub by_status: Vec<(StrayStatus, u64)>,
    /// Per (rail, token): the open deposits ([`QUARANTINE_OPEN`]) and the micro-units
    /// they hold (summed wide: no count of deposits can overflow it).
    pub held: BTreeMap<(String, Token), (u64, u128)>,
}

impl Engine {
    /// Every quarantined deposit whose tokens are still in quarantine
    /// ([`QUARANTINE_OPEN`]), oldest status first, paged through the store. Quarantine
    /// is the exception (a sanctioned sender), so this stays small; the chain
    /// reconciliation and the metrics read it once per pass or scrape.
    pub async fn open_quarantined_deposits(&self) -> CoreResult<Vec<StrayDeposit>> {
        let mut out = Vec::new();
        for status in QUARANTINE_OPEN {
            let mut offset = 0;
            loop {
                let (rows, _) = self.list_quarantine(status, OPEN_PAGE, offset).await?;
                for r in &rows {
                    out.push(StrayDeposit::from_stored(r)?);
                }
                if rows.len() < OPEN_PAGE {
                    break;
                }
                offset += rows.len();
            }
        }
        Ok(out)
    }

    /// A page of the quarantined deposits in `status` (newest first), and their total.
    async fn list_quarantine(
        &self,
        status: StrayStatus,
        limit: usize,
        offset: usize,
    ) -> CoreResult<(Vec<StoredRecord>, u64)> {
        self.ports()
            .store
            .list(&ListQuery {
                kind: kind::STRAY_DEPOSIT.into(),
                tenant: STRAY_LIST_OWNER.into(),
                subkind: Some(QUARANTINE_SUBKIND.into()),
                status: Some(status.as_str().into()),
                limit,
                offset,
            })
            .await
            .map_err(super::store_err)
    }

    /// The quarantine's counts per status and what its open deposits hold per rail and
    /// token (see [`QuarantineTotals`]).
    pub async fn quarantine_totals(&self) -> CoreResult<QuarantineTotals> {
        let mut totals = QuarantineTotals::default();
        for status in StrayStatus::ALL {
            let (_, n) = self.list_quarantine(status, 1, 0).await?;
            totals.by_status.push((status, n));
        }
        for s in self.open_quarantined_deposits().await? {
            let entry = totals.held.entry((s.rail.clone(), s.token)).or_default();
            entry.0 += 1;
            entry.1 += u128::from(s.amount.get());
        }
        Ok(totals)
    }

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
