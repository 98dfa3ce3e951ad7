//! Background work: submitting operations to their rail, confirming them, reconciling
//! unknown outcomes, and crediting inbound deposits.
//!
//! The reconciler never resubmits: an operation whose submission outcome is unknown is
//! resolved only by asking the rail where the payment with that id stands (spec 3.2
//! rule 5). Rails are idempotent by payment id, so even a crash between submit and the
//! commit that records it cannot pay twice.
//!
//! Two rules keep several workers (processes on one database) from returning money to
//! the ledger for a payment that still lands: the claim is held across `rail.submit`
//! ([`hold_through_side_effect`]), and an operation is failed on the rail's `NotFound`
//! only after the payment's deadline plus a margin
//! ([`RailPayment::past_deadline`](crate::ports::RailPayment::past_deadline)), when no
//! rail can include it any more.

use super::{Engine, LANE_ADVANCE, LANE_SUBMIT, Operation};
use crate::domain::events::DomainEvent;
use crate::domain::state::{OpEvent, OpKind, OpStatus, transition};
use crate::domain::time::Timestamp;
use crate::error::CoreResult;
use crate::kernel::{RoundReport, Worker};
use crate::ports::claim::hold_through_side_effect;
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::rail::RailError;
use crate::ports::record::{Record, Versioned};
use crate::ports::services::{SmsKind, SmsMessage};
use crate::ports::store::{Batch, OutboxEvent};
use serde::{Deserialize, Serialize};

/// One lane's claim: the decoded operations, whether the claim came back full, and the
/// records that did not decode; or why the claim failed.
type LaneClaim = Result<(Vec<Versioned<Operation>>, bool, Vec<String>), String>;

/// What one `tick` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Payments the rail accepted (`submit` answered `Ok`), refunds included.
    pub submitted: usize,
    /// Payments confirmed and posted in the ledger (a withdrawal's sweep included), and
    /// withdrawals closed (payout delivered, or refund confirmed).
    pub settled: usize,
    /// Operations failed, their held money returned to the ledger.
    pub failed: usize,
    /// Submissions whose outcome became unknown (left to the reconciler, never resent
    /// under a new id).
    pub unknown: usize,
    /// Inbound deposits credited at confirmation depth.
    pub deposits: usize,
    /// Submitted operations polled and deposits seen, still below confirmation depth.
    pub polled: usize,
    /// SMS of the outbox a gateway accepted.
    pub sms_sent: usize,
    /// Errors met (each left its record due for a later tick).
    pub errors: Vec<String>,
    /// The claim came back full (`batch_limit` operations): more are probably due, so
    /// a worker loop should tick again at once instead of waiting its interval.
    pub more_due: bool,
}

impl TickReport {
    /// Whether the tick moved nothing (errors and `more_due` aside), so a worker loop may
    /// sleep its interval.
    pub fn is_idle(&self) -> bool {
        self.moved() == 0
    }

    /// How many items the tick moved, of every kind.
    pub fn moved(&self) -> usize {
        self.submitted
            + self.settled
            + self.failed
            + self.unknown
            + self.deposits
            + self.polled
            + self.sms_sent
    }

    /// Takes one lane's claim: its operations into `claimed`, whether it came back full,
    /// and its errors.
    fn take_claim(&mut self, lane: LaneClaim, claimed: &mut Vec<Versioned<Operation>>) {
        match lane {
            Ok((ops, full, errors)) => {
                self.more_due |= full;
                self.errors.extend(errors);
                claimed.extend(ops);
            }
            Err(e) => self.errors.push(e),
        }
    }

    /// Adds another report's counts to this one (`more_due` if either says so).
    pub fn absorb(&mut self, other: TickReport) {
        self.submitted += other.submitted;
        self.settled += other.settled;
        self.failed += other.failed;
        self.unknown += other.unknown;
        self.deposits += other.deposits;
        self.polled += other.polled;
        self.sms_sent += other.sms_sent;
        self.errors.extend(other.errors);
        self.more_due |= other.more_due;
    }
}

/// An inbound deposit to a wallet from outside the service (id: `<rail>:<tx hash>:<index>`,
/// so each is recorded once). `DETECTED` when the scanner first sees it below the
/// confirmation depth (nothing credited); `CONFIRMED` at the depth, in the same commit as
/// the ledger credit and `transfer.received`. (Records written before the two states
/// existed were written at confirmation: they read as CONFIRMED.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositRecord {
    /// `<rail>:<tx hash>:<index>`: one record per transfer on the chain.
    pub id: String,
    /// The credited wallet's id.
    pub wallet: String,
    /// The rail's name (`polygon`, `tron`, ...); empty in records older than the field.
    #[serde(default)]
    pub rail: String,
    /// The wallet's address the deposit was sent to; empty in records older than the
    /// field.
    #[serde(default)]
    pub address: String,
    /// The transaction carrying the deposit.
    pub tx_hash: String,
    /// Micro-units credited (at confirmation).
    pub amount: crate::domain::money::Micros,
    /// Which stablecoin was deposited.
    pub token: crate::domain::money::Token,
    /// Whether it is credited yet.
    #[serde(default = "confirmed")]
    pub status: DepositStatus,
    /// Confirmations the scan reported when the record was last written (at detection,
    /// then at crediting).
    #[serde(default)]
    pub confirmations: u64,
    /// When the record was first written.
    pub created_at: Timestamp,
    /// When the scanner first saw it.
    #[serde(default)]
    pub detected_at: Option<Timestamp>,
    /// When it reached the confirmation depth and was credited.
    #[serde(default)]
    pub confirmed_at: Option<Timestamp>,
}

fn confirmed() -> DepositStatus {
    DepositStatus::Confirmed
}

/// Where a [`DepositRecord`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DepositStatus {
    /// Seen below the confirmation depth: nothing credited yet.
    Detected,
    /// At the confirmation depth: credited to the wallet, `transfer.received` emitted.
    Confirmed,
}

impl DepositStatus {
    /// The serialized name (`DETECTED`, `CONFIRMED`), also the record's listed status.
    pub fn as_str(self) -> &'static str {
        match self {
            DepositStatus::Detected => "DETECTED",
            DepositStatus::Confirmed => "CONFIRMED",
        }
    }
}

impl Record for DepositRecord {
    const KIND: &'static str = crate::ports::kinds::kind::DEPOSIT;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.as_str().to_string())
    }
}

use crate::domain::payments_events::{WalletTransferFields, wallet_transfer_payload};

impl Engine {
    /// One round of every worker, the engine on its own. Errors on one record are
    /// reported, not fatal.
    ///
    /// The two claim lanes ([`Engine::tick_lane`]) advance side by side, then inbound
    /// deposits are scanned (by a router of the wallet product alone,
    /// [`Engine::inbound_router`]), then the housekeeping runs
    /// ([`Engine::tick_housekeeping`]: due SMS, staff returns of stray deposits). A server runs the lanes as loops of
    /// their own instead, so a long submission batch never holds up the confirmations
    /// (or the other way round), and one router scans for every product.
    pub async fn tick(&self) -> TickReport {
        let mut report = self.tick_lanes().await;
        self.scan_inbound(&mut report).await;
        self.tick_housekeeping(&mut report).await;
        report
    }

    /// Both claim lanes side by side, one dispatch.
    async fn tick_lanes(&self) -> TickReport {
        // Both claims first, then one dispatch: an operation this round submits is not
        // polled in the same round.
        let (submit, advance) =
            futures_util::future::join(self.claim_lane(LANE_SUBMIT), self.claim_lane(LANE_ADVANCE))
                .await;
        let mut report = TickReport::default();
        let mut claimed = Vec::new();
        for lane in [submit, advance] {
            report.take_claim(lane, &mut claimed);
        }
        report.absorb(self.advance_claimed(claimed).await);
        report
    }

    /// One round of one claim lane: [`LANE_SUBMIT`] (operations due for their first
    /// submission) or [`LANE_ADVANCE`] (everything after it: polls, reconciliation,
    /// payouts, refunds).
    ///
    /// Why lanes: under load the submissions queue is long; claimed in one queue
    /// oldest-due first, it would keep the polls (whose money is already on its way)
    /// waiting behind it.
    pub async fn tick_lane(&self, lane: u8) -> TickReport {
        let mut report = TickReport::default();
        let mut claimed = Vec::new();
        report.take_claim(self.claim_lane(lane).await, &mut claimed);
        report.absorb(self.advance_claimed(claimed).await);
        report
    }

    /// Advances claimed operations.
    ///
    /// They advance concurrently: each step awaits one or two durable commits and a
    /// rail call, and a sequential loop pays those waits one after another (~170
    /// submissions per second measured, however fast the store), while side by side
    /// they share group commits. Each operation is claimed by one worker only, so no two
    /// futures touch the same record; a rail that must order one account's submissions
    /// does so itself ([`crate::ports::Rail::submit`]).
    async fn advance_claimed(&self, claimed: Vec<Versioned<Operation>>) -> TickReport {
        let mut report = TickReport::default();
        // First submissions go to their rail in batches (one per rail, when it has more
        // than one); everything else advances one by one; all of it side by side.
        let mut groups: std::collections::BTreeMap<_, Vec<Versioned<Operation>>> =
            Default::default();
        let mut single = Vec::with_capacity(claimed.len());
        let mut polls = Vec::new();
        for v in claimed {
            let known_rail = self.kernel.rail_map().contains_key(&v.record.rail);
            if Self::batch_submittable(&v.record) && known_rail {
                groups.entry(v.record.rail).or_default().push(v);
            } else if Self::pollable(&v.record) && known_rail {
                polls.push(v);
            } else {
                single.push(v);
            }
        }
        // A batch of one is an ordinary submission.
        let (groups, lone): (Vec<_>, Vec<_>) = groups.into_iter().partition(|(_, g)| g.len() > 1);
        single.extend(lone.into_iter().flat_map(|(_, g)| g));
        let batched =
            futures_util::future::join_all(groups.into_iter().map(|(rail, group)| async move {
                let mut r = TickReport::default();
                let Ok(rail_port) = self.rail(rail).cloned() else {
                    return r;
                };
                if let Err(e) = self.submit_group(&rail_port, group, &mut r).await {
                    r.errors
                        .push(format!("submit batch on {}: {e}", rail.name()));
                }
                r
            }));
        let singles = futures_util::future::join_all(single.into_iter().map(|v| async move {
            let mut r = TickReport::default();
            let id = v.record.id.0.clone();
            if let Err(e) = self.advance(v, &mut r).await {
                r.errors.push(format!("{id}: {e}"));
            }
            r
        }));
        // Polls: side by side, every decision in one commit (`polls.rs`).
        let (batched, singles, polled) =
            futures_util::future::join3(batched, singles, self.poll_all(polls)).await;
        for r in batched.into_iter().chain(singles) {
            report.absorb(r);
        }
        report.absorb(polled);
        report
    }

    /// The work beside the lanes: the SMS due now (after the lanes in [`Engine::tick`],
    /// so a settlement of the same round queues its SMS and this sends it). Inbound
    /// deposits are the inbound router's ([`crate::kernel::inbound`]).
    pub async fn tick_housekeeping(&self, report: &mut TickReport) {
        let (sent, more) = self.send_due_sms(&mut report.errors).await;
        report.sms_sent += sent;
        report.more_due |= more;
        // Staff returns of stray deposits (`stray_returns`): rare, a list read when none.
        let (_, errors) = self.advance_stray_returns().await;
        report.errors.extend(errors);
    }

    /// Claims up to `batch_limit` due operations of one lane: the decoded ones, whether
    /// the claim came back full (more are probably due), and the records that did not
    /// decode.
    async fn claim_lane(&self, lane: u8) -> LaneClaim {
        let claimed = self
            .ports()
            .store
            .claim_due(
                Operation::KIND,
                lane,
                &self.config.worker_id,
                self.now(),
                self.config.claim_lease_ms,
                self.config.batch_limit,
            )
            .await
            .map_err(|e| e.to_string())?;
        let full = self.config.batch_limit > 0 && claimed.len() >= self.config.batch_limit;
        let mut ops = Vec::with_capacity(claimed.len());
        let mut errors = Vec::new();
        for rec in claimed {
            match Operation::from_stored(&rec) {
                Ok(op) => ops.push(Versioned {
                    record: op,
                    version: rec.version,
                }),
                Err(e) => errors.push(format!("{}: {}", rec.id, crate::error::CoreError::from(e))),
            }
        }
        Ok((ops, full, errors))
    }

    /// Ticks until a round does nothing (or `max_rounds`), for tests and examples.
    /// Operations wait `poll_interval_ms` between polls: use 0 (or move the clock) to
    /// drive them to the end here.
    pub async fn settle_all(&self, max_rounds: usize) -> TickReport {
        let mut total = TickReport::default();
        for _ in 0..max_rounds {
            let r = self.tick().await;
            let idle = r.is_idle();
            total.absorb(r);
            if idle {
                break;
            }
        }
        total
    }

    /// A worker's step of `op`: its update plus `extra`, as background work (no API
    /// caller waits on it, so the store may let interactive commits go first).
    pub(crate) async fn save(&self, op: &Operation, version: u64, extra: Batch) -> CoreResult<u64> {
        let mut batch = extra;
        batch.puts.insert(0, op.update(version)?);
        batch.background = true;
        self.commit(batch).await?;
        Ok(version + 1)
    }

    async fn advance(&self, v: Versioned<Operation>, report: &mut TickReport) -> CoreResult<()> {
        let Versioned {
            record: mut op,
            mut version,
        } = v;
        let now = self.now();
        let rail = self.rail(op.rail)?.clone();
        match op.status {
            OpStatus::Queued | OpStatus::Pending => {
                op.status = transition(op.kind, op.status, OpEvent::Claim)?;
                op.submitted_at = Some(now);
                op.updated_at = now;
                // The payment's deadline, fixed before it is first sent and stored with
                // it: what later proves that it can no longer land.
                if op.payment.valid_until.is_none() {
                    op.payment.valid_until = Some(now.plus_millis(self.config.payment_validity_ms));
                }
                // Durable before the side effect: a crash now leaves SUBMITTING, which the
                // next claim resolves by asking the rail. Not due while the submit runs
                // (the claim rule), so no other worker takes it mid-submit.
                op.next_check_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
                version = self.save(&op, version, Batch::default()).await?;
                match self.submit_op(&rail, &op).await {
                    Ok(sub) => {
                        op.status = transition(op.kind, op.status, OpEvent::Submitted)?;
                        op.tx_hash = sub.tx_hash.or(op.tx_hash);
                        report.submitted += 1;
                    }
                    Err(RailError::Rejected { reason }) => {
                        return self.fail(op, version, reason, report).await;
                    }
                    Err(_) => {
                        op.status = transition(op.kind, op.status, OpEvent::OutcomeUnknown)?;
                        report.unknown += 1;
                    }
                }
                op.next_check_at = Some(now.plus_millis(self.config.poll_interval_ms));
                op.updated_at = now;
                self.save(&op, version, Batch::default()).await?;
                Ok(())
            }
            OpStatus::Submitting => {
                // Found mid-submit after the hold lapsed (a crash, or a submit that
                // outlasted the lease): the outcome is unknown.
                op.status = transition(op.kind, op.status, OpEvent::OutcomeUnknown)?;
                op.updated_at = now;
                op.next_check_at = Some(now);
                report.unknown += 1;
                self.save(&op, version, Batch::default()).await?;
                Ok(())
            }
            OpStatus::Submitted | OpStatus::SubmissionUnknown => {
                let step = self.poll_step(&rail, op, version).await?;
                report.absorb(self.commit_step(step).await?);
                Ok(())
            }
            OpStatus::CryptoReceived | OpStatus::PayoutSubmitting | OpStatus::PayoutUnknown => {
                self.advance_payout(op, version, report).await
            }
            // Terminal states are never due.
            _ => Ok(()),
        }
    }

    /// The commit that settles `op` (read at `version`), not yet committed: its update,
    /// the posts of its holds, its events and SMS.
    pub(crate) async fn settlement(&self, mut op: Operation, version: u64) -> CoreResult<Batch> {
        let now = self.now();
        op.status = transition(op.kind, op.status, OpEvent::Confirmed)?;
        op.updated_at = now;
        if op.status.is_terminal() {
            op.settled_at = Some(now);
            op.next_check_at = None;
        } else {
            // A withdrawal's crypto leg is done (CRYPTO_RECEIVED): the payout is next.
            op.next_check_at = Some(now);
        }
        let tx_hash = op.tx_hash.clone().unwrap_or_default();
        let ledger: Vec<LedgerTransfer> = op
            .holds
            .iter()
            .map(|h| LedgerTransfer {
                id: format!("{}:post", h.id),
                debit: h.debit.clone(),
                credit: h.credit.clone(),
                amount: h.amount,
                phase: Phase::Post {
                    pending_id: h.id.clone(),
                },
            })
            .collect();
        let mut outbox: Vec<OutboxEvent> = Vec::new();
        let mut puts = Vec::new();
        let mut batch = Batch::default();
        if op.kind == OpKind::Swap {
            self.swap_settlement(&op, now, &mut batch)?;
        }
        if op.kind == OpKind::Transfer {
            outbox.push(self.wallet_transfer_event(&op, true, now));
            outbox.push(self.event(
                &op.tenant,
                DomainEvent::TransferSettled {
                    transfer_id: op.id.0.clone(),
                    amount: op.amount,
                    token: op.token,
                    tx_hash: tx_hash.clone(),
                    updated_at: now,
                },
            )?);
            let recipient = match &op.to_wallet {
                Some(wid) => self.wallet_members(wid).await?,
                None => None,
            };
            if let Some(w) = recipient {
                let received = op.fees.map(|f| f.recipient).unwrap_or(op.amount);
                let address = w
                    .address(&op.rail.name())
                    .map(|a| a.0.clone())
                    .unwrap_or_default();
                for m in &w.members {
                    outbox.push(self.event(
                        m,
                        DomainEvent::TransferReceived {
                            transfer_id: op.id.0.clone(),
                            recipient_wallet: address.clone(),
                            amount: received,
                            token: op.token,
                            tx_hash: tx_hash.clone(),
                            rail: op.rail.name(),
                            settled_at: now,
                        },
                    )?);
                }
                if w.members.is_empty() {
                    // Best effort toward settlement (never blocks it), durable once
                    // decided: an outbox record of this commit, sent by the SMS step.
                    let text = self.money_received_sms(&w.phone, received, op.token);
                    let (_, put) = self.queue_sms(
                        &w.phone,
                        SmsMessage {
                            kind: SmsKind::MoneyReceived,
                            text,
                        },
                        None,
                        None,
                        now,
                    )?;
                    puts.push(put);
                }
            }
        }
        batch.puts.extend(puts);
        // The holds' posts first: a swap's credit follows its debit.
        batch.ledger.splice(0..0, ledger);
        batch.outbox.splice(0..0, outbox);
        batch.puts.insert(0, op.update(version)?);
        batch.background = true;
        Ok(batch)
    }

    pub(crate) async fn fail(
        &self,
        op: Operation,
        version: u64,
        reason: String,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let batch = self.failure(op, version, reason)?;
        self.commit(batch).await?;
        report.failed += 1;
        Ok(())
    }

    /// The commit that fails `op` (read at `version`), not yet committed: its update, the
    /// voids of its holds, and its events.
    pub(crate) fn failure(
        &self,
        mut op: Operation,
        version: u64,
        reason: String,
    ) -> CoreResult<Batch> {
        let now = self.now();
        op.status = transition(op.kind, op.status, OpEvent::Failed)?;
        op.error_reason = Some(reason.clone());
        op.updated_at = now;
        op.next_check_at = None;
        let ledger = op
            .holds
            .iter()
            .map(|h| LedgerTransfer {
                id: format!("{}:void", h.id),
                debit: h.debit.clone(),
                credit: h.credit.clone(),
                amount: h.amount,
                phase: Phase::Void {
                    pending_id: h.id.clone(),
                },
            })
            .collect();
        let mut outbox = Vec::new();
        if let Some(e) = self.swap_failure_event(&op, &reason, now)? {
            outbox.push(e);
        }
        if op.kind == OpKind::Transfer {
            outbox.push(self.wallet_transfer_event(&op, false, now));
            let broadcast = op.tx_hash.is_some();
            outbox.push(self.event(
                &op.tenant,
                DomainEvent::TransferFailed {
                    transfer_id: op.id.0.clone(),
                    reason,
                    amount: broadcast.then_some(op.amount),
                    token: broadcast.then_some(op.token),
                    tx_hash: op.tx_hash.clone(),
                    updated_at: now,
                },
            )?);
        }
        Ok(Batch {
            puts: vec![op.update(version)?],
            ledger,
            outbox,
            background: true,
            ..Default::default()
        })
    }

    /// `wallet.transfer.confirmed` / `.failed` of a tenant-initiated transfer, to the
    /// initiating tenant: the sender's debit, from the sending to the recipient address,
    /// with no gas charged (the service sponsors it).
    fn wallet_transfer_event(
        &self,
        op: &Operation,
        confirmed: bool,
        now: crate::domain::time::Timestamp,
    ) -> OutboxEvent {
        let to = op
            .payment
            .legs
            .iter()
            .find(|l| l.role == crate::ports::rail::LegRole::Recipient)
            .map(|l| l.to.0.clone())
            .unwrap_or_default();
        let (name, payload) = wallet_transfer_payload(&WalletTransferFields {
            confirmed,
            tx_hash: op.tx_hash.clone(),
            customer_id: op
                .from_customer
                .clone()
                .or_else(|| op.from_wallet.as_ref().map(|w| w.0.clone()))
                .unwrap_or_default(),
            network: op.rail.name(),
            token: op.token,
            from_address: op.payment.from_address.0.clone(),
            to_address: to,
            amount: op.amount,
            gas_fee: crate::domain::money::Micros::ZERO,
            confirmed_at: confirmed.then_some(now),
            block_number: if confirmed { op.block } else { None },
        });
        self.raw_event(&op.tenant, name, payload)
    }
}

impl From<TickReport> for RoundReport {
    fn from(r: TickReport) -> Self {
        RoundReport {
            progressed: r.moved(),
            errors: r.errors,
            more_due: r.more_due,
        }
    }
}

/// The wallet engine as one [`Worker`] of a [`crate::kernel::Runtime`]: each round is
/// both claim lanes, then the housekeeping. Not the inbound scan: on a runtime, one
/// [`crate::kernel::InboundRouter`] scans for every product
/// ([`crate::kernel::Runtime::products`] adds it). A server that wants the lanes side by
/// side wraps [`Engine::tick_lane`] in workers of its own.
#[async_trait::async_trait]
impl Worker for Engine {
    fn name(&self) -> &str {
        "wallets"
    }
    async fn round(&self) -> RoundReport {
        let mut report = self.tick_lanes().await;
        self.tick_housekeeping(&mut report).await;
        report.into()
    }
}
