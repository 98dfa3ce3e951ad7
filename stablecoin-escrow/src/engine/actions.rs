//! Actions on an existing deal: the tenant's release, refund, dispute and cancel, staff
//! resolutions and the workers' expiry and automatic release. [`decide`] is the pure
//! decision (who may ask, which transition, what it does); `EscrowEngine::apply_action`
//! carries it out in one batch.

use super::{
    EscrowEngine, MAX_RETRIES, clean_text, overflow, parse_on_behalf_of, require_tenant_key,
};
use crate::error::{EscrowError, EscrowResult};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::{Action, PayoutPurpose, Phase, transition};
use crate::view::*;
use serde_json::json;
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::ports::{Batch, LedgerTransfer, Phase as LedgerPhase, Put, Record, Versioned};

/// Longest `reason` / note.
const MAX_TEXT: usize = 1000;

/// Who asks for an action on a deal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Requester {
    /// The tenant, with one of its API keys (release, refund, dispute, cancel).
    Tenant,
    /// Service staff, through the admin API (dispute resolutions).
    Staff,
    /// A background job of the service (funding expiry, automatic release).
    Worker,
}

impl Requester {
    /// Every requester.
    pub const ALL: [Requester; 3] = [Requester::Tenant, Requester::Staff, Requester::Worker];

    /// Who may ask for `action`. `Fund`, `PayoutConfirmed` and `PayoutFailed` are facts
    /// the deposit scanner and the payout worker record with [`transition`] directly (with
    /// effects of their own); nobody asks for them, so [`decide`] refuses them.
    pub fn of(action: Action) -> Option<Requester> {
        match action {
            Action::Release | Action::Refund | Action::Dispute | Action::Cancel => {
                Some(Requester::Tenant)
            }
            Action::ResolveRelease | Action::ResolveRefund => Some(Requester::Staff),
            Action::Expire | Action::AutoRelease => Some(Requester::Worker),
            Action::Fund | Action::PayoutConfirmed | Action::PayoutFailed => None,
        }
    }
}

impl Actor {
    /// The requester this actor asks as (the chain only ever reports facts).
    pub(crate) fn requester(&self) -> Requester {
        match self {
            Actor::Tenant { .. } => Requester::Tenant,
            Actor::Staff { .. } => Requester::Staff,
            Actor::System { .. } | Actor::Chain { .. } => Requester::Worker,
        }
    }
}

/// What a permitted action does besides moving the phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Cancel or expiry of an unfunded deal: counted deposits become PARTIAL recoverable.
    CloseUnfunded,
    /// FUNDED -> DISPUTED, recording the tenant's reason.
    Dispute,
    /// A payout of the deal amount is claimed (a sponsored send: TRON must be READY).
    Payout {
        /// Release to the seller or refund to the buyer.
        purpose: PayoutPurpose,
        /// The party whose linked wallet receives it.
        to: Party,
        /// A staff resolution of a dispute (its note becomes `resolution_note`).
        staff_resolution: bool,
    },
}

/// A permitted action: the phase before and after, and its effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The deal's phase as read.
    pub from: Phase,
    /// The phase the action leaves it in.
    pub to: Phase,
    /// What carrying it out does besides.
    pub effect: Effect,
}

impl Decision {
    /// Whether carrying it out sends money (so needs TRON readiness READY).
    pub fn sends(&self) -> bool {
        matches!(self.effect, Effect::Payout { .. })
    }
}

/// The decision for `action` on a deal in phase `from`, asked by `by`: pure, no I/O.
///
/// An action `by` may not ask for is `INVALID_STATE` whatever the phase (the APIs never
/// offer one, so this only guards the engine's own callers). Otherwise the one
/// [`transition`] function of the machine decides the move (`INVALID_STATE`, or
/// `PAYOUT_IN_FLIGHT` while a payout is claimed), and the action names its effect.
pub fn decide(from: Phase, action: Action, by: Requester) -> EscrowResult<Decision> {
    let refused = || EscrowError::InvalidState {
        state: from.state.as_str().into(),
        action: action.as_str().into(),
    };
    if Requester::of(action) != Some(by) {
        return Err(refused());
    }
    let to = transition(from, action)?;
    let effect = match action {
        Action::Cancel | Action::Expire => Effect::CloseUnfunded,
        Action::Dispute => Effect::Dispute,
        Action::Release
        | Action::Refund
        | Action::AutoRelease
        | Action::ResolveRelease
        | Action::ResolveRefund => {
            let purpose = to.payout.ok_or_else(refused)?;
            Effect::Payout {
                purpose,
                to: match purpose {
                    PayoutPurpose::Release => Party::Seller,
                    PayoutPurpose::Refund => Party::Buyer,
                },
                staff_resolution: matches!(action, Action::ResolveRelease | Action::ResolveRefund),
            }
        }
        Action::Fund | Action::PayoutConfirmed | Action::PayoutFailed => return Err(refused()),
    };
    Ok(Decision { from, to, effect })
}

impl EscrowEngine {
    /// `POST /v1/escrows/{id}/release`: FUNDED -> FUNDED with `payout_pending=true`; the
    /// full amount goes to the seller's linked wallet once the worker's payout confirms.
    pub async fn release(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Release, req).await
    }

    /// `POST /v1/escrows/{id}/refund`: FUNDED -> FUNDED with `payout_pending=true`; the
    /// full amount goes back to the buyer's linked wallet once confirmed.
    pub async fn refund(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Refund, req).await
    }

    /// `POST /v1/escrows/{id}/dispute`: FUNDED -> DISPUTED; `reason` required. Refused
    /// (`PAYOUT_IN_FLIGHT`) once a payout is claimed.
    pub async fn dispute(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Dispute, req).await
    }

    /// `POST /v1/escrows/{id}/cancel`: CREATED -> CANCELLED; partial deposits become
    /// recoverable.
    pub async fn cancel(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Cancel, req).await
    }

    async fn tenant_action(
        &self,
        auth: &AuthContext,
        id: &str,
        action: Action,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        if auth.is_sandbox() {
            return Err(EscrowError::SandboxUnsupported);
        }
        let on_behalf_of = parse_on_behalf_of(req.on_behalf_of.as_deref())?;
        let reason = clean_text("reason", req.reason.as_deref(), MAX_TEXT)?;
        if action == Action::Dispute && reason.is_none() {
            return Err(EscrowError::MissingParameter {
                field: "reason",
                reason: "a dispute needs a reason; it becomes part of the permanent history".into(),
            });
        }
        let actor = Actor::Tenant {
            tenant: auth.tenant.clone(),
            api_key_id: auth.key_id.clone(),
        };
        self.act(id, action, &actor, on_behalf_of, reason, None)
            .await
    }

    /// Reads the deal (a tenant reads only its own, staff any), checks TRON readiness when
    /// the decision is a payout (a sponsored send, spec 7: 503 while TRON is not READY),
    /// and applies `action`; after a lost race it reads again and decides again.
    pub(crate) async fn act(
        &self,
        id: &str,
        action: Action,
        actor: &Actor,
        on_behalf_of: Option<Party>,
        reason: Option<String>,
        resolution_note: Option<String>,
    ) -> EscrowResult<EscrowView> {
        for _ in 0..MAX_RETRIES {
            let v = match actor {
                Actor::Tenant { tenant, .. } => self.load_for_tenant(tenant, id).await?,
                _ => self.load_any(id).await?,
            };
            if decide(v.record.phase(), action, actor.requester()).is_ok_and(|d| d.sends()) {
                self.require_can_send().await?;
            }
            match self
                .apply_action(
                    v,
                    action,
                    actor,
                    on_behalf_of,
                    reason.clone(),
                    resolution_note.clone(),
                    Vec::new(),
                )
                .await
            {
                Err(EscrowError::Conflict { .. }) => continue,
                other => return other,
            }
        }
        Err(EscrowError::Conflict {
            what: format!("escrow {id}"),
        })
    }

    /// Applies a tenant, staff or worker action to the deal as read at `v.version`, in
    /// one batch, with the records of `also` (a staff decision's audit entry) in the same
    /// batch. `Conflict` means the deal changed meanwhile: read it again and retry.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn apply_action(
        &self,
        v: Versioned<Deal>,
        action: Action,
        actor: &Actor,
        on_behalf_of: Option<Party>,
        reason: Option<String>,
        resolution_note: Option<String>,
        also: Vec<Put>,
    ) -> EscrowResult<EscrowView> {
        let Versioned {
            record: mut deal,
            version,
        } = v;
        let now = self.now();
        let Decision { from, to, effect } = decide(deal.phase(), action, actor.requester())?;
        let mut batch = Batch::default();
        let (event, data) = match effect {
            Effect::CloseUnfunded => {
                deal.set_phase(to);
                let moved = deal.applied;
                if action == Action::Cancel {
                    deal.cancelled_at = Some(now);
                } else {
                    deal.expired_at = Some(now);
                }
                if !moved.is_zero() {
                    let held = accounts::held(&deal.id, deal.token);
                    let partial =
                        accounts::bucket(&deal.id, crate::state::RecoveryKind::Partial, deal.token);
                    batch.ledger.push(LedgerTransfer {
                        id: format!("escrow:{}:unfunded", deal.id),
                        debit: held.id.clone(),
                        credit: partial.id.clone(),
                        amount: moved,
                        phase: LedgerPhase::Single,
                    });
                    batch.accounts.extend([held, partial]);
                    deal.add_recoverable(crate::state::RecoveryKind::Partial, deal.token, moved)
                        .ok_or_else(overflow)?;
                }
                let event = if action == Action::Cancel {
                    EscrowEventType::Cancelled
                } else {
                    EscrowEventType::Expired
                };
                (
                    event,
                    Some(json!({ "partial_recoverable": moved.to_base_units_string() })),
                )
            }
            Effect::Dispute => {
                deal.set_phase(to);
                deal.disputed_at = Some(now);
                deal.dispute_reason = reason.clone();
                (EscrowEventType::Disputed, None)
            }
            Effect::Payout {
                purpose,
                to: to_party,
                staff_resolution,
            } => {
                if action == Action::AutoRelease {
                    deal.auto_release_attempted = true;
                }
                // Sanctions screening of the destination before anything is claimed
                // (issue #51), whoever asks. The auto-release job spends its one attempt
                // on a hit (`worker.rs`), so a listed seller's deal waits for a person
                // and is neither retried nor audited again every round.
                let dest = deal.party(to_party).address.clone();
                self.inner
                    .kernel
                    .screen_addresses(
                        &deal.tenant.0,
                        "escrow.payout",
                        &deal.id.0,
                        stablecoin_core::ports::RailId::Tron,
                        &[&dest],
                    )
                    .await?;
                // Spending policies (issue #51), before anything is claimed: what a
                // tenant or its auto-release pays out, not what staff resolve.
                if let Some(policies) = &self.inner.policies
                    && !matches!(actor, Actor::Staff { .. })
                {
                    let spend = stablecoin_core::kernel::ProductSpend {
                        tenant: deal.tenant.clone(),
                        operation: "escrow.payout",
                        subject_id: deal.id.0.clone(),
                        rail: stablecoin_core::ports::RailId::Tron,
                        token: deal.token,
                        amount: deal.amount,
                        destination: Some(dest.0.clone()),
                    };
                    batch
                        .puts
                        .extend(policies.admit_product_spend(&spend).await?);
                }
                let source = accounts::held(&deal.id, deal.token);
                let (amount, token) = (deal.amount, deal.token);
                let payout = self.new_payout(
                    &mut deal,
                    PayoutKind::Deal(purpose),
                    to_party,
                    amount,
                    token,
                    source.clone(),
                    actor,
                    on_behalf_of,
                    resolution_note.clone().or_else(|| reason.clone()),
                    staff_resolution,
                    now,
                );
                deal.state = to.state;
                deal.payout = Some(PayoutClaim {
                    purpose,
                    payout_id: payout.id.clone(),
                    resolution_note: resolution_note.clone(),
                    claimed_at: now,
                });
                let mut data = json!({
                    "payout_id": payout.id,
                    "purpose": purpose.as_str(),
                    "trigger": action.as_str().to_ascii_uppercase(),
                    "to": to_party.as_str(),
                    "to_address": deal.party(to_party).address.0,
                    "amount": payout.amount.to_base_units_string(),
                });
                // A two-person resolution: the history names both staff members.
                if let Some(p) = deal.pending_resolution.take()
                    && let (Some(obj), Actor::Staff { staff_id }) = (data.as_object_mut(), actor)
                {
                    obj.insert("proposed_by".into(), json!(p.proposed_by));
                    obj.insert("approved_by".into(), json!(staff_id));
                }
                batch
                    .accounts
                    .extend([source, accounts::paid_out(&deal.id, deal.token)]);
                batch.ledger.push(payout.hold.clone());
                batch.puts.push(payout.insert()?);
                (EscrowEventType::PayoutPending, Some(data))
            }
        };
        self.push_event(
            &mut batch,
            &mut deal,
            event,
            Some(from),
            actor,
            on_behalf_of,
            reason,
            data,
            now,
        )?;
        batch.puts.push(deal.update(version)?);
        batch.puts.extend(also);
        self.queue_put(&mut batch, &deal).await?;
        self.commit(batch).await?;
        Ok(EscrowView::from_deal(&deal))
    }
}
