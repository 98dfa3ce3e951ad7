//! Staff resolution of a withdrawal's payout that no provider answers for.
//!
//! Why: the engine settles a payout only on the word of the provider that took it, and
//! re-submits only where that provider documents idempotent re-submits. So a payout can
//! stay in flight for good: the operator switched provider (or to `disabled`) while the
//! old one held it, or M-Pesa answers "not found" for a payout whose submit may have
//! reached it. A named staff member, having checked with the provider (its portal, a
//! statement), then decides: COMPLETED (paid; the provider's reference as evidence) or
//! refunded (the tokens go back on chain, as after a provider's failure). The decision
//! and its staff audit entry are one commit, so neither exists without the other.

use super::withdrawals::{fiat_out_account, withdrawals_account};
use super::{Engine, Operation, OperationView, PayoutResolution};
use crate::domain::state::{OpEvent, OpKind, OpStatus, transition};
use crate::error::{CoreError, CoreResult};
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::record::{Record, get_record};
use crate::ports::store::Batch;
use serde::{Deserialize, Serialize};

/// What staff decided about a payout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PayoutDecision {
    /// The provider paid it: COMPLETED at once (`withdrawals -> fiat_out`).
    Completed {
        /// The provider's reference of the payment (receipt, financial transaction
        /// id) staff checked: the evidence COMPLETED requires.
        reference: String,
    },
    /// The provider holds no payment and never will: the tokens are refunded on chain
    /// to the wallet, and the withdrawal ends REFUNDED once the refund confirms.
    Refunded,
}

/// A staff resolution of a payout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvePayoutRequest {
    /// The decision.
    #[serde(flatten)]
    pub decision: PayoutDecision,
    /// Why (what staff checked with the provider), 1 to 2000 characters.
    pub reason: String,
}

const MAX_REASON: usize = 2000;
const MAX_REFERENCE: usize = 100;

fn text(field: &'static str, v: &str, max: usize) -> CoreResult<String> {
    let s = v.trim();
    if s.is_empty() || s.chars().count() > max {
        return Err(CoreError::InvalidParameter {
            field,
            reason: format!("must be 1 to {max} characters"),
        });
    }
    if s.chars().any(|c| c.is_control() && c != '\n') {
        return Err(CoreError::InvalidParameter {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    Ok(s.to_string())
}

impl Engine {
    /// The payout leg of withdrawal `id`, of any tenant: what a host checks a provider's
    /// callback against (amount, payee, the provider that took it). NOT_FOUND for an
    /// unknown id or an operation that is not a withdrawal with a payout.
    pub async fn withdrawal_payout(&self, id: &str) -> CoreResult<super::PayoutLeg> {
        get_record::<Operation>(&*self.ports().store, id)
            .await?
            .filter(|v| v.record.kind == OpKind::Withdrawal)
            .and_then(|v| v.record.payout)
            .ok_or_else(|| CoreError::NotFound {
                kind: "withdrawal",
                id: id.to_string(),
            })
    }

    /// Staff account `staff_id` (`stf_...`, active: a named person, never the shared
    /// admin token) resolves the payout of withdrawal `id`, which must be in flight
    /// (PAYOUT_SUBMITTING or PAYOUT_UNKNOWN) with no refund under way. The decision and
    /// the audit entry (`withdrawal.payout.complete` or `withdrawal.payout.refund`) are
    /// written in one commit. INVALID_STATE for a withdrawal in another state;
    /// NOT_FOUND for an unknown one.
    pub async fn resolve_payout(
        &self,
        staff_id: &str,
        id: &str,
        req: &ResolvePayoutRequest,
    ) -> CoreResult<OperationView> {
        let staff = match get_record::<super::StaffAccount>(&*self.ports().store, staff_id).await? {
            Some(a) if a.record.is_active() => a.record,
            _ => {
                return Err(CoreError::InvalidParameter {
                    field: "staff",
                    reason: "a payout is resolved by a named, active staff account (stf_sk_...), not the shared admin token".into(),
                });
            }
        };
        let reason = text("reason", &req.reason, MAX_REASON)?;
        let not_found = || CoreError::NotFound {
            kind: "withdrawal",
            id: id.to_string(),
        };
        let v = get_record::<Operation>(&*self.ports().store, id)
            .await?
            .ok_or_else(not_found)?;
        let (mut op, version) = (v.record, v.version);
        if op.kind != OpKind::Withdrawal {
            return Err(not_found());
        }
        let refuse = |why: &str| CoreError::InvalidTransition {
            machine: "withdrawal",
            from: format!("{} ({why})", op.status.as_str()),
            event: "StaffResolvePayout".into(),
        };
        let Some(mut payout) = op.payout.clone() else {
            return Err(refuse("no payout leg"));
        };
        if !matches!(
            op.status,
            OpStatus::PayoutSubmitting | OpStatus::PayoutUnknown
        ) {
            return Err(refuse("the payout is not in flight"));
        }
        if payout.refund.is_some() {
            return Err(refuse("a refund is under way"));
        }
        let now = self.now();
        let (outcome, action) = match &req.decision {
            PayoutDecision::Completed { .. } => ("completed", "withdrawal.payout.complete"),
            PayoutDecision::Refunded => ("refunded", "withdrawal.payout.refund"),
        };
        payout.resolution = Some(PayoutResolution {
            staff_id: staff.id.clone(),
            outcome: outcome.into(),
            reason: reason.clone(),
            at: now,
        });
        let mut batch = Batch::default();
        match &req.decision {
            PayoutDecision::Completed { reference } => {
                let reference = text("reference", reference, MAX_REFERENCE)?;
                op.status = transition(op.kind, op.status, OpEvent::PayoutDelivered)?;
                payout.reference = Some(reference.clone());
                op.settled_at = Some(now);
                op.next_check_at = None;
                let (from, to) = (withdrawals_account(op.token), fiat_out_account(op.token));
                batch.ledger = vec![LedgerTransfer {
                    id: format!("{}:payout", op.id),
                    debit: from.id.clone(),
                    credit: to.id.clone(),
                    amount: op.amount,
                    phase: Phase::Single,
                }];
                batch.accounts = vec![from, to];
            }
            PayoutDecision::Refunded => {
                payout.failure = Some(format!("resolved by staff {}: {reason}", staff.id));
                payout.refund = Some(self.refund_payment(&op, 1).await?);
                payout.refund_attempts = 1;
                // The worker sends the refund at its next tick.
                op.next_check_at = Some(now);
            }
        }
        op.payout = Some(payout);
        op.updated_at = now;
        let note = match &req.decision {
            PayoutDecision::Completed { reference } => {
                format!("completed, reference {}: {reason}", reference.trim())
            }
            PayoutDecision::Refunded => format!("refunded: {reason}"),
        };
        let audit = self.audit_entry(&staff.id, action, &op.id.0, Some(&note))?;
        batch.puts = vec![op.update(version)?, audit.insert()?];
        self.commit(batch).await?;
        Ok(op.view())
    }
}
