//! Session lifecycles on the simulated EVM chain, through the engine alone: exact,
//! partial then completed, over, late, underpaid at expiry, expiry, re-delivery,
//! unsafe confirmations, hash backfill, test mode and scoping. The ledger and the
//! outbox are checked after each.

use serde_json::Value;
use stablecoin_checkout::*;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{AuthContext, Engine, EngineConfig, Ports};
use stablecoin_core::memory::*;
use stablecoin_core::ports::{ChainAddress, Ledger, Rail, Store};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

struct H {
    store: Arc<MemoryStore>,
    clock: Arc<ManualClock>,
    chain: Arc<SimRail>,
    checkout: CheckoutEngine,
    /// The wallet engine the checkout shares a kernel with (it authenticates keys).
    core: Engine,
    live: AuthContext,
    test: AuthContext,
    tenant: String,
    business: String,
}

async fn harness() -> H {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_800_000_000)));
    let signer = Arc::new(LocalSigner::from_seed([9; 32]));
    let chain = Arc::new(SimRail::new(
        SimProfile::Evm(137),
        signer.clone(),
        SimConfig {
            confirmations: 3,
            auto_mine: false,
        },
    ));
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(7)),
    };
    let core = Engine::new(
        ports,
        vec![chain.clone() as Arc<dyn Rail>],
        EngineConfig {
            poll_interval_ms: 0,
            ..Default::default()
        },
    );
    let tenant = core.create_tenant("Shop").await.unwrap().id;
    let checkout = CheckoutEngine::new(core.kernel(), CheckoutConfig::default()).unwrap();
    let b = checkout
        .create_business(&tenant, "Corner Shop")
        .await
        .unwrap();
    let live = core
        .authenticate(b.live_key.as_deref().unwrap())
        .await
        .unwrap();
    let test = core
        .authenticate(b.test_key.as_deref().unwrap())
        .await
        .unwrap();
    H {
        store,
        clock,
        chain,
        checkout,
        core,
        live,
        test,
        tenant: tenant.0,
        business: b.business.id,
    }
}

fn req(amount: &str) -> CreateSessionRequest {
    CreateSessionRequest {
        amount: amount.into(),
        currency: "USDC".into(),
        reference: Some("order-1".into()),
        expires_in_secs: Some(600),
        ..Default::default()
    }
}

fn m(s: &str) -> Micros {
    Micros::parse_decimal(s).unwrap()
}

impl H {
    async fn open(&self, amount: &str) -> SessionView {
        self.checkout
            .create_session(&self.live, &req(amount), None)
            .await
            .unwrap()
    }
    fn addr(v: &SessionView) -> ChainAddress {
        ChainAddress(v.payment_options[0].address.clone())
    }
    async fn pay(&self, v: &SessionView, amount: &str) -> String {
        self.chain
            .mint(&Self::addr(v), Token::Usdc, m(amount))
            .unwrap()
    }
    /// Mines `blocks` and runs the worker once per block.
    async fn blocks(&self, blocks: u64) {
        for _ in 0..blocks {
            self.chain.mine(1);
            let r = self.checkout.tick().await;
            assert!(r.errors.is_empty(), "{r:?}");
        }
    }
    async fn read(&self, v: &SessionView) -> SessionView {
        self.checkout
            .get_session(&self.live, &v.session_id)
            .await
            .unwrap()
    }
    async fn balance(&self, account: &str) -> i128 {
        self.store
            .balance(account)
            .await
            .map(|b| b.available())
            .unwrap_or(0)
    }
    async fn treasury(&self) -> i128 {
        self.balance(&format!("treasury:{}:USDC", self.tenant))
            .await
    }
    async fn refundable(&self) -> i128 {
        self.balance(&format!(
            "checkout_refundable:{}:{}:USDC",
            self.tenant, self.business
        ))
        .await
    }
    async fn events(&self) -> Vec<(String, Value)> {
        self.store
            .outbox_after(0, 1000)
            .await
            .unwrap()
            .into_iter()
            .map(|(_, e)| (e.event_type, e.payload))
            .collect()
    }
    async fn names(&self) -> Vec<String> {
        self.events().await.into_iter().map(|(n, _)| n).collect()
    }
}

#[tokio::test]
async fn exact_payment_is_detected_then_confirmed_then_paid_with_events_in_order() {
    let h = harness().await;
    let s = h.open("25").await;
    assert_eq!(
        (s.status.as_str(), s.amount_due.as_str()),
        ("pending", "25.000000")
    );
    assert_eq!(s.payment_options.len(), 1);
    let tx = h.pay(&s, "25").await;
    h.blocks(1).await;
    let r = h.read(&s).await;
    assert_eq!(
        (
            r.status.as_str(),
            r.amount_pending.as_str(),
            r.amount_received.as_str()
        ),
        ("pending", "25.000000", "0.000000")
    );
    assert_eq!(h.names().await, vec!["wallet.deposit.detected"]);
    assert_eq!(h.treasury().await, 0, "detected credits nothing");
    h.blocks(2).await;
    let r = h.read(&s).await;
    assert_eq!(
        (r.status.as_str(), r.amount_due.as_str()),
        ("paid", "0.000000")
    );
    assert_eq!(r.tx_hash.as_deref(), Some(tx.as_str()));
    assert_eq!(r.network.as_deref(), Some("polygon"));
    assert_eq!(r.deposits.len(), 1);
    assert_eq!(r.deposits[0].status, "credited");
    assert_eq!(h.treasury().await, 25_000_000);
    assert_eq!(
        h.balance(&format!("checkout_held:{}:USDC", s.session_id))
            .await,
        0
    );
    let events = h.events().await;
    let names: Vec<_> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "wallet.deposit.detected",
            "wallet.deposit.confirmed",
            "payment.confirmed"
        ]
    );
    let detected = &events[0].1["data"];
    let confirmed = &events[1].1["data"];
    assert!(detected["deposit_id"].is_u64());
    assert_eq!(detected["deposit_id"], confirmed["deposit_id"]);
    assert_eq!(detected["detected_at"], confirmed["detected_at"]);
    assert_eq!(confirmed["safe_to_credit"], true);
    assert_eq!(confirmed["amount"], "25.000000");
    assert_eq!(detected["customer_id"], s.session_id.as_str());
    let p = &events[2].1;
    assert_eq!(
        (p["status"].as_str(), p["amount"].as_str()),
        (Some("paid"), Some("25.000000"))
    );
    assert_eq!(p["tx_hash"], tx.as_str());
    assert!(
        p.get("metadata").is_none(),
        "empty metadata is omitted: {p}"
    );
    assert!(p["timestamp"].is_i64());
    // A rescan or a second worker changes nothing.
    h.blocks(3).await;
    assert_eq!(h.events().await.len(), 3);
    assert_eq!(h.treasury().await, 25_000_000);
}

#[tokio::test]
async fn a_partial_payment_waits_and_a_second_deposit_completes_it() {
    let h = harness().await;
    let s = h.open("25").await;
    h.pay(&s, "10").await;
    h.blocks(3).await;
    let r = h.read(&s).await;
    assert_eq!(
        (
            r.status.as_str(),
            r.amount_received.as_str(),
            r.amount_due.as_str()
        ),
        ("pending", "10.000000", "15.000000")
    );
    assert_eq!(h.treasury().await, 0, "held until paid");
    assert_eq!(
        h.balance(&format!("checkout_held:{}:USDC", s.session_id))
            .await,
        10_000_000
    );
    h.pay(&s, "15").await;
    h.blocks(3).await;
    let r = h.read(&s).await;
    assert_eq!((r.status.as_str(), r.deposits.len()), ("paid", 2));
    assert_eq!(h.treasury().await, 25_000_000);
    assert_eq!(
        h.names()
            .await
            .iter()
            .filter(|n| *n == "payment.confirmed")
            .count(),
        1
    );
}

#[tokio::test]
async fn an_over_payment_pays_and_the_excess_is_refundable_in_the_ledger() {
    let h = harness().await;
    let s = h.open("25").await;
    h.pay(&s, "30.5").await;
    h.blocks(3).await;
    let r = h.read(&s).await;
    assert_eq!(
        (
            r.status.as_str(),
            r.excess_amount.as_str(),
            r.refundable_amount.as_str()
        ),
        ("paid", "5.500000", "5.500000")
    );
    assert_eq!(r.deposits[0].applied, "25.000000");
    assert_eq!(r.deposits[0].excess, "5.500000");
    assert_eq!(h.treasury().await, 25_000_000);
    assert_eq!(h.refundable().await, 5_500_000);
    // A second payment after paid is excess too, reported by its deposit events.
    h.pay(&s, "1").await;
    h.blocks(3).await;
    assert_eq!(h.refundable().await, 6_500_000);
    assert_eq!(
        h.names()
            .await
            .iter()
            .filter(|n| *n == "wallet.deposit.confirmed")
            .count(),
        2
    );
}

#[tokio::test]
async fn expiry_with_nothing_expires_and_a_late_payment_is_recorded_and_refundable() {
    let h = harness().await;
    let s = h.open("25").await;
    h.clock.advance_ms(601_000);
    h.blocks(1).await;
    let r = h.read(&s).await;
    assert_eq!(
        (r.status.as_str(), r.failure_reason.as_deref()),
        ("expired", None)
    );
    assert!(h.names().await.is_empty(), "a plain expiry reports nothing");
    h.pay(&s, "25").await;
    h.blocks(3).await;
    let r = h.read(&s).await;
    assert_eq!(
        (
            r.status.as_str(),
            r.late,
            r.late_amount.as_str(),
            r.refundable_amount.as_str()
        ),
        ("expired", true, "25.000000", "25.000000")
    );
    assert!(r.deposits[0].late);
    assert_eq!(h.treasury().await, 0);
    assert_eq!(h.refundable().await, 25_000_000);
    assert_eq!(
        h.names().await,
        vec!["wallet.deposit.detected", "wallet.deposit.confirmed"]
    );
}

#[tokio::test]
async fn underpaid_at_expiry_fails_with_a_reason_and_the_part_becomes_refundable() {
    let h = harness().await;
    let s = h.open("25").await;
    h.pay(&s, "10").await;
    h.blocks(3).await;
    h.clock.advance_ms(601_000);
    h.blocks(1).await;
    let r = h.read(&s).await;
    assert_eq!(r.status, "failed");
    assert_eq!(
        r.failure_reason.as_deref(),
        Some("underpaid: 10.000000 of 25.000000 received")
    );
    assert_eq!(h.refundable().await, 10_000_000);
    assert_eq!(
        h.balance(&format!("checkout_held:{}:USDC", s.session_id))
            .await,
        0
    );
    let events = h.events().await;
    let (name, p) = events.last().unwrap();
    assert_eq!(name, "payment.failed");
    assert_eq!(p["status"], "failed");
    assert!(
        p.get("paid_at").is_none() && p.get("tx_hash").is_none(),
        "{p}"
    );
}

#[tokio::test]
async fn a_deposit_seen_in_time_may_confirm_after_expiry_and_still_pay() {
    let h = harness().await;
    let s = h.open("25").await;
    h.pay(&s, "25").await;
    h.blocks(1).await; // detected, in time
    h.clock.advance_ms(601_000);
    h.blocks(1).await;
    assert_eq!(
        h.read(&s).await.status,
        "pending",
        "waits for the confirmations"
    );
    h.blocks(2).await;
    let r = h.read(&s).await;
    assert_eq!((r.status.as_str(), r.late), ("paid", false));
}

#[tokio::test]
async fn a_redelivered_report_changes_nothing_and_unsafe_confirmations_credit_nothing() {
    let h = harness().await;
    let s = h.open("25").await;
    let fact = DepositFact {
        deposit_id: 4242,
        network: "polygon".into(),
        address: s.payment_options[0].address.clone(),
        token: Token::Usdc,
        amount: m("25"),
        tx_hash: None,
        confirmations: 1,
        detected_by: "scanner-polygon-1".into(),
    };
    let unsafe_ = DepositStage::Confirmed {
        safe_to_credit: false,
    };
    let safe = DepositStage::Confirmed {
        safe_to_credit: true,
    };
    let rec = |stage| h.checkout.record_deposit(&fact, stage, Mode::Live);
    assert_eq!(
        rec(DepositStage::Detected).await.unwrap(),
        DepositOutcome::RecordedPending
    );
    assert_eq!(
        rec(DepositStage::Detected).await.unwrap(),
        DepositOutcome::AlreadyRecorded
    );
    assert_eq!(rec(unsafe_).await.unwrap(), DepositOutcome::NotSafeToCredit);
    assert_eq!(rec(unsafe_).await.unwrap(), DepositOutcome::AlreadyRecorded);
    assert_eq!(h.read(&s).await.status, "pending");
    assert_eq!(
        h.treasury().await,
        0,
        "safe_to_credit=false credits nothing"
    );
    let events = h.events().await;
    let placeholder = events[0].1["data"]["tx_hash"].as_str().unwrap().to_string();
    assert!(placeholder.starts_with("pending_"), "{placeholder}");
    assert_eq!(events[0].1["data"]["hash_pending"], true);
    assert_eq!(events[1].1["data"]["safe_to_credit"], false);
    assert_eq!(rec(safe).await.unwrap(), DepositOutcome::Credited);
    assert_eq!(rec(safe).await.unwrap(), DepositOutcome::AlreadyRecorded);
    assert_eq!(h.treasury().await, 25_000_000);
    let before = h.events().await.len();
    assert_eq!(
        h.checkout
            .resolve_hash(4242, "0xreal", Mode::Live)
            .await
            .unwrap(),
        DepositOutcome::HashResolved
    );
    assert_eq!(
        h.checkout
            .resolve_hash(4242, "0xreal", Mode::Live)
            .await
            .unwrap(),
        DepositOutcome::AlreadyRecorded
    );
    let events = h.events().await;
    assert_eq!(events.len(), before + 1);
    let (name, p) = events.last().unwrap();
    assert_eq!(name, "wallet.deposit.hash_resolved");
    assert_eq!(p["data"]["tx_hash"], "0xreal");
    assert!(p["data"].get("amount").is_none());
    assert_eq!(h.read(&s).await.deposits[0].tx_hash, "0xreal");
    // A test-mode report never touches a live session.
    let other = DepositFact {
        deposit_id: 7,
        ..fact.clone()
    };
    assert_eq!(
        h.checkout
            .record_deposit(&other, safe, Mode::Test)
            .await
            .unwrap(),
        DepositOutcome::UnknownAddress
    );
}

#[tokio::test]
async fn test_sessions_are_paid_by_simulation_only_and_never_touch_the_ledger() {
    let h = harness().await;
    let t = h
        .checkout
        .create_session(&h.test, &req("12"), None)
        .await
        .unwrap();
    assert_eq!(t.mode, "test");
    // The live key does not see it, nor list it; the test key does.
    let err = h
        .checkout
        .get_session(&h.live, &t.session_id)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(
        h.checkout
            .list_sessions(&h.live, None, None, None)
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        h.checkout
            .list_sessions(&h.test, None, None, None)
            .await
            .unwrap()
            .total,
        1
    );
    // A real chain deposit to a test session's address is not scanned into it.
    h.chain.mint(&H::addr(&t), Token::Usdc, m("12")).unwrap();
    h.blocks(3).await;
    assert_eq!(
        h.checkout
            .get_session(&h.test, &t.session_id)
            .await
            .unwrap()
            .status,
        "pending"
    );
    let sim = SimulatePaymentRequest {
        confirmed: Some(false),
        ..Default::default()
    };
    let v = h
        .checkout
        .simulate_payment(&h.test, &t.session_id, &sim)
        .await
        .unwrap();
    assert_eq!(
        (v.status.as_str(), v.amount_pending.as_str()),
        ("pending", "12.000000")
    );
    let v = h
        .checkout
        .simulate_payment(&h.test, &t.session_id, &SimulatePaymentRequest::default())
        .await
        .unwrap();
    assert_eq!(v.status, "paid");
    assert_eq!(h.treasury().await, 0);
    let err = h
        .checkout
        .simulate_payment(&h.live, &t.session_id, &SimulatePaymentRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SANDBOX_ONLY");
}

#[tokio::test]
async fn create_is_idempotent_cancel_fails_and_other_businesses_see_nothing() {
    let h = harness().await;
    let a = h
        .checkout
        .create_session(&h.live, &req("5"), Some("k1"))
        .await
        .unwrap();
    let b = h
        .checkout
        .create_session(&h.live, &req("5"), Some("k1"))
        .await
        .unwrap();
    assert_eq!(a, b);
    let err = h
        .checkout
        .create_session(&h.live, &req("6"), Some("k1"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "IDEMPOTENCY_KEY_REUSED");
    let c = h
        .checkout
        .create_session(&h.live, &req("5"), Some("k2"))
        .await
        .unwrap();
    assert_ne!(a.session_id, c.session_id);
    assert_ne!(
        a.payment_options[0].address, c.payment_options[0].address,
        "never reused"
    );
    let x = h
        .checkout
        .cancel_session(&h.live, &a.session_id)
        .await
        .unwrap();
    assert_eq!(
        (x.status.as_str(), x.failure_reason.as_deref()),
        ("failed", Some("cancelled"))
    );
    let err = h
        .checkout
        .cancel_session(&h.live, &a.session_id)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_STATE");
    // Another business of the same tenant sees none of it.
    let core_tenant = stablecoin_core::domain::ids::TenantId(h.tenant.clone());
    // A name longer than 100 characters as sent is refused, whitespace around it too.
    let long = format!("\u{c}{}", "*".repeat(100));
    let err = h
        .checkout
        .create_business(&core_tenant, &long)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_PARAMETER");
    let other = h
        .checkout
        .create_business(&core_tenant, "Other")
        .await
        .unwrap();
    let other_key = h
        .core
        .authenticate(other.live_key.as_deref().unwrap())
        .await
        .unwrap();
    let err = h
        .checkout
        .get_session(&other_key, &c.session_id)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(
        h.checkout
            .list_sessions(&other_key, None, None, None)
            .await
            .unwrap()
            .total,
        0
    );
    let list = h
        .checkout
        .list_sessions(&h.live, Some("pending"), None, None)
        .await
        .unwrap();
    assert_eq!(
        (list.total, list.payments[0].session_id.as_str()),
        (1, c.session_id.as_str())
    );
    assert_eq!(
        h.checkout
            .list_sessions(&h.live, Some("failed"), None, None)
            .await
            .unwrap()
            .total,
        1
    );
    for (status, limit, page) in [
        (Some("PAID"), None, None),
        (None, Some(0), None),
        (None, Some(101), None),
        (None, None, Some(0)),
    ] {
        let e = h
            .checkout
            .list_sessions(&h.live, status, limit, page)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_PARAMETER");
    }
}

#[tokio::test]
async fn credited_deposits_are_swept_to_the_treasury_address_once() {
    let h = harness().await;
    let treasury = h
        .chain
        .address_for(&stablecoin_core::ports::KeyPurpose::Treasury)
        .await
        .unwrap();
    let before = h.chain.balance(&treasury, Token::Usdc).await.unwrap();
    let s = h.open("25").await;
    h.pay(&s, "30").await;
    h.blocks(3).await;
    assert_eq!(h.read(&s).await.status, "paid");
    // The custody step: submitted, mined, polled (every 2 s) until confirmed at depth.
    for _ in 0..8 {
        h.clock.advance_ms(2_500);
        h.blocks(1).await;
    }
    let session_addr = H::addr(&s);
    assert_eq!(
        h.chain.balance(&session_addr, Token::Usdc).await.unwrap(),
        Micros::ZERO,
        "the session address is emptied"
    );
    assert_eq!(
        h.chain.balance(&treasury, Token::Usdc).await.unwrap().get() - before.get(),
        30_000_000,
        "the whole deposit, excess included, is on the treasury's address"
    );
    let (sweeps, total) = h
        .store
        .list(&stablecoin_core::ports::ListQuery {
            kind: "checkout_sweep".into(),
            tenant: h.tenant.clone(),
            subkind: Some(s.session_id.clone()),
            status: Some("SETTLED".into()),
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!((total, sweeps.len()), (1, 1));
    // Nothing more is sent however long the worker runs; the ledger did not move.
    let submits = h.chain.submit_count();
    h.blocks(5).await;
    assert_eq!(h.chain.submit_count(), submits);
    assert_eq!(h.treasury().await, 25_000_000);
    assert_eq!(h.refundable().await, 5_000_000);
}
