//! Sweeps: the custody step that moves a live session's confirmed deposits from the
//! session's own address to the service treasury on the same network.
//!
//! Why: the ledger credits a paid session to the tenant's treasury at once, and the
//! treasury pays out fundings from the treasury's address on chain. Until the tokens
//! are there, that balance would exist only in the ledger. A sweep changes nothing in
//! the ledger (the tenant's claim was settled by the credit); it moves the service's
//! own custody, so it is retried until it settles, never given up.
//!
//! Each credited deposit gets one sweep record, in the commit that credits it. The
//! worker claims due sweeps, commits SUBMITTING before the rail call (write-ahead, the
//! claim held through it), submits under the attempt's payment id (rails are idempotent
//! by it), then polls. A payment the rail reports failed, or not found after its
//! deadline, is tried again under the next attempt's id; nothing is ever sent twice
//! under one id, and a payment that may still land is never replaced.

use crate::engine::CheckoutEngine;
use crate::error::{CheckoutResult, store_err};
use crate::model::SessionDeposit;
use crate::worker::CheckoutTickReport;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::attempts::{self, AttemptNext, POLL_MS, RETRY_MS};
use stablecoin_core::ports::kinds::kind;
use stablecoin_core::ports::{
    Batch, ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailError, RailPayment, Record,
    Versioned, hold_through_side_effect,
};
use std::sync::Arc;

/// How long one sweep payment may take to land (its deadline).
const VALIDITY_MS: i64 = 10 * 60_000;

/// Where a sweep stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SweepStatus {
    /// Waiting for its (next) attempt.
    Queued,
    /// Committed before the rail call: the outcome is asked, never assumed.
    Submitting,
    /// Sent; polled until it settles.
    Submitted,
    /// On the treasury's address.
    Settled,
}

/// One deposit's move from a session address to the treasury.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    /// `swp_<deposit_id>`.
    pub id: String,
    /// The session's owner.
    pub tenant: String,
    /// The session whose address holds the tokens.
    pub session: String,
    /// The network.
    pub network: String,
    /// The session's address there.
    pub from_address: String,
    /// Which stablecoin.
    pub token: Token,
    /// Micro-units: the whole deposit.
    pub amount: Micros,
    /// Where it stands.
    pub status: SweepStatus,
    /// Attempts started (the payment id is `<id>_<attempt>`).
    pub attempt: u32,
    /// The current attempt's payment, once built (kept so a retry of the same attempt
    /// sends the same bytes and deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment: Option<RailPayment>,
    /// The settling transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// The phone wallet whose address holds the tokens, for a payment a wallet made on
    /// the ledger (`engine::phone_pay`); `None` for the session's own address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_wallet: Option<String>,
    /// The last refusal or failure, for operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the worker next looks at it; `None` once settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Timestamp>,
    /// Created with the credit.
    pub created_at: Timestamp,
}

impl Record for Sweep {
    const KIND: &'static str = kind::CHECKOUT_SWEEP;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(
            match self.status {
                SweepStatus::Queued => "QUEUED",
                SweepStatus::Submitting => "SUBMITTING",
                SweepStatus::Submitted => "SUBMITTED",
                SweepStatus::Settled => "SETTLED",
            }
            .into(),
        )
    }
    fn subkind(&self) -> Option<String> {
        Some(self.session.clone())
    }
    fn due_at(&self) -> Option<Timestamp> {
        self.due_at
    }
}

impl Sweep {
    /// The sweep of a credited deposit, due now.
    pub fn of_deposit(dep: &SessionDeposit, now: Timestamp) -> Sweep {
        Sweep {
            id: format!("swp_{}", dep.deposit_id),
            tenant: dep.tenant.0.clone(),
            session: dep.session.clone(),
            network: dep.network.clone(),
            from_address: dep
                .from_wallet
                .as_ref()
                .map_or_else(|| dep.address.clone(), |p| p.address.clone()),
            from_wallet: dep.from_wallet.as_ref().map(|p| p.wallet.clone()),
            token: dep.token,
            amount: dep.amount,
            status: SweepStatus::Queued,
            attempt: 0,
            payment: None,
            tx_hash: None,
            last_error: None,
            due_at: Some(now),
            created_at: now,
        }
    }
}

impl CheckoutEngine {
    /// Claims one page of this worker's due records of kind `R` (lane 0), decoded: the
    /// start of every checkout job that advances records one by one (sweeps, refunds).
    pub(crate) async fn claim_due_page<R: Record>(&self) -> CheckoutResult<Vec<Versioned<R>>> {
        let claimed = self
            .kernel
            .ports()
            .store
            .claim_due(
                R::KIND,
                0,
                &self.config.worker_id,
                self.now(),
                self.config.claim_lease_ms,
                self.config.batch_limit,
            )
            .await
            .map_err(store_err)?;
        claimed
            .iter()
            .map(|rec| {
                Ok(Versioned {
                    record: R::from_stored(rec)?,
                    version: rec.version,
                })
            })
            .collect()
    }

    /// Advances the due sweeps (one claim page).
    pub(crate) async fn sweep_due(&self, report: &mut CheckoutTickReport) -> CheckoutResult<()> {
        for v in self.claim_due_page::<Sweep>().await? {
            let id = v.record.id.clone();
            match self.advance_sweep(v).await {
                Ok(true) => report.swept += 1,
                Ok(false) => {}
                Err(e) => report.errors.push(format!("{id}: {e}")),
            }
        }
        Ok(())
    }

    async fn save_sweep(&self, s: &Sweep, version: u64) -> CheckoutResult<u64> {
        self.save_sweep_metered(s, version, Vec::new()).await
    }

    /// Commits the sweep with the sponsorship budget updates of what its attempt cost
    /// (`metering`, from [`stablecoin_core::kernel::Kernel::sponsorship_puts`]): a
    /// decision and its metering land together, so a re-polled answer counts once.
    async fn save_sweep_metered(
        &self,
        s: &Sweep,
        version: u64,
        metering: Vec<stablecoin_core::ports::Put>,
    ) -> CheckoutResult<u64> {
        let mut puts = vec![s.update(version)?];
        puts.extend(metering);
        self.commit(Batch {
            puts,
            background: true,
            ..Default::default()
        })
        .await?;
        Ok(version + 1)
    }

    /// What a sweep attempt that cost `cost` meters in its tenant's sponsorship budget.
    async fn sweep_metering(
        &self,
        s: &Sweep,
        rail: &Arc<dyn Rail>,
        cost: Option<stablecoin_core::ports::SponsorCost>,
    ) -> CheckoutResult<Vec<stablecoin_core::ports::Put>> {
        let tenant = stablecoin_core::domain::ids::TenantId(s.tenant.clone());
        Ok(self
            .kernel
            .sponsorship_puts(&tenant, rail.id(), cost)
            .await?)
    }

    /// One step of a sweep; `true` when it settled.
    async fn advance_sweep(&self, v: Versioned<Sweep>) -> CheckoutResult<bool> {
        let Versioned {
            record: mut s,
            mut version,
        } = v;
        let now = self.now();
        let Some(rail) = self
            .kernel
            .rails()
            .find(|r| r.id().name() == s.network)
            .cloned()
        else {
            s.last_error = Some("network not configured".into());
            s.due_at = Some(now.plus_millis(RETRY_MS));
            self.save_sweep(&s, version).await?;
            return Ok(false);
        };
        match s.status {
            SweepStatus::Settled => {
                s.due_at = None;
                self.save_sweep(&s, version).await?;
                Ok(false)
            }
            SweepStatus::Queued => {
                let treasury = rail
                    .address_for(&KeyPurpose::Treasury)
                    .await
                    .map_err(crate::error::rail_err)?;
                s.attempt += 1;
                s.payment = Some(RailPayment {
                    id: format!("{}_{}", s.id, s.attempt),
                    from: match &s.from_wallet {
                        Some(w) => KeyPurpose::Wallet(w.clone()),
                        None => KeyPurpose::CheckoutSession(s.session.clone()),
                    },
                    from_address: ChainAddress(s.from_address.clone()),
                    token: s.token,
                    legs: vec![PaymentLeg {
                        to: treasury,
                        amount: s.amount,
                        role: LegRole::Recipient,
                    }],
                    valid_until: Some(now.plus_millis(VALIDITY_MS)),
                });
                self.submit_sweep(&rail, s, version).await
            }
            SweepStatus::Submitting | SweepStatus::Submitted => {
                let Some(payment) = s.payment.clone() else {
                    s.status = SweepStatus::Queued;
                    s.due_at = Some(now);
                    self.save_sweep(&s, version).await?;
                    return Ok(false);
                };
                let status = rail.status(&payment.id).await;
                match attempts::after_poll(status, &payment, now) {
                    AttemptNext::Landed { tx_hash, cost } => {
                        let metering = self.sweep_metering(&s, &rail, cost).await?;
                        s.status = SweepStatus::Settled;
                        s.tx_hash = Some(tx_hash);
                        s.due_at = None;
                        self.save_sweep_metered(&s, version, metering).await?;
                        Ok(true)
                    }
                    AttemptNext::PollAgain { due_at, error } => {
                        if error.is_some() {
                            s.last_error = error;
                        }
                        s.due_at = Some(due_at);
                        self.save_sweep(&s, version).await?;
                        Ok(false)
                    }
                    AttemptNext::NewAttempt {
                        due_at,
                        error,
                        cost,
                    } => {
                        let metering = self.sweep_metering(&s, &rail, cost).await?;
                        s.status = SweepStatus::Queued;
                        if error.is_some() {
                            s.last_error = error;
                        }
                        s.due_at = Some(due_at);
                        self.save_sweep_metered(&s, version, metering).await?;
                        Ok(false)
                    }
                    AttemptNext::SubmitAgain => {
                        version = self.save_sweep(&s, version).await?;
                        self.submit_sweep(&rail, s, version).await
                    }
                }
            }
        }
    }

    /// Commits SUBMITTING (held through the call), then submits the current payment.
    async fn submit_sweep(
        &self,
        rail: &Arc<dyn Rail>,
        mut s: Sweep,
        version: u64,
    ) -> CheckoutResult<bool> {
        let now = self.now();
        let Some(payment) = s.payment.clone() else {
            return Ok(false);
        };
        s.status = SweepStatus::Submitting;
        s.due_at = Some(hold_through_side_effect(now, self.config.claim_lease_ms));
        let version = self.save_sweep(&s, version).await?;
        let now = self.now();
        match rail.submit(&payment).await {
            Ok(sub) => {
                s.status = SweepStatus::Submitted;
                if sub.tx_hash.is_some() {
                    s.tx_hash = sub.tx_hash;
                }
                s.due_at = Some(now.plus_millis(POLL_MS));
            }
            Err(RailError::Rejected { reason }) => {
                // Nothing was sent: the next attempt later, under a new id.
                s.status = SweepStatus::Queued;
                s.last_error = Some(reason);
                s.due_at = Some(now.plus_millis(RETRY_MS));
            }
            Err(e) => {
                // Unknown outcome: ask the rail.
                s.status = SweepStatus::Submitted;
                s.last_error = Some(e.to_string());
                s.due_at = Some(now.plus_millis(POLL_MS));
            }
        }
        self.save_sweep(&s, version).await?;
        Ok(false)
    }
}
