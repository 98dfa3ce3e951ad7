//! Payout reconciliation's reads (issue #52 item 4): a tenant's withdrawals whose
//! payouts a provider's settlement report can concern, compared by
//! [`crate::domain::payout_reconciliation::reconcile`].

use super::Engine;
use super::operations::Operation;
use crate::domain::ids::TenantId;
use crate::domain::payout_reconciliation::{OurPayout, ReconLine, TheirPayout, reconcile};
use crate::domain::state::{OpKind, OpStatus};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::record::Record;
use crate::ports::store::{ListPosition, ListQuery};

/// How long before the period a withdrawal may have been accepted and still be paid in
/// it: its payout waits for the sweep's confirmation, and for staff when a provider
/// never answered. Such a withdrawal is looked up (so its payment is not called
/// missing on our side), never called missing on theirs.
pub const RECONCILIATION_LOOKBACK_MS: i64 = 7 * 24 * 3_600_000;

/// Withdrawals read per store page.
const PAGE: usize = 500;

impl Engine {
    /// Compares a provider's report for `[from, to)` with `tenant`'s withdrawals paid
    /// through `provider` (`mpesa`, `mtn_momo`: the kind in the payout leg's provider
    /// identity; a leg recorded before identities were counts as any provider's).
    ///
    /// Ours are the withdrawals accepted from `RECONCILIATION_LOOKBACK_MS` (7 days) before
    /// `from` until `to`; those COMPLETED in `[from, to)` are the period's, which the
    /// report must show.
    pub async fn reconcile_payouts(
        &self,
        tenant: &TenantId,
        provider: &str,
        from: Timestamp,
        to: Timestamp,
        theirs: &[TheirPayout],
    ) -> CoreResult<Vec<ReconLine>> {
        if to <= from {
            return Err(CoreError::InvalidParameter {
                field: "to",
                reason: "must be after from".into(),
            });
        }
        let since = from.plus_millis(-RECONCILIATION_LOOKBACK_MS);
        let query = ListQuery {
            kind: Operation::KIND.into(),
            tenant: tenant.0.clone(),
            subkind: Some(OpKind::Withdrawal.as_str().into()),
            status: None,
            limit: PAGE,
            offset: 0,
        };
        let mut ours = Vec::new();
        let mut after = Some(ListPosition::before_time(to));
        'walk: loop {
            let page = self
                .ports()
                .store
                .list_before(&query, after.as_ref())
                .await
                .map_err(super::store_err)?;
            let n = page.len();
            for rec in &page {
                if rec.created_at < since {
                    break 'walk;
                }
                let op = Operation::from_stored(rec)?;
                let Some(leg) = &op.payout else { continue };
                let ours_by = leg
                    .provider
                    .as_deref()
                    .is_none_or(|p| p == provider || p.split(':').next() == Some(provider));
                if !ours_by {
                    continue;
                }
                let paid_at = op.settled_at;
                ours.push(OurPayout {
                    withdrawal: op.id.0.clone(),
                    status: op.status.as_str().into(),
                    reference: leg.reference.clone(),
                    amount: leg.amount,
                    currency: leg.currency.clone(),
                    in_period: op.status == OpStatus::Completed
                        && paid_at.is_some_and(|t| from <= t && t < to),
                });
            }
            if n < PAGE {
                break;
            }
            after = page.last().map(ListPosition::of);
        }
        Ok(reconcile(&ours, theirs))
    }
}
