//! Top-ups: money in (spec 1 item 3). A tenant asks for a top-up quote at a locked rate
//! ([`Engine::create_topup`]); service staff confirm it once the fiat has arrived
//! ([`Engine::confirm_topup`]), which credits the tenant's treasury exactly once.
//!
//! The confirmation commits ONE batch: the top-up's new state (checked against the
//! version read, and claiming its fiat reference), the ledger transfer
//! `fiat_in:<TOKEN> -> treasury:<tenant>:<TOKEN>` whose id is derived from the top-up id
//! (`topup:<tu_id>`, so no retry can ever credit twice), the
//! `treasury.topup.credited` event and the staff audit entry (`topup.confirm`). A
//! replayed confirmation is ALREADY_CONFIRMED and writes nothing; an expired quote is
//! QUOTE_EXPIRED and writes nothing.
//!
//! Above the single-approval cap (`EngineConfig::topup_single_approval_max`) the first
//! confirmation commits only the proposal and its audit entry
//! (`topup.confirm.proposed`); the credit waits for a different staff identity
//! ([`crate::domain::topup`] has the rule).

use super::{Engine, StaffIdentity, accounts};
use crate::domain::events::DomainEvent;
use crate::domain::ids::{QuoteId, TenantId, is_valid_id};
use crate::domain::money::{Currency, Token};
use crate::domain::topup::{ConfirmOutcome, TOPUP_ID_PREFIX, TopUp, TopUpConfirmation, TopUpView};
use crate::error::{CoreError, CoreResult};
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::record::{Record, Versioned, get_record};
use crate::ports::store::{Batch, ListQuery};
use rust_decimal::Decimal;

/// Races on one top-up a confirmation re-decides before giving up (each lost race means
/// another confirmation landed, so the second pass answers ALREADY_CONFIRMED).
const MAX_RACE_RETRIES: usize = 2;

/// The ledger transfer id of a top-up's credit: one per top-up, ever.
pub fn topup_transfer_id(topup_id: &str) -> String {
    format!("topup:{topup_id}")
}

impl Engine {
    /// `POST /v1/treasury/topups`: a top-up quote of `fiat_amount` `currency` into
    /// `token`, priced by the FX rate source exactly as an FX quote
    /// ([`Engine::quote`]: same rate, same rounding down to the micro-unit), living
    /// [`super::EngineConfig::topup_ttl_ms`]. Nothing is credited until staff confirm it.
    pub async fn create_topup(
        &self,
        tenant: &TenantId,
        fiat_amount: Decimal,
        currency: Currency,
        token: Token,
    ) -> CoreResult<TopUpView> {
        self.tenant(tenant).await?;
        let id = self.new_id(TOPUP_ID_PREFIX);
        // The quote id is never stored: the quote is only the pricing.
        let q = self
            .price_quote(QuoteId(id.clone()), tenant, fiat_amount, currency, token)
            .await?;
        let t = TopUp::from_quote(id, q, self.config.topup_ttl_ms);
        self.commit(Batch {
            puts: vec![t.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(t.view(self.now()))
    }

    /// `GET /v1/treasury/topups/{id}`: the top-up `id` of this tenant; another tenant's,
    /// or an id that is not a `tu_` id, is NOT_FOUND.
    pub async fn topup(&self, tenant: &TenantId, id: &str) -> CoreResult<TopUpView> {
        match self.read_topup(id).await? {
            Some(v) if &v.record.tenant == tenant => Ok(v.record.view(self.now())),
            _ => Err(topup_not_found(id)),
        }
    }

    /// The top-up `id` as staff see it (any tenant's; who confirmed it and the note).
    pub async fn topup_for_staff(&self, id: &str) -> CoreResult<TopUpView> {
        match self.read_topup(id).await? {
            Some(v) => Ok(v.record.staff_view(self.now())),
            None => Err(topup_not_found(id)),
        }
    }

    /// `GET /v1/treasury/topups`: the tenant's top-ups, newest first, and their total.
    pub async fn list_topups(
        &self,
        tenant: &TenantId,
        limit: usize,
        offset: usize,
    ) -> CoreResult<(Vec<TopUpView>, u64)> {
        let (recs, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: TopUp::KIND.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: None,
                limit,
                offset,
            })
            .await
            .map_err(super::store_err)?;
        let now = self.now();
        let views = recs
            .iter()
            .map(|r| TopUp::from_stored(r).map(|t| t.view(now)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((views, total))
    }

    /// Staff confirmation by `staff` that the top-up `id`'s fiat arrived (admin route,
    /// CLI `topup confirm`): credits the tenant's treasury with the quoted token amount,
    /// once, and records who confirmed it with which fiat reference; above the
    /// single-approval cap the first confirmation is a proposal (AWAITING_SECOND_APPROVAL)
    /// that a different staff identity's confirmation credits. Every confirmation commits
    /// its staff audit entry with itself. Returns the staff view.
    ///
    /// Refusals write nothing: NOT_FOUND (no such top-up), INVALID_PARAMETER (reference
    /// or note), ALREADY_CONFIRMED (a replay, whatever its reference), QUOTE_EXPIRED (the
    /// quote's lifetime passed first), FIAT_REFERENCE_USED (the reference already
    /// confirmed another top-up), SECOND_APPROVER_REQUIRED (the proposer approving),
    /// APPROVAL_MISMATCH (an approver's reference differs from the proposal's).
    pub async fn confirm_topup(
        &self,
        id: &str,
        staff: &StaffIdentity,
        confirmation: TopUpConfirmation,
    ) -> CoreResult<TopUpView> {
        let c = confirmation.checked()?;
        let cap = self.config.topup_single_approval_max;
        let mut tries = 0;
        loop {
            let Some(v) = self.read_topup(id).await? else {
                return Err(topup_not_found(id));
            };
            let now = self.now();
            let mut t = v.record.clone();
            let outcome = t.confirm(&c, staff.id(), cap, now)?;
            let mut note = format!(
                "{} {}: {}",
                t.token_amount.to_decimal_string(),
                t.token,
                c.fiat_reference
            );
            if let Some(n) = &c.note {
                note = format!("{note}; {n}");
            }
            let mut batch = Batch {
                puts: vec![t.update(v.version)?],
                ..Default::default()
            };
            if outcome == ConfirmOutcome::Proposed {
                let audit =
                    self.audit_entry(staff.id(), "topup.confirm.proposed", &t.id, Some(&note))?;
                batch.puts.push(audit.insert()?);
            } else {
                let audit = self.audit_entry(staff.id(), "topup.confirm", &t.id, Some(&note))?;
                batch.puts.push(audit.insert()?);
                let from = accounts::fiat_in(t.token);
                let to = accounts::treasury(&t.tenant, t.token);
                let event = self.event(
                    &t.tenant,
                    DomainEvent::TreasuryTopupCredited {
                        topup_id: t.id.clone(),
                        amount: t.token_amount,
                        token: t.token,
                        fiat_amount: t.view(now).fiat_amount,
                        currency_code: t.currency_code.clone(),
                        fiat_reference: c.fiat_reference.clone(),
                        credited_at: now,
                    },
                )?;
                batch.accounts = vec![from.clone(), to.clone()];
                batch.ledger = vec![LedgerTransfer {
                    id: topup_transfer_id(&t.id),
                    debit: from.id,
                    credit: to.id,
                    amount: t.token_amount,
                    phase: Phase::Single,
                }];
                batch.outbox = vec![event];
            }
            match self.commit(batch).await {
                Ok(_) => return Ok(t.staff_view(now)),
                // Another confirmation landed between the read and the commit: decide
                // again on what it wrote (ALREADY_CONFIRMED, or the proposal).
                Err(e) if e.lost_race_on(TopUp::KIND) && tries < MAX_RACE_RETRIES => tries += 1,
                // The only unique key a top-up claims is its fiat reference.
                Err(CoreError::Conflict { record: None, .. }) => {
                    return Err(CoreError::FiatReferenceUsed {
                        fiat_reference: c.fiat_reference.clone(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn read_topup(&self, id: &str) -> CoreResult<Option<Versioned<TopUp>>> {
        if !is_valid_id(TOPUP_ID_PREFIX, id) {
            return Ok(None);
        }
        Ok(get_record::<TopUp>(&*self.ports().store, id).await?)
    }
}

fn topup_not_found(id: &str) -> CoreError {
    CoreError::NotFound {
        kind: "topup",
        id: id.chars().take(64).collect(),
    }
}
