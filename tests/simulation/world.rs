//! The simulated world of one seed, its workload and its faults.

use stablecoin::core::domain::ids::{TenantId, WalletId};
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::state::OpKind;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{
    Engine, EngineConfig, FundRequest, Operation, Ports, SendRequest, SwapRequest, WithdrawRequest,
};
use stablecoin::core::error::CoreError;
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, PayoutFault,
    SeededEntropy,
};
use stablecoin::core::ports::{
    Batch, ChainAddress, CommitReceipt, KeyPurpose, Ledger, Rail, RailId, Store, StoreError,
};
use stablecoin::core::testkit::{DelegatingStore, StoreOverride};
use stablecoin::rails::sim::{Fault, SimConfig, SimProfile, SimRail};
use stablecoin::rails::{TreasuryRate, TreasuryVenue};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// xorshift64*: deterministic and dependency-free.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The EVM chain of the simulation (its wallets' `addresses` key).
pub const EVM: SimProfile = SimProfile::Evm(8453);
/// Tenants, phone slots (the first `PROVISIONED` provisioned at the start).
const TENANTS: usize = 3;
const PHONES: usize = 8;
const PROVISIONED: usize = 6;
/// The operator's float on chain: the treasury holds it, the tenants' treasuries owe
/// less (the rest backs swaps).
const TREASURY_FLOAT_MICROS: u64 = 1_000_000_000_000;
const TENANT_CREDIT_MICROS: u64 = 5_000_000_000;
/// How long a stuck transaction waits in the mempool, in blocks.
const STUCK_BLOCKS: u64 = 30;

/// The store a world runs on: the in-memory one, or SQLite (an in-memory database, the
/// real SQL, encodings and writer; issue #47 runs the CI seeds on both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Memory,
    Sqlite,
}

impl Backend {
    /// Its `SIM_STORE` name.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
        }
    }
}

/// Fails the next commits the world asks to, before they reach the store: "a store
/// commit fails" on any backend.
#[derive(Default)]
pub struct InjectFailures {
    next: AtomicUsize,
}

impl InjectFailures {
    /// The next `n` commits fail and change nothing; replaces any count still pending.
    pub fn fail_next_commits(&self, n: usize) {
        self.next.store(n, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl StoreOverride for InjectFailures {
    async fn commit(&self, inner: &dyn Store, batch: Batch) -> Result<CommitReceipt, StoreError> {
        let failing = self
            .next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(StoreError::Backend("injected failure".into()));
        }
        inner.commit(batch).await
    }
}

/// The world's database: the store every product commits to (with injected failures)
/// and its ledger.
pub type SimStore = DelegatingStore<InjectFailures>;

async fn database(backend: Backend) -> (Arc<SimStore>, Arc<dyn Ledger>) {
    let (store, ledger): (Arc<dyn Store>, Arc<dyn Ledger>) = match backend {
        Backend::Memory => {
            let m = Arc::new(MemoryStore::new());
            (m.clone(), m)
        }
        Backend::Sqlite => {
            let s = Arc::new(
                stablecoin_store::sqlite::SqliteStore::open_in_memory()
                    .await
                    .expect("an in-memory SQLite store"),
            );
            (s.clone(), s)
        }
    };
    let store = Arc::new(DelegatingStore::new(store, InjectFailures::default()));
    (store, ledger)
}

pub struct World {
    pub seed: u64,
    pub rng: Rng,
    pub store: Arc<SimStore>,
    pub ledger: Arc<dyn Ledger>,
    pub clock: Arc<ManualClock>,
    pub evm: Arc<SimRail>,
    pub tron: Arc<SimRail>,
    pub notifier: Arc<MemoryNotifier>,
    pub payouts: Arc<MemoryPayouts>,
    ports: Ports,
    pub engine: Engine,
    /// The escrow engine and its worker, beside the engine (rebuilt by a restart too).
    pub escrow: stablecoin_escrow::EscrowEngine,
    /// Each tenant's live-key authentication (the escrow API takes one).
    pub auths: Vec<stablecoin::core::engine::AuthContext>,
    pub deals: Vec<super::escrow::Deal>,
    /// The checkout engine (over the engine; rebuilt with it), each tenant's business
    /// with its live key, and the sessions opened.
    pub checkout: stablecoin_checkout::CheckoutEngine,
    pub businesses: Vec<(String, stablecoin::core::engine::AuthContext)>,
    pub sessions: Vec<super::checkout::Session>,
    /// The ids of the refunds the workload created, and the outside payers' addresses
    /// made so far.
    pub refunds: Vec<String>,
    pub payers: u64,
    /// The sanctions screen every engine of the world installs.
    pub screening: Arc<super::screening::SimScreening>,
    /// The webhook worker and the tenants' receiver on loopback.
    pub webhooks: stablecoin_webhooks::Deliverer,
    pub receiver: super::webhooks::Receiver,
    pub tenants: Vec<TenantId>,
    /// The phone each slot's wallet has now (a phone change moves it).
    pub phones: Vec<Phone>,
    /// Phones never used yet, for phone changes.
    fresh_phones: u64,
    pub restarts: u64,
    pub faults_on: bool,
    /// The checks' outbox cursor and the operations announced so far ("tenant/id" ->
    /// settled), so each step reads only the new events.
    pub announced: std::sync::Mutex<(u64, std::collections::BTreeMap<String, bool>)>,
    /// What happened, by "action outcome" (`send ok`, `fund INSUFFICIENT_FUNDS`, ...).
    pub stats: std::collections::BTreeMap<String, u64>,
}

impl World {
    pub async fn new(seed: u64, backend: Backend) -> World {
        let (store, ledger) = database(backend).await;
        let signer = Arc::new(LocalSigner::from_seed(seed_bytes(seed)));
        let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_800_000_000)));
        let chain = |profile| {
            Arc::new(
                SimRail::new(
                    profile,
                    signer.clone(),
                    SimConfig {
                        confirmations: 2,
                        auto_mine: true,
                    },
                )
                .with_clock(clock.clone()),
            )
        };
        let (evm, tron) = (chain(EVM), chain(SimProfile::Tron));
        let notifier = Arc::new(MemoryNotifier::new());
        let payouts = Arc::new(MemoryPayouts::new());
        let ports = Ports {
            store: store.clone(),
            ledger: ledger.clone(),
            signer,
            notifier: notifier.clone(),
            rates: Arc::new(FixedRates::demo()),
            payouts: payouts.clone(),
            clock: clock.clone(),
            entropy: Arc::new(SeededEntropy::new(seed)),
        };
        let screening = Arc::new(super::screening::SimScreening::default());
        let engine = build_engine(&ports, &evm, &tron, seed, 0);
        engine.kernel().set_screening(Some(screening.gate()));
        let escrow = super::escrow::engine(engine.kernel(), format!("escrow-{seed}-0"));
        let webhooks = super::webhooks::deliverer(&store, &clock, seed, 0);
        let checkout = super::checkout::engine(&engine, format!("checkout-{seed}-0"));
        let receiver = super::webhooks::receiver().await;
        let mut world = World {
            seed,
            rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            store,
            ledger,
            clock,
            evm,
            tron,
            notifier,
            payouts,
            ports,
            engine,
            escrow,
            checkout,
            businesses: Vec::new(),
            sessions: Vec::new(),
            refunds: Vec::new(),
            payers: 0,
            screening,
            webhooks,
            receiver,
            auths: Vec::new(),
            deals: Vec::new(),
            tenants: Vec::new(),
            phones: (0..PHONES as u64).map(phone).collect(),
            fresh_phones: PHONES as u64,
            restarts: 0,
            faults_on: true,
            stats: Default::default(),
            announced: Default::default(),
        };
        world.setup().await;
        world
    }

    async fn setup(&mut self) {
        let treasury = self.evm.address_for(&KeyPurpose::Treasury).await.unwrap();
        for token in Token::ALL {
            self.evm
                .mint(&treasury, token, Micros::new(TREASURY_FLOAT_MICROS))
                .unwrap();
        }
        self.evm.mine(1);
        for i in 0..TENANTS {
            let t = self
                .engine
                .create_tenant(&format!("tenant {i}"))
                .await
                .unwrap()
                .id;
            self.engine
                .credit_treasury(
                    &t,
                    Token::Usdc,
                    Micros::new(TENANT_CREDIT_MICROS),
                    &format!("w{i}"),
                )
                .await
                .unwrap();
            self.tenants.push(t);
            let auth = super::escrow::tenant_auth(self, i).await;
            self.auths.push(auth);
        }
        self.create_policy().await;
        self.register_endpoints().await;
        self.create_businesses().await;
        self.opt_in_auto_refunds().await;
        for i in 0..PROVISIONED {
            let (t, p) = (self.tenants[i % TENANTS].clone(), self.phones[i].clone());
            self.engine.provision(&t, &p).await.unwrap();
            self.engine
                .provision_on(&t, &p, RailId::Tron)
                .await
                .unwrap();
        }
    }

    /// A crash and restart: a new engine on the same durable store and chains. Whatever
    /// the old one held in memory (caches, readiness, claims) is gone; its claims lapse
    /// after their lease. The new one draws other ids (ids embed the entropy).
    pub fn restart(&mut self) {
        self.restarts += 1;
        self.ports.entropy = Arc::new(SeededEntropy::new(
            self.seed ^ self.restarts.wrapping_mul(0xA24B_AED4_963E_E407),
        ));
        self.engine = build_engine(&self.ports, &self.evm, &self.tron, self.seed, self.restarts);
        self.engine
            .kernel()
            .set_screening(Some(self.screening.gate()));
        self.escrow = super::escrow::engine(
            self.engine.kernel(),
            format!("escrow-{}-{}", self.seed, self.restarts),
        );
        self.webhooks =
            super::webhooks::deliverer(&self.store, &self.clock, self.seed, self.restarts);
        self.checkout = super::checkout::engine(
            &self.engine,
            format!("checkout-{}-{}", self.seed, self.restarts),
        );
    }

    /// One step: maybe a fault, then one action.
    pub async fn step(&mut self, step: usize) {
        if self.faults_on {
            self.inject_faults();
        }
        let t = self.rng.pick(&self.tenants).clone();
        // Keys from a small pool: the same key comes back, for the same or another request.
        let key = format!("k{}", self.rng.below(48));
        let key = (self.rng.below(4) != 0).then_some(key);
        let amount = Micros::new(1 + self.rng.below(300_000_000));
        let from = self.phones[self.rng.below(PROVISIONED as u64) as usize].clone();
        let to = self.rng.pick(&self.phones).clone();
        let action = self.rng.below(100);
        let result: Result<(), CoreError> = match action {
            0..=14 => self
                .engine
                .fund(&t, &fund(&from, amount), key.as_deref())
                .await
                .map(drop),
            15..=34 => self
                .engine
                .send(&t, &send(&from, &to, Token::Usdc, amount), key.as_deref())
                .await
                .map(drop),
            35..=39 => self
                .engine
                .send_on(
                    &t,
                    RailId::Tron,
                    &send(&from, &to, Token::Usdt, amount),
                    key.as_deref(),
                )
                .await
                .map(drop),
            40..=45 => {
                let (token_in, token_out) = if self.rng.below(2) == 0 {
                    (Token::Usdc, Token::Usdt)
                } else {
                    (Token::Usdt, Token::Usdc)
                };
                let req = SwapRequest {
                    phone_number: from.clone(),
                    token_in,
                    token_out,
                    amount_in: amount,
                    max_slippage_bps: 50,
                };
                self.engine.swap(&t, &req, key.as_deref()).await.map(drop)
            }
            46..=51 => {
                let req = WithdrawRequest {
                    phone_number: from.clone(),
                    token: *self.rng.pick(&Token::ALL),
                    amount,
                    payout_currency: "XOF".into(),
                };
                self.engine
                    .withdraw(&t, &req, key.as_deref())
                    .await
                    .map(drop)
            }
            52..=56 => {
                self.outside_deposit(&from, amount).await;
                Ok(())
            }
            57..=59 => self.engine.provision(&t, &to).await.map(drop),
            60..=62 => self.link(&t, &from).await,
            63..=64 => self.phone_change(&t).await,
            65..=74 => {
                let (name, r) = self.escrow_step(key.as_deref()).await;
                self.tally(step, name, r, |e| e.code(), super::escrow::client_caused);
                Ok(())
            }
            75..=78 => {
                let (name, r) = self.checkout_step(key.as_deref()).await;
                self.tally(step, name, r, |e| e.code(), super::checkout::client_caused);
                Ok(())
            }
            79..=81 => {
                let (name, r) = self.refund_step(key.as_deref()).await;
                self.tally(step, name, r, |e| e.code(), super::refunds::client_caused);
                Ok(())
            }
            82..=84 => {
                self.payouts.settle_all();
                Ok(())
            }
            _ => {
                self.shared_round().await;
                self.clock.advance_ms(1_000 + self.rng.below(4_000) as i64);
                Ok(())
            }
        };
        let name = match action {
            0..=14 => "fund",
            15..=34 => "send",
            35..=39 => "send_tron",
            40..=45 => "swap",
            46..=51 => "withdraw",
            52..=56 => "deposit",
            57..=59 => "provision",
            60..=62 => "link",
            63..=64 => "phone_change",
            65..=74 => "escrow",
            75..=78 => "checkout",
            79..=81 => "refund",
            82..=84 => "payout_callbacks",
            _ => "tick",
        };
        self.tally(step, name, result, |e| e.code(), client_caused);
    }

    /// Counts an action's outcome (`stats`), and fails the seed if it was refused for a
    /// reason no client can cause.
    fn tally<E: std::fmt::Debug>(
        &mut self,
        step: usize,
        name: &str,
        result: Result<(), E>,
        code: fn(&E) -> &'static str,
        expected: fn(&E) -> bool,
    ) {
        let outcome = result.as_ref().map_or_else(code, |_| "ok");
        *self.stats.entry(format!("{name} {outcome}")).or_default() += 1;
        if let Err(e) = result {
            assert!(
                expected(&e),
                "seed {} step {step}: {name} refused with an unexpected {e:?}",
                self.seed
            );
        }
    }

    fn inject_faults(&mut self) {
        // `Delay(STUCK_BLOCKS)` is a stuck transaction: in the mempool for many blocks,
        // past most payments' deadlines.
        let chain_faults = [
            Fault::Reject,
            Fault::Revert,
            Fault::LostResponse,
            Fault::Drop,
            Fault::Delay(2),
            Fault::Delay(STUCK_BLOCKS),
        ];
        if self.rng.below(8) == 0 {
            let mut fault = *self.rng.pick(&chain_faults);
            if fault == Fault::Delay(STUCK_BLOCKS) && std::env::var_os("SIM_NO_STUCK").is_some() {
                fault = Fault::Delay(2);
            }
            if fault == Fault::Delay(STUCK_BLOCKS) {
                *self.stats.entry("fault stuck".into()).or_default() += 1;
            }
            if self.rng.below(4) == 0 {
                self.tron.inject(fault);
            } else {
                self.evm.inject(fault);
            }
        }
        if self.rng.below(24) == 0 {
            // A reorganisation within the confirmation depth: nothing confirmed changes.
            let chain = if self.rng.below(4) == 0 {
                &self.tron
            } else {
                &self.evm
            };
            let moved = if std::env::var_os("SIM_NO_REORG").is_some() {
                0
            } else {
                chain.reorg(chain.config().confirmations - 1)
            };
            if moved > 0 && std::env::var_os("SIM_TRACE").is_some() {
                eprintln!("reorg at {:?}: {moved} txs back", chain.profile());
            }
            let name = if moved > 0 {
                "fault reorg"
            } else {
                "fault reorg (empty block)"
            };
            *self.stats.entry(name.into()).or_default() += 1;
        }
        if self.rng.below(16) == 0 {
            let fault = *self.rng.pick(&[
                PayoutFault::Reject,
                PayoutFault::LostResponse,
                PayoutFault::Drop,
            ]);
            self.payouts.inject(fault);
        }
        if self.rng.below(12) == 0 {
            self.store.overrides().fail_next_commits(1);
        }
        if self.rng.below(20) == 0 {
            // The receiver goes down, or comes back.
            let up = self.receiver.up.load(std::sync::atomic::Ordering::SeqCst);
            self.receiver
                .up
                .store(!up, std::sync::atomic::Ordering::SeqCst);
            *self
                .stats
                .entry("fault receiver toggled".into())
                .or_default() += 1;
        }
        if self.rng.below(40) == 0 {
            self.restart();
            *self.stats.entry("fault restart".into()).or_default() += 1;
        }
    }

    /// Someone outside pays a wallet (a deposit the scanner must credit once).
    async fn outside_deposit(&mut self, p: &Phone, amount: Micros) {
        let on_tron = self.rng.below(3) == 0;
        let Some(wallet) = self.wallet_addresses(p).await else {
            return;
        };
        let (rail, token) = if on_tron {
            (RailId::Tron.name(), Token::Usdt)
        } else {
            (EVM.rail_id().name(), *self.rng.pick(&Token::ALL))
        };
        let Some(address) = wallet.1.get(&rail).cloned() else {
            return;
        };
        if on_tron {
            self.tron.mint(&address, token, amount).unwrap();
        } else if self.rng.below(8) == 0 {
            // From a sanctioned sender: quarantined (`screening.rs`).
            self.listed_deposit(&address, token, amount).await;
        } else {
            self.evm.mint(&address, token, amount).unwrap();
        }
    }

    /// One round of the three products as a server runs them: one inbound router feeds
    /// every product's deposits (one scan of each chain page), then each product's own
    /// round, which never scans. (`drain` ticks each product on its own instead, with a
    /// router of its own: the positions of one cursor record part and meet again.)
    async fn shared_round(&self) {
        use stablecoin::core::kernel::Worker;
        let router = self
            .engine
            .kernel()
            .inbound_router(self.engine.config().batch_limit)
            .with_handler(Arc::new(self.engine.clone()))
            .with_handler(Arc::new(self.escrow.clone()))
            .with_handler(Arc::new(self.checkout.clone()));
        drop(router.pump().await);
        drop(self.escrow.round().await);
        drop(self.checkout.round().await);
        self.deliver().await;
        drop(self.engine.round().await);
    }

    /// `tenant` asks to join the wallet of `p`; the code is read from the SMS gateway.
    async fn link(&mut self, tenant: &TenantId, p: &Phone) -> Result<(), CoreError> {
        self.engine.link_request(tenant, p).await?;
        self.engine.tick().await;
        let Some(code) = self.notifier.last_code_to(p) else {
            return Ok(()); // the SMS was not sent yet (a failed commit): nothing to confirm
        };
        self.engine.link_confirm(tenant, p, &code).await.map(drop)
    }

    /// A member moves a wallet to a never-used phone.
    async fn phone_change(&mut self, tenant: &TenantId) -> Result<(), CoreError> {
        let slot = self.rng.below(PROVISIONED as u64) as usize;
        let old = self.phones[slot].clone();
        let new = phone(self.fresh_phones);
        self.fresh_phones += 1;
        self.engine.phone_change_request(tenant, &old, &new).await?;
        self.engine.tick().await;
        let Some(code) = self.notifier.last_code_to(&new) else {
            return Ok(());
        };
        self.engine
            .phone_change_confirm(tenant, &old, &code)
            .await?;
        self.phones[slot] = new;
        Ok(())
    }

    /// The wallet of `p`: its id and addresses per rail name.
    pub async fn wallet_addresses(
        &self,
        p: &Phone,
    ) -> Option<(WalletId, std::collections::BTreeMap<String, ChainAddress>)> {
        let rec = self
            .store
            .get_by_unique(&format!("wallet_phone:{p}"))
            .await
            .unwrap()?;
        let body = rec.body.to_value().unwrap();
        let addresses = body["addresses"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), ChainAddress(v.as_str().unwrap().to_string())))
            .collect();
        Some((WalletId(rec.id.clone()), addresses))
    }

    /// Faults stop; the world runs until every operation is terminal. A claim whose
    /// commit failed lapses after its 30 s lease, so the clock moves past leases, and
    /// the payout provider calls back.
    pub async fn drain(&mut self) {
        self.faults_on = false;
        self.store.overrides().fail_next_commits(0);
        for _ in 0..40 {
            self.decide_quarantined().await;
            self.tron.mine(3);
            self.escrow.settle_all(200).await;
            self.engine.settle_all(200).await;
            self.payouts.settle_all();
            self.engine.settle_all(200).await;
            self.escrow.settle_all(200).await;
            self.evm.mine(3);
            self.checkout.settle_all(200).await;
            if self.open_operations().await == 0
                && self.quarantine_settled().await
                && self.escrow_idle().await
                && self.sessions_swept().await
                && self.refunds_settled().await
            {
                break;
            }
            self.clock.advance_ms(31_000);
        }
        for (_, op) in self.operations().await {
            let key = format!("final {} {}", op.kind.as_str(), op.status.as_str());
            *self.stats.entry(key).or_default() += 1;
        }
    }

    /// Every checkout session address is empty (its deposits swept to the treasury).
    pub async fn sessions_swept(&self) -> bool {
        for s in &self.sessions {
            if self
                .evm
                .balance(&s.address, Token::Usdc)
                .await
                .unwrap()
                .get()
                != 0
            {
                return false;
            }
        }
        true
    }

    /// No escrow payout in flight.
    pub async fn escrow_idle(&self) -> bool {
        let staff = stablecoin_escrow::StaffActor::new("ops@service.example").unwrap();
        let admin = self.escrow.admin();
        for d in &self.deals {
            let acc = admin.accounting(&staff, &d.id).await.unwrap();
            if Token::ALL.iter().any(|t| acc.token(*t).in_flight != 0) {
                return false;
            }
        }
        true
    }

    /// Operations of every tenant not yet terminal.
    pub async fn open_operations(&self) -> usize {
        let ops = self.operations().await;
        ops.iter().filter(|(_, o)| !o.status.is_terminal()).count()
    }

    /// Every operation of every tenant and kind, with its tenant.
    pub async fn operations(&self) -> Vec<(TenantId, Operation)> {
        let mut all = Vec::new();
        for t in &self.tenants {
            for kind in OpKind::ALL {
                let (ops, _) = self
                    .engine
                    .list_operations(t, kind, None, 100_000, 0)
                    .await
                    .unwrap();
                all.extend(ops.into_iter().map(|op| (t.clone(), op)));
            }
        }
        all
    }
}

fn build_engine(
    ports: &Ports,
    evm: &Arc<SimRail>,
    tron: &Arc<SimRail>,
    seed: u64,
    restarts: u64,
) -> Engine {
    let venue = TreasuryVenue::new(
        evm.clone(),
        ports.ledger.clone(),
        TreasuryRate::default(),
        Micros::new(TREASURY_FLOAT_MICROS / 10),
    );
    Engine::new(
        ports.clone(),
        vec![evm.clone() as Arc<dyn Rail>, tron.clone() as Arc<dyn Rail>],
        EngineConfig {
            poll_interval_ms: 0,
            unknown_grace_ms: 0,
            // A dropped payment fails once its deadline has passed: within the drain.
            payment_validity_ms: 60_000,
            refund_retry_ms: 1_000,
            worker_id: format!("sim-{seed}-{restarts}"),
            wallet_cache_ms: 0,
            ..Default::default()
        },
    )
    .with_swap_venue(Arc::new(venue))
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut b = [7u8; 32];
    b[..8].copy_from_slice(&seed.to_le_bytes());
    b
}

fn phone(i: u64) -> Phone {
    Phone::parse(&format!("+2250700{i:06}")).unwrap()
}

fn fund(p: &Phone, amount: Micros) -> FundRequest {
    FundRequest {
        phone_number: p.clone(),
        token: Token::Usdc,
        amount,
    }
}

fn send(from: &Phone, to: &Phone, token: Token, amount: Micros) -> SendRequest {
    SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token,
        quote_id: format!("DIRECT_CRYPTO:{token}:{}", amount.to_decimal_string()),
    }
}

/// The refusals a client can cause, and the injected storage failure: anything else is
/// a bug.
fn client_caused(e: &CoreError) -> bool {
    matches!(
        e.code(),
        "INSUFFICIENT_FUNDS"
            | "NOT_A_MEMBER"
            | "SAME_WALLET"
            | "IDEMPOTENCY_KEY_REUSED"
            | "IDEMPOTENCY_KEY_IN_USE"
            | "STORAGE_ERROR"
            | "CONFLICT"
            | "WALLET_NOT_FOUND"
            | "NOT_FOUND"
            | "ALREADY_A_MEMBER"
            | "PHONE_IN_USE"
            | "AMOUNT_TOO_SMALL"
            | "INVALID_AMOUNT"
            | "BELOW_MINIMUM"
            | "INSUFFICIENT_LIQUIDITY"
            | "SLIPPAGE_EXCEEDED"
            | "CODE_INVALID"
            | "INVALID_CODE"
            | "TOO_MANY_ATTEMPTS"
            | "CHALLENGE_PENDING"
            | "RATE_LIMITED"
            | "POLICY_DENIED"
    )
}
