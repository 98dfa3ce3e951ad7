//! [`EscrowAdmin`]: the service-staff API. The reference server exposes it under
//! `/admin/v1/escrows` behind the admin token or a staff account's secret, never a tenant
//! key. Staff list the deals that need them across tenants ([`EscrowAdmin::attention`]),
//! resolve DISPUTED deals (optionally under a two-person rule) and authorise recoveries
//! of partial, excess, late and unsupported-token deposits to the buyer's linked wallet.
//! Every staff action is recorded in the deal's history with the staff id as its
//! authority, and every staff decision (a resolution, a recovery, or a two-person
//! proposal of either) writes its entry of the cross-cutting staff audit log
//! (`stablecoin_core::kernel::staff::StaffAuditEntry`) IN THE DECISION'S OWN BATCH: a decision
//! cannot happen unaudited, and an audit entry never records a decision that did not.
//!
//! Two-person rule ([`EscrowConfig::second_approval_above`]): a resolution of a deal, or
//! a recovery of a balance, above the threshold is only proposed by the first staff
//! member; a different staff member repeating it carries it out. Staff ids are compared,
//! so a host must give each credential its own id and the shared admin token ONE id
//! (the reference server: `admin-token`), never the caller's claim.

use crate::engine::{EscrowEngine, MAX_RETRIES, Requester, clean_text, decide, page_params};
use crate::error::{EscrowError, EscrowResult, store_err};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::queue::{ATTENTION, STAFF_QUEUE_OWNER, StaffQueueEntry};
use crate::state::{Action, RecoveryKind};
use crate::view::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::staff::{StaffAuditEntry, StaffIdentity};
use stablecoin_core::ports::{Batch, ListQuery, Put, Record, Versioned, get_record};
use std::fmt;

/// A member of service staff, as authenticated by the host (admin token, SSO, ...).
#[derive(Clone, PartialEq, Eq)]
pub struct StaffActor {
    staff_id: String,
}

impl StaffActor {
    /// `staff_id`: 1-100 printable ASCII characters (an email, a username).
    pub fn new(staff_id: &str) -> EscrowResult<StaffActor> {
        let s = staff_id.trim();
        if s.is_empty() || s.len() > 100 || !s.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            return Err(EscrowError::InvalidParameter {
                field: "staff_id",
                reason: "must be 1 to 100 printable ASCII characters without spaces".into(),
            });
        }
        Ok(StaffActor {
            staff_id: s.to_string(),
        })
    }

    /// The actor of a staff member the host authenticated (`stf_...` or `admin-token`).
    pub fn from_identity(staff: &StaffIdentity) -> EscrowResult<StaffActor> {
        StaffActor::new(staff.id())
    }

    /// The validated staff id, recorded as `staff:<id>` in history and payouts.
    pub fn id(&self) -> &str {
        &self.staff_id
    }

    fn actor(&self) -> Actor {
        Actor::Staff {
            staff_id: self.staff_id.clone(),
        }
    }
}

impl fmt::Debug for StaffActor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StaffActor({})", self.staff_id)
    }
}

/// The staff API over the same store and rail as the tenant API.
#[derive(Clone)]
pub struct EscrowAdmin {
    engine: EscrowEngine,
}

impl EscrowEngine {
    /// The staff API. Hosts must put it behind staff authentication.
    pub fn admin(&self) -> EscrowAdmin {
        EscrowAdmin {
            engine: self.clone(),
        }
    }
}

impl EscrowAdmin {
    /// The staff audit entry of a decision, to commit in the decision's batch.
    fn audit(
        &self,
        staff: &StaffActor,
        action: &str,
        target: &str,
        note: &str,
        now: Timestamp,
    ) -> EscrowResult<Put> {
        let e = StaffAuditEntry::new(
            staff.id(),
            action,
            target,
            Some(note),
            now,
            self.engine.random10(),
        )?;
        Ok(e.insert()?)
    }

    /// The threshold of the two-person rule, if `amount` is above it.
    fn needs_two(&self, amount: Micros) -> bool {
        self.engine
            .config()
            .second_approval_above
            .is_some_and(|t| amount > t)
    }

    /// Any tenant's escrow.
    pub async fn get(&self, _staff: &StaffActor, id: &str) -> EscrowResult<EscrowView> {
        Ok(EscrowView::from_deal(
            &self.engine.load_any(id).await?.record,
        ))
    }

    /// Any tenant's escrow history, newest first.
    pub async fn events(
        &self,
        _staff: &StaffActor,
        id: &str,
        limit: Option<u32>,
        page: Option<u32>,
    ) -> EscrowResult<EscrowEventList> {
        let v = self.engine.load_any(id).await?;
        self.engine.history_page(&v.record, limit, page).await
    }

    /// Every deal that needs staff, of every tenant, newest first: DISPUTED deals and
    /// deals holding a recoverable balance ([`crate::queue`]). `limit` 1-100 (default
    /// 20), `page` from 1.
    pub async fn attention(
        &self,
        _staff: &StaffActor,
        limit: Option<u32>,
        page: Option<u32>,
    ) -> EscrowResult<StaffEscrowList> {
        let (limit, page) = page_params(limit, page)?;
        let (rows, total) = self
            .engine
            .inner
            .kernel
            .ports()
            .store
            .list(&ListQuery {
                kind: StaffQueueEntry::KIND.into(),
                subkind: None,
                tenant: STAFF_QUEUE_OWNER.into(),
                status: Some(ATTENTION.into()),
                limit: limit as usize,
                offset: (page as usize - 1).saturating_mul(limit as usize),
            })
            .await
            .map_err(store_err)?;
        let mut escrows = Vec::with_capacity(rows.len());
        for r in &rows {
            let entry = StaffQueueEntry::from_stored(r)?;
            // The entry commits with the deal, so the deal exists; a purged one is skipped.
            if let Some(v) = self.engine.load(&entry.id.0).await? {
                escrows.push(StaffEscrowView::of(&v.record));
            }
        }
        Ok(StaffEscrowList {
            limit,
            page,
            total,
            escrows,
        })
    }

    /// Any tenant's escrow with its tenant and any pending two-person proposal.
    pub async fn get_staff_view(
        &self,
        _staff: &StaffActor,
        id: &str,
    ) -> EscrowResult<StaffEscrowView> {
        Ok(StaffEscrowView::of(&self.engine.load_any(id).await?.record))
    }

    /// Resolves a DISPUTED escrow: `RELEASE` to the seller's or `REFUND` to the buyer's
    /// linked wallet. The deal stays DISPUTED with `payout_pending=true` until the payout
    /// confirms (then RELEASED / REFUNDED with `resolution_note`); a failed payout returns
    /// it to DISPUTED with `payout_failure_reason`, for staff to resolve again.
    ///
    /// Two-person rule ([`EscrowConfig::second_approval_above`]): when the deal amount is
    /// above the threshold, the first call records a proposal on the deal and changes
    /// nothing else (`awaiting_approval: true`). A call by a DIFFERENT staff member with
    /// the same resolution carries it out, with the proposer's note as
    /// `resolution_note`, the approver's note as the history entry's reason and both ids
    /// in its data. The proposer approving their own proposal is
    /// `SECOND_APPROVER_REQUIRED`; the proposer asking for the other resolution replaces
    /// the proposal; another staff member asking for the other resolution is
    /// `RESOLUTION_MISMATCH` (a disagreement is settled by people, not by the last click).
    pub async fn resolve(
        &self,
        staff: &StaffActor,
        id: &str,
        req: &ResolveRequest,
    ) -> EscrowResult<ResolveOutcome> {
        let resolution = req.resolution.trim();
        let action = match resolution {
            "RELEASE" => Action::ResolveRelease,
            "REFUND" => Action::ResolveRefund,
            _ => {
                return Err(EscrowError::InvalidParameter {
                    field: "resolution",
                    reason: "must be RELEASE or REFUND".into(),
                });
            }
        };
        let note =
            clean_text("resolution_note", Some(&req.resolution_note), 2000)?.ok_or_else(|| {
                EscrowError::MissingParameter {
                    field: "resolution_note",
                    reason: "a staff resolution records its reasoning".into(),
                }
            })?;
        let actor = staff.actor();
        for _ in 0..MAX_RETRIES {
            let v = self.engine.load_any(id).await?;
            let decision = decide(v.record.phase(), action, Requester::Staff)?;
            let two_person = self.needs_two(v.record.amount);
            let mut resolution_note = note.clone();
            if two_person {
                match v.record.pending_resolution.clone() {
                    Some(p) if p.proposed_by != staff.id() && p.resolution != resolution => {
                        return Err(EscrowError::ResolutionMismatch {
                            proposed: p.resolution,
                        });
                    }
                    Some(p) if p.proposed_by != staff.id() => resolution_note = p.note,
                    Some(p) if p.resolution == resolution => {
                        return Err(EscrowError::SecondApproverRequired {
                            proposed_by: p.proposed_by,
                        });
                    }
                    // No proposal yet, or the proposer changes their own: (re)propose.
                    _ => match self.propose(v, resolution, &note, staff).await {
                        Err(EscrowError::Conflict { .. }) => continue,
                        other => return other,
                    },
                }
            }
            if decision.sends() {
                self.engine.require_can_send().await?;
            }
            let proposed_by = v
                .record
                .pending_resolution
                .as_ref()
                .map(|p| p.proposed_by.clone());
            let audit = self.audit(
                staff,
                "escrow.resolve",
                &v.record.id.0,
                &format!("{resolution}: {note}"),
                self.engine.now(),
            )?;
            match self
                .engine
                .apply_action(
                    v,
                    action,
                    &actor,
                    None,
                    Some(note.clone()),
                    Some(resolution_note),
                    vec![audit],
                )
                .await
            {
                Ok(escrow) => {
                    return Ok(ResolveOutcome {
                        escrow,
                        awaiting_approval: false,
                        proposed_by,
                    });
                }
                Err(EscrowError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EscrowError::Conflict {
            what: format!("escrow {id}"),
        })
    }

    /// Records (or replaces) the two-person proposal on the deal, and its audit entry
    /// (`escrow.resolve.proposed`), nothing else.
    async fn propose(
        &self,
        v: Versioned<Deal>,
        resolution: &str,
        note: &str,
        staff: &StaffActor,
    ) -> EscrowResult<ResolveOutcome> {
        let Versioned {
            record: mut deal,
            version,
        } = v;
        let now = self.engine.now();
        deal.pending_resolution = Some(PendingResolution {
            resolution: resolution.to_string(),
            note: note.to_string(),
            proposed_by: staff.id().to_string(),
            proposed_at: now,
        });
        deal.updated_at = now;
        let mut batch = Batch::default();
        batch.puts.push(deal.update(version)?);
        batch.puts.push(self.audit(
            staff,
            "escrow.resolve.proposed",
            &deal.id.0,
            &format!("{resolution}: {note}"),
            now,
        )?);
        self.engine.queue_put(&mut batch, &deal).await?;
        self.engine.commit(batch).await?;
        Ok(ResolveOutcome {
            escrow: EscrowView::from_deal(&deal),
            awaiting_approval: true,
            proposed_by: Some(staff.id().to_string()),
        })
    }

    /// Authorises returning a whole recoverable balance of one kind to the BUYER's linked
    /// wallet (separate recoveries per kind, spec 1.6). Partial deposits become
    /// recoverable only once the escrow expired or was cancelled. Returns the payout; the
    /// worker submits it and `escrow.recovered` / `escrow.recovery_failed` follow.
    ///
    /// Two-person rule: a balance above [`EscrowConfig::second_approval_above`] is only
    /// proposed by the first call ([`RecoveryOutcome::Proposed`], audited
    /// `escrow.recovery.proposed`); a different staff member asking for the same kind and
    /// token, while the balance is still the proposed amount, carries it out with the
    /// proposer's note on the payout. The proposer repeating their proposal is
    /// SECOND_APPROVER_REQUIRED (changing it replaces it); another staff member asking for
    /// something else is APPROVAL_MISMATCH.
    pub async fn authorize_recovery(
        &self,
        staff: &StaffActor,
        id: &str,
        req: &RecoveryRequest,
    ) -> EscrowResult<RecoveryOutcome> {
        let kind =
            RecoveryKind::parse(req.kind.trim()).ok_or_else(|| EscrowError::InvalidParameter {
                field: "kind",
                reason: "must be PARTIAL, EXCESS, LATE or UNSUPPORTED_TOKEN".into(),
            })?;
        let note = clean_text("note", Some(&req.note), 2000)?.ok_or_else(|| {
            EscrowError::MissingParameter {
                field: "note",
                reason: "a recovery records why staff authorised it".into(),
            }
        })?;
        let token: Option<Token> = match req.token.as_deref() {
            None => None,
            Some(s) => Some(s.parse()?),
        };
        let actor = staff.actor();
        for _ in 0..MAX_RETRIES {
            let v = self.engine.load_any(id).await?;
            let version = v.version;
            let mut deal = v.record;
            let token = match token {
                Some(t) => t,
                None if kind == RecoveryKind::UnsupportedToken => deal
                    .recoverable
                    .iter()
                    .find(|r| r.kind == kind)
                    .map(|r| r.token)
                    .unwrap_or(deal.token),
                None => deal.token,
            };
            let now = self.engine.now();
            let from = deal.phase();
            let amount = deal.recoverable_of(kind, token);
            if amount.is_zero() {
                return Err(EscrowError::NothingToRecover {
                    kind: format!("{} {token}", kind.as_str()),
                });
            }
            let mut payout_note = note.clone();
            let mut approved_from = None;
            if self.needs_two(amount) {
                let same = |p: &PendingRecovery| p.kind == kind && p.token == token;
                match deal.pending_recovery.clone() {
                    Some(p) if p.proposed_by == staff.id() && same(&p) && p.amount == amount => {
                        return Err(EscrowError::SecondApproverRequired {
                            proposed_by: p.proposed_by,
                        });
                    }
                    Some(p) if p.proposed_by != staff.id() => {
                        if p.kind != kind {
                            return Err(EscrowError::ApprovalMismatch { field: "kind" });
                        }
                        if p.token != token {
                            return Err(EscrowError::ApprovalMismatch { field: "token" });
                        }
                        if p.amount != amount {
                            return Err(EscrowError::ApprovalMismatch { field: "amount" });
                        }
                        payout_note = p.note.clone();
                        approved_from = Some(p.proposed_by);
                    }
                    // No proposal yet, or the proposer changes their own: (re)propose.
                    _ => {
                        deal.pending_recovery = Some(PendingRecovery {
                            kind,
                            token,
                            amount,
                            note: note.clone(),
                            proposed_by: staff.id().to_string(),
                            proposed_at: now,
                        });
                        deal.updated_at = now;
                        let mut batch = Batch::default();
                        batch.puts.push(deal.update(version)?);
                        batch.puts.push(self.audit(
                            staff,
                            "escrow.recovery.proposed",
                            &deal.id.0,
                            &format!("{} {token} {amount}: {note}", kind.as_str()),
                            now,
                        )?);
                        self.engine.queue_put(&mut batch, &deal).await?;
                        match self.engine.commit(batch).await {
                            Ok(()) => {
                                return Ok(RecoveryOutcome::Proposed(Box::new(
                                    StaffEscrowView::of(&deal),
                                )));
                            }
                            Err(EscrowError::Conflict { .. }) => continue,
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
            self.engine.require_can_send().await?;
            // Sanctions screening of the buyer's wallet before anything is claimed.
            let to = deal.buyer.address.clone();
            self.engine
                .kernel()
                .screen_addresses(
                    &deal.tenant.0,
                    "escrow.recovery",
                    &deal.id.0,
                    stablecoin_core::ports::RailId::Tron,
                    &[&to],
                )
                .await?;
            deal.pending_recovery = None;
            let source = accounts::bucket(&deal.id, kind, token);
            // Built while the balance is still recoverable: `new_payout` checks the
            // payout against it, and only then is it taken.
            let payout = self.engine.new_payout(
                &mut deal,
                PayoutKind::Recovery(kind),
                Party::Buyer,
                amount,
                token,
                source.clone(),
                &actor,
                None,
                Some(payout_note.clone()),
                false,
                now,
            );
            deal.take_recoverable(kind, token);
            deal.recoveries.push(RecoverySummary {
                payout_id: payout.id.clone(),
                kind,
                token,
                amount,
                status: payout.status,
                tx_hash: None,
            });
            let mut batch = Batch::default();
            let mut data = json!({
                "payout_id": payout.id,
                "kind": kind.as_str(),
                "token": token.as_str(),
                "amount": amount.to_base_units_string(),
                "to": Party::Buyer.as_str(),
                "to_address": deal.buyer.address.0,
            });
            // A two-person recovery: the history names both staff members.
            if let (Some(p), Some(obj)) = (&approved_from, data.as_object_mut()) {
                obj.insert("proposed_by".into(), json!(p));
                obj.insert("approved_by".into(), json!(staff.id()));
            }
            self.engine.push_event(
                &mut batch,
                &mut deal,
                EscrowEventType::RecoveryPending,
                Some(from),
                &actor,
                None,
                Some(note.clone()),
                Some(data),
                now,
            )?;
            batch
                .accounts
                .extend([source, accounts::paid_out(&deal.id, token)]);
            batch.ledger.push(payout.hold.clone());
            batch.puts.push(payout.insert()?);
            batch.puts.push(deal.update(version)?);
            batch.puts.push(self.audit(
                staff,
                "escrow.recovery",
                &deal.id.0,
                &format!("{} {token} {}: {note}", kind.as_str(), payout.id),
                now,
            )?);
            self.engine.queue_put(&mut batch, &deal).await?;
            match self.engine.commit(batch).await {
                Ok(()) => {
                    return Ok(RecoveryOutcome::Claimed(Box::new(PayoutView::from_record(
                        &payout,
                    ))));
                }
                Err(EscrowError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EscrowError::Conflict {
            what: format!("escrow {id}"),
        })
    }

    /// Every payout of an escrow (deal payouts and recoveries), oldest first.
    pub async fn payouts(&self, _staff: &StaffActor, id: &str) -> EscrowResult<Vec<PayoutView>> {
        let deal = self.engine.load_any(id).await?.record;
        let mut out = Vec::new();
        let ids = (1..=deal.payout_attempts)
            .map(|n| format!("{}:payout:{n}", deal.id))
            .chain((1..=deal.recovery_attempts).map(|n| format!("{}:recovery:{n}", deal.id)));
        for pid in ids {
            if let Some(p) =
                get_record::<PayoutRecord>(&*self.engine.inner.kernel.ports().store, &pid).await?
            {
                out.push(PayoutView::from_record(&p.record));
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The deal's money per token, read from the ledger (for reconciliation and audits):
    /// `deposited == held + partial + excess + late + unsupported + paid_out` always.
    pub async fn accounting(&self, _staff: &StaffActor, id: &str) -> EscrowResult<DealAccounting> {
        let deal = self.engine.load_any(id).await?.record;
        let mut tokens: Vec<Token> = deal.deposited.keys().copied().collect();
        if !tokens.contains(&deal.token) {
            tokens.push(deal.token);
        }
        let mut out = DealAccounting {
            escrow_id: deal.id.0.clone(),
            escrow_address: deal.escrow_address.0.clone(),
            tokens: Vec::new(),
        };
        for token in tokens {
            let posted = |b: stablecoin_core::ports::Balance| b.posted().max(0) as u64;
            let held = self
                .engine
                .balance(&accounts::held(&deal.id, token).id)
                .await?;
            let mut t = TokenAccounting {
                token: Some(token),
                deposited: deal.deposited_of(token).get(),
                held: posted(held),
                in_flight: held.debits_pending,
                ..Default::default()
            };
            for kind in RecoveryKind::ALL {
                let b = self
                    .engine
                    .balance(&accounts::bucket(&deal.id, kind, token).id)
                    .await?;
                t.in_flight += b.debits_pending;
                let v = posted(b);
                match kind {
                    RecoveryKind::Partial => t.partial = v,
                    RecoveryKind::Excess => t.excess = v,
                    RecoveryKind::Late => t.late = v,
                    RecoveryKind::UnsupportedToken => t.unsupported = v,
                }
            }
            t.paid_out = posted(
                self.engine
                    .balance(&accounts::paid_out(&deal.id, token).id)
                    .await?,
            );
            out.tokens.push(t);
        }
        Ok(out)
    }
}

/// What [`EscrowAdmin::resolve`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ResolveOutcome {
    /// The escrow after the call (`payout_pending: true` once a resolution was carried
    /// out).
    pub escrow: EscrowView,
    /// True when the call only recorded a proposal that a second staff member must
    /// approve (two-person rule); nothing else changed.
    pub awaiting_approval: bool,
    /// Who proposed the resolution under the two-person rule (the caller when awaiting
    /// approval, the first staff member when this call approved it); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_by: Option<String>,
}

/// What [`EscrowAdmin::authorize_recovery`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecoveryOutcome {
    /// The recovery payout is claimed; the worker submits it.
    Claimed(Box<PayoutView>),
    /// Two-person rule: only a proposal was recorded (the deal, with
    /// `pending_recovery`); a different staff member must approve it.
    Proposed(Box<StaffEscrowView>),
}

impl RecoveryOutcome {
    /// The payout, when the recovery was carried out.
    pub fn payout(&self) -> Option<&PayoutView> {
        match self {
            RecoveryOutcome::Claimed(p) => Some(p),
            RecoveryOutcome::Proposed(_) => None,
        }
    }

    /// The payout, when the recovery was carried out.
    pub fn into_payout(self) -> Option<PayoutView> {
        match self {
            RecoveryOutcome::Claimed(p) => Some(*p),
            RecoveryOutcome::Proposed(_) => None,
        }
    }
}

/// A two-person recovery proposal awaiting approval, as staff see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PendingRecoveryView {
    /// PARTIAL, EXCESS, LATE or UNSUPPORTED_TOKEN.
    pub kind: String,
    /// The token.
    pub token: String,
    /// The proposed amount, base units.
    pub amount: String,
    /// The proposer's reason.
    pub note: String,
    /// The proposing staff id.
    pub proposed_by: String,
    /// When it was proposed (RFC 3339).
    pub proposed_at: String,
}

/// A two-person proposal awaiting approval, as staff see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PendingResolutionView {
    /// `RELEASE` or `REFUND`.
    pub resolution: String,
    /// The proposer's note (the future `resolution_note`).
    pub note: String,
    /// The proposing staff id.
    pub proposed_by: String,
    /// When it was proposed (RFC 3339).
    pub proposed_at: String,
}

/// An escrow as staff see it: the tenant's view plus whose it is and what staff owe it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct StaffEscrowView {
    /// The deal's tenant (`ten_...`).
    pub tenant_id: String,
    /// True while the deal needs staff: DISPUTED, or holding a recoverable balance.
    pub needs_attention: bool,
    /// A two-person proposal awaiting a second staff member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_resolution: Option<PendingResolutionView>,
    /// A two-person recovery proposal awaiting a second staff member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_recovery: Option<PendingRecoveryView>,
    /// The escrow, exactly as its tenant reads it.
    pub escrow: EscrowView,
}

impl StaffEscrowView {
    /// The staff view of a stored deal.
    pub fn of(deal: &Deal) -> StaffEscrowView {
        StaffEscrowView {
            tenant_id: deal.tenant.0.clone(),
            needs_attention: crate::queue::needs_staff(deal),
            pending_resolution: deal
                .pending_resolution
                .as_ref()
                .map(|p| PendingResolutionView {
                    resolution: p.resolution.clone(),
                    note: p.note.clone(),
                    proposed_by: p.proposed_by.clone(),
                    proposed_at: p.proposed_at.to_rfc3339(),
                }),
            pending_recovery: deal.pending_recovery.as_ref().map(|p| PendingRecoveryView {
                kind: p.kind.as_str().to_string(),
                token: p.token.as_str().to_string(),
                amount: p.amount.to_base_units_string(),
                note: p.note.clone(),
                proposed_by: p.proposed_by.clone(),
                proposed_at: p.proposed_at.to_rfc3339(),
            }),
            escrow: EscrowView::from_deal(deal),
        }
    }
}

/// A page of the staff queue, newest deal first (API-CONVENTIONS lists).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct StaffEscrowList {
    /// Page size used (1-100).
    pub limit: u32,
    /// 1-based page number.
    pub page: u32,
    /// Deals needing staff, over all pages.
    pub total: u64,
    /// This page's deals.
    pub escrows: Vec<StaffEscrowView>,
}
