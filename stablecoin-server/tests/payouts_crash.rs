//! Withdrawals paid out by the real payout adapters (`MpesaB2c`, `MtnMomoDisbursement`)
//! talking to their fakes on loopback, with a crash between each pair of steps. Every
//! case runs for both providers with one body.
//!
//! A crash is an engine killed mid-step: its ticks run in a task until a gated chain or
//! provider call stalls, before or after the call went through, and the task is aborted
//! there. A successor engine (another worker id and a new instance of the adapter, as
//! a restarted process would have: its M-Pesa results store starts empty) over the same
//! store, chain and provider takes over once the dead worker's hold has lapsed.
//!
//! After each case the withdrawal is final and the money is where it must be: on the
//! simulated chain (wallet and service treasury), in the ledger (`wallet:<id>:USDC`,
//! `withdrawals:USDC`, `fiat_out:USDC`, the tenant's treasury), and at the provider
//! (paid 0 or 1 times). Nothing is paid twice, nothing is created or lost.

use async_trait::async_trait;
use stablecoin_core::domain::ids::{TenantId, WalletId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{
    Engine, EngineConfig, FundRequest, Operation, PayoutDecision, Ports, ResolvePayoutRequest,
    WithdrawRequest, accounts,
};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, Ledger, LedgerError, Payout, PayoutError, PayoutProvider,
    PayoutStatus, Rail, RailError, RailId, RailPayment, Readiness, ScanBatch, Submission,
    SubmissionStatus,
};
use stablecoin_providers::mpesa::{Expected, MpesaB2c, MpesaConfig, MpesaResults, Recorded};
use stablecoin_providers::mtn_momo::{MtnMomoConfig, MtnMomoDisbursement};
use stablecoin_providers::testkit::{FakeMpesa, FakeMtnMomo};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const MTN_USER: &str = "c72025f5-5cd1-4630-99e4-8ba4722fad56";
/// The wallet's funding and the withdrawal, in USDC micro-units.
const FUNDED: i128 = 300_000_000;
const WITHDRAWN: i128 = 100_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mpesa,
    MtnMomo,
}

/// The provider's fake.
enum Fake {
    Mpesa(FakeMpesa),
    MtnMomo(FakeMtnMomo),
}

impl Fake {
    fn paid_count(&self, id: &str) -> usize {
        match self {
            Fake::Mpesa(f) => f.paid_count(id),
            Fake::MtnMomo(f) => f.paid_count(id),
        }
    }

    /// Payments made under any id (a payout paid again under another id shows here).
    fn paid_total(&self) -> usize {
        match self {
            Fake::Mpesa(f) => f.payments().iter().map(|(id, _, _)| f.paid_count(id)).sum(),
            Fake::MtnMomo(f) => f
                .transfers()
                .iter()
                .filter_map(|(_, t)| t["externalId"].as_str().map(|id| f.paid_count(id)))
                .sum(),
        }
    }

    /// Payment requests (submits, not status queries) the provider received.
    fn requests_of_payments(&self) -> usize {
        match self {
            Fake::Mpesa(f) => f.payment_requests(),
            Fake::MtnMomo(f) => f.transfer_requests(),
        }
    }

    fn set_lose_answers(&self, lose: bool) {
        match self {
            Fake::Mpesa(f) => f.set_lose_answers(lose),
            Fake::MtnMomo(f) => f.set_lose_answers(lose),
        }
    }

    fn set_hold(&self, hold: bool) {
        match self {
            Fake::Mpesa(f) => f.set_hold(hold),
            Fake::MtnMomo(f) => f.set_hold(hold),
        }
    }

    fn complete_held(&self) {
        match self {
            Fake::Mpesa(f) => f.complete_held(),
            Fake::MtnMomo(f) => f.complete_held(),
        }
    }
}

const CB_SECRET: &str = "callback-secret-0123456789abcdef-0123";

/// Where the M-Pesa adapter's results arrive: the host's `ResultURL` route, verifying
/// the payout's token and recording the body into the adapter's store (as the server's
/// route does; the payouts of these cases are 12900 KES (100 USDC) to the paying number).
async fn mpesa_result_host(results: Arc<MpesaResults>) -> String {
    let key = stablecoin_providers::callback::CallbackKey::new(CB_SECRET).unwrap();
    let app = axum::Router::new()
        .route(
            "/result/{id}/{token}",
            axum::routing::post(
                move |axum::extract::Path((id, token)): axum::extract::Path<(String, String)>,
                      body: axum::body::Bytes| {
                    let (results, key) = (results.clone(), key.clone());
                    async move {
                        if !key.verify(&id, &token) {
                            return axum::http::StatusCode::FORBIDDEN;
                        }
                        let expected = Expected {
                            amount: "12900".parse().unwrap(),
                            party_b: "254708374149".into(),
                        };
                        match results.record(&id, &expected, &body).await {
                            Ok(Recorded::Mismatch { .. }) => axum::http::StatusCode::CONFLICT,
                            Ok(_) => axum::http::StatusCode::OK,
                            Err(_) => axum::http::StatusCode::BAD_REQUEST,
                        }
                    }
                },
            ),
        )
        .route(
            "/timeout/{id}/{token}",
            axum::routing::post(|| async { "ok" }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// The fake of `kind` and the payee to use: one the provider pays, or (`failing`) one
/// it definitively fails.
async fn provider(kind: Kind, failing: bool) -> (Fake, &'static str) {
    match kind {
        Kind::Mpesa => {
            let fake = FakeMpesa::start("ck", "cs", "testapi", "ENC==")
                .await
                .unwrap();
            fake.fail_party("254711000001", "2040", "The receiver is not registered");
            let phone = if failing {
                "+254711000001"
            } else {
                "+254708374149"
            };
            (Fake::Mpesa(fake), phone)
        }
        Kind::MtnMomo => {
            let fake = FakeMtnMomo::start(MTN_USER, "key", "sub").await.unwrap();
            // The sandbox's failing payee ("PAYEE_FAILED").
            let phone = if failing {
                "+46733123450"
            } else {
                "+46733123453"
            };
            (Fake::MtnMomo(fake), phone)
        }
    }
}

/// A new instance of the real adapter pointing at `fake`, as a (re)started process
/// builds it: its own token cache and, for M-Pesa, its own results route over the
/// shared database (`store`).
async fn adapter(fake: &Fake, store: Arc<MemoryStore>) -> Arc<dyn PayoutProvider> {
    match fake {
        Fake::Mpesa(fake) => {
            let results = Arc::new(MpesaResults::new(store));
            let host = mpesa_result_host(results.clone()).await;
            let config = MpesaConfig {
                base_url: fake.base_url().into(),
                consumer_key: "ck".into(),
                consumer_secret: "cs".into(),
                initiator_name: "testapi".into(),
                security_credential: "ENC==".into(),
                shortcode: "600000".into(),
                result_url: format!("{host}/result"),
                queue_timeout_url: format!("{host}/timeout"),
                callback_secret: CB_SECRET.into(),
                timeout: Duration::from_millis(500),
                result_wait: Duration::from_secs(1),
                ..MpesaConfig::default()
            };
            Arc::new(MpesaB2c::new(config, results).unwrap())
        }
        Fake::MtnMomo(fake) => {
            let config = MtnMomoConfig {
                base_url: fake.base_url().into(),
                api_user: MTN_USER.into(),
                api_key: "key".into(),
                subscription_key: "sub".into(),
                target_environment: "sandbox".into(),
                callback_url: None,
                callback_secret: None,
                payer_message: "Withdrawal".into(),
                payee_note: "Withdrawal".into(),
                timeout: Duration::from_millis(500),
            };
            Arc::new(MtnMomoDisbursement::new(config).unwrap())
        }
    }
}

fn currency(kind: Kind) -> &'static str {
    match kind {
        Kind::Mpesa => "KES",
        Kind::MtnMomo => "EUR",
    }
}

/// A gate in front of the chain's and the provider's calls: when armed with a key
/// (`"<call> <id>"`, e.g. `"payout.submit wd_1"`), the next call with that key signals
/// `entered` and then waits for a release that never comes (a stalled network call),
/// either before the call went through (`after: false`) or after it (`after: true`).
#[derive(Default)]
struct Gate {
    armed: std::sync::Mutex<Option<(String, bool)>>,
    entered: Notify,
    release: Notify,
}

impl Gate {
    fn arm(&self, key: String, after: bool) {
        *self.armed.lock().unwrap() = Some((key, after));
    }

    /// Whether the call `key` is the armed one (and then disarms it).
    fn take(&self, key: &str) -> Option<bool> {
        let mut armed = self.armed.lock().unwrap();
        match armed.as_ref() {
            Some((k, after)) if k == key => {
                let after = *after;
                *armed = None;
                Some(after)
            }
            _ => None,
        }
    }

    async fn pass<T>(&self, key: String, call: impl Future<Output = T>) -> T {
        match self.take(&key) {
            None => call.await,
            Some(false) => {
                self.entered.notify_one();
                self.release.notified().await;
                call.await
            }
            Some(true) => {
                let out = call.await;
                self.entered.notify_one();
                self.release.notified().await;
                out
            }
        }
    }
}

/// The payout provider's calls through the gate (`payout.submit`, `payout.status`).
struct GatedPayouts {
    inner: Arc<dyn PayoutProvider>,
    gate: Arc<Gate>,
}

#[async_trait]
impl PayoutProvider for GatedPayouts {
    fn identity(&self) -> String {
        self.inner.identity()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        self.inner.resubmit_is_idempotent()
    }
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        let key = format!("payout.submit {}", payout.id);
        self.gate.pass(key, self.inner.submit(payout)).await
    }
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        let key = format!("payout.status {payout_id}");
        self.gate.pass(key, self.inner.status(payout_id)).await
    }
}

/// The simulated chain with its `submit` through the gate (`rail.submit`).
struct GatedRail {
    inner: Arc<SimRail>,
    gate: Arc<Gate>,
}

#[async_trait]
impl Rail for GatedRail {
    fn id(&self) -> RailId {
        self.inner.id()
    }
    fn tokens(&self) -> Vec<Token> {
        self.inner.tokens()
    }
    async fn readiness(&self) -> Readiness {
        self.inner.readiness().await
    }
    fn readiness_is_cheap(&self) -> bool {
        self.inner.readiness_is_cheap()
    }
    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        self.inner.address_for(purpose).await
    }
    async fn prepare_wallet(&self, purpose: &KeyPurpose) -> Result<(), RailError> {
        self.inner.prepare_wallet(purpose).await
    }
    fn prepare_wallet_pays_rent(&self) -> bool {
        self.inner.prepare_wallet_pays_rent()
    }
    fn monitors_inbound(&self) -> bool {
        self.inner.monitors_inbound()
    }
    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        self.inner.balance(address, token).await
    }
    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        let key = format!("rail.submit {}", payment.id);
        self.gate.pass(key, self.inner.submit(payment)).await
    }
    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        self.inner.status(payment_id).await
    }
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        self.inner.scan(cursor, watched, limit).await
    }
}

/// One case: an engine's ports over a memory store, the simulated Polygon chain and
/// the provider, all gated; a tenant and a wallet holding 300 USDC (settled), and a
/// withdrawal of 100 of it accepted (PENDING).
struct Case {
    kind: Kind,
    fake: Fake,
    ports: Ports,
    rails: Vec<Arc<dyn Rail>>,
    config: EngineConfig,
    store: Arc<MemoryStore>,
    sim: Arc<SimRail>,
    clock: Arc<ManualClock>,
    gate: Arc<Gate>,
    /// Sets the case up and reads the withdrawal; never ticks after the setup.
    reader: Engine,
    tenant: TenantId,
    wallet: WalletId,
    address: ChainAddress,
    treasury: ChainAddress,
    /// The service treasury on chain and the tenant's treasury in the ledger, before
    /// the withdrawal.
    treasury_chain_before: i128,
    treasury_ledger_before: i128,
    id: String,
}

async fn setup(kind: Kind, failing: bool) -> Case {
    let (fake, phone) = provider(kind, failing).await;
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([7; 32]));
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let sim = Arc::new(
        SimRail::new(
            SimProfile::Evm(137),
            signer.clone(),
            SimConfig::for_profile(SimProfile::Evm(137)),
        )
        .with_clock(clock.clone()),
    );
    let gate = Arc::new(Gate::default());
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(GatedPayouts {
            inner: adapter(&fake, store.clone()).await,
            gate: gate.clone(),
        }),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(42)),
    };
    let rails: Vec<Arc<dyn Rail>> = vec![Arc::new(GatedRail {
        inner: sim.clone(),
        gate: gate.clone(),
    })];
    // The production claim lease; polls at once, so the test drives every step.
    let config = EngineConfig {
        poll_interval_ms: 0,
        unknown_grace_ms: 0,
        ..EngineConfig::default()
    };
    let reader = Engine::new(ports.clone(), rails.clone(), config.clone());
    let mut c = Case {
        kind,
        fake,
        ports,
        rails,
        config,
        store,
        sim,
        clock,
        gate,
        reader,
        tenant: TenantId(String::new()),
        wallet: WalletId(String::new()),
        address: ChainAddress(String::new()),
        treasury: ChainAddress(String::new()),
        treasury_chain_before: 0,
        treasury_ledger_before: 0,
        id: String::new(),
    };
    let e = c.reader.clone();
    let t = e.create_tenant("Acme").await.unwrap().id;
    c.treasury = c.sim.address_for(&KeyPurpose::Treasury).await.unwrap();
    let thousand = Micros(1_000_000_000);
    c.sim.mint(&c.treasury, Token::Usdc, thousand).unwrap();
    c.sim.mine(1);
    e.credit_treasury(&t, Token::Usdc, thousand, "wire-acme")
        .await
        .unwrap();
    let phone = Phone::parse(phone).unwrap();
    let w = e.provision(&t, &phone).await.unwrap();
    c.wallet = WalletId(w.wallet_id);
    c.address = ChainAddress(w.address);
    let fund = FundRequest {
        phone_number: phone.clone(),
        token: Token::Usdc,
        amount: Micros(FUNDED as u64),
    };
    e.fund(&t, &fund, None).await.unwrap();
    let r = e.settle_all(100).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    c.tenant = t;
    assert_eq!(c.wallet_balances().await, (FUNDED, FUNDED), "funded");
    c.treasury_chain_before = c.chain(&c.treasury.clone()).await;
    c.treasury_ledger_before = c.ledger(&c.treasury_account()).await;
    let req = WithdrawRequest {
        phone_number: phone,
        token: Token::Usdc,
        amount: Micros(WITHDRAWN as u64),
        payout_currency: currency(kind).into(),
    };
    c.id = e.withdraw(&c.tenant, &req, None).await.unwrap().id;
    c
}

impl Case {
    /// An engine (a process) over the case's store, chain and provider, with a new
    /// instance of the provider's adapter (its calls through the gate).
    async fn engine(&self, worker: &str) -> Engine {
        let config = EngineConfig {
            worker_id: worker.into(),
            ..self.config.clone()
        };
        let mut ports = self.ports.clone();
        ports.payouts = Arc::new(GatedPayouts {
            inner: adapter(&self.fake, self.store.clone()).await,
            gate: self.gate.clone(),
        });
        Engine::new(ports, self.rails.clone(), config)
    }

    /// Worker `worker` runs until the armed call stalls, and is killed there.
    async fn crash(&self, worker: &str, key: String, after: bool) {
        self.gate.arm(key.clone(), after);
        let w = self.engine(worker).await;
        let task = tokio::spawn(async move {
            loop {
                w.tick().await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        tokio::time::timeout(Duration::from_secs(20), self.gate.entered.notified())
            .await
            .unwrap_or_else(|_| panic!("{worker} never made the call {key}"));
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
    }

    /// The dead worker's hold lapses.
    fn lapse(&self) {
        self.clock.advance_ms(self.config.claim_lease_ms + 1);
    }

    /// The process that takes over once the dead worker's hold has lapsed.
    async fn successor(&self, worker: &str) -> Engine {
        self.lapse();
        self.engine(worker).await
    }

    async fn op(&self) -> Operation {
        self.reader.operation(&self.tenant, &self.id).await.unwrap()
    }

    async fn status(&self) -> String {
        self.op().await.status.as_str().to_string()
    }

    /// Ticks `w` until the withdrawal is in one of `want` (at most 20 s: the providers
    /// answer over HTTP, M-Pesa's status by a callback); the withdrawal then.
    async fn drive(&self, w: &Engine, want: &[&str]) -> Operation {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            w.tick().await;
            let o = self.op().await;
            if want.contains(&o.status.as_str()) {
                return o;
            }
            assert!(Instant::now() < until, "never reached {want:?}: {o:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Ticks `w` `n` times (it had its chances to move the withdrawal).
    async fn ticks(&self, w: &Engine, n: usize) {
        for _ in 0..n {
            w.tick().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn paid(&self) -> usize {
        self.fake.paid_count(&self.id)
    }

    async fn chain(&self, address: &ChainAddress) -> i128 {
        self.sim.balance(address, Token::Usdc).await.unwrap().0 as i128
    }

    async fn ledger(&self, account: &str) -> i128 {
        match self.store.balance(account).await {
            Ok(b) => {
                assert_eq!(b.posted(), b.available(), "{account}: a hold is left");
                b.posted()
            }
            // Never posted to: zero.
            Err(LedgerError::UnknownAccount { .. }) => 0,
            Err(e) => panic!("{account}: {e:?}"),
        }
    }

    fn treasury_account(&self) -> String {
        accounts::treasury(&self.tenant, Token::Usdc).id
    }

    /// The wallet's (ledger, chain) balances.
    async fn wallet_balances(&self) -> (i128, i128) {
        let account = accounts::wallet(&self.wallet, Token::Usdc).id;
        (self.ledger(&account).await, self.chain(&self.address).await)
    }

    /// The withdrawal ended `status` with `moved` (0 or 100 USDC) out to the fiat side
    /// and the provider paid `paid` times: the wallet and the service treasury on chain,
    /// the ledger's wallet, `withdrawals`, `fiat_out` and the tenant's treasury agree,
    /// and the ledger still sums to zero.
    async fn assert_final(&self, status: &str, moved: i128, paid: usize) -> Operation {
        let o = self.op().await;
        assert_eq!(o.status.as_str(), status, "{o:?}");
        assert_eq!(self.paid(), paid, "{:?}: paid {paid} times", self.kind);
        assert_eq!(
            self.fake.paid_total(),
            paid,
            "nothing paid under another id"
        );
        let left = FUNDED - moved;
        assert_eq!(self.wallet_balances().await, (left, left), "wallet");
        assert_eq!(
            self.chain(&self.treasury).await,
            self.treasury_chain_before + moved,
            "service treasury on chain"
        );
        assert_eq!(
            self.ledger("withdrawals:USDC").await,
            0,
            "nothing in flight"
        );
        assert_eq!(self.ledger("fiat_out:USDC").await, moved, "paid out");
        assert_eq!(
            self.ledger(&self.treasury_account()).await,
            self.treasury_ledger_before,
            "the tenant's treasury is not touched"
        );
        assert_eq!(self.store.posted_sum().await.unwrap(), 0, "double entry");
        let payout = o.payout.clone().expect("a payout leg");
        match status {
            "COMPLETED" => {
                assert!(payout.reference.is_some(), "{o:?}");
                assert!(payout.refund.is_none() && payout.refund_tx_hash.is_none());
            }
            "REFUNDED" => {
                assert!(payout.reference.is_none(), "{o:?}");
                assert!(payout.refund_tx_hash.is_some(), "{o:?}");
                assert!(o.error_reason.is_some(), "{o:?}");
            }
            _ => {
                assert!(o.error_reason.is_some(), "{o:?}");
                assert!(payout.submitted_at.is_none(), "never paid out: {o:?}");
            }
        }
        o
    }

    /// A final withdrawal stays as it is, whatever more ticks do.
    async fn assert_stays(&self, w: &Engine, o: &Operation) {
        self.ticks(w, 3).await;
        let again = self.op().await;
        assert_eq!(again.status, o.status);
        assert_eq!(again.updated_at, o.updated_at, "untouched");
    }
}

const FINAL: &[&str] = &["COMPLETED", "REFUNDED", "FAILED"];

/// Worker 1 dies inside the sweep's submit before it reaches the chain: the successor
/// finds it SUBMITTING, the chain has never heard of it, and it fails only once the
/// sweep's deadline has passed (it can no longer land). Nothing moved, nothing paid.
async fn a_crash_before_the_sweep_reaches_the_chain_fails_it_after_its_deadline(kind: Kind) {
    let c = setup(kind, false).await;
    c.crash("worker-1", format!("rail.submit {}", c.id), false)
        .await;
    assert_eq!(c.status().await, "SUBMITTING");
    let w2 = c.successor("worker-2").await;
    let o = c.drive(&w2, &["SUBMISSION_UNKNOWN"]).await;
    c.ticks(&w2, 3).await;
    assert_eq!(
        c.status().await,
        "SUBMISSION_UNKNOWN",
        "not before its deadline"
    );
    c.clock
        .set(o.payment.valid_until.expect("a deadline").plus_millis(1));
    c.drive(&w2, FINAL).await;
    let o = c.assert_final("FAILED", 0, 0).await;
    c.assert_stays(&w2, &o).await;
}

/// Worker 1 dies once the sweep was sent: the successor finds it on chain and pays the
/// withdrawal out, once.
async fn a_crash_after_the_sweep_was_sent_completes_it(kind: Kind) {
    let c = setup(kind, false).await;
    c.crash("worker-1", format!("rail.submit {}", c.id), true)
        .await;
    assert_eq!(c.status().await, "SUBMITTING");
    let w2 = c.successor("worker-2").await;
    c.drive(&w2, FINAL).await;
    let o = c.assert_final("COMPLETED", WITHDRAWN, 1).await;
    c.assert_stays(&w2, &o).await;
}

/// Worker 1 dies in the payout's submit before it reaches the provider: the successor's
/// status query finds nothing.
///
/// - MTN documents `X-Reference-Id` as idempotent: the successor submits the same id,
///   and it is paid once.
/// - Daraja does not document that a re-used `OriginatorConversationID` is refused, and
///   the engine cannot tell "never sent" from "sent, not yet visible": it never sends it
///   again. The withdrawal is PAYOUT_UNKNOWN until staff, having checked the portal,
///   resolve it: refunded, once, with the decision audited.
async fn a_crash_before_the_payout_reaches_the_provider_pays_it_once(kind: Kind) {
    let c = setup(kind, false).await;
    c.crash("worker-1", format!("payout.submit {}", c.id), false)
        .await;
    assert_eq!(c.status().await, "PAYOUT_SUBMITTING");
    assert_eq!(c.paid(), 0, "never reached the provider");
    let w2 = c.successor("worker-2").await;
    if kind == Kind::MtnMomo {
        c.drive(&w2, FINAL).await;
        let o = c.assert_final("COMPLETED", WITHDRAWN, 1).await;
        c.assert_stays(&w2, &o).await;
        return;
    }
    c.drive(&w2, &["PAYOUT_UNKNOWN"]).await;
    c.ticks(&w2, 5).await;
    let o = c.op().await;
    assert_eq!(o.status.as_str(), "PAYOUT_UNKNOWN", "waits for staff");
    assert!(o.payout.as_ref().unwrap().refund.is_none());
    assert_eq!(c.paid(), 0, "never sent again");
    assert_eq!(
        c.fake.requests_of_payments(),
        0,
        "no payment request at all"
    );
    let ada = c.reader.create_staff("ada").await.unwrap();
    let req = ResolvePayoutRequest {
        decision: PayoutDecision::Refunded,
        reason: "Daraja portal: no transaction for this OriginatorConversationID".into(),
    };
    c.reader
        .resolve_payout(&ada.account.id, &c.id, &req)
        .await
        .unwrap();
    c.drive(&w2, FINAL).await;
    let o = c.assert_final("REFUNDED", 0, 0).await;
    let r = o
        .payout
        .as_ref()
        .unwrap()
        .resolution
        .clone()
        .expect("recorded");
    assert_eq!(r.staff_id, ada.account.id);
    let (audit, _) = c.reader.staff_audit(10, 1).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|e| e.action == "withdrawal.payout.refund" && e.target == c.id),
        "{audit:?}"
    );
    c.assert_stays(&w2, &o).await;
}

/// Worker 1 dies once the provider received the payout, which it holds pending: the
/// successor waits while the provider says pending (never pays again, never refunds),
/// and completes it once the provider has paid: paid exactly once.
async fn a_crash_after_the_provider_received_the_payout_pays_it_once(kind: Kind) {
    let c = setup(kind, false).await;
    c.fake.set_hold(true);
    c.crash("worker-1", format!("payout.submit {}", c.id), true)
        .await;
    assert_eq!(c.status().await, "PAYOUT_SUBMITTING");
    let w2 = c.successor("worker-2").await;
    c.ticks(&w2, 5).await;
    let o = c.op().await;
    assert_eq!(o.status.as_str(), "PAYOUT_SUBMITTING", "pending: it waits");
    assert!(o.payout.unwrap().refund.is_none(), "no refund started");
    assert_eq!(c.paid(), 0);
    c.fake.complete_held();
    c.drive(&w2, FINAL).await;
    let o = c.assert_final("COMPLETED", WITHDRAWN, 1).await;
    c.assert_stays(&w2, &o).await;
}

/// The payout's answer is lost (PAYOUT_UNKNOWN; the provider did pay it) and worker 1
/// dies in its status query, before or after the query reached the provider: the
/// successor resolves it by the status query alone, and it is paid once.
async fn a_crash_in_payout_unknown_is_resolved_by_the_status_query(kind: Kind, after: bool) {
    let c = setup(kind, false).await;
    c.fake.set_lose_answers(true);
    c.crash("worker-1", format!("payout.status {}", c.id), after)
        .await;
    assert_eq!(c.status().await, "PAYOUT_UNKNOWN");
    assert_eq!(c.paid(), 1, "processed, its answer lost");
    let w2 = c.successor("worker-2").await;
    c.drive(&w2, FINAL).await;
    let o = c.assert_final("COMPLETED", WITHDRAWN, 1).await;
    c.assert_stays(&w2, &o).await;
}

async fn a_crash_in_payout_unknown_before_the_status_query(kind: Kind) {
    a_crash_in_payout_unknown_is_resolved_by_the_status_query(kind, false).await
}

async fn a_crash_in_payout_unknown_after_the_status_query(kind: Kind) {
    a_crash_in_payout_unknown_is_resolved_by_the_status_query(kind, true).await
}

/// The provider definitively fails the payee; worker 1 dies in the refund's submit,
/// before it reaches the chain (`after: false`) or once it was sent. The successor
/// refunds the wallet exactly once, with the attempt recorded before the crash.
async fn a_crash_at_the_refund_refunds_once(kind: Kind, after: bool) {
    let c = setup(kind, true).await;
    c.crash("worker-1", format!("rail.submit {}-refund", c.id), after)
        .await;
    let o = c.op().await;
    // PAYOUT_UNKNOWN only if the payout's submit outlasted the adapter's timeout (a
    // loaded machine); either way not final, the refund under way.
    assert!(
        ["PAYOUT_SUBMITTING", "PAYOUT_UNKNOWN"].contains(&o.status.as_str()),
        "{o:?}"
    );
    let payout = o.payout.unwrap();
    let refund = payout.refund.expect("recorded before it is sent");
    assert!(payout.failure.is_some(), "the provider's word");
    let on_chain = c.sim.status(&refund.id).await.unwrap();
    assert_eq!(
        on_chain == SubmissionStatus::NotFound,
        !after,
        "sent: {after}, {on_chain:?}"
    );
    if !after {
        assert_eq!(c.chain(&c.address).await, FUNDED - WITHDRAWN, "not sent");
    }
    let w2 = c.successor("worker-2").await;
    c.drive(&w2, FINAL).await;
    let o = c.assert_final("REFUNDED", 0, 0).await;
    assert_eq!(o.payout.as_ref().unwrap().refund_attempts, 1, "one attempt");
    c.assert_stays(&w2, &o).await;
}

async fn a_crash_before_the_refund_reaches_the_chain_refunds_once(kind: Kind) {
    a_crash_at_the_refund_refunds_once(kind, false).await
}

async fn a_crash_after_the_refund_was_sent_refunds_once(kind: Kind) {
    a_crash_at_the_refund_refunds_once(kind, true).await
}

/// A completed path with a crash at every step: after the sweep was sent, after the
/// provider received the payout (its answer lost on the way), after the status query
/// reached the provider; the fourth worker completes it, paid once.
async fn a_crash_at_every_step_of_a_completed_withdrawal_pays_once(kind: Kind) {
    let c = setup(kind, false).await;
    c.crash("worker-1", format!("rail.submit {}", c.id), true)
        .await;
    assert_eq!(c.status().await, "SUBMITTING");
    c.fake.set_lose_answers(true);
    c.lapse();
    c.crash("worker-2", format!("payout.submit {}", c.id), true)
        .await;
    assert_eq!(c.status().await, "PAYOUT_SUBMITTING");
    assert_eq!(c.paid(), 1);
    c.lapse();
    c.crash("worker-3", format!("payout.status {}", c.id), true)
        .await;
    let w4 = c.successor("worker-4").await;
    c.drive(&w4, FINAL).await;
    let o = c.assert_final("COMPLETED", WITHDRAWN, 1).await;
    c.assert_stays(&w4, &o).await;
}

/// Payout unknown, then definitively failed, then refunded, with a crash at each step:
/// in PAYOUT_UNKNOWN before the status query, then after the refund was sent. The
/// payee is never paid, the wallet is refunded once.
async fn unknown_then_failed_then_refunded_with_a_crash_at_each_step(kind: Kind) {
    let c = setup(kind, true).await;
    c.fake.set_lose_answers(true);
    c.crash("worker-1", format!("payout.status {}", c.id), false)
        .await;
    assert_eq!(c.status().await, "PAYOUT_UNKNOWN");
    c.fake.set_lose_answers(false);
    c.lapse();
    c.crash("worker-2", format!("rail.submit {}-refund", c.id), true)
        .await;
    assert_eq!(c.status().await, "PAYOUT_UNKNOWN", "refund under way");
    let w3 = c.successor("worker-3").await;
    c.drive(&w3, FINAL).await;
    let o = c.assert_final("REFUNDED", 0, 0).await;
    assert_eq!(o.payout.as_ref().unwrap().refund_attempts, 1);
    c.assert_stays(&w3, &o).await;
}

/// M-Pesa's answer to the payout is lost and its status query says "not found" for a
/// while (a ledger that lags), and Daraja, unlike the fake's default, would pay a
/// re-used `OriginatorConversationID` again (the documentation does not say it refuses
/// one). The engine never sends the payout again: it is PAYOUT_UNKNOWN until the query
/// finds it, then COMPLETED; paid exactly once. (The old engine re-submitted on
/// "not found" and paid twice.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mpesa_a_lost_acknowledgement_is_never_resubmitted_and_paid_once() {
    let c = setup(Kind::Mpesa, false).await;
    let Fake::Mpesa(fake) = &c.fake else {
        unreachable!()
    };
    fake.set_duplicates_pay(true);
    fake.set_queries_not_found(true);
    fake.set_lose_answers(true);
    let w = c.engine("worker-1").await;
    c.drive(&w, &["PAYOUT_UNKNOWN"]).await;
    fake.set_lose_answers(false);
    assert_eq!(c.paid(), 1, "processed, its answer lost");
    c.ticks(&w, 5).await;
    assert_eq!(c.status().await, "PAYOUT_UNKNOWN");
    assert_eq!(fake.payment_requests(), 1, "never sent again");
    assert_eq!(c.paid(), 1);
    // The query finds it at last.
    fake.set_queries_not_found(false);
    c.drive(&w, FINAL).await;
    let o = c.assert_final("COMPLETED", WITHDRAWN, 1).await;
    assert_eq!(fake.payment_requests(), 1);
    c.assert_stays(&w, &o).await;
}

macro_rules! both {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mpesa() {
                super::$case(Kind::Mpesa).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mtn_momo() {
                super::$case(Kind::MtnMomo).await
            }
        }
    )*};
}

both!(
    a_crash_before_the_sweep_reaches_the_chain_fails_it_after_its_deadline,
    a_crash_after_the_sweep_was_sent_completes_it,
    a_crash_before_the_payout_reaches_the_provider_pays_it_once,
    a_crash_after_the_provider_received_the_payout_pays_it_once,
    a_crash_in_payout_unknown_before_the_status_query,
    a_crash_in_payout_unknown_after_the_status_query,
    a_crash_before_the_refund_reaches_the_chain_refunds_once,
    a_crash_after_the_refund_was_sent_refunds_once,
    a_crash_at_every_step_of_a_completed_withdrawal_pays_once,
    unknown_then_failed_then_refunded_with_a_crash_at_each_step,
);
