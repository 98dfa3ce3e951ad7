//! The spending-policy gate of sends, withdrawals and swaps (issue #51): gathers the decision's
//! inputs, applies [`crate::domain::policy::evaluate`], and records the outcome.
//!
//! Where it runs: inside the use case's idempotent decision, after the destination is
//! known and sanctions screening passed, before anything is held. So a replay answers
//! what was decided, and a refused request holds nothing.
//!
//! Fail-closed: if any input cannot be read (the policies, a usage, the address book)
//! the request fails (STORAGE_ERROR) instead of passing unchecked; a decision that
//! cannot be audited is not carried out either.
//!
//! What each outcome writes:
//! - Allow: the usage of each policy that counts the request (version-checked, so two
//!   concurrent requests are never both admitted past a limit), the destination's first
//!   sighting, and the audit entry `policy.allow` — all in the operation's own commit.
//! - Deny: the audit entry `policy.deny` (and the destination's first sighting, so its
//!   cooling-off starts), in a commit of their own; then POLICY_DENIED.
//! - ApprovalRequired: a pending [`PolicyApproval`] holding the exact request, audited
//!   `policy.approval_required`; then APPROVAL_REQUIRED. Approving it (staff) runs the
//!   same request again through the same gate, with the approval rule satisfied and
//!   every other rule checked again; the approval is marked APPROVED in the operation's
//!   commit, version-checked, so it is carried out at most once.
//!
//! A tenant that never created a policy pays no read (a flag on its cached tenant
//! record, `Tenant::spending_policies`); one whose policies were all deleted pays one
//! list read per request. Neither gets an audit entry.
//!
//! When a new policy governs: the next request on the node that created it (its tenant
//! cache entry is dropped in the same call); on another node of the same database, the
//! first policy of a tenant within `engine.read_cache_ms` (default 1 s), the cached
//! tenant's lifetime, as for a revoked API key. Later policies of the same tenant
//! govern every node's next request (the flag is already set; the list is read fresh).

use super::policies::{DestinationSeen, POLICY_ACTOR, PolicyUsage};
use super::{Engine, SendRequest, WithdrawRequest};
use crate::domain::ids::{TenantId, WalletId};
use crate::domain::money::{Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::policy::{self, Decision, DestinationFacts, PolicyRequest, WindowUsage};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::kernel::staff::StaffIdentity;
use crate::ports::kinds::kind;
use crate::ports::rail::RailId;
use crate::ports::record::{Record, Versioned, get_record};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{Batch, Put};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[path = "policy_products.rs"]
mod products;

/// The request a pending approval carries out once approved: exactly what was asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum PendingRequest {
    /// A P2P transfer on `rail`.
    Send {
        /// The rail.
        rail: RailId,
        /// The request as received.
        request: SendRequest,
    },
    /// A withdrawal from the wallet's balance on `rail`.
    Withdrawal {
        /// The rail.
        rail: RailId,
        /// The request as received.
        request: WithdrawRequest,
    },
    /// A swap at `rail`'s venue.
    Swap {
        /// The EVM rail.
        rail: RailId,
        /// The request as received.
        request: super::SwapRequest,
    },
}

/// A request above a policy's approval threshold, waiting for a second approver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyApproval {
    /// `apr_...`; derived from the request's Idempotency-Key when it has one, so a
    /// retried request finds its pending approval instead of making a second.
    pub id: String,
    /// The requesting tenant.
    pub tenant: TenantId,
    /// What is carried out once approved.
    pub request: PendingRequest,
    /// The amount.
    pub amount: Micros,
    /// The token.
    pub token: Token,
    /// The rule that asked for approval.
    pub rule_id: String,
    /// `PENDING` or `APPROVED`.
    pub status: String,
    /// When it was asked for.
    pub created_at: Timestamp,
    /// After this, approving it is refused (INVALID_STATE).
    pub expires_at: Timestamp,
    /// Who approved it: a staff identity (`stf_...` or `admin-token`), or the tenant's
    /// approver key (`key:<key id>`).
    pub approved_by: Option<String>,
    /// When it was approved.
    pub approved_at: Option<Timestamp>,
    /// The operation it became.
    pub operation_id: Option<String>,
}

impl Record for PolicyApproval {
    const KIND: &'static str = kind::POLICY_APPROVAL;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.clone())
    }
}

/// A pending approval being carried out, and who approved it.
pub(crate) struct Approving {
    pub record: Versioned<PolicyApproval>,
    pub approver: String,
}

/// What the gate is asked about: one send or withdrawal.
pub(crate) struct Subject<'a> {
    /// `send`, `withdrawal` or `swap` (the audit's words).
    pub operation: &'static str,
    pub wallet: &'a WalletId,
    pub rail: RailId,
    pub token: Token,
    pub amount: Micros,
    /// The destination key; `None` for an address not derived yet.
    pub destination: Option<String>,
}

/// True when a commit lost a race on a policy's window usage or a destination's first
/// sighting: another request of the same scope committed first; deciding again on fresh
/// reads is safe (nothing was written).
pub(crate) fn lost_policy_race(e: &CoreError) -> bool {
    e.lost_race_on(kind::POLICY_USAGE) || e.lost_race_on(kind::DESTINATION_SEEN)
}

/// The decision's inputs as read, with what the commit must check.
struct Gathered {
    policies: Vec<(policy::Policy, WindowUsage)>,
    usage_versions: BTreeMap<String, u64>,
    seen: Option<DestinationSeen>,
    request: PolicyRequest,
}

/// `POST /v1/policies/evaluate`: what a send or withdrawal would get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyQuery {
    /// A send from `from` to `to` on `rail` (the primary EVM rail for `None`).
    Send {
        /// The rail; `None`: the primary EVM chain.
        rail: Option<RailId>,
        /// The sender's phone.
        from: Phone,
        /// The recipient's phone.
        to: Phone,
        /// The token.
        token: Token,
        /// The amount.
        amount: Micros,
    },
    /// A swap of `phone`'s wallet giving `amount` of `token` at `rail`'s venue (the
    /// primary EVM rail for `None`).
    Swap {
        /// The EVM rail; `None`: the primary one.
        rail: Option<RailId>,
        /// The trading wallet's phone.
        phone: Phone,
        /// The token given.
        token: Token,
        /// The amount given.
        amount: Micros,
    },
    /// A withdrawal of `phone`'s wallet on `rail` (the primary EVM rail for `None`).
    Withdrawal {
        /// The rail; `None`: the primary EVM chain.
        rail: Option<RailId>,
        /// The wallet's phone (the number paid).
        phone: Phone,
        /// The token.
        token: Token,
        /// The amount.
        amount: Micros,
    },
}

impl Engine {
    /// Reads the decision's inputs; `None` when the tenant has no policy at all.
    async fn gather(
        &self,
        tenant: &TenantId,
        s: &Subject<'_>,
        approved: bool,
    ) -> CoreResult<Option<Gathered>> {
        // The tenant record is read (and cached) on every request path already: a
        // tenant that never created a policy reads none (see `Tenant::spending_policies`).
        if !self.tenant(tenant).await?.may_have_policies() {
            return Ok(None);
        }
        let all = self.active_policies(tenant).await?;
        if all.is_empty() {
            return Ok(None);
        }
        let store = &*self.ports().store;
        let mut facts = DestinationFacts {
            key: s.destination.clone(),
            ..Default::default()
        };
        let mut seen = None;
        if let Some(k) = &s.destination {
            facts.book_usable_at = self
                .address_book_entry(tenant, k)
                .await?
                .map(|e| e.usable_at);
            seen = get_record::<DestinationSeen>(store, &DestinationSeen::id_of(tenant, k))
                .await?
                .map(|v| v.record);
            facts.first_seen = seen.as_ref().map(|r| r.first_seen);
        }
        let request = PolicyRequest {
            tenant: tenant.clone(),
            wallet: s.wallet.clone(),
            rail: s.rail.name(),
            token: s.token,
            amount: s.amount,
            destination: facts,
            approved,
        };
        let mut policies = Vec::new();
        let mut usage_versions = BTreeMap::new();
        for p in all {
            let mut usage = WindowUsage::default();
            if p.applies_to(&request)
                && !p.windows.is_empty()
                && let Some(v) = get_record::<PolicyUsage>(store, &p.id).await?
            {
                usage_versions.insert(p.id.clone(), v.version);
                usage = v.record.usage;
            }
            policies.push((p, usage));
        }
        Ok(Some(Gathered {
            policies,
            usage_versions,
            seen,
            request,
        }))
    }

    fn audit_decision(
        &self,
        tenant: &TenantId,
        s: &Subject<'_>,
        subject_id: &str,
        decision: &Decision,
        action: &str,
    ) -> CoreResult<Put> {
        let rule = match decision {
            Decision::Allow => String::new(),
            Decision::Deny { rule_id, reason } => format!("; rule {rule_id}: {reason}"),
            Decision::ApprovalRequired { rule_id } => format!("; rule {rule_id}"),
        };
        let note = format!(
            "{} {subject_id} of tenant {}: {} {} {} on {} to {}{rule}",
            s.operation,
            tenant.0,
            decision.name(),
            s.amount,
            s.token,
            s.rail.name(),
            s.destination.as_deref().unwrap_or("a new address"),
        );
        Ok(self
            .audit_entry(POLICY_ACTOR, action, subject_id, Some(&note))?
            .insert()?)
    }

    /// The window usage of every policy that counts an admitted request of `amount`,
    /// version-checked against what was read (a concurrent admission makes the commit
    /// lose the race instead of both passing a limit).
    fn usage_puts(
        &self,
        tenant: &TenantId,
        g: &Gathered,
        amount: Micros,
        now: Timestamp,
    ) -> CoreResult<Vec<Put>> {
        let mut puts = Vec::new();
        for p in policy::counting(&g.policies, &g.request) {
            let mut usage = g
                .policies
                .iter()
                .find(|(q, _)| q.id == p.id)
                .map(|(_, u)| u.clone())
                .unwrap_or_default();
            usage.record(now, amount);
            let rec = PolicyUsage {
                id: p.id.clone(),
                tenant: tenant.clone(),
                created_at: now,
                usage,
            };
            puts.push(match g.usage_versions.get(&p.id) {
                Some(v) => rec.update(*v)?,
                None => rec.insert()?,
            });
        }
        Ok(puts)
    }

    /// The first sighting of the subject's destination, when it has none yet.
    fn seen_put(
        &self,
        tenant: &TenantId,
        s: &Subject<'_>,
        g: &Gathered,
    ) -> CoreResult<Option<Put>> {
        match (&s.destination, &g.seen) {
            (Some(k), None) => Ok(Some(
                DestinationSeen {
                    id: DestinationSeen::id_of(tenant, k),
                    tenant: tenant.clone(),
                    destination: k.clone(),
                    first_seen: self.now(),
                }
                .insert()?,
            )),
            _ => Ok(None),
        }
    }

    /// The gate of a real send or withdrawal `op_id`: `Ok(puts)` to commit with the
    /// operation when allowed; POLICY_DENIED or APPROVAL_REQUIRED (recorded and audited
    /// on their own) otherwise. `pending` builds the request an approval would carry out;
    /// `idempotency_key` names it.
    pub(crate) async fn policy_gate(
        &self,
        tenant: &TenantId,
        s: &Subject<'_>,
        op_id: &str,
        approving: Option<&Approving>,
        pending: impl FnOnce() -> PendingRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<Vec<Put>> {
        let mut puts = Vec::new();
        if let Some(a) = approving {
            let mut r = a.record.record.clone();
            r.status = "APPROVED".into();
            r.approved_by = Some(a.approver.clone());
            r.approved_at = Some(self.now());
            r.operation_id = Some(op_id.to_string());
            puts.push(r.update(a.record.version)?);
            let note = format!("tenant {}; operation {op_id}", tenant.0);
            puts.push(
                self.audit_entry(&a.approver, "policy.approve", &r.id, Some(&note))?
                    .insert()?,
            );
        }
        let Some(g) = self.gather(tenant, s, approving.is_some()).await? else {
            return Ok(puts);
        };
        let now = self.now();
        let decision = policy::evaluate(&g.policies, &g.request, now);
        let seen = self.seen_put(tenant, s, &g)?;
        match &decision {
            Decision::Allow => {
                puts.extend(self.usage_puts(tenant, &g, s.amount, now)?);
                puts.extend(seen);
                puts.push(self.audit_decision(tenant, s, op_id, &decision, "policy.allow")?);
                Ok(puts)
            }
            Decision::Deny { rule_id, reason } => {
                let audit = self.audit_decision(tenant, s, op_id, &decision, "policy.deny")?;
                self.commit_refusal(seen, audit).await?;
                Err(CoreError::PolicyDenied {
                    rule_id: rule_id.clone(),
                    reason: reason.clone(),
                })
            }
            Decision::ApprovalRequired { rule_id } => {
                let id = match idempotency_key {
                    Some(k) => {
                        let h = crate::kernel::auth::sha256_hex(&format!(
                            "{}\u{0}{}\u{0}{}\u{0}{k}",
                            tenant.0,
                            s.operation,
                            s.rail.name()
                        ));
                        format!("apr_{}", &h[..26])
                    }
                    None => self.new_id("apr"),
                };
                if let Some(v) = get_record::<PolicyApproval>(&*self.ports().store, &id).await? {
                    return Err(CoreError::ApprovalRequired {
                        approval_id: v.record.id,
                        rule_id: v.record.rule_id,
                    });
                }
                let approval = PolicyApproval {
                    id: id.clone(),
                    tenant: tenant.clone(),
                    request: pending(),
                    amount: s.amount,
                    token: s.token,
                    rule_id: rule_id.clone(),
                    status: "PENDING".into(),
                    created_at: now,
                    expires_at: now.plus_millis(self.config.policy_approval_ttl_ms),
                    approved_by: None,
                    approved_at: None,
                    operation_id: None,
                };
                let audit =
                    self.audit_decision(tenant, s, &id, &decision, "policy.approval_required")?;
                let mut batch_puts = vec![approval.insert()?, audit];
                batch_puts.extend(seen);
                self.commit(Batch {
                    puts: batch_puts,
                    ..Default::default()
                })
                .await?;
                Err(CoreError::ApprovalRequired {
                    approval_id: id,
                    rule_id: rule_id.clone(),
                })
            }
        }
    }

    /// Commits a refusal's audit entry, with the destination's first sighting when it is
    /// new (a concurrent request may have recorded it first: then the entry alone).
    async fn commit_refusal(&self, seen: Option<Put>, audit: Put) -> CoreResult<()> {
        if let Some(seen) = seen {
            let batch = Batch {
                puts: vec![seen, audit.clone()],
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(_) => return Ok(()),
                Err(e) if e.lost_race_on(kind::DESTINATION_SEEN) => {}
                Err(e) => return Err(e),
            }
        }
        self.commit(Batch {
            puts: vec![audit],
            ..Default::default()
        })
        .await
        .map(|_| ())
    }

    /// `POST /v1/policies/evaluate`: the policy decision a send or withdrawal would get
    /// now, from the same inputs and the same function as the real call, without
    /// holding or recording anything but its audit entry (`policy.evaluate`). The
    /// real call may still be refused for other reasons (funds, screening, readiness).
    pub async fn evaluate_policy(
        &self,
        tenant: &TenantId,
        query: &PolicyQuery,
    ) -> CoreResult<Decision> {
        let (operation, wallet_phone, rail, token, amount) = match query {
            PolicyQuery::Send {
                rail,
                from,
                token,
                amount,
                ..
            } => ("send", from, *rail, *token, *amount),
            PolicyQuery::Withdrawal {
                rail,
                phone,
                token,
                amount,
            } => ("withdrawal", phone, *rail, *token, *amount),
            PolicyQuery::Swap {
                rail,
                phone,
                token,
                amount,
            } => ("swap", phone, *rail, *token, *amount),
        };
        let rail = match (query, rail) {
            (PolicyQuery::Swap { .. }, r) => self.evm_rail_for(r)?.clone(),
            (_, Some(r)) => self.rail(r)?.clone(),
            (_, None) => self.evm_rail()?.clone(),
        };
        let wallet = self.require_wallet(wallet_phone).await?.record;
        wallet.require_member(tenant)?;
        let destination = match query {
            PolicyQuery::Withdrawal { .. } => Some(policy::momo_key(wallet.phone.as_str())),
            PolicyQuery::Swap { .. } => self
                .swap_venue(rail.id())?
                .counterparty()
                .await
                .map(|a| policy::chain_key(&a.0)),
            PolicyQuery::Send { to, .. } => match self.wallet_by_phone(to).await? {
                Some(v) => {
                    let a = match v.record.address(&rail.id().name()) {
                        Some(a) => a.clone(),
                        None => rail
                            .address_for(&KeyPurpose::Wallet(v.record.id.0.clone()))
                            .await
                            .map_err(super::rail_err)?,
                    };
                    Some(policy::chain_key(&a.0))
                }
                None => None,
            },
        };
        let s = Subject {
            operation,
            wallet: &wallet.id,
            rail: rail.id(),
            token,
            amount,
            destination,
        };
        let Some(g) = self.gather(tenant, &s, false).await? else {
            return Ok(Decision::Allow);
        };
        let decision = policy::evaluate(&g.policies, &g.request, self.now());
        let audit = self.audit_decision(tenant, &s, "dry-run", &decision, "policy.evaluate")?;
        self.commit(Batch {
            puts: vec![audit],
            ..Default::default()
        })
        .await?;
        Ok(decision)
    }

    /// One approval of `tenant` (NOT_FOUND for another's).
    pub async fn policy_approval(
        &self,
        tenant: Option<&TenantId>,
        id: &str,
    ) -> CoreResult<Versioned<PolicyApproval>> {
        match get_record::<PolicyApproval>(&*self.ports().store, id).await? {
            Some(v) if tenant.is_none_or(|t| *t == v.record.tenant) => Ok(v),
            _ => Err(CoreError::NotFound {
                kind: "policy_approval",
                id: id.chars().take(64).collect(),
            }),
        }
    }

    /// A staff member approves a pending request: it is carried out now, exactly as it
    /// was asked, through the same checks (every policy rule but the threshold, the
    /// balance, screening). The requester was a tenant key and the approver is a staff
    /// identity the host proved, so the two are always two different parties; the
    /// approval is marked APPROVED in the operation's own commit, version-checked, so
    /// two approvals at once carry it out once (the second gets INVALID_STATE).
    /// INVALID_STATE for one already approved or expired.
    pub async fn approve_policy_request(
        &self,
        id: &str,
        staff: &StaffIdentity,
    ) -> CoreResult<PolicyApproval> {
        let v = self.policy_approval(None, id).await?;
        self.carry_out_approval(v, staff.id().to_string()).await
    }

    /// Carries out the pending approval `v`, approved by `approver` (a staff id, or
    /// `key:<approver key id>`): see [`Engine::approve_policy_request`].
    pub(crate) async fn carry_out_approval(
        &self,
        v: Versioned<PolicyApproval>,
        approver: String,
    ) -> CoreResult<PolicyApproval> {
        let id = v.record.id.clone();
        let r = &v.record;
        if r.status != "PENDING" || self.now() > r.expires_at {
            let from = if r.status != "PENDING" {
                r.status.clone()
            } else {
                "EXPIRED".into()
            };
            return Err(CoreError::InvalidTransition {
                machine: "policy_approval",
                from,
                event: "approve".into(),
            });
        }
        let tenant = r.tenant.clone();
        let approving = Approving {
            record: v.clone(),
            approver,
        };
        let result = match r.request.clone() {
            PendingRequest::Send { rail, request } => self
                .send_gated(&tenant, rail, &request, None, Some(&approving))
                .await
                .map(|_| ()),
            PendingRequest::Withdrawal { rail, request } => self
                .withdraw_gated(&tenant, rail, &request, None, Some(&approving))
                .await
                .map(|_| ()),
            PendingRequest::Swap { rail, request } => self
                .swap_gated(&tenant, Some(rail), &request, None, Some(&approving))
                .await
                .map(|_| ()),
        };
        match result {
            Ok(()) => {}
            Err(e) if e.lost_race_on(kind::POLICY_APPROVAL) => {
                return Err(CoreError::InvalidTransition {
                    machine: "policy_approval",
                    from: "APPROVED".into(),
                    event: "approve".into(),
                });
            }
            Err(e) => return Err(e),
        }
        Ok(self.policy_approval(None, &id).await?.record)
    }
}
