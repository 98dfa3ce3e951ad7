//! Staff reads and returns of stray deposits: real money that reached a sandbox address
//! (`kernel::stray`, issue #48 item 3).
//!
//! A return is a staff decision that moves money, so it follows the treasury credits'
//! rules: a named identity, the audit entry in the decision's own commit, and the
//! two-person rule above `EngineConfig::topup_single_approval_max` (the first call
//! proposes, a different identity repeating it with the same destination decides).
//!
//! The return is recorded (RETURNING, step QUEUED) before anything is sent. The worker
//! ([`Engine::advance_stray_returns`]) then sends it as a checkout sweep is sent:
//! SUBMITTING committed before the rail call, the payment signed by the sandbox
//! address's own key and sponsored by the rail, polled, and retried under the next
//! attempt's id only once the previous one can no longer land. The liability
//! (`stray:<id>:<TOKEN>`) closes when the return confirms.

use super::{Engine, StaffIdentity, rail_err};
use crate::domain::money::Micros;
use crate::error::{CoreError, CoreResult};
use crate::kernel::attempts::{self, AttemptNext, POLL_MS, RETRY_MS};
use crate::kernel::quarantine::QUARANTINE_SUBKIND;
use crate::kernel::stray::{ReturnStep, STRAY_LIST_OWNER, StrayDeposit, StrayReturn, StrayStatus};
use crate::ports::kinds::kind;
use crate::ports::ledger::{LedgerError, LedgerTransfer, Phase};
use crate::ports::record::{Record, Versioned, get_record};
use crate::ports::store::{Batch, ListQuery};
use crate::ports::{ChainAddress, LegRole, PaymentLeg, Rail, RailError, RailPayment};
use std::sync::Arc;

/// How long one return payment may take to land (its deadline).
const VALIDITY_MS: i64 = 10 * 60_000;
/// Returns advanced per worker round.
const RETURN_PAGE: usize = 100;

/// A stray deposit and what the ledger still owes for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrayView {
    /// The record.
    pub deposit: StrayDeposit,
    /// The balance of `stray:<id>:<TOKEN>`: the amount until the return confirms, then 0.
    pub owed: Micros,
}

impl Engine {
    /// A page of stray deposits, newest first, optionally of one status (`held`,
    /// `proposed`, `returning`, `returned`), and the total.
    pub async fn stray_deposits(
        &self,
        status: Option<&str>,
        limit: u32,
        page: u32,
    ) -> CoreResult<(Vec<StrayView>, u64)> {
        self.list_strays(
            None,
            status,
            "must be held, proposed, returning, returned, releasing or released",
            limit,
            page,
        )
        .await
    }

    /// A page of stray-deposit records (of `subkind`, or all), optionally of one status
    /// (`statuses` names the valid ones in a refusal), with their owed amounts: the one
    /// list read of the stray and the quarantined deposits.
    pub(crate) async fn list_strays(
        &self,
        subkind: Option<&str>,
        status: Option<&str>,
        statuses: &str,
        limit: u32,
        page: u32,
    ) -> CoreResult<(Vec<StrayView>, u64)> {
        if !(1..=100).contains(&limit) {
            return Err(CoreError::InvalidParameter {
                field: "limit",
                reason: "must be between 1 and 100".into(),
            });
        }
        if page == 0 {
            return Err(CoreError::InvalidParameter {
                field: "page",
                reason: "pages start at 1".into(),
            });
        }
        let status = match status {
            None => None,
            Some(s) => Some(
                StrayStatus::parse(s).ok_or_else(|| CoreError::InvalidParameter {
                    field: "status",
                    reason: statuses.into(),
                })?,
            ),
        };
        let (rows, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: kind::STRAY_DEPOSIT.into(),
                tenant: STRAY_LIST_OWNER.into(),
                subkind: subkind.map(Into::into),
                status: status.map(|s| s.as_str().into()),
                limit: limit as usize,
                offset: (page as usize - 1).saturating_mul(limit as usize),
            })
            .await
            .map_err(super::store_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let deposit = StrayDeposit::from_stored(r)?;
            out.push(self.stray_view(deposit).await?);
        }
        Ok((out, total))
    }

    /// How many stray deposits are in `status` (the metric reads `held`).
    pub async fn count_stray_deposits(&self, status: StrayStatus) -> CoreResult<u64> {
        let (_, total) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: kind::STRAY_DEPOSIT.into(),
                tenant: STRAY_LIST_OWNER.into(),
                subkind: None,
                status: Some(status.as_str().into()),
                limit: 1,
                offset: 0,
            })
            .await
            .map_err(super::store_err)?;
        Ok(total)
    }

    /// One stray deposit.
    pub async fn stray_deposit(&self, id: &str) -> CoreResult<StrayView> {
        let v = self.load_stray(id).await?;
        self.stray_view(v.record).await
    }

    pub(super) async fn load_stray(&self, id: &str) -> CoreResult<Versioned<StrayDeposit>> {
        get_record::<StrayDeposit>(&*self.ports().store, id)
            .await?
            .ok_or_else(|| CoreError::NotFound {
                kind: "stray deposit",
                id: id.chars().take(64).collect(),
            })
    }

    pub(super) async fn stray_view(&self, deposit: StrayDeposit) -> CoreResult<StrayView> {
        let owed = match self.ports().ledger.balance(&deposit.account().id).await {
            Ok(b) => Micros::new(u64::try_from(b.posted().max(0)).unwrap_or(u64::MAX)),
            Err(LedgerError::UnknownAccount { .. }) => Micros::ZERO,
            Err(e) => return Err(super::store_err(crate::ports::StoreError::Ledger(e))),
        };
        Ok(StrayView { deposit, owed })
    }

    /// `staff` returns stray deposit `id` to `to` (default: its sender) because of
    /// `reason`, under the two-person rule above the single-approval cap; audited in
    /// the same commit (`stray.return.proposed`, `stray.return`). A repeat of a return
    /// already decided, to the same destination, answers it again and sends nothing
    /// more. Refusals write nothing.
    pub async fn return_stray_deposit(
        &self,
        staff: &StaffIdentity,
        id: &str,
        to: Option<&str>,
        reason: &str,
    ) -> CoreResult<StrayView> {
        let reason = crate::kernel::staff::clean("reason", reason, 2000, true)?;
        let Versioned {
            record: mut s,
            version,
        } = self.load_stray(id).await?;
        let to = match to.map(str::trim) {
            Some(t) => {
                check_address(&s.rail, t)?;
                t.to_string()
            }
            // A mint's "sender" is the zero address: nobody to return to.
            None if s.from.trim_start_matches("0x").bytes().all(|b| b == b'0') => {
                return Err(CoreError::InvalidParameter {
                    field: "to",
                    reason: "the sender is the zero address (a mint): name a destination".into(),
                });
            }
            None => s.from.clone(),
        };
        if crate::kernel::inbound::canonical_address(&s.rail, &to)
            == crate::kernel::inbound::canonical_address(&s.rail, &s.address)
        {
            return Err(CoreError::InvalidParameter {
                field: "to",
                reason: "must not be the sandbox address itself".into(),
            });
        }
        let same_to = |r: &StrayReturn| r.to == to;
        match (&s.status, &s.returned) {
            // A quarantined deposit staff released, or whose release awaits a second
            // identity: one decision at a time (`engine::quarantine`).
            (StrayStatus::Releasing | StrayStatus::Released, _) | (StrayStatus::Proposed, None) => {
                return Err(CoreError::InvalidTransition {
                    machine: "quarantined_deposit",
                    from: s.status.as_str().into(),
                    event: "return".into(),
                });
            }
            (StrayStatus::Returning | StrayStatus::Returned, Some(r)) if same_to(r) => {
                return self.stray_view(s).await;
            }
            (StrayStatus::Returning | StrayStatus::Returned, _) => {
                return Err(CoreError::InvalidTransition {
                    machine: "stray_deposit",
                    from: s.status.as_str().into(),
                    event: "return to another address".into(),
                });
            }
            (StrayStatus::Proposed, Some(r)) => {
                let p = r.proposed_by.clone().unwrap_or_default();
                if p == staff.id() {
                    return Err(CoreError::SecondApproverRequired { proposed_by: p });
                }
                if !same_to(r) {
                    return Err(CoreError::ApprovalMismatch { field: "to" });
                }
            }
            _ => {}
        }
        // Sanctions screening of the return's destination: returning funds to a listed
        // sender is paying it.
        if let Some(rail) = self.kernel().rails().find(|x| x.id().name() == s.rail) {
            let dest = ChainAddress(to.clone());
            self.kernel
                .screen_addresses(&s.tenant, "stray.return", &s.id, rail.id(), &[&dest])
                .await?;
        }
        let now = self.now();
        let note = format!(
            "{} {} to {to}: {reason}",
            s.amount.to_decimal_string(),
            s.token
        );
        let propose =
            s.status == StrayStatus::Held && s.amount > self.config.topup_single_approval_max;
        let (action, proposed_by) = if propose {
            ("stray.return.proposed", Some(staff.id().to_string()))
        } else {
            (
                "stray.return",
                s.returned.as_ref().and_then(|r| r.proposed_by.clone()),
            )
        };
        let audit = self.audit_entry(staff.id(), action, &s.id, Some(&note))?;
        s.status = if propose {
            StrayStatus::Proposed
        } else {
            StrayStatus::Returning
        };
        s.returned = Some(StrayReturn {
            to,
            reason,
            proposed_by,
            approved_by: (!propose).then(|| staff.id().to_string()),
            step: ReturnStep::Queued,
            attempt: 0,
            payment: None,
            tx_hash: None,
            last_error: None,
            due_at: (!propose).then_some(now),
            returned_at: None,
        });
        self.commit(Batch {
            puts: vec![s.update(version)?, audit.insert()?],
            ..Default::default()
        })
        .await?;
        self.stray_view(s).await
    }

    /// One step of every due return (the workers' round); how many confirmed. Each
    /// return's failure is reported and the others go on.
    /// Quarantined deposits (`kernel::quarantine`) are returned by the same steps.
    pub async fn advance_stray_returns(&self) -> (usize, Vec<String>) {
        let mut rows = Vec::new();
        for subkind in [None, Some(QUARANTINE_SUBKIND)] {
            match self
                .ports()
                .store
                .list(&ListQuery {
                    kind: kind::STRAY_DEPOSIT.into(),
                    tenant: STRAY_LIST_OWNER.into(),
                    subkind: subkind.map(Into::into),
                    status: Some(StrayStatus::Returning.as_str().into()),
                    limit: RETURN_PAGE,
                    offset: 0,
                })
                .await
            {
                Ok((page, _)) => rows.extend(page),
                Err(e) => return (0, vec![format!("stray returns: {e}")]),
            }
        }
        let now = self.now();
        let (mut done, mut errors) = (0, Vec::new());
        for r in rows {
            let v = match StrayDeposit::from_stored(&r) {
                Ok(record) => Versioned {
                    record,
                    version: r.version,
                },
                Err(e) => {
                    errors.push(format!("stray {}: {e}", r.id));
                    continue;
                }
            };
            let due = v.record.returned.as_ref().and_then(|x| x.due_at);
            if due.is_some_and(|d| d > now) {
                continue;
            }
            match self.advance_return(v).await {
                Ok(true) => done += 1,
                Ok(false) => {}
                // Another node's round moved it first (every node runs this): its turn.
                Err(CoreError::Conflict { .. }) => {}
                Err(e) => errors.push(format!("stray return {}: {e}", r.id)),
            }
        }
        (done, errors)
    }

    async fn save_stray(&self, s: &StrayDeposit, version: u64) -> CoreResult<u64> {
        self.commit(Batch {
            puts: vec![s.update(version)?],
            background: true,
            ..Default::default()
        })
        .await?;
        Ok(version + 1)
    }

    /// One step of a return; `true` when it confirmed.
    async fn advance_return(&self, v: Versioned<StrayDeposit>) -> CoreResult<bool> {
        let Versioned {
            record: mut s,
            mut version,
        } = v;
        let now = self.now();
        let Some(mut r) = s.returned.clone() else {
            return Ok(false);
        };
        let Some(rail) = self
            .kernel()
            .rails()
            .find(|x| x.id().name() == s.rail)
            .cloned()
        else {
            r.last_error = Some("network not configured".into());
            r.due_at = Some(now.plus_millis(RETRY_MS));
            s.returned = Some(r);
            self.save_stray(&s, version).await?;
            return Ok(false);
        };
        match r.step {
            ReturnStep::Queued => {
                r.attempt += 1;
                r.payment = Some(RailPayment {
                    id: format!("{}_ret_{}", s.id, r.attempt),
                    from: s.purpose.clone(),
                    from_address: ChainAddress(s.address.clone()),
                    token: s.token,
                    legs: vec![PaymentLeg {
                        to: ChainAddress(r.to.clone()),
                        amount: s.amount,
                        role: LegRole::Recipient,
                    }],
                    valid_until: Some(now.plus_millis(VALIDITY_MS)),
                });
                s.returned = Some(r);
                self.submit_return(&rail, s, version).await
            }
            ReturnStep::Submitting | ReturnStep::Submitted => {
                let Some(payment) = r.payment.clone() else {
                    r.step = ReturnStep::Queued;
                    r.due_at = Some(now);
                    s.returned = Some(r);
                    self.save_stray(&s, version).await?;
                    return Ok(false);
                };
                let status = rail.status(&payment.id).await;
                match attempts::after_poll(status, &payment, now) {
                    // A return is staff's decision about money that reached an address
                    // it should not have: its cost is the service's, not metered in a
                    // tenant's sponsorship budget.
                    AttemptNext::Landed { tx_hash, cost: _ } => {
                        r.tx_hash = Some(tx_hash);
                        r.due_at = None;
                        r.returned_at = Some(now);
                        s.returned = Some(r);
                        s.status = StrayStatus::Returned;
                        let owed = s.account();
                        let out = crate::ports::accounts::chain_in(&s.rail, s.token);
                        self.commit(Batch {
                            puts: vec![s.update(version)?],
                            ledger: vec![LedgerTransfer {
                                id: format!("stray:{}:out", s.id),
                                debit: owed.id.clone(),
                                credit: out.id.clone(),
                                amount: s.amount,
                                phase: Phase::Single,
                            }],
                            accounts: vec![owed, out],
                            background: true,
                            ..Default::default()
                        })
                        .await?;
                        Ok(true)
                    }
                    AttemptNext::PollAgain { due_at, error } => {
                        if error.is_some() {
                            r.last_error = error;
                        }
                        r.due_at = Some(due_at);
                        s.returned = Some(r);
                        self.save_stray(&s, version).await?;
                        Ok(false)
                    }
                    AttemptNext::NewAttempt {
                        due_at,
                        error,
                        cost: _,
                    } => {
                        r.step = ReturnStep::Queued;
                        if error.is_some() {
                            r.last_error = error;
                        }
                        r.due_at = Some(due_at);
                        s.returned = Some(r);
                        self.save_stray(&s, version).await?;
                        Ok(false)
                    }
                    AttemptNext::SubmitAgain => {
                        version = self.save_stray(&s, version).await?;
                        self.submit_return(&rail, s, version).await
                    }
                }
            }
        }
    }

    /// Commits SUBMITTING (held through the call), then submits the current payment.
    async fn submit_return(
        &self,
        rail: &Arc<dyn Rail>,
        mut s: StrayDeposit,
        version: u64,
    ) -> CoreResult<bool> {
        let Some(mut r) = s.returned.clone() else {
            return Ok(false);
        };
        let Some(payment) = r.payment.clone() else {
            return Ok(false);
        };
        let now = self.now();
        r.step = ReturnStep::Submitting;
        r.due_at = Some(crate::ports::hold_through_side_effect(
            now,
            self.config.claim_lease_ms,
        ));
        s.returned = Some(r.clone());
        let version = self.save_stray(&s, version).await?;
        let now = self.now();
        match rail.submit(&payment).await {
            Ok(sub) => {
                r.step = ReturnStep::Submitted;
                if sub.tx_hash.is_some() {
                    r.tx_hash = sub.tx_hash;
                }
                r.due_at = Some(now.plus_millis(POLL_MS));
            }
            Err(RailError::Rejected { reason }) => {
                // Nothing was sent: the next attempt later, under a new id.
                r.step = ReturnStep::Queued;
                r.last_error = Some(reason);
                r.due_at = Some(now.plus_millis(RETRY_MS));
            }
            Err(e) => {
                // Unknown outcome: ask the rail.
                r.step = ReturnStep::Submitted;
                r.last_error = Some(rail_err(e).to_string());
                r.due_at = Some(now.plus_millis(POLL_MS));
            }
        }
        s.returned = Some(r);
        self.save_stray(&s, version).await?;
        Ok(false)
    }
}

/// Refuses a destination that is not an address of `rail`'s form
/// ([`crate::kernel::destination::check_address_form`], the rule checkout refunds share).
fn check_address(rail: &str, to: &str) -> CoreResult<()> {
    crate::kernel::destination::check_address_form(rail, to).map_err(|reason| {
        CoreError::InvalidParameter {
            field: "to",
            reason,
        }
    })
}
