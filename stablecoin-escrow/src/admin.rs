//! [`EscrowAdmin`]: the service-staff API (the server exposes it under `/admin/v1/escrows`
//! behind an admin token, never a tenant key). Staff resolve DISPUTED deals and authorise
//! recoveries of partial, excess, late and unsupported-token deposits to the buyer's
//! linked wallet. Every staff action is recorded with the staff id as its authority.

use crate::engine::{EscrowEngine, MAX_RETRIES, clean_text};
use crate::error::{EscrowError, EscrowResult};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::{Action, RecoveryKind};
use crate::view::*;
use serde_json::json;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{Batch, Record, get_record};
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

    /// Resolves a DISPUTED escrow: `RELEASE` to the seller's or `REFUND` to the buyer's
    /// linked wallet. The deal stays DISPUTED with `payout_pending=true` until the payout
    /// confirms (then RELEASED / REFUNDED with `resolution_note`); a failed payout returns
    /// it to DISPUTED with `payout_failure_reason`, for staff to resolve again.
    pub async fn resolve(
        &self,
        staff: &StaffActor,
        id: &str,
        req: &ResolveRequest,
    ) -> EscrowResult<EscrowView> {
        let action = match req.resolution.trim() {
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
        self.engine
            .act(
                id,
                action,
                &staff.actor(),
                None,
                Some(note.clone()),
                Some(note),
            )
            .await
    }

    /// Authorises returning a whole recoverable balance of one kind to the BUYER's linked
    /// wallet (separate recoveries per kind, spec 1.6). Partial deposits become
    /// recoverable only once the escrow expired or was cancelled. Returns the payout; the
    /// worker submits it and `escrow.recovered` / `escrow.recovery_failed` follow.
    pub async fn authorize_recovery(
        &self,
        staff: &StaffActor,
        id: &str,
        req: &RecoveryRequest,
    ) -> EscrowResult<PayoutView> {
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
            let amount = deal.take_recoverable(kind, token);
            if amount.is_zero() {
                return Err(EscrowError::NothingToRecover {
                    kind: format!("{} {token}", kind.as_str()),
                });
            }
            self.engine.require_can_send().await?;
            let source = accounts::bucket(&deal.id, kind, token);
            let payout = self.engine.new_payout(
                &mut deal,
                PayoutKind::Recovery(kind),
                Party::Buyer,
                amount,
                token,
                source.clone(),
                &actor,
                None,
                Some(note.clone()),
                false,
                now,
            );
            deal.recoveries.push(RecoverySummary {
                payout_id: payout.id.clone(),
                kind,
                token,
                amount,
                status: payout.status,
                tx_hash: None,
            });
            let mut batch = Batch::default();
            let data = json!({
                "payout_id": payout.id,
                "kind": kind.as_str(),
                "token": token.as_str(),
                "amount": amount.to_base_units_string(),
                "to": Party::Buyer.as_str(),
                "to_address": deal.buyer.address.0,
            });
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
            match self.engine.commit(batch).await {
                Ok(()) => return Ok(PayoutView::from_record(&payout)),
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
            if let Some(p) = get_record::<PayoutRecord>(&*self.engine.inner.store, &pid).await? {
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
