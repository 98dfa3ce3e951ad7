//! Withdrawals (off-ramp): the wallet's tokens are swept to the service treasury on
//! chain, then paid out as fiat by mobile money (spec 3.2).
//!
//! `PENDING -> SUBMITTING -> SUBMITTED -> CRYPTO_RECEIVED -> PAYOUT_SUBMITTING ->
//! COMPLETED`. A payout the provider refuses, or reports failed, is refunded on chain
//! to the wallet and the withdrawal ends `REFUNDED` once the refund confirms. A payout
//! whose submission outcome is unknown (`PAYOUT_UNKNOWN`) is resolved by asking the
//! provider about the same payout id, never by paying again.
//!
//! Ledger: the sweep holds `wallet -> withdrawals:<TOKEN>` (posted at CRYPTO_RECEIVED,
//! voided if the sweep fails); a delivered payout moves `withdrawals -> fiat_out`; a
//! refund moves `withdrawals -> wallet` when the refund confirms.

use super::worker::TickReport;
use super::{Engine, Operation, OperationView, PayoutLeg};
use crate::domain::money::{Currency, Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::state::{OpEvent, OpKind, OpStatus, transition};
use crate::error::{CoreError, CoreResult};
use crate::ports::ledger::{LedgerAccount, LedgerTransfer, Phase};
use crate::ports::rail::{LegRole, PaymentLeg, RailError, RailPayment, SubmissionStatus};
use crate::ports::record::Record;
use crate::ports::services::{Payout, PayoutError, PayoutStatus};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::Batch;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// `POST /v1/users/withdraw`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawRequest {
    pub phone_number: Phone,
    pub token: Token,
    pub amount: Micros,
    /// Fiat currency of the mobile-money payout (spec 2.6 `payout_currency`).
    pub payout_currency: String,
}

fn withdrawals_account(token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("withdrawals:{token}"),
        allow_negative: false,
    }
}

fn fiat_out_account(token: Token) -> LedgerAccount {
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
        if req.amount.is_zero() {
            return Err(CoreError::InvalidAmount {
                input: "0".into(),
                reason: "amount must be greater than zero".into(),
            });
        }
        let currency =
            Currency::parse(&req.payout_currency).map_err(|_| CoreError::InvalidParameter {
                field: "payout_currency",
                reason: format!("unsupported payout currency {:?}", req.payout_currency),
            })?;
        let rail = self.evm_rail()?.clone();
        super::admission::check_token(&*rail, req.token)?;
        self.idempotent(tenant, idempotency_key, "withdraw", req, || async {
            self.require_ready(rail.id()).await?;
            let name = rail.id().name();
            let wallet = self.require_wallet(&req.phone_number).await?.record;
            wallet.require_member(tenant)?;
            let from_address =
                wallet
                    .address(&name)
                    .cloned()
                    .ok_or_else(|| CoreError::NotFound {
                        kind: "wallet address",
                        id: name.clone(),
                    })?;
            let rate = self
                .ports
                .rates
                .rate(currency, req.token)
                .await
                .map_err(|e| CoreError::RateSource(e.0))?;
            let amount = (req.amount.to_decimal() * rate)
                .round_dp_with_strategy(currency.exponent, rust_decimal::RoundingStrategy::ToZero);
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
            };
            let mut op = self.new_operation(
                OpKind::Withdrawal,
                tenant,
                rail.id(),
                req.token,
                req.amount,
                payment,
            );
            let src = super::accounts::wallet(&wallet.id, req.token);
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
            });
            let batch = Batch {
                puts: vec![op.insert()?],
                accounts: vec![src, dst],
                ledger: op.holds.clone(),
                ..Default::default()
            };
            Ok((batch, op.view()))
        })
        .await
    }

    /// Moves a withdrawal whose crypto leg is done through its payout.
    pub(crate) async fn advance_payout(
        &self,
        mut op: Operation,
        mut version: u64,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        let poll = now.plus_millis(self.config.poll_interval_ms);
        let Some(mut payout) = op.payout.clone() else {
            return Err(CoreError::Storage(format!(
                "withdrawal {} has no payout leg",
                op.id
            )));
        };
        if payout.refund.is_some() {
            return self.advance_refund(op, version, payout, report).await;
        }
        let request = Payout {
            id: op.id.0.clone(),
            phone: payout.phone.clone(),
            currency: payout.currency.clone(),
            amount: payout.amount,
            source_micros: op.amount,
        };
        if op.status == OpStatus::CryptoReceived {
            op.status = transition(op.kind, op.status, OpEvent::PayoutStart)?;
            payout.submitted_at = Some(now);
            op.payout = Some(payout.clone());
            op.updated_at = now;
            // Durable before the side effect, as for chain submissions.
            version = self.save(&op, version, Batch::default()).await?;
            match self.ports.payouts.submit(&request).await {
                Ok(()) => {}
                Err(PayoutError::Rejected(reason)) => {
                    return self.start_refund(op, version, payout, reason, report).await;
                }
                Err(PayoutError::Unknown(_)) => {
                    op.status = transition(op.kind, op.status, OpEvent::PayoutUnknown)?;
                    report.unknown += 1;
                }
            }
            op.next_check_at = Some(poll);
            self.save(&op, version, Batch::default()).await?;
            return Ok(());
        }
        match self.ports.payouts.status(&op.id.0).await {
            Ok(PayoutStatus::Delivered { reference }) => {
                op.status = transition(op.kind, op.status, OpEvent::PayoutDelivered)?;
                payout.reference = Some(reference);
                op.payout = Some(payout);
                op.settled_at = Some(now);
                op.updated_at = now;
                op.next_check_at = None;
                let from = withdrawals_account(op.token);
                let to = fiat_out_account(op.token);
                let ledger = vec![LedgerTransfer {
                    id: format!("{}:payout", op.id),
                    debit: from.id.clone(),
                    credit: to.id.clone(),
                    amount: op.amount,
                    phase: Phase::Single,
                }];
                self.save(
                    &op,
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
            Ok(PayoutStatus::Failed { reason }) => {
                self.start_refund(op, version, payout, reason, report).await
            }
            Ok(PayoutStatus::NotFound) if op.status == OpStatus::PayoutUnknown => {
                let since = payout.submitted_at.unwrap_or(op.updated_at);
                if now.millis() - since.millis() >= self.config.unknown_grace_ms {
                    let reason = "the payout never reached the provider".to_string();
                    self.start_refund(op, version, payout, reason, report).await
                } else {
                    op.next_check_at = Some(poll);
                    self.save(&op, version, Batch::default()).await.map(|_| ())
                }
            }
            Ok(_) | Err(_) => {
                report.polled += 1;
                op.next_check_at = Some(poll);
                self.save(&op, version, Batch::default()).await.map(|_| ())
            }
        }
    }

    /// The payout cannot be delivered: send the tokens back to the wallet on chain.
    async fn start_refund(
        &self,
        mut op: Operation,
        version: u64,
        mut payout: PayoutLeg,
        reason: String,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let rail = self.rail(op.rail)?.clone();
        let to = op.payment.from_address.clone();
        let from_address = self.service_address(&rail, KeyPurpose::Treasury).await?;
        payout.failure = Some(reason);
        payout.refund = Some(RailPayment {
            id: format!("{}-refund", op.id),
            from: KeyPurpose::Treasury,
            from_address,
            token: op.token,
            legs: vec![PaymentLeg {
                to,
                amount: op.amount,
                role: LegRole::Recipient,
            }],
        });
        op.updated_at = self.now();
        op.next_check_at = Some(self.now());
        op.payout = Some(payout.clone());
        let version = self.save(&op, version, Batch::default()).await?;
        self.advance_refund(op, version, payout, report).await
    }

    /// Submits (idempotently, by its fixed id) and confirms the refund.
    async fn advance_refund(
        &self,
        mut op: Operation,
        version: u64,
        mut payout: PayoutLeg,
        report: &mut TickReport,
    ) -> CoreResult<()> {
        let now = self.now();
        let rail = self.rail(op.rail)?.clone();
        let Some(refund) = payout.refund.clone() else {
            return Ok(());
        };
        let status = match rail.status(&refund.id).await {
            Ok(SubmissionStatus::NotFound) => match rail.submit(&refund).await {
                // The rail is idempotent by id: submitting the same refund again is safe.
                Ok(_) | Err(RailError::Unknown { .. }) => {
                    SubmissionStatus::Pending { tx_hash: None }
                }
                Err(e) => return Err(super::rail_err(e)),
            },
            Ok(s) => s,
            Err(e) => return Err(super::rail_err(e)),
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
                let from = withdrawals_account(op.token);
                let to = super::accounts::wallet(&wallet, op.token);
                let ledger = vec![LedgerTransfer {
                    id: format!("{}:refund", op.id),
                    debit: from.id.clone(),
                    credit: to.id.clone(),
                    amount: op.amount,
                    phase: Phase::Single,
                }];
                self.save(
                    &op,
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
            SubmissionStatus::Failed { reason, .. } => Err(CoreError::Rail(format!(
                "refund of withdrawal {} failed on chain ({reason}); needs staff attention",
                op.id
            ))),
            _ => {
                report.polled += 1;
                op.next_check_at = Some(now.plus_millis(self.config.poll_interval_ms));
                self.save(&op, version, Batch::default()).await.map(|_| ())
            }
        }
    }
}
