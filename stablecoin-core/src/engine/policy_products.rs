//! The wallet engine's side of [`SpendingPolicies`]: the products' payouts (escrow
//! payouts, checkout refunds) decided by the same gather, the same pure function and the
//! same records as sends, withdrawals and swaps (a child of `policy_gate.rs`, whose
//! private steps it reuses).
//!
//! A product's payout comes from a deal or a session, not a wallet: the request carries
//! a wallet id no wallet has (`<operation>:<subject>`), so only the tenant's policies
//! without a wallet scope govern it. It cannot be held for a second approver (the
//! products have no pending-request form yet): above an approval threshold it is
//! refused, POLICY_DENIED with rule `approval_threshold` (fail-closed).

use super::super::Engine;
use super::Subject;
use crate::domain::ids::WalletId;
use crate::domain::policy::{self, Decision};
use crate::error::{CoreError, CoreResult};
use crate::kernel::spending::{ProductSpend, SpendingPolicies};
use crate::ports::store::Put;
use async_trait::async_trait;

#[async_trait]
impl SpendingPolicies for Engine {
    async fn admit_product_spend(&self, spend: &ProductSpend) -> CoreResult<Vec<Put>> {
        let wallet = WalletId(format!("{}:{}", spend.operation, spend.subject_id));
        let s = Subject {
            operation: spend.operation,
            wallet: &wallet,
            rail: spend.rail,
            token: spend.token,
            amount: spend.amount,
            destination: spend.destination.as_deref().map(policy::chain_key),
        };
        let tenant = &spend.tenant;
        let Some(g) = self.gather(tenant, &s, false).await? else {
            return Ok(Vec::new());
        };
        let now = self.now();
        let decision = match policy::evaluate(&g.policies, &g.request, now) {
            Decision::ApprovalRequired { rule_id } => Decision::Deny {
                rule_id,
                reason: format!(
                    "above the approval threshold: an {} cannot be held for a second approver, so it is refused",
                    spend.operation
                ),
            },
            d => d,
        };
        let seen = self.seen_put(tenant, &s, &g)?;
        match &decision {
            Decision::Allow => {
                let mut puts = self.usage_puts(tenant, &g, s.amount, now)?;
                puts.extend(seen);
                puts.push(self.audit_decision(
                    tenant,
                    &s,
                    &spend.subject_id,
                    &decision,
                    "policy.allow",
                )?);
                Ok(puts)
            }
            Decision::Deny { rule_id, reason } => {
                let audit =
                    self.audit_decision(tenant, &s, &spend.subject_id, &decision, "policy.deny")?;
                self.commit_refusal(seen, audit).await?;
                Err(CoreError::PolicyDenied {
                    rule_id: rule_id.clone(),
                    reason: reason.clone(),
                })
            }
            Decision::ApprovalRequired { .. } => Err(CoreError::Storage(
                "an approval decision survived its mapping to a refusal".into(),
            )),
        }
    }
}
