//! The one path of a deposit into a session address, whoever saw it (the scanner, a
//! separately deployed scanner through the intake, a test key's simulated payment):
//! recorded once per integer `deposit_id`, credited once, only when confirmed and safe
//! to credit, with its webhooks in the same commit.

use super::{CheckoutEngine, MAX_RETRIES};
use crate::error::{CheckoutError, CheckoutResult, checked_sum};
use crate::events::{self, DepositEventKind};
use crate::model::{
    DepositState, Mode, Session, SessionDeposit, accounts, integer_id, placeholder_hash,
};
use crate::state::{SessionEvent, SessionStatus, assert_credited, split_deposit, transition};
use crate::views::{SessionView, SimulatePaymentRequest};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::ports::{
    Batch, ChainAddress, LedgerAccount, LedgerTransfer, Phase as LedgerPhase, Record, Versioned,
    get_record, get_record_by_unique,
};

/// A deposit into some address, as a scanner reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepositFact {
    /// The idempotency key: the same deposit always carries the same one.
    pub deposit_id: u64,
    /// The network (`polygon`, `tron`, ...).
    pub network: String,
    /// The receiving address.
    pub address: String,
    /// Which stablecoin.
    pub token: Token,
    /// Micro-units.
    pub amount: Micros,
    /// The real transaction hash, when known (`None` while the scanner only has a
    /// placeholder).
    pub tx_hash: Option<String>,
    /// Confirmations seen.
    pub confirmations: u64,
    /// Who saw it.
    pub detected_by: String,
}

/// How far the reporter says the deposit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepositStage {
    /// Seen; credits nothing.
    Detected,
    /// At the confirmation depth; credited only when `safe_to_credit`.
    Confirmed {
        /// The reporter's word that it cannot be reorganised away.
        safe_to_credit: bool,
    },
}

/// What recording a deposit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepositOutcome {
    /// Recorded as pending (no credit).
    RecordedPending,
    /// Credited (ledger and session), now.
    Credited,
    /// Reported confirmed but not safe to credit: recorded, not credited.
    NotSafeToCredit,
    /// The real hash was backfilled.
    HashResolved,
    /// Nothing new: this `deposit_id` was already recorded at this stage.
    AlreadyRecorded,
    /// The address is no session's, the session is of the other mode, or a first report
    /// lacks the amount: nothing recorded.
    UnknownAddress,
}

impl CheckoutEngine {
    /// Records one deposit report. Idempotent by `deposit_id`: a re-delivery changes
    /// nothing and answers `AlreadyRecorded`.
    pub async fn record_deposit(
        &self,
        fact: &DepositFact,
        stage: DepositStage,
        mode: Mode,
    ) -> CheckoutResult<DepositOutcome> {
        // One deposit above what a ledger can hold is no real deposit of any token.
        checked_sum(Micros::ZERO, fact.amount, "the deposit")?;
        let store = &*self.kernel.ports().store;
        for _ in 0..MAX_RETRIES {
            let existing =
                get_record::<SessionDeposit>(store, &SessionDeposit::record_id(fact.deposit_id))
                    .await?;
            // The session, read once: through the deposit already recorded, or through
            // the store's unique index of session addresses.
            let session = match &existing {
                Some(d) => self.load(&d.record.session).await?,
                // A first report must say what arrived: a partial one cannot be recorded.
                None if fact.amount.is_zero() => None,
                None => {
                    get_record_by_unique::<Session>(
                        store,
                        &Session::address_key(&fact.network, &fact.address),
                    )
                    .await?
                }
            };
            let Some(session) = session else {
                return Ok(DepositOutcome::UnknownAddress);
            };
            if session.record.mode != mode {
                return Ok(DepositOutcome::UnknownAddress);
            }
            let Some((batch, outcome)) = self.decide(fact, stage, existing, session, None)? else {
                return Ok(DepositOutcome::AlreadyRecorded);
            };
            match self.commit(batch).await {
                Ok(()) => return Ok(outcome),
                Err(CheckoutError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("deposit {}", fact.deposit_id),
        })
    }

    /// The batch that records `fact` at `stage`, or `None` when it changes nothing.
    /// `payer` is the phone wallet a new deposit came from (`engine::phone_pay`), `None`
    /// for a deposit that arrived on a chain.
    pub(super) fn decide(
        &self,
        fact: &DepositFact,
        stage: DepositStage,
        existing: Option<Versioned<SessionDeposit>>,
        session: Versioned<Session>,
        payer: Option<crate::model::WalletPayer>,
    ) -> CheckoutResult<Option<(Batch, DepositOutcome)>> {
        let now = self.now();
        let Versioned {
            record: mut s,
            version: s_version,
        } = session;
        let mut batch = Batch::default();
        let (mut dep, dep_version) = match existing {
            Some(v) => (v.record, Some(v.version)),
            None => {
                let dep = SessionDeposit {
                    deposit_id: fact.deposit_id,
                    session: s.id.clone(),
                    tenant: s.tenant.clone(),
                    network: fact.network.clone(),
                    address: fact.address.clone(),
                    token: fact.token,
                    amount: fact.amount,
                    tx_hash: fact.tx_hash.clone(),
                    placeholder: placeholder_hash(now, &ChainAddress(fact.address.clone())),
                    confirmations: fact.confirmations,
                    state: DepositState::Detected,
                    applied: Micros::ZERO,
                    excess: Micros::ZERO,
                    late: false,
                    detected_by: fact.detected_by.clone(),
                    detected_at: now,
                    confirmed_at: None,
                    from_wallet: payer,
                };
                s.pending = checked_sum(s.pending, dep.amount, "the pending amount")?;
                s.deposit_count = s.deposit_count.saturating_add(1);
                batch.outbox.push(events::deposit_event(
                    self.new_id("evt"),
                    &s,
                    &dep,
                    DepositEventKind::Detected,
                    now,
                ));
                (dep, None)
            }
        };
        let mut outcome = if dep_version.is_none() {
            DepositOutcome::RecordedPending
        } else {
            DepositOutcome::AlreadyRecorded
        };
        // A real hash for a deposit first reported without one.
        if dep_version.is_some()
            && dep.tx_hash.is_none()
            && let Some(h) = &fact.tx_hash
        {
            dep.tx_hash = Some(h.clone());
            batch.outbox.push(events::deposit_event(
                self.new_id("evt"),
                &s,
                &dep,
                DepositEventKind::HashResolved,
                now,
            ));
            outcome = DepositOutcome::HashResolved;
        }
        let confirm = match (stage, dep.state) {
            (_, DepositState::Credited) => None,
            (
                DepositStage::Confirmed {
                    safe_to_credit: true,
                },
                _,
            ) => Some(true),
            (
                DepositStage::Confirmed {
                    safe_to_credit: false,
                },
                DepositState::Detected,
            ) => Some(false),
            _ => None,
        };
        match confirm {
            Some(true) => {
                dep.confirmations = dep.confirmations.max(fact.confirmations);
                self.credit(&mut s, &mut dep, now, &mut batch)?;
                outcome = DepositOutcome::Credited;
            }
            Some(false) => {
                dep.confirmations = dep.confirmations.max(fact.confirmations);
                dep.state = DepositState::ConfirmedUnsafe;
                dep.confirmed_at = Some(now);
                batch.outbox.push(events::deposit_event(
                    self.new_id("evt"),
                    &s,
                    &dep,
                    DepositEventKind::Confirmed {
                        safe_to_credit: false,
                    },
                    now,
                ));
                outcome = DepositOutcome::NotSafeToCredit;
            }
            None => {}
        }
        if batch.outbox.is_empty() {
            return Ok(None);
        }
        s.updated_at = now;
        batch.puts.push(match dep_version {
            Some(v) => dep.update(v)?,
            None => dep.insert()?,
        });
        batch.puts.push(s.update(s_version)?);
        Ok(Some((batch, outcome)))
    }

    /// Credits a confirmed, safe deposit into `batch`: its split, the ledger (live
    /// sessions), the session's amounts and, when it completes the payment, `paid` with
    /// the held money moved to the treasury and `payment.confirmed`.
    fn credit(
        &self,
        s: &mut Session,
        dep: &mut SessionDeposit,
        now: stablecoin_core::domain::time::Timestamp,
        batch: &mut Batch,
    ) -> CheckoutResult<()> {
        let split = if s.accepts(dep.token) {
            split_deposit(
                s.status,
                s.amount,
                s.applied_total(),
                s.expires_at,
                dep.detected_at,
                dep.amount,
            )
        } else {
            // A token the session does not take: received, owed back whole.
            crate::state::DepositSplit {
                applied: Micros::ZERO,
                excess: dep.amount,
                late: Micros::ZERO,
                completes: false,
            }
        };
        s.pending = Micros::new(s.pending.get().saturating_sub(dep.amount.get()));
        dep.state = DepositState::Credited;
        dep.confirmed_at = Some(now);
        dep.applied = split.applied;
        dep.excess = split.excess;
        dep.late = !split.late.is_zero();
        // Every sum is checked before the session's amounts change; a refused deposit
        // returns the error before its batch is committed, so nothing is written (the
        // copy of the session read for this report is dropped).
        let held_before = s.applied.get(&dep.token).copied().unwrap_or(Micros::ZERO);
        let held = checked_sum(held_before, split.applied, "the applied amount")?;
        let received = checked_sum(s.received, dep.amount, "the received amount")?;
        let excess = checked_sum(s.excess, split.excess, "the excess amount")?;
        let late = checked_sum(s.late, split.late, "the late amount")?;
        let refundable_part = split.refundable()?;
        let refundable = checked_sum(s.refundable, refundable_part, "the refundable amount")?;
        s.applied.insert(dep.token, held);
        s.received = received;
        s.excess = excess;
        s.late = late;
        s.refundable = refundable;
        assert_credited(&split, dep.amount, s.applied_total(), s.amount);
        let live = s.mode == Mode::Live;
        let mut move_money =
            |id: String, from: LedgerAccount, to: LedgerAccount, amount: Micros| {
                if !live || amount.is_zero() {
                    return;
                }
                batch.ledger.push(LedgerTransfer {
                    id,
                    debit: from.id.clone(),
                    credit: to.id.clone(),
                    amount,
                    phase: LedgerPhase::Single,
                });
                batch.accounts.push(from);
                batch.accounts.push(to);
            };
        if live {
            // The tokens move to the treasury's address on chain (custody only).
            batch
                .puts
                .push(crate::sweep::Sweep::of_deposit(dep, now).insert()?);
        }
        // Where the money comes from: the chain, or the custody account of the phone
        // wallet that paid on the ledger (refused at commit if it holds too little).
        let source = match &dep.from_wallet {
            Some(p) => {
                let rail = self
                    .kernel
                    .rails()
                    .map(|r| r.id())
                    .find(|r| r.name() == dep.network)
                    .ok_or_else(|| CheckoutError::UnsupportedNetwork {
                        network: dep.network.chars().take(32).collect(),
                    })?;
                accounts::wallet_on(
                    &stablecoin_core::domain::ids::WalletId(p.wallet.clone()),
                    rail,
                    dep.token,
                )
            }
            None => accounts::chain_in(&dep.network, dep.token),
        };
        let chain_in = source;
        move_money(
            format!("checkout:{}:applied", dep.deposit_id),
            chain_in.clone(),
            accounts::held(&s.id, dep.token),
            split.applied,
        );
        move_money(
            format!("checkout:{}:refundable", dep.deposit_id),
            chain_in,
            accounts::refundable(&s.tenant, &s.business, dep.token),
            refundable_part,
        );
        batch.outbox.push(events::deposit_event(
            self.new_id("evt"),
            s,
            dep,
            DepositEventKind::Confirmed {
                safe_to_credit: true,
            },
            now,
        ));
        if split.completes && s.status == SessionStatus::Pending {
            s.status = transition(s.status, SessionEvent::Covered).map_err(|e| {
                CheckoutError::InvalidState {
                    status: e.from.as_str().into(),
                }
            })?;
            s.paid_at = Some(now);
            s.paid_network = Some(dep.network.clone());
            s.paid_tx_hash = Some(dep.wire_hash().to_string());
            s.due_at = None;
            for (token, amount) in s.applied.clone() {
                move_money(
                    format!("checkout:{}:paid:{token}", s.id),
                    accounts::held(&s.id, token),
                    accounts::treasury(&s.tenant, token),
                    amount,
                );
            }
            batch
                .outbox
                .push(events::payment_event(self.new_id("evt"), s, now));
        }
        Ok(())
    }

    /// Backfills the real hash of a deposit reported without one
    /// (`wallet.deposit.hash_resolved`): the hash only, no amount, no credit.
    pub async fn resolve_hash(
        &self,
        deposit_id: u64,
        tx_hash: &str,
        mode: Mode,
    ) -> CheckoutResult<DepositOutcome> {
        let store = &*self.kernel.ports().store;
        for _ in 0..MAX_RETRIES {
            let Some(v) =
                get_record::<SessionDeposit>(store, &SessionDeposit::record_id(deposit_id)).await?
            else {
                return Ok(DepositOutcome::UnknownAddress);
            };
            if v.record.tx_hash.is_some() {
                return Ok(DepositOutcome::AlreadyRecorded);
            }
            let Some(s) = self.load(&v.record.session).await? else {
                return Ok(DepositOutcome::UnknownAddress);
            };
            if s.record.mode != mode {
                return Ok(DepositOutcome::UnknownAddress);
            }
            let now = self.now();
            let mut dep = v.record;
            dep.tx_hash = Some(tx_hash.to_string());
            let event = events::deposit_event(
                self.new_id("evt"),
                &s.record,
                &dep,
                DepositEventKind::HashResolved,
                now,
            );
            let batch = Batch {
                puts: vec![dep.update(v.version)?],
                unchanged: vec![s.unchanged()],
                outbox: vec![event],
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(()) => return Ok(DepositOutcome::HashResolved),
                Err(CheckoutError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("deposit {deposit_id}"),
        })
    }

    /// A test key's simulated payment into one of its test sessions, as a real deposit
    /// would arrive (as Bridge's sandbox does). Without `amount`, it first confirms the
    /// session's detected simulated deposits, if any, else pays what is still due.
    pub async fn simulate_payment(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &SimulatePaymentRequest,
    ) -> CheckoutResult<SessionView> {
        let scope = Self::scope(auth)?;
        if scope.mode != Mode::Test {
            return Err(CheckoutError::SandboxOnly);
        }
        let s = self.load_scoped(&scope, id).await?.record;
        let confirmed = req.confirmed.unwrap_or(true);
        let stage = if confirmed {
            DepositStage::Confirmed {
                safe_to_credit: true,
            }
        } else {
            DepositStage::Detected
        };
        let deposits = self.deposits_of(&s).await?;
        let detected: Vec<_> = deposits
            .iter()
            .filter(|d| d.state != DepositState::Credited)
            .collect();
        if req.amount.is_none() && confirmed && !detected.is_empty() {
            for d in detected {
                let fact = DepositFact {
                    deposit_id: d.deposit_id,
                    network: d.network.clone(),
                    address: d.address.clone(),
                    token: d.token,
                    amount: d.amount,
                    tx_hash: d.tx_hash.clone(),
                    confirmations: d.confirmations.max(1),
                    detected_by: d.detected_by.clone(),
                };
                self.record_deposit(&fact, stage, Mode::Test).await?;
            }
            return self.get_session(auth, id).await;
        }
        let option = match &req.network {
            Some(n) => s.options.iter().find(|o| &o.network == n).ok_or_else(|| {
                CheckoutError::UnsupportedNetwork {
                    network: n.chars().take(32).collect(),
                }
            })?,
            None => s.options.first().ok_or(CheckoutError::UnsupportedNetwork {
                network: "none".into(),
            })?,
        };
        let token = match &req.token {
            Some(t) => t
                .parse::<Token>()
                .map_err(|_| CheckoutError::UnknownToken {
                    token: t.chars().take(16).collect(),
                })?,
            None => option.token,
        };
        let amount = match &req.amount {
            Some(a) => {
                Micros::parse_positive(a.trim()).map_err(|e| CheckoutError::InvalidAmount {
                    reason: e.to_string(),
                })?
            }
            None => {
                let due = s.amount.get().saturating_sub(s.applied_total().get());
                Micros::new(if due == 0 { s.amount.get() } else { due })
            }
        };
        if amount > self.config.max_amount {
            return Err(CheckoutError::InvalidAmount {
                reason: format!("at most {}", self.config.max_amount.to_decimal_string()),
            });
        }
        let n = self.now().millis().to_string();
        let count = s.deposit_count.to_string();
        let deposit_id = integer_id(&["simulated", &s.id, &count, &n]);
        let fact = DepositFact {
            deposit_id,
            network: option.network.clone(),
            address: option.address.clone(),
            token,
            amount,
            tx_hash: Some(format!("sim_{deposit_id:016x}")),
            confirmations: u64::from(confirmed),
            detected_by: "simulator".into(),
        };
        self.record_deposit(&fact, stage, Mode::Test).await?;
        self.get_session(auth, id).await
    }
}
