//! Withdrawals (off-ramp): the wallet's tokens are swept to the service treasury on
//! chain, then paid out as fiat by mobile money (spec 3.2).
//!
//! `PENDING -> SUBMITTING -> SUBMITTED -> CRYPTO_RECEIVED -> PAYOUT_SUBMITTING ->
//! COMPLETED`. A payout the provider refuses, or reports failed, is refunded on chain
//! to the wallet and the withdrawal ends `REFUNDED` once the refund confirms. A payout
//! whose submission outcome is unknown (`PAYOUT_UNKNOWN`) is resolved only by the
//! provider's status query about the same payout id: never by paying under a new id,
//! and never by a refund on a timer (a payout the provider still calls pending may yet
//! be paid, and refunding it too would pay twice).
//!
//! Every step is resumable: each side effect (the sweep, the payout, each refund
//! attempt) is recorded before it is made and held from other workers while it runs
//! ([`hold_through_side_effect`]); a worker that dies anywhere leaves a state the next
//! claim continues from:
//!
//! | Left in | The next claim |
//! |---|---|
//! | PENDING | submits the sweep |
//! | SUBMITTING (crash before or after the sweep's submit) | SUBMISSION_UNKNOWN: asks the rail; fails it only once it provably can no longer land |
//! | SUBMITTED, SUBMISSION_UNKNOWN | asks the rail |
//! | CRYPTO_RECEIVED | submits the payout |
//! | PAYOUT_SUBMITTING, PAYOUT_UNKNOWN (crash before or after the payout's submit) | asks the provider that took it; `NotFound` submits the same id again only if that provider documents idempotent re-submits (MTN), else waits (M-Pesa) for a definite answer or staff |
//! | refund recorded (crash before or after its submit) | asks the rail about the attempt; submits it again (same id) if not found |
//! | refund attempt refused or unsent | the same attempt again after a backoff |
//! | refund attempt failed or not found, past its deadline | a new attempt (a new id) |
//!
//! Ledger: the sweep holds `wallet -> withdrawals:<TOKEN>` (posted at CRYPTO_RECEIVED,
//! voided if the sweep fails); a delivered payout moves `withdrawals -> fiat_out`; a
//! refund moves `withdrawals -> wallet` when the refund confirms.

use super::worker::TickReport;
use super::{Engine, Operation, OperationView, PayoutLeg};
use crate::domain::money::{Currency, Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::state::{OpEvent, OpKind, OpStatus, transition};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::claim::hold_through_side_effect;
use crate::ports::ledger::{LedgerAccount, LedgerTransfer, Phase};
use crate::ports::rail::{LegRole, PaymentLeg, RailError, RailPayment, SubmissionStatus};
use crate::ports::record::Record;
use crate::ports::services::RateSide;
use crate::ports::services::{Payout, PayoutError, PayoutStatus};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::Batch;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// `POST /v1/users/withdraw`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawRequest {
    /// The withdrawing wallet's phone, which the payout is also sent to; the caller must
    /// be a member of that wallet.
    pub phone_number: Phone,
    /// The stablecoin withdrawn (USDC or USDT on an EVM chain, USDT on TRON).
    pub token: Token,
    /// Micro-units of `token` to withdraw; must be above zero.
    pub amount: Micros,
    /// Fiat currency of the mobile-money payout (spec 2.6 `payout_currency`).
    pub payout_currency: String,
}

pub(super) fn withdrawals_account(token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("withdrawals:{token}"),
        allow_negative: false,
    }
}

pub(super) fn fiat_out_account(token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("fiat_out:{token}"),
        allow_negative: false,
    }
}

impl Engine {
    /// Accepts a withdrawal: member only; the wallet's ledger balance is held at once.
    /// UNKNOWN_TOKEN for a token the EVM rail does not carry; RAIL_NOT_READY unless it is
    /// READY (the sweep is a sponsored send).
    pub async fn withdraw(
        &self,
        tenant: &crate::domain::ids::TenantId,
        req: &WithdrawRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        self.withdraw_on(tenant, None, req, idempotency_key).await
    }

    /// [`Engine::withdraw`] from the wallet's balance on the EVM chain `network` names
    /// (the primary one for `None`): the sweep goes to the treasury's address there.
    pub async fn withdraw_on(
        &self,
        tenant: &crate::domain::ids::TenantId,
        network: Option<crate::ports::rail::RailId>,
        req: &WithdrawRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        // The product's own refusals (switched off, a zero amount) come first.
        self.check_withdrawal(req)?;
        let rail = self.evm_rail_for(network)?.id();
        self.withdraw_from(tenant, rail, req, idempotency_key).await
    }

    /// [`Engine::withdraw`] from the wallet's balance on `rail`, any configured rail
    /// (`/v1/tron/users/withdraw` uses TRON): the sweep goes to the treasury's address
    /// there and a refund comes back on the same rail. The steps after acceptance are
    /// the same on every rail: each is a [`RailPayment`] the rail submits and confirms.
    pub async fn withdraw_from(
        &self,
        tenant: &crate::domain::ids::TenantId,
        rail: crate::ports::rail::RailId,
        req: &WithdrawRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        self.withdraw_gated(tenant, rail, req, idempotency_key, None)
            .await
    }

    /// [`Engine::withdraw_from`], or the carrying out of a pending policy approval
    /// (`approving`, see `policy_gate.rs`). A lost race on a policy's window usage
    /// (another request of its scope admitted first) decides again, once.
    pub(crate) async fn withdraw_gated(
        &self,
        tenant: &crate::domain::ids::TenantId,
        rail: crate::ports::rail::RailId,
        req: &WithdrawRequest,
        idempotency_key: Option<&str>,
        approving: Option<&super::policy_gate::Approving>,
    ) -> CoreResult<OperationView> {
        let attempt = || self.withdraw_attempt(tenant, rail, req, idempotency_key, approving);
        match attempt().await {
            Err(e) if super::policy_gate::lost_policy_race(&e) => attempt().await,
            other => other,
        }
    }

    async fn withdraw_attempt(
        &self,
        tenant: &crate::domain::ids::TenantId,
        rail: crate::ports::rail::RailId,
        req: &WithdrawRequest,
        idempotency_key: Option<&str>,
        approving: Option<&super::policy_gate::Approving>,
    ) -> CoreResult<OperationView> {
        let currency = self.check_withdrawal(req)?;
        let rail = self.rail(rail)?.clone();
        super::admission::check_token(&*rail, req.token)?;
        let scope = self.scope_on("withdraw", rail.id());
        self.idempotent(tenant, idempotency_key, &scope, req, || async {
            self.require_ready(rail.id()).await?;
            let name = rail.id().name();
            let wallet = self.require_wallet(&req.phone_number).await?.record;
            wallet.require_member(tenant)?;
            // Sponsorship budget (issue #51 item 4): the sweep is sponsored.
            self.sponsor_gate(tenant, rail.id()).await?;
            let from_address =
                wallet
                    .address(&name)
                    .cloned()
                    .ok_or_else(|| CoreError::NotFound {
                        kind: "wallet address",
                        id: name.clone(),
                    })?;
            let rate = self
                .ports()
                .rates
                .rate_for(currency, req.token, RateSide::CustomerSellsToken)
                .await?;
            // Down to what the provider pays (never more than the currency's minor
            // unit), in the service's favour: M-Pesa pays whole shillings only.
            let decimals = self
                .ports()
                .payouts
                .payout_decimals(&currency)
                .min(currency.exponent);
            let amount = (req.amount.to_decimal() * rate)
                .round_dp_with_strategy(decimals, rust_decimal::RoundingStrategy::ToZero);
            if amount <= Decimal::ZERO {
                return Err(CoreError::InvalidAmount {
                    input: req.amount.to_decimal_string(),
                    reason: "too small to pay out in this currency".into(),
                });
            }
            let treasury = self.service_address(&rail, KeyPurpose::Treasury).await?;
            let id = self.new_id(OpKind::Withdrawal.id_prefix());
            let payment = RailPayment {
                id: id.clone(),
                from: KeyPurpose::Wallet(wallet.id.0.clone()),
                from_address,
                token: req.token,
                legs: vec![PaymentLeg {
                    to: treasury,
                    amount: req.amount,
                    role: LegRole::Recipient,
                }],
                valid_until: None,
            };
            // Sanctions screening of the sweep's destination, before anything is held.
            self.kernel
                .screen_payment(&tenant.0, "withdrawal", rail.id(), &payment)
                .await?;
            // Spending policies (issue #51): the destination is the mobile-money number
            // paid (the wallet's phone), before anything is held.
            let subject = super::policy_gate::Subject {
                operation: "withdrawal",
                wallet: &wallet.id,
                rail: rail.id(),
                token: req.token,
                amount: req.amount,
                destination: Some(crate::domain::policy::momo_key(wallet.phone.as_str())),
            };
            let pending = || super::policy_gate::PendingRequest::Withdrawal {
                rail: rail.id(),
                request: req.clone(),
            };
            let policy_puts = self
                .policy_gate(tenant, &subject, &id, approving, pending, idempotency_key)
                .await?;
            let mut op = self.new_operation(
                OpKind::Withdrawal,
                tenant,
                rail.id(),
                req.token,
                req.amount,
                payment,
            );
            let src = self.wallet_account(&wallet.id, rail.id(), req.token);
            let dst = withdrawals_account(req.token);
            op.holds = vec![LedgerTransfer {
                id: format!("{id}:sweep"),
                debit: src.id.clone(),
                credit: dst.id.clone(),
                amount: req.amount,
                phase: Phase::Pending,
            }];
            op.from_wallet = Some(wallet.id.clone());
            op.from_phone = Some(wallet.phone.clone());
            op.payout = Some(PayoutLeg {
                currency: currency.code.to_string(),
                amount,
                rate,
                phone: wallet.phone.clone(),
                submitted_at: None,
                reference: None,
                failure: None,
                refund: None,
                refund_tx_hash: None,
                refund_attempts: 0,
                refund_error: None,
                refund_failures: 0,
                provider: None,
                resolution: None,
            });
            let mut puts = vec![op.insert()?];
            puts.extend(policy_puts);
            let batch = Batch {
                puts,
                accounts: vec![src, dst],
                ledger: op.holds.clone(),
                ..Default::default()
            };
            Ok((batch, op.view()))
        })
        .await
    }

    /// The refusals that come before any rail is looked at: withdrawals switched off
    /// (no payout provider), a zero amount, a currency the service does not know.
    fn check_withdrawal(&self, req: &WithdrawRequest) -> CoreResult<Currency> {
        if !self.config.withdrawals_enabled {
            return Err(CoreError::WithdrawalsUnavailable);
        }
        if req.amount.is_zero() {
            return Err(CoreError::InvalidAmount {
                input: "0".into(),
                reason: "amount must be greater than zero".into(),
            });
        }
        Currency::parse(&req.payout_currency).map_err(|_| CoreError::InvalidParameter {
            field: "payout_currency",
            reason: format!("unsupported payout currency {:?}", req.payout_currency),
        })
    }

    /// Moves a withdrawal whose crypto leg is done through its payout, from whichever
    /// state it was left in (a crash may have stopped it at any step).
    ///
    /// - CRYPTO_RECEIVED: the payout is submitted (recorded PAYOUT_SUBMITTING first).
    /// - PAYOUT_SUBMITTING / PAYOUT_UNKNOWN: the status query of the provider that took
    ///   it ([`PayoutLeg::provider`]) decides; while another provider is configured it
    ///   waits. `Delivered` completes it, `Failed` refunds it, `Pending` waits however
    ///   long it takes, and `NotFound` (the submit may never have reached the provider:
    ///   a crash before it, a lost request) submits the same payout id again only when
    ///   the provider documents that a re-submit is deduplicated; otherwise it is
    ///   PAYOUT_UNKNOWN until the provider answers or staff resolve it
    ///   ([`Engine::resolve_payout`]). Nothing is ever refunded on a timer.
    /// - A refund under way ([`PayoutLeg::refund`]): see `advance_refund`.
    pub(crate) async fn advance_payout(
        &self,
        mut op: Operation,
        mut version: u64,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        let Some(mut payout) = op.payout.clone() else {
            return Err(CoreError::Storage(format!(
                "withdrawal {} has no payout leg",
                op.id
            )));
        };
        if payout.refund.is_some() {
            return self.advance_refund(op, version, payout, report).await;
        }
        let current = self.ports().payouts.identity();
        if op.status == OpStatus::CryptoReceived {
            op.status = transition(op.kind, op.status, OpEvent::PayoutStart)?;
            payout.submitted_at = Some(now);
            payout.provider = Some(current);
            op.payout = Some(payout.clone());
            op.updated_at = now;
            // Durable before the side effect, and held while it runs (the claim rule).
            op.next_check_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
            version = self.save(&op, version, Batch::default()).await?;
            return self.submit_payout(op, version, payout, report).await;
        }
        // Taken by another provider than the configured one (the operator switched):
        // only that provider can say whether it paid. Never asked, re-submitted or
        // settled here; it waits for that provider or for staff.
        if let Some(holder) = payout.provider.as_deref().filter(|h| *h != current) {
            report.errors.push(format!(
                "{}: payout held by provider {holder}, not the configured {current}: waiting for it or for staff",
                op.id
            ));
            return self.poll_later(op, version).await;
        }
        match self.ports().payouts.status(&op.id.0).await {
            Ok(PayoutStatus::Delivered { reference }) => {
                self.complete_payout(op, version, payout, reference, report)
                    .await
            }
            Ok(PayoutStatus::Failed { reason }) => {
                self.start_refund(op, version, payout, reason, report).await
            }
            Ok(PayoutStatus::NotFound) if !self.ports().payouts.resubmit_is_idempotent() => {
                // The provider may hold it unseen, and does not document that it
                // refuses a second payment under the same id: never sent again. It
                // waits for a definite answer, or for staff.
                if op.status == OpStatus::PayoutSubmitting {
                    op.status = transition(op.kind, op.status, OpEvent::PayoutUnknown)?;
                    report.unknown += 1;
                }
                op.updated_at = now;
                report.polled += 1;
                self.poll_later(op, version).await
            }
            Ok(PayoutStatus::NotFound) => {
                // The provider never received it (as far as it knows). The same id
                // again is safe: it deduplicates, so at most one payout is ever paid.
                op.next_check_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
                op.updated_at = now;
                version = self.save(&op, version, Batch::default()).await?;
                report.polled += 1;
                self.submit_payout(op, version, payout, report).await
            }
            Ok(PayoutStatus::Pending) => {
                report.polled += 1;
                self.poll_later(op, version).await
            }
            Err(e) => {
                report.errors.push(format!("{}: payout status: {e}", op.id));
                self.poll_later(op, version).await
            }
        }
    }

    /// Saves `op` unchanged but for its next check, one poll interval away.
    async fn poll_later(&self, mut op: Operation, version: u64) -> CoreResult<()> {
        op.next_check_at = Some(self.now().plus_millis(self.config.poll_interval_ms));
        self.save(&op, version, Batch::default()).await.map(|_| ())
    }

    /// Submits the payout (`op` already saved in PAYOUT_SUBMITTING or PAYOUT_UNKNOWN) and
    /// records what the provider answered.
    async fn submit_payout(
        &self,
        mut op: Operation,
        version: u64,
        payout: PayoutLeg,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let request = Payout {
            id: op.id.0.clone(),
            phone: payout.phone.clone(),
            currency: payout.currency.clone(),
            amount: payout.amount,
            source_micros: op.amount,
        };
        match self.ports().payouts.submit(&request).await {
            Ok(()) => {}
            Err(PayoutError::Rejected(reason)) => {
                return self.start_refund(op, version, payout, reason, report).await;
            }
            Err(PayoutError::Unknown(_)) => {
                if op.status == OpStatus::PayoutSubmitting {
                    op.status = transition(op.kind, op.status, OpEvent::PayoutUnknown)?;
                    report.unknown += 1;
                }
            }
        }
        op.updated_at = self.now();
        self.poll_later(op, version).await
    }

    /// The provider's evidence of delivery: COMPLETED, `withdrawals -> fiat_out`.
    async fn complete_payout(
        &self,
        mut op: Operation,
        version: u64,
        mut payout: PayoutLeg,
        reference: String,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        op.status = transition(op.kind, op.status, OpEvent::PayoutDelivered)?;
        payout.reference = Some(reference);
        op.payout = Some(payout);
        op.settled_at = Some(now);
        op.updated_at = now;
        op.next_check_at = None;
        let to = fiat_out_account(op.token);
        self.close_withdrawal(&op, version, to, "payout", report)
            .await
    }

    /// Saves a withdrawal's last step with the ledger move that ends it: its amount
    /// leaves `withdrawals:<TOKEN>` for `to` (fiat out, or back to the wallet), under the
    /// transfer id `<wd>:<leg>`.
    async fn close_withdrawal(
        &self,
        op: &Operation,
        version: u64,
        to: LedgerAccount,
        leg: &str,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let from = withdrawals_account(op.token);
        let ledger = vec![LedgerTransfer {
            id: format!("{}:{leg}", op.id),
            debit: from.id.clone(),
            credit: to.id.clone(),
            amount: op.amount,
            phase: Phase::Single,
        }];
        self.save(
            op,
            version,
            Batch {
                accounts: vec![from, to],
                ledger,
                ..Default::default()
            },
        )
        .await?;
        report.settled += 1;
        Ok(())
    }

    /// The provider's final word is that the payout will never be paid: send the tokens
    /// back to the wallet on chain (recorded before anything is sent).
    async fn start_refund(
        &self,
        op: Operation,
        version: u64,
        mut payout: PayoutLeg,
        reason: String,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        payout.failure = Some(reason);
        let hold = hold_through_side_effect(self.now(), self.config.claim_lease_ms);
        let (op, version, payout) = self
            .record_refund_attempt(op, version, payout, 1, hold)
            .await?;
        self.advance_refund(op, version, payout, report).await
    }

    /// Records refund attempt `attempt` as the current one, due at `due`.
    async fn record_refund_attempt(
        &self,
        mut op: Operation,
        version: u64,
        mut payout: PayoutLeg,
        attempt: u32,
        due: Timestamp,
    ) -> CoreResult<(Operation, u64, PayoutLeg)> {
        payout.refund = Some(self.refund_payment(&op, attempt).await?);
        payout.refund_attempts = attempt;
        op.updated_at = self.now();
        op.next_check_at = Some(due);
        op.payout = Some(payout.clone());
        let version = self.save(&op, version, Batch::default()).await?;
        Ok((op, version, payout))
    }

    /// Refund attempt `attempt` (1, 2, ...): treasury -> the wallet's address, under an
    /// id of its own (`<wd>-refund`, then `<wd>-refund-2`, ...), without a deadline
    /// until its first submit sets one.
    pub(super) async fn refund_payment(
        &self,
        op: &Operation,
        attempt: u32,
    ) -> CoreResult<RailPayment> {
        let rail = self.rail(op.rail)?.clone();
        let from_address = self.service_address(&rail, KeyPurpose::Treasury).await?;
        let id = match attempt {
            0 | 1 => format!("{}-refund", op.id),
            n => format!("{}-refund-{n}", op.id),
        };
        Ok(RailPayment {
            id,
            from: KeyPurpose::Treasury,
            from_address,
            token: op.token,
            legs: vec![PaymentLeg {
                to: op.payment.from_address.clone(),
                amount: op.amount,
                role: LegRole::Recipient,
            }],
            valid_until: None,
        })
    }

    /// Submits (idempotently, by the attempt's id) and confirms the refund.
    ///
    /// An attempt is replaced by a new one (under a new id) only once it provably can no
    /// longer land: its deadline plus the margin has passed and the rail reports it
    /// failed or unknown. Until then a refused, unsent or failed attempt waits with a
    /// backoff that doubles with each failure, and one the rail does not know is
    /// submitted again under the same id. So a refund is never left stuck, and never paid
    /// twice, even with another worker's submit of the same attempt still in flight.
    async fn advance_refund(
        &self,
        mut op: Operation,
        mut version: u64,
        mut payout: PayoutLeg,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        let rail = self.rail(op.rail)?.clone();
        let Some(mut refund) = payout.refund.clone() else {
            return Ok(());
        };
        let dead = refund.past_deadline(now, self.config.unknown_grace_ms);
        let status = match rail.status(&refund.id).await {
            Ok(SubmissionStatus::NotFound | SubmissionStatus::Failed { .. }) if dead => {
                // Nothing of this attempt can land any more: the next one.
                let next = payout.refund_attempts.max(1).saturating_add(1);
                self.record_refund_attempt(op, version, payout, next, now)
                    .await?;
                report.polled += 1;
                return Ok(());
            }
            // Not sent yet (or not seen yet): the same attempt again, idempotent by id,
            // recorded and held first (the claim rule). Its deadline is fixed by its
            // first submit.
            Ok(SubmissionStatus::NotFound) => {
                if refund.valid_until.is_none() {
                    refund.valid_until = Some(now.plus_millis(self.config.payment_validity_ms));
                    payout.refund = Some(refund.clone());
                    op.payout = Some(payout.clone());
                }
                op.updated_at = now;
                op.next_check_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
                version = self.save(&op, version, Batch::default()).await?;
                match rail.submit(&refund).await {
                    Ok(_) | Err(RailError::Unknown { .. }) => {
                        report.submitted += 1;
                        SubmissionStatus::Pending { tx_hash: None }
                    }
                    // Refused, or the rail is unavailable: nothing was sent by this call.
                    Err(e) => {
                        return self
                            .refund_failed(op, version, payout, e.to_string(), None, report)
                            .await;
                    }
                }
            }
            Ok(s) => s,
            Err(e) => {
                report.errors.push(format!("{}: refund status: {e}", op.id));
                return self.poll_later(op, version).await;
            }
        };
        match status {
            SubmissionStatus::Confirmed { tx_hash, .. } => {
                op.status = transition(op.kind, op.status, OpEvent::PayoutRefunded)?;
                op.error_reason = payout.failure.clone();
                payout.refund_tx_hash = Some(tx_hash);
                op.payout = Some(payout);
                op.updated_at = now;
                op.next_check_at = None;
                let wallet = op
                    .from_wallet
                    .clone()
                    .ok_or_else(|| CoreError::Storage("withdrawal without wallet".into()))?;
                let to = self.wallet_account(&wallet, op.rail, op.token);
                self.close_withdrawal(&op, version, to, "refund", report)
                    .await
            }
            // Reverted on chain: nothing moved. The next attempt waits until this one is
            // past its deadline (a concurrent submit of the same id could still land).
            SubmissionStatus::Failed { reason, .. } => {
                let after_deadline = refund
                    .valid_until
                    .map(|d| d.plus_millis(self.config.unknown_grace_ms.max(0) + 1));
                self.refund_failed(op, version, payout, reason, after_deadline, report)
                    .await
            }
            _ => {
                report.polled += 1;
                self.poll_later(op, version).await
            }
        }
    }

    /// A refund attempt failed or was refused: recorded (the operation's error report
    /// says so), and looked at again after a backoff that doubles with each failure, and
    /// not before `not_before`.
    async fn refund_failed(
        &self,
        mut op: Operation,
        version: u64,
        mut payout: PayoutLeg,
        reason: String,
        not_before: Option<Timestamp>,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        payout.refund_failures = payout.refund_failures.saturating_add(1);
        report.errors.push(format!(
            "{}: refund attempt {} failed ({reason}); retrying",
            op.id,
            payout.refund_attempts.max(1)
        ));
        let wait = self
            .config
            .refund_retry_ms
            .max(0)
            .saturating_mul(1i64 << (payout.refund_failures - 1).min(20))
            .min(self.config.refund_retry_max_ms.max(0));
        payout.refund_error = Some(reason);
        op.payout = Some(payout);
        op.updated_at = now;
        op.next_check_at = Some(now.plus_millis(wait).max(not_before.unwrap_or(now)));
        self.save(&op, version, Batch::default()).await.map(|_| ())
    }
}
