//! The product rules an embedder gets from `Engine` alone, with no HTTP server in front:
//! readiness gating of sponsored sends (RAIL_NOT_READY), the tokens each rail carries
//! (UNKNOWN_TOKEN), and the sandbox (simulations that store nothing,
//! SANDBOX_UNSUPPORTED for the rest).

use stablecoin::core::CoreError;
use stablecoin::core::domain::ids::TenantId;
use stablecoin::core::domain::money::{Currency, Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::state::OpKind;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{
    AuthContext, Engine, EngineConfig, FundRequest, KeyKind, KeyMode, Ports, SendRequest,
    WithdrawRequest,
};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin::core::ports::{
    Batch, ChainAddress, CommitReceipt, IdempotencyRecord, KeyPurpose, ListQuery, OutboxEvent,
    Rail, RailId, Readiness, ReadinessStatus, Store, StoreError, StoredRecord,
};
use stablecoin::core::testkit::{DelegatingRail, RailOverride};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const EVM: RailId = RailId::Evm(137);

struct H {
    engine: Engine,
    store: Arc<MemoryStore>,
    /// Counts the engine's store calls (the store the engine sees).
    seen: Arc<CountingStore>,
    evm: Arc<SimRail>,
    tron: Arc<SimRail>,
    notifier: Arc<MemoryNotifier>,
    clock: Arc<ManualClock>,
}

fn m(s: &str) -> Micros {
    Micros::parse_decimal(s).unwrap()
}

fn phone(s: &str) -> Phone {
    Phone::parse(s).unwrap()
}

fn send_req(from: &Phone, to: &Phone, token: Token, quote_id: &str) -> SendRequest {
    SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token,
        quote_id: quote_id.into(),
    }
}

fn harness() -> H {
    harness_wrapping(|evm| evm)
}

/// The engine over in-memory ports, the simulated EVM chain (wrapped by `wrap`) and the
/// simulated TRON chain.
fn harness_wrapping(wrap: impl FnOnce(Arc<SimRail>) -> Arc<dyn Rail>) -> H {
    let store = Arc::new(MemoryStore::new());
    let seen = Arc::new(CountingStore {
        inner: store.clone(),
        reads: AtomicU64::new(0),
        commits: AtomicU64::new(0),
    });
    let signer = Arc::new(LocalSigner::from_seed([5; 32]));
    let sim = |p: SimProfile| Arc::new(SimRail::new(p, signer.clone(), SimConfig::for_profile(p)));
    let evm = sim(SimProfile::Evm(137));
    let tron = sim(SimProfile::Tron);
    let notifier = Arc::new(MemoryNotifier::new());
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let ports = Ports {
        store: seen.clone(),
        ledger: store.clone(),
        signer,
        notifier: notifier.clone(),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(11)),
    };
    let config = EngineConfig {
        poll_interval_ms: 0,
        unknown_grace_ms: 0,
        ..Default::default()
    };
    let engine = Engine::new(ports, vec![wrap(evm.clone()), tron.clone()], config);
    H {
        engine,
        store,
        seen,
        evm,
        tron,
        notifier,
        clock,
    }
}

impl H {
    /// A tenant whose treasury holds `amount` USDC, backed on chain.
    async fn tenant(&self, name: &str, amount: &str) -> TenantId {
        let t = self.engine.create_tenant(name).await.unwrap();
        let treasury = self.evm.address_for(&KeyPurpose::Treasury).await.unwrap();
        self.evm.mint(&treasury, Token::Usdc, m(amount)).unwrap();
        self.evm.mine(1);
        self.engine
            .credit_treasury(&t.id, Token::Usdc, m(amount), &format!("wire-{name}"))
            .await
            .unwrap();
        t.id
    }

    fn fund_req(&self, p: &Phone, amount: &str) -> FundRequest {
        FundRequest {
            phone_number: p.clone(),
            token: Token::Usdc,
            amount: m(amount),
        }
    }

    /// Tenant "Acme" and two EVM wallets, the first holding 50 USDC (settled).
    async fn funded_pair(&self) -> (TenantId, Phone, Phone) {
        let t = self.tenant("Acme", "100").await;
        let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
        self.engine.provision(&t, &a).await.unwrap();
        self.engine.provision(&t, &b).await.unwrap();
        self.engine
            .fund(&t, &self.fund_req(&a, "50"), None)
            .await
            .unwrap();
        self.settle().await;
        (t, a, b)
    }

    async fn settle(&self) {
        let r = self.engine.settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
    }

    fn commits(&self) -> u64 {
        self.seen.commits.load(Ordering::SeqCst)
    }

    fn reads(&self) -> u64 {
        self.seen.reads.load(Ordering::SeqCst)
    }

    async fn status(&self, rail: RailId) -> ReadinessStatus {
        self.engine.readiness().await[&rail.name()].status
    }
}

/// Expects `r` to fail with `code` and returns the error.
fn fails<T: std::fmt::Debug>(r: Result<T, CoreError>, code: &str) -> CoreError {
    let e = r.expect_err(code);
    assert_eq!(e.code(), code, "{e}");
    e
}

#[tokio::test]
async fn send_on_a_tron_rail_that_is_inbound_ready_is_rail_not_ready_and_writes_nothing() {
    let h = harness();
    let t = h.tenant("Acme", "1").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    let view = h.engine.provision_on(&t, &a, RailId::Tron).await.unwrap();
    h.tron
        .mint(&ChainAddress(view.address), Token::Usdt, m("5"))
        .unwrap();
    h.settle().await;
    let req = send_req(&a, &b, Token::Usdt, "DIRECT_CRYPTO:USDT:2");

    h.tron.set_sponsor_funded(false);
    assert_eq!(h.status(RailId::Tron).await, ReadinessStatus::InboundReady);
    let commits = h.commits();
    let e = fails(
        h.engine.send_on(&t, RailId::Tron, &req, Some("k1")).await,
        "RAIL_NOT_READY",
    );
    assert!(e.to_string().contains("INBOUND_READY"), "{e}");
    assert!(e.is_retryable());
    assert_eq!(h.commits(), commits, "nothing written");
    // Receiving and reading go on while sends are gated.
    let bal = h.engine.balance_on(&t, &a, RailId::Tron).await.unwrap();
    assert_eq!(bal.of(Token::Usdt), m("5"));

    // READY again: the same request is accepted.
    h.tron.set_sponsor_funded(true);
    let op = h
        .engine
        .send_on(&t, RailId::Tron, &req, Some("k1"))
        .await
        .unwrap();
    assert_eq!((op.rail.as_str(), op.status.as_str()), ("tron", "QUEUED"));
}

#[tokio::test]
async fn an_evm_rail_that_is_not_ready_refuses_every_sponsored_use_case() {
    let h = harness();
    let (t, a, b) = h.funded_pair().await;
    h.evm.set_sponsor_funded(false);
    assert_eq!(h.status(EVM).await, ReadinessStatus::InboundReady);
    let commits = h.commits();
    let send = send_req(&a, &b, Token::Usdc, "DIRECT_CRYPTO:USDC:1");
    let e = fails(h.engine.send(&t, &send, None).await, "RAIL_NOT_READY");
    assert!(e.to_string().contains("polygon"), "{e}");
    fails(
        h.engine.send_on(&t, EVM, &send, None).await,
        "RAIL_NOT_READY",
    );
    fails(
        h.engine.fund(&t, &h.fund_req(&b, "1"), None).await,
        "RAIL_NOT_READY",
    );
    let withdraw = WithdrawRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("1"),
        payout_currency: "XOF".into(),
    };
    fails(
        h.engine.withdraw(&t, &withdraw, None).await,
        "RAIL_NOT_READY",
    );
    assert_eq!(h.commits(), commits, "nothing written");
    // Provisioning and reads are not sends.
    h.engine
        .provision(&t, &phone("+2250700000003"))
        .await
        .unwrap();
    assert_eq!(
        h.engine.balance(&t, &a).await.unwrap().balance_usdc,
        "50.000000"
    );
    // A DEGRADED rail is not READY either.
    h.evm.set_sponsor_funded(true);
    h.evm.set_monitoring(false);
    assert_eq!(h.status(EVM).await, ReadinessStatus::Degraded);
    fails(h.engine.send(&t, &send, None).await, "RAIL_NOT_READY");
    h.evm.set_monitoring(true);
    h.engine.send(&t, &send, None).await.unwrap();
}

#[tokio::test]
async fn an_accepted_send_replays_after_the_rail_stops_being_ready() {
    let h = harness();
    let (t, a, b) = h.funded_pair().await;
    let send = send_req(&a, &b, Token::Usdc, "DIRECT_CRYPTO:USDC:1");
    let first = h.engine.send(&t, &send, Some("k1")).await.unwrap();
    h.evm.set_sponsor_funded(false);
    let again = h.engine.send(&t, &send, Some("k1")).await.unwrap();
    assert_eq!(again.id, first.id, "the recorded result is the answer");
    fails(h.engine.send(&t, &send, Some("k2")).await, "RAIL_NOT_READY");
}

/// In front of the simulated rail: a readiness check that is not cheap (as a real node's
/// is), counting how often it is asked.
#[derive(Default)]
struct Costly {
    asked: AtomicU64,
}

#[async_trait::async_trait]
impl RailOverride for Costly {
    fn readiness_is_cheap(&self, _inner: &dyn Rail) -> bool {
        false
    }
    async fn readiness(&self, inner: &dyn Rail) -> Readiness {
        self.asked.fetch_add(1, Ordering::SeqCst);
        inner.readiness().await
    }
}

#[tokio::test]
async fn a_costly_readiness_check_is_asked_once_per_cache_window() {
    let costly = std::sync::Mutex::new(None);
    let h = harness_wrapping(|evm| {
        let c = Arc::new(DelegatingRail::new(evm, Costly::default()));
        *costly.lock().unwrap() = Some(c.clone());
        c
    });
    let costly = costly.into_inner().unwrap().unwrap();
    let asked = || costly.overrides().asked.load(Ordering::SeqCst);
    let ttl = h.engine.config().readiness_cache_ms;
    assert_eq!(ttl, 2_000, "the default window");
    let t = h.tenant("Acme", "10").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let fund = h.fund_req(&a, "1");

    h.evm.set_sponsor_funded(false);
    let before = asked();
    fails(h.engine.fund(&t, &fund, None).await, "RAIL_NOT_READY");
    assert_eq!(asked(), before + 1);
    // Funded again, but within the window the engine still answers from its cache.
    h.evm.set_sponsor_funded(true);
    fails(h.engine.fund(&t, &fund, None).await, "RAIL_NOT_READY");
    assert_eq!(asked(), before + 1, "not asked again within the window");
    // After the window, it asks again and the send goes through.
    h.clock.advance_ms(ttl);
    h.engine.fund(&t, &fund, None).await.unwrap();
    h.engine.fund(&t, &fund, None).await.unwrap();
    assert_eq!(asked(), before + 2);
    // Readiness as reported (health) is always asked now.
    h.engine.readiness().await;
    assert_eq!(asked(), before + 3);
}

#[tokio::test]
async fn a_token_the_rail_does_not_carry_is_unknown_token_before_anything_is_read() {
    let h = harness();
    let t = h.tenant("Acme", "1").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    let usdc = send_req(&a, &b, Token::Usdc, "DIRECT_CRYPTO:USDC:1");
    let (reads, commits) = (h.reads(), h.commits());
    let e = fails(
        h.engine.send_on(&t, RailId::Tron, &usdc, Some("k1")).await,
        "UNKNOWN_TOKEN",
    );
    assert_eq!(e.to_string(), "tron supports only USDT");
    assert_eq!(e.param(), Some("token"));
    fails(
        h.engine.require_token(RailId::Tron, Token::Usdc),
        "UNKNOWN_TOKEN",
    );
    h.engine.require_token(RailId::Tron, Token::Usdt).unwrap();
    // The sandbox checks it as live does.
    fails(
        h.engine.sandbox().send_on(&t, RailId::Tron, &usdc).await,
        "UNKNOWN_TOKEN",
    );
    // A quote of another token is refused before any read too.
    let mismatch = send_req(&a, &b, Token::Usdt, "DIRECT_CRYPTO:USDC:1");
    fails(
        h.engine.send_on(&t, RailId::Tron, &mismatch, None).await,
        "QUOTE_TOKEN_MISMATCH",
    );
    assert_eq!((h.reads(), h.commits()), (reads, commits), "nothing read");
    // The EVM rail carries both.
    h.engine.require_token(EVM, Token::Usdc).unwrap();
    h.engine.require_token(EVM, Token::Usdt).unwrap();
    // A rail's balance shows the tokens it carries.
    h.engine.provision_on(&t, &a, RailId::Tron).await.unwrap();
    let bal = h.engine.balance_on(&t, &a, RailId::Tron).await.unwrap();
    assert_eq!(bal.balances.keys().collect::<Vec<_>>(), [&Token::Usdt]);
    assert_eq!(bal.of(Token::Usdc), Micros::ZERO);
    let bal = h.engine.balance_on(&t, &a, EVM).await.unwrap();
    assert_eq!(bal.balances.len(), 2);
}

#[tokio::test]
async fn the_sandbox_simulates_supported_mutations_and_stores_nothing() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let other = h.tenant("Other", "1").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    let treasury = h.engine.treasury_balance(&t, Token::Usdc).await.unwrap();
    let commits = h.commits();
    let sandbox = h.engine.sandbox();

    let p = sandbox.provision(&t, &a).await.unwrap();
    assert!(p.wallet_id.starts_with("wal_sim_"), "{}", p.wallet_id);
    assert_eq!(
        (p.outcome.as_str(), p.rail.as_str()),
        ("PROVISIONED", "polygon")
    );
    assert!(p.address.starts_with("0x"));
    assert!(!h.engine.wallet_exists(&a).await);

    let fd = sandbox.fund(&t, &h.fund_req(&a, "10")).await.unwrap();
    assert!(fd.id.starts_with("fd_sim_"), "{}", fd.id);
    assert_eq!(
        (fd.object.as_str(), fd.status.as_str()),
        ("funding", "QUEUED")
    );
    fails(
        h.engine
            .operation_of_kind(&t, &fd.id, OpKind::Funding)
            .await,
        "NOT_FOUND",
    );

    // Priced as live: 0.30% service fee.
    let send = send_req(&a, &b, Token::Usdc, "DIRECT_CRYPTO:USDC:10");
    let tr = sandbox.send(&t, &send).await.unwrap();
    assert!(tr.id.starts_with("tr_sim_"), "{}", tr.id);
    assert_eq!(tr.service_fee.as_deref(), Some("0.030000"));
    assert_eq!(tr.recipient_amount.as_deref(), Some("9.970000"));
    assert_eq!(tr.from_phone_number.as_deref(), Some("+2250700000001"));

    // A simulated quote is redeemed once; it lives in memory only.
    let xof = Currency::parse("XOF").unwrap();
    let q = sandbox
        .quote(&t, "6000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    assert!(q.quote_id.starts_with("fx_sim_"), "{}", q.quote_id);
    assert_eq!(q.expected_out, "10.000000");
    assert!(h.store.get("quote", &q.quote_id).await.unwrap().is_none());
    let with_quote = send_req(&a, &b, Token::Usdc, &q.quote_id);
    let tr = sandbox.send(&t, &with_quote).await.unwrap();
    assert_eq!(tr.quote_id.as_deref(), Some(q.quote_id.as_str()));
    assert_eq!(tr.amount, "10.000000");
    fails(sandbox.send(&t, &with_quote).await, "QUOTE_ALREADY_USED");
    // Live does not take it; another tenant's sandbox does not find it.
    fails(
        h.engine.send(&t, &with_quote, None).await,
        "INVALID_QUOTE_ID",
    );
    let q2 = sandbox
        .quote(&t, "600".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    let theirs = send_req(&a, &b, Token::Usdc, &q2.quote_id);
    fails(sandbox.send(&other, &theirs).await, "NOT_FOUND");
    sandbox.send(&t, &theirs).await.unwrap();

    // Link and phone-change requests: a challenge, no SMS.
    let c = sandbox.link_request(&t, &a).await.unwrap();
    assert!(c.challenge_id.starts_with("otp_sim_"), "{}", c.challenge_id);
    let c = sandbox.phone_change_request(&t, &a, &b).await.unwrap();
    assert_eq!(c.sent_to, "+225******0002");
    assert!(h.notifier.sent().is_empty(), "no SMS");

    assert_eq!(h.commits(), commits, "the sandbox wrote nothing");
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        treasury
    );
    for kind in stablecoin::core::domain::state::OpKind::ALL {
        assert_eq!(
            h.engine
                .list_operations(&t, kind, None, 10, 0)
                .await
                .unwrap()
                .1,
            0,
            "no {kind:?} stored"
        );
    }
}

#[tokio::test]
async fn the_sandbox_refuses_what_it_cannot_simulate_after_the_live_checks() {
    let h = harness();
    let (t, a, b) = h.funded_pair().await;
    let commits = h.commits();
    let sandbox = h.engine.sandbox();
    let withdraw = WithdrawRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("1"),
        payout_currency: "XOF".into(),
    };
    let refusals = [
        (
            sandbox.withdraw(&t, &withdraw).await.map(|_| ()),
            "a withdrawal",
        ),
        (
            sandbox.link_confirm(&t, &a, "123456").await.map(|_| ()),
            "link confirmation",
        ),
        (
            sandbox
                .phone_change_confirm(&t, &a, "123456")
                .await
                .map(|_| ()),
            "phone-change confirmation",
        ),
        (
            sandbox.provision_on(&t, &a, RailId::Tron).await.map(|_| ()),
            "tron provisioning",
        ),
        (
            sandbox
                .send_on(
                    &t,
                    RailId::Tron,
                    &send_req(&a, &b, Token::Usdt, "DIRECT_CRYPTO:USDT:1"),
                )
                .await
                .map(|_| ()),
            "a tron send",
        ),
    ];
    for (r, what) in refusals {
        let e = fails(r, "SANDBOX_UNSUPPORTED");
        assert!(e.to_string().starts_with(what), "{e}");
    }
    // Bad requests are reported as such, as live does.
    fails(
        sandbox
            .send(&t, &send_req(&a, &a, Token::Usdc, "DIRECT_CRYPTO:USDC:1"))
            .await,
        "SAME_WALLET",
    );
    fails(
        sandbox
            .send(&t, &send_req(&a, &b, Token::Usdc, "DIRECT_CRYPTO:USDT:1"))
            .await,
        "QUOTE_TOKEN_MISMATCH",
    );
    // A live quote cannot be redeemed by a simulation.
    let xof = Currency::parse("XOF").unwrap();
    let live = h
        .engine
        .quote(&t, "600".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    let commits = commits + 1;
    fails(
        sandbox
            .send(&t, &send_req(&a, &b, Token::Usdc, &live.quote_id))
            .await,
        "NOT_FOUND",
    );
    assert_eq!(h.commits(), commits, "only the live quote was written");
    // Mutations outside the engine's use cases follow the same rule.
    let key = |mode| AuthContext {
        tenant: t.clone(),
        key_id: stablecoin::core::domain::ids::ApiKeyId("key_1".into()),
        kind: KeyKind::Tenant,
        mode,
        business: None,
    };
    fails(
        key(KeyMode::Test).require_live("webhook replay"),
        "SANDBOX_UNSUPPORTED",
    );
    key(KeyMode::Live).require_live("webhook replay").unwrap();
}

#[tokio::test]
async fn a_read_of_one_kind_never_answers_another() {
    let h = harness();
    let (t, a, _) = h.funded_pair().await;
    let fd = h.engine.fund(&t, &h.fund_req(&a, "1"), None).await.unwrap();
    let op = h
        .engine
        .operation_of_kind(&t, &fd.id, OpKind::Funding)
        .await
        .unwrap();
    assert_eq!(op.id.0, fd.id);
    let e = fails(
        h.engine
            .operation_of_kind(&t, &fd.id, OpKind::Transfer)
            .await,
        "NOT_FOUND",
    );
    assert!(e.to_string().starts_with("transfer "), "{e}");
    let other = h.tenant("Other", "1").await;
    fails(
        h.engine
            .operation_of_kind(&other, &fd.id, OpKind::Funding)
            .await,
        "NOT_FOUND",
    );
    let long = format!("fd_{}", "0".repeat(100));
    let reads = h.reads();
    let e = fails(
        h.engine.operation_of_kind(&t, &long, OpKind::Funding).await,
        "NOT_FOUND",
    );
    assert_eq!(h.reads(), reads, "an impossible id is not looked up");
    assert!(e.to_string().len() < 100, "{e}");
}

/// The store the engine sees: the memory store, counting reads and commits.
struct CountingStore {
    inner: Arc<MemoryStore>,
    reads: AtomicU64,
    commits: AtomicU64,
}

impl CountingStore {
    fn read(&self) {
        self.reads.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Store for CountingStore {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.commit(batch).await
    }
    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.read();
        self.inner.get(kind, id).await
    }
    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.read();
        self.inner.get_by_unique(key).await
    }
    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        self.read();
        self.inner.list(query).await
    }
    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.read();
        self.inner.idempotency(tenant, key).await
    }
    async fn claim_due(
        &self,
        kind: &str,
        lane: u8,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        self.read();
        self.inner
            .claim_due(kind, lane, worker, now, lease_ms, limit)
            .await
    }
    async fn outbox_after(
        &self,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError> {
        self.read();
        self.inner.outbox_after(after_seq, limit).await
    }
    async fn purge(&self, purge: &stablecoin_core::ports::store::Purge) -> Result<u64, StoreError> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.purge(purge).await
    }
}
