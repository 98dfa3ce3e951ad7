//! End-to-end engine tests on in-memory adapters and the simulated EVM rail: every step
//! checks the ledger and the chain.

use stablecoin::core::domain::fees::TenantPricing;
use stablecoin::core::domain::fx::{Quote, QuoteView};
use stablecoin::core::domain::ids::{TenantId, WalletId};
use stablecoin::core::domain::money::{Currency, Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{
    DepositRecord, DepositStatus, Engine, EngineConfig, FundRequest, OperationView, Ports,
    SendRequest, accounts,
};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin::core::ports::{
    Batch, ChainAddress, CommitReceipt, IdempotencyRecord, KeyPurpose, Ledger, ListQuery,
    OutboxEvent, Put, Rail, RailId, Record, SmsKind, Store, StoreError, StoredRecord,
};
use stablecoin::rails::sim::{Fault, SimConfig, SimProfile, SimRail};
use std::sync::Arc;

struct H {
    engine: Engine,
    store: Arc<MemoryStore>,
    sim: Arc<SimRail>,
    /// The simulated TRON rail beside it (wallets get TRON addresses on demand).
    tron: Arc<SimRail>,
    notifier: Arc<MemoryNotifier>,
    clock: Arc<ManualClock>,
    payouts: Arc<MemoryPayouts>,
}

fn m(s: &str) -> Micros {
    Micros::parse_decimal(s).unwrap()
}

fn phone(s: &str) -> Phone {
    Phone::parse(s).unwrap()
}

fn harness() -> H {
    harness_wrapping(|sim| sim)
}

/// The harness with the EVM rail the engine sees wrapped (the test keeps the bare one).
fn harness_wrapping(wrap: impl FnOnce(Arc<SimRail>) -> Arc<dyn Rail>) -> H {
    harness_with(wrap, |store| store)
}

/// The harness with the rail and the store the engine sees wrapped (the test keeps the
/// bare memory store; the ledger port stays on it).
fn harness_with(
    wrap: impl FnOnce(Arc<SimRail>) -> Arc<dyn Rail>,
    wrap_store: impl FnOnce(Arc<MemoryStore>) -> Arc<dyn Store>,
) -> H {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([9; 32]));
    let sim = Arc::new(SimRail::new(
        SimProfile::Evm(137),
        signer.clone(),
        SimConfig::for_profile(SimProfile::Evm(137)),
    ));
    let notifier = Arc::new(MemoryNotifier::new());
    let payouts = Arc::new(MemoryPayouts::new());
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let ports = Ports {
        store: wrap_store(store.clone()),
        ledger: store.clone(),
        signer,
        notifier: notifier.clone(),
        rates: Arc::new(FixedRates::demo()),
        payouts: payouts.clone(),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(42)),
    };
    let config = EngineConfig {
        poll_interval_ms: 0,
        unknown_grace_ms: 0,
        ..Default::default()
    };
    let tron = Arc::new(SimRail::new(
        SimProfile::Tron,
        ports.signer.clone(),
        SimConfig::for_profile(SimProfile::Tron),
    ));
    let engine = Engine::new(ports, vec![wrap(sim.clone()), tron.clone()], config);
    H {
        engine,
        store,
        sim,
        tron,
        notifier,
        clock,
        payouts,
    }
}

impl H {
    /// A tenant whose treasury holds `amount` USDC, backed on chain by the service treasury.
    async fn tenant(&self, name: &str, amount: &str) -> TenantId {
        let t = self.engine.create_tenant(name).await.unwrap();
        let treasury = self.sim.address_for(&KeyPurpose::Treasury).await.unwrap();
        self.sim.mint(&treasury, Token::Usdc, m(amount)).unwrap();
        self.sim.mine(1);
        self.engine
            .credit_treasury(&t.id, Token::Usdc, m(amount), &format!("wire-{name}"))
            .await
            .unwrap();
        t.id
    }

    /// Funds `p`'s wallet with `amount` USDC from the tenant's treasury (queued, not settled).
    async fn fund_usdc(&self, t: &TenantId, p: &Phone, amount: &str) -> OperationView {
        let req = FundRequest {
            phone_number: p.clone(),
            token: Token::Usdc,
            amount: m(amount),
        };
        self.engine.fund(t, &req, None).await.unwrap()
    }

    async fn chain_balance(&self, p: &Phone) -> Micros {
        let w = self.engine.provision_lookup(p).await;
        self.sim.balance(&w, Token::Usdc).await.unwrap()
    }

    /// The stored wallet record of a phone.
    async fn wallet(&self, p: &Phone) -> stablecoin::core::ports::StoredRecord {
        self.store
            .get_by_unique(&format!("wallet_phone:{p}"))
            .await
            .unwrap()
            .expect("wallet")
    }

    /// Tenant "Acme", two provisioned phones (the first funded with 100 USDC, settled) and
    /// an FX quote of 6000 XOF for USDC (10 USDC at the demo rate).
    async fn quote_for_a_funded_pair(&self) -> (TenantId, Phone, Phone, QuoteView) {
        let t = self.tenant("Acme", "1000").await;
        let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
        self.engine.provision(&t, &a).await.unwrap();
        self.engine.provision(&t, &b).await.unwrap();
        self.fund_usdc(&t, &a, "100").await;
        self.settle().await;
        let q = self
            .engine
            .quote(
                &t,
                "6000".parse().unwrap(),
                Currency::parse("XOF").unwrap(),
                Token::Usdc,
            )
            .await
            .unwrap();
        (t, a, b, q)
    }

    async fn ledger_available(&self, account: &str) -> i128 {
        self.store
            .balance(account)
            .await
            .map(|b| b.available())
            .unwrap_or(0)
    }

    async fn settle(&self) {
        let r = self.engine.settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
    }

    async fn assert_conserved(&self) {
        assert_eq!(
            self.store.posted_sum().await.unwrap(),
            0,
            "double entry broken"
        );
    }
}

/// Looks a wallet's chain address up by phone (test helper over the engine's records).
trait Lookup {
    async fn provision_lookup(&self, p: &Phone) -> ChainAddress;
}

impl Lookup for Engine {
    async fn provision_lookup(&self, p: &Phone) -> ChainAddress {
        let store = &self.ports().store;
        let rec = store
            .get_by_unique(&format!("wallet_phone:{p}"))
            .await
            .unwrap()
            .expect("wallet");
        ChainAddress(
            rec.body.to_value().unwrap()["addresses"]["polygon"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    }
}

#[tokio::test]
async fn full_customer_journey() {
    let h = harness();
    let acme = h.tenant("Acme", "1000").await;
    let beta = h.tenant("Beta", "500").await;
    h.engine
        .set_pricing(
            &acme,
            TenantPricing::Percentage {
                fee_bps: 100,
                fee_cap_micros: 0,
            },
            Some(ChainAddress(
                "0x00000000000000000000000000000000000000aa".into(),
            )),
        )
        .await
        .unwrap();
    let alice = phone("+2250700000001");
    let bob = phone("+2340800000002");
    let carol = phone("+254700000003");

    // Provision: offline, outcomes per tenant.
    let p = h.engine.provision(&acme, &alice).await.unwrap();
    assert_eq!(p.outcome, "PROVISIONED");
    assert!(p.address.starts_with("0x"));
    assert_eq!(
        h.engine.provision(&acme, &alice).await.unwrap().outcome,
        "ALREADY_EXISTS"
    );
    let lr = h.engine.provision(&beta, &alice).await.unwrap();
    assert_eq!(lr.outcome, "LINK_REQUIRED");
    assert_eq!(lr.address, p.address, "same address, no rights");
    assert_eq!(
        h.engine.provision(&beta, &bob).await.unwrap().outcome,
        "PROVISIONED"
    );
    assert_eq!(h.sim.submit_count(), 0, "provisioning is offline");

    // Fund alice from Acme's treasury.
    let op = h
        .engine
        .fund(
            &acme,
            &FundRequest {
                phone_number: alice.clone(),
                token: Token::Usdc,
                amount: m("100"),
            },
            Some("fund-1"),
        )
        .await
        .unwrap();
    assert_eq!(op.status, "QUEUED");
    assert!(op.id.starts_with("fd_"));
    assert_eq!(
        h.engine.treasury_balance(&acme, Token::Usdc).await.unwrap(),
        m("900"),
        "held at once"
    );
    h.settle().await;
    let op = h.engine.operation(&acme, &op.id).await.unwrap();
    assert_eq!(op.status.as_str(), "SETTLED");
    assert!(op.tx_hash.is_some());
    assert_eq!(h.chain_balance(&alice).await, m("100"));
    let alice_w = h
        .engine
        .wallet(op.to_wallet.as_ref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        h.ledger_available(&accounts::wallet(&alice_w.id, Token::Usdc).id)
            .await,
        100_000_000
    );
    assert_eq!(
        h.engine.balance(&acme, &alice).await.unwrap().balance_usdc,
        "100.000000"
    );
    h.assert_conserved().await;

    // Cross-tenant transfer alice (Acme) -> bob (Beta): 0.30% service + 1% Acme fee.
    let sent = h
        .engine
        .send(
            &acme,
            &SendRequest {
                from_phone_number: alice.clone(),
                to_phone_number: bob.clone(),
                token: Token::Usdc,
                quote_id: "DIRECT_CRYPTO:USDC:50".into(),
            },
            Some("send-1"),
        )
        .await
        .unwrap();
    assert_eq!(sent.service_fee.as_deref(), Some("0.150000"));
    assert_eq!(sent.tenant_fee.as_deref(), Some("0.500000"));
    assert_eq!(sent.recipient_amount.as_deref(), Some("49.350000"));
    h.settle().await;
    assert_eq!(
        h.engine
            .operation(&acme, &sent.id)
            .await
            .unwrap()
            .status
            .as_str(),
        "SETTLED"
    );
    assert_eq!(
        h.chain_balance(&alice).await,
        m("50"),
        "sender debited exactly the amount"
    );
    assert_eq!(h.chain_balance(&bob).await, m("49.35"));
    let fee_addr = ChainAddress("0x00000000000000000000000000000000000000aa".into());
    assert_eq!(
        h.sim.balance(&fee_addr, Token::Usdc).await.unwrap(),
        m("0.5")
    );
    let svc_addr = h.sim.address_for(&KeyPurpose::ServiceFees).await.unwrap();
    assert_eq!(
        h.sim.balance(&svc_addr, Token::Usdc).await.unwrap(),
        m("0.15")
    );
    assert_eq!(
        h.ledger_available(&accounts::service_fees(Token::Usdc).id)
            .await,
        150_000
    );
    assert_eq!(
        h.ledger_available(&accounts::tenant_fees(&acme, Token::Usdc).id)
            .await,
        500_000
    );
    // Beta receives transfer.received for bob; Acme transfer.settled.
    let events = h.store.outbox_after(0, 100).await.unwrap();
    assert!(
        events
            .iter()
            .any(|(_, e)| e.event_type == "transfer.received" && e.tenant == beta.0)
    );
    assert!(
        events
            .iter()
            .any(|(_, e)| e.event_type == "transfer.settled" && e.tenant == acme.0)
    );
    h.assert_conserved().await;

    // Send to a phone never provisioned: wallet on the fly, SMS once paid, no webhook.
    let before = h.store.outbox_len();
    let s2 = h
        .engine
        .send(
            &acme,
            &SendRequest {
                from_phone_number: alice.clone(),
                to_phone_number: carol.clone(),
                token: Token::Usdc,
                quote_id: "DIRECT_CRYPTO:USDC:10".into(),
            },
            None,
        )
        .await
        .unwrap();
    h.settle().await;
    assert_eq!(
        h.engine
            .operation(&acme, &s2.id)
            .await
            .unwrap()
            .status
            .as_str(),
        "SETTLED"
    );
    assert_eq!(h.chain_balance(&carol).await, m("9.870000"));
    assert!(
        h.notifier.last_to(&carol, SmsKind::MoneyReceived).is_some(),
        "recipient told by SMS"
    );
    let new_events = h.store.outbox_after(0, 100).await.unwrap();
    assert!(
        !new_events[before..]
            .iter()
            .any(|(_, e)| e.event_type == "transfer.received"),
        "no transfer.received for an unaffiliated wallet"
    );
    // The first tenant to provision carol adopts her wallet.
    assert_eq!(
        h.engine.provision(&beta, &carol).await.unwrap().outcome,
        "ADOPTED"
    );

    // Beta links alice with the code sent to alice's phone.
    let ch = h.engine.link_request(&beta, &alice).await.unwrap();
    assert!(ch.challenge_id.starts_with("otp_"));
    let code = h.notifier.last_code_to(&alice).unwrap();
    let wrong = if code == "000000" { "111111" } else { "000000" };
    assert_eq!(
        h.engine
            .link_confirm(&beta, &alice, wrong)
            .await
            .unwrap_err()
            .code(),
        "CODE_INVALID"
    );
    h.engine.link_confirm(&beta, &alice, &code).await.unwrap();
    assert_eq!(
        h.engine.provision(&beta, &alice).await.unwrap().outcome,
        "ALREADY_EXISTS"
    );
    let events = h.store.outbox_after(0, 1000).await.unwrap();
    assert!(
        events
            .iter()
            .any(|(_, e)| e.event_type == "user.linked" && e.tenant == acme.0)
    );
    assert!(h.engine.balance(&beta, &alice).await.is_ok());

    // Phone change: code to the NEW number; address, balance and history kept.
    let alice2 = phone("+2250700000099");
    h.engine
        .phone_change_request(&acme, &alice, &alice2)
        .await
        .unwrap();
    assert!(
        h.notifier.last_code_to(&alice).unwrap() == code,
        "no code to the old number"
    );
    let code2 = h.notifier.last_code_to(&alice2).unwrap();
    let changed = h
        .engine
        .phone_change_confirm(&acme, &alice, &code2)
        .await
        .unwrap();
    assert_eq!(changed.address, p.address);
    assert_eq!(
        h.engine.balance(&acme, &alice2).await.unwrap().balance_usdc,
        "40.000000"
    );
    assert_eq!(
        h.engine.balance(&acme, &alice).await.unwrap_err().code(),
        "NOT_FOUND"
    );
    let events = h.store.outbox_after(0, 1000).await.unwrap();
    let changed_to: Vec<_> = events
        .iter()
        .filter(|(_, e)| e.event_type == "user.phone_changed")
        .map(|(_, e)| e.tenant.clone())
        .collect();
    assert!(
        changed_to.contains(&acme.0) && changed_to.contains(&beta.0),
        "every member told"
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn fx_quote_drives_a_transfer_once() {
    let h = harness();
    let (t, a, b, q) = h.quote_for_a_funded_pair().await;
    assert_eq!(q.currency_pair, "XOF_USDC");
    assert_eq!(q.expected_out, "10.000000");
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: q.quote_id.clone(),
    };
    let s = h.engine.send(&t, &req, None).await.unwrap();
    assert_eq!(s.amount, "10.000000");
    assert_eq!(
        h.engine.send(&t, &req, None).await.unwrap_err().code(),
        "QUOTE_ALREADY_USED"
    );
    let q2 = h
        .engine
        .quote(
            &t,
            "600".parse().unwrap(),
            Currency::parse("XOF").unwrap(),
            Token::Usdc,
        )
        .await
        .unwrap();
    h.clock.advance_ms(60_000);
    let commits = h.store.commit_count();
    assert_eq!(
        h.engine.send(&t, &req, None).await.unwrap_err().code(),
        "QUOTE_ALREADY_USED"
    );
    let req2 = SendRequest {
        quote_id: q2.quote_id,
        ..req.clone()
    };
    assert_eq!(
        h.engine.send(&t, &req2, None).await.unwrap_err().code(),
        "QUOTE_EXPIRED"
    );
    // USDT send with a USDC quote is refused.
    let req3 = SendRequest {
        token: Token::Usdt,
        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
        ..req
    };
    assert_eq!(
        h.engine.send(&t, &req3, None).await.unwrap_err().code(),
        "QUOTE_TOKEN_MISMATCH"
    );
    assert_eq!(
        h.store.commit_count(),
        commits,
        "refused quotes write nothing"
    );
}

/// A store through which "another send" consumes a quote between a send's read of it and
/// its commit: on the first batch that updates a quote, the quote is first re-put (its
/// version moves), then the batch goes on to the store and loses the race.
struct QuoteRace {
    inner: Arc<MemoryStore>,
    raced: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Store for QuoteRace {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        let quote = batch
            .puts
            .iter()
            .find(|p| p.record.kind == Quote::KIND && p.expected_version.is_some());
        if let Some(put) = quote
            && !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let current = self.inner.get(Quote::KIND, &put.record.id).await?.unwrap();
            let version = current.version;
            self.inner
                .commit(Batch {
                    puts: vec![Put {
                        record: current,
                        expected_version: Some(version),
                    }],
                    ..Default::default()
                })
                .await?;
        }
        self.inner.commit(batch).await
    }
    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.inner.get(kind, id).await
    }
    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.inner.get_by_unique(key).await
    }
    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        self.inner.list(query).await
    }
    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.inner.idempotency(tenant, key).await
    }
    async fn claim_due(
        &self,
        kind: &str,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        self.inner
            .claim_due(kind, worker, now, lease_ms, limit)
            .await
    }
    async fn outbox_after(
        &self,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError> {
        self.inner.outbox_after(after_seq, limit).await
    }
}

/// A send that loses the race for its FX quote (another change to the quote lands
/// between the read and the commit) answers QUOTE_ALREADY_USED, not a generic CONFLICT,
/// and writes nothing: no operation, no hold.
#[tokio::test]
async fn a_send_that_loses_the_race_for_its_quote_is_quote_already_used() {
    let h = harness_with(
        |sim| sim,
        |inner| {
            Arc::new(QuoteRace {
                inner,
                raced: false.into(),
            })
        },
    );
    let (t, a, b, q) = h.quote_for_a_funded_pair().await;
    let sender = accounts::wallet(&WalletId(h.wallet(&a).await.id), Token::Usdc);
    let before = h.ledger_available(&sender.id).await;
    assert!(before > 0);
    let commits = h.store.commit_count();
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: q.quote_id.clone(),
    };
    let err = h.engine.send(&t, &req, None).await.unwrap_err();
    assert_eq!(err.code(), "QUOTE_ALREADY_USED", "{err:?}");
    // The racing re-put is the only commit that landed.
    assert_eq!(h.store.commit_count(), commits + 1);
    assert_eq!(
        h.ledger_available(&sender.id).await,
        before,
        "no hold was placed"
    );
}

#[tokio::test]
async fn failed_funding_returns_value_to_the_tenant() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.sim.inject(Fault::Revert);
    let op = h.fund_usdc(&t, &a, "60").await;
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("40")
    );
    h.settle().await;
    let op = h.engine.operation(&t, &op.id).await.unwrap();
    assert_eq!(op.status.as_str(), "FAILED");
    assert!(op.error_reason.is_some());
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("100"),
        "value back"
    );
    assert_eq!(h.chain_balance(&a).await, Micros::ZERO);
    // Rejected at submit fails too, before broadcast.
    h.sim.inject(Fault::Reject);
    let op = h.fund_usdc(&t, &a, "10").await;
    h.settle().await;
    assert_eq!(
        h.engine
            .operation(&t, &op.id)
            .await
            .unwrap()
            .status
            .as_str(),
        "FAILED"
    );
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("100")
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn unknown_submissions_are_reconciled_without_double_payment() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    h.engine.provision(&t, &a).await.unwrap();
    h.engine.provision(&t, &b).await.unwrap();
    h.fund_usdc(&t, &a, "50").await;
    h.settle().await;
    let submits = h.sim.submit_count();

    // The response is lost but the payment landed: reconciled to SETTLED, paid once.
    h.sim.inject(Fault::LostResponse);
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:20".into(),
    };
    let s = h.engine.send(&t, &req, None).await.unwrap();
    let r = h.engine.tick().await;
    assert_eq!(r.unknown, 1);
    assert_eq!(
        h.engine.operation(&t, &s.id).await.unwrap().status.as_str(),
        "SUBMISSION_UNKNOWN"
    );
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &s.id).await.unwrap().status.as_str(),
        "SETTLED"
    );
    assert_eq!(h.sim.submit_count(), submits + 1, "never resubmitted");
    assert_eq!(h.chain_balance(&a).await, m("30"));

    // Dropped: never reached the network -> FAILED, hold released, nothing moved.
    h.sim.inject(Fault::Drop);
    let s = h
        .engine
        .send(
            &t,
            &SendRequest {
                quote_id: "DIRECT_CRYPTO:USDC:5".into(),
                ..req.clone()
            },
            None,
        )
        .await
        .unwrap();
    h.settle().await;
    let op = h.engine.operation(&t, &s.id).await.unwrap();
    assert_eq!(op.status.as_str(), "FAILED");
    assert_eq!(h.chain_balance(&a).await, m("30"));
    let aw = op.from_wallet.unwrap();
    assert_eq!(
        h.ledger_available(&accounts::wallet(&aw, Token::Usdc).id)
            .await,
        30_000_000
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn non_members_cannot_move_money_out() {
    let h = harness();
    let acme = h.tenant("Acme", "100").await;
    let beta = h.tenant("Beta", "100").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    h.engine.provision(&acme, &a).await.unwrap();
    // Money-in is open: Beta may fund Acme's customer.
    h.fund_usdc(&beta, &a, "10").await;
    h.settle().await;
    assert_eq!(h.chain_balance(&a).await, m("10"));
    let commits = h.store.commit_count();
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
    };
    assert_eq!(
        h.engine.send(&beta, &req, None).await.unwrap_err().code(),
        "NOT_A_MEMBER"
    );
    assert_eq!(
        h.engine
            .phone_change_request(&beta, &a, &b)
            .await
            .unwrap_err()
            .code(),
        "NOT_A_MEMBER"
    );
    assert_eq!(
        h.engine.balance(&beta, &a).await.unwrap_err().code(),
        "NOT_A_MEMBER"
    );
    assert_eq!(h.store.commit_count(), commits, "nothing written");
    assert!(
        !h.engine.wallet_exists(&b).await,
        "no recipient wallet created"
    );
}

#[tokio::test]
async fn replayed_idempotency_key_moves_money_once() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let req = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("30"),
    };
    let first = h.engine.fund(&t, &req, Some("k-1")).await.unwrap();
    let again = h.engine.fund(&t, &req, Some("k-1")).await.unwrap();
    assert_eq!(first, again, "replay returns the first result");
    let other = FundRequest {
        amount: m("31"),
        ..req.clone()
    };
    assert_eq!(
        h.engine
            .fund(&t, &other, Some("k-1"))
            .await
            .unwrap_err()
            .code(),
        "IDEMPOTENCY_KEY_REUSED"
    );
    // Concurrent duplicates: exactly one executes.
    let (x, y) = tokio::join!(
        h.engine.fund(&t, &req, Some("k-2")),
        h.engine.fund(&t, &req, Some("k-2"))
    );
    assert_eq!(x.unwrap().id, y.unwrap().id);
    h.settle().await;
    assert_eq!(h.chain_balance(&a).await, m("60"));
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("40")
    );
    let funding = stablecoin::core::domain::state::OpKind::Funding;
    let (ops, total) = h
        .engine
        .list_operations(&t, funding, None, 10, 0)
        .await
        .unwrap();
    assert_eq!((ops.len(), total), (2, 2));
    h.assert_conserved().await;
}

#[tokio::test]
async fn bad_input_is_typed_and_writes_nothing() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let commits = h.store.commit_count();
    assert_eq!(
        Phone::parse("0700000001").unwrap_err().code(),
        "INVALID_PHONE"
    );
    assert_eq!(
        Micros::parse_positive("-1").unwrap_err().code(),
        "INVALID_AMOUNT"
    );
    assert_eq!(
        Micros::parse_positive("1.0000001").unwrap_err().code(),
        "INVALID_AMOUNT"
    );
    assert_eq!("DAI".parse::<Token>().unwrap_err().code(), "UNKNOWN_TOKEN");
    let fund0 = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: Micros::ZERO,
    };
    assert_eq!(
        h.engine.fund(&t, &fund0, None).await.unwrap_err().code(),
        "INVALID_AMOUNT"
    );
    let too_much = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("1000"),
    };
    assert_eq!(
        h.engine.fund(&t, &too_much, None).await.unwrap_err().code(),
        "INSUFFICIENT_FUNDS"
    );
    let b = phone("+2250700000002");
    for (quote, code) in [
        ("DIRECT_CRYPTO:USDC:-1", "INVALID_QUOTE_ID"),
        ("DIRECT_CRYPTO:SOL:1", "INVALID_QUOTE_ID"),
        ("fx_nope", "INVALID_QUOTE_ID"),
        ("DIRECT_CRYPTO:USDC:1000", "INSUFFICIENT_FUNDS"),
    ] {
        let req = SendRequest {
            from_phone_number: a.clone(),
            to_phone_number: b.clone(),
            token: Token::Usdc,
            quote_id: quote.into(),
        };
        assert_eq!(
            h.engine
                .send(&t, &req, Some("bad"))
                .await
                .unwrap_err()
                .code(),
            code,
            "{quote}"
        );
    }
    assert_eq!(
        h.engine
            .link_confirm(&t, &a, "123456")
            .await
            .unwrap_err()
            .code(),
        "ALREADY_A_MEMBER"
    );
    assert_eq!(
        h.store.commit_count(),
        commits,
        "nothing written by bad input"
    );
    assert!(!h.engine.wallet_exists(&b).await);

    // Expired and exhausted codes.
    let other = h.tenant("Other", "1").await;
    h.engine.link_request(&other, &a).await.unwrap();
    h.clock.advance_ms(10 * 60 * 1000);
    let code = h.notifier.last_code_to(&a).unwrap();
    assert_eq!(
        h.engine
            .link_confirm(&other, &a, &code)
            .await
            .unwrap_err()
            .code(),
        "CODE_EXPIRED"
    );
    h.engine.link_request(&other, &a).await.unwrap();
    let code = h.notifier.last_code_to(&a).unwrap();
    let wrong = if code == "999999" { "999998" } else { "999999" };
    for _ in 0..4 {
        assert_eq!(
            h.engine
                .link_confirm(&other, &a, wrong)
                .await
                .unwrap_err()
                .code(),
            "CODE_INVALID"
        );
    }
    assert_eq!(
        h.engine
            .link_confirm(&other, &a, wrong)
            .await
            .unwrap_err()
            .code(),
        "TOO_MANY_ATTEMPTS"
    );
    assert_eq!(
        h.engine
            .link_confirm(&other, &a, &code)
            .await
            .unwrap_err()
            .code(),
        "TOO_MANY_ATTEMPTS"
    );
}

#[tokio::test]
async fn external_deposit_is_credited_once() {
    let h = harness();
    let t = h.tenant("Acme", "1").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let addr = h.engine.provision_lookup(&a).await;
    let tx = h.sim.mint(&addr, Token::Usdt, m("7.5")).unwrap();
    let w = h.wallet(&a).await;
    let acct = format!("wallet:{}:USDT", w.id);
    // First seen below the depth (3 on Polygon): recorded DETECTED, nothing credited.
    let r = h.engine.tick().await;
    assert_eq!((r.polled, r.deposits), (1, 0), "{r:?}");
    let deposit = |id: String| {
        let store = h.store.clone();
        async move {
            let rec = store.get("deposit", &id).await.unwrap().unwrap();
            DepositRecord::from_stored(&rec).unwrap()
        }
    };
    let id = format!("polygon:{tx}:0");
    let d = deposit(id.clone()).await;
    assert_eq!(d.status, DepositStatus::Detected);
    assert_eq!(
        (d.amount, d.token, d.address.as_str()),
        (m("7.5"), Token::Usdt, addr.0.as_str())
    );
    assert_eq!(h.ledger_available(&acct).await, 0);
    h.settle().await;
    h.settle().await;
    let d = deposit(id).await;
    assert_eq!(d.status, DepositStatus::Confirmed);
    assert!(d.confirmations >= 3 && d.confirmed_at.is_some() && d.detected_at.is_some());
    assert_eq!(h.ledger_available(&acct).await, 7_500_000);
    let events = h.store.outbox_after(0, 100).await.unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|(_, e)| e.event_type == "transfer.received")
            .count(),
        1
    );
    assert_eq!(
        h.engine.balance(&t, &a).await.unwrap().balance_usdt,
        "7.500000"
    );
    let _ = RailId::Evm(137);
}

/// Each rail's scanner stands alone: with the TRON RPC down, EVM deposits are still
/// credited (and the outage is reported); once TRON is back, its deposit is too, into
/// the wallet's own TRON account.
#[tokio::test]
async fn one_rails_outage_does_not_stop_another_rails_deposits() {
    let h = harness();
    let t = h.tenant("Acme", "1").await;
    let a = phone("+2250700000001");
    let view = h.engine.provision_on(&t, &a, RailId::Tron).await.unwrap();
    let tron_addr = ChainAddress(view.address.clone());
    let evm_addr = h.engine.provision_lookup(&a).await;
    h.tron.set_rpc_down(true);
    h.sim.mint(&evm_addr, Token::Usdt, m("2")).unwrap();
    let r = h.engine.settle_all(20).await;
    assert!(
        r.errors.iter().any(|e| e.starts_with("scan tron:")),
        "{:?}",
        r.errors
    );
    let w = h.wallet(&a).await;
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:USDT", w.id)).await,
        2_000_000
    );
    h.tron.set_rpc_down(false);
    h.tron.mint(&tron_addr, Token::Usdt, m("3")).unwrap();
    h.settle().await;
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:tron:USDT", w.id))
            .await,
        3_000_000
    );
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:USDT", w.id)).await,
        2_000_000,
        "the EVM balance is untouched"
    );
}

#[tokio::test]
async fn withdrawals_complete_refund_and_reconcile() {
    use stablecoin::core::engine::WithdrawRequest;
    use stablecoin::core::memory::PayoutFault;
    let h = harness();
    let t = h.tenant("Acme", "1000").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.fund_usdc(&t, &a, "300").await;
    h.settle().await;
    let wreq = |amount: &str| WithdrawRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m(amount),
        payout_currency: "XOF".into(),
    };

    // Delivered: crypto swept, payout evidence recorded, COMPLETED.
    let w = h
        .engine
        .withdraw(&t, &wreq("100"), Some("wd-1"))
        .await
        .unwrap();
    assert_eq!(w.status, "PENDING");
    assert_eq!(w.payout_amount.as_deref(), Some("60000"));
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "PAYOUT_SUBMITTING"
    );
    h.payouts.settle_all();
    h.settle().await;
    let op = h.engine.operation(&t, &w.id).await.unwrap();
    assert_eq!(op.status.as_str(), "COMPLETED");
    assert!(
        op.view().payout_reference.is_some(),
        "COMPLETED needs evidence"
    );
    assert_eq!(h.chain_balance(&a).await, m("200"));

    // The provider refuses: the tokens go back on chain, REFUNDED.
    h.payouts.inject(PayoutFault::Reject);
    let w = h.engine.withdraw(&t, &wreq("50"), None).await.unwrap();
    h.settle().await;
    let op = h.engine.operation(&t, &w.id).await.unwrap();
    assert_eq!(op.status.as_str(), "REFUNDED");
    assert!(op.view().refund_tx_hash.is_some());
    assert!(op.error_reason.is_some());
    assert_eq!(
        h.chain_balance(&a).await,
        m("200"),
        "refunded to the wallet"
    );

    // The payout answer is lost: PAYOUT_UNKNOWN, reconciled by asking, paid once.
    let before = h.payouts.submit_count();
    h.payouts.inject(PayoutFault::LostResponse);
    let w = h.engine.withdraw(&t, &wreq("20"), None).await.unwrap();
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "PAYOUT_UNKNOWN"
    );
    h.payouts.settle_all();
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "COMPLETED"
    );
    assert_eq!(h.payouts.submit_count(), before + 1, "never paid twice");

    // Dropped before the provider: PAYOUT_UNKNOWN -> provider has no record -> REFUNDED.
    h.payouts.inject(PayoutFault::Drop);
    let w = h.engine.withdraw(&t, &wreq("10"), None).await.unwrap();
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "REFUNDED"
    );
    assert_eq!(h.chain_balance(&a).await, m("180"));

    // Wallet ledger agrees with the chain; money conserved.
    let w = h.wallet(&a).await;
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:USDC", w.id)).await,
        180_000_000
    );
    h.assert_conserved().await;

    // Member only; bad currency and zero amount refused without writes.
    let beta = h.tenant("Beta", "1").await;
    let commits = h.store.commit_count();
    assert_eq!(
        h.engine
            .withdraw(&beta, &wreq("1"), None)
            .await
            .unwrap_err()
            .code(),
        "NOT_A_MEMBER"
    );
    let bad = WithdrawRequest {
        payout_currency: "ABC".into(),
        ..wreq("1")
    };
    assert_eq!(
        h.engine.withdraw(&t, &bad, None).await.unwrap_err().code(),
        "INVALID_PARAMETER"
    );
    assert_eq!(
        h.engine
            .withdraw(&t, &wreq("0"), None)
            .await
            .unwrap_err()
            .code(),
        "INVALID_AMOUNT"
    );
    assert_eq!(
        h.engine
            .withdraw(&t, &wreq("1000"), None)
            .await
            .unwrap_err()
            .code(),
        "INSUFFICIENT_FUNDS"
    );
    assert_eq!(h.store.commit_count(), commits);
}

/// API keys and tenant records are reused from memory for `read_cache_ms` (1 s by
/// default): a revocation or pricing change made through this engine applies at once;
/// one made by another process on the same database (here: a second engine over the same
/// store, as the CLI would be) once the entry expired, and not before.
#[tokio::test]
async fn cached_keys_and_pricing_see_local_changes_at_once_and_remote_ones_within_the_ttl() {
    use stablecoin::core::CoreError;
    use stablecoin::core::engine::{KeyKind, KeyMode};
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap();
    let issue = || {
        h.engine
            .issue_api_key(&t.id, KeyKind::Tenant, KeyMode::Live)
    };
    let (a, b) = (issue().await.unwrap(), issue().await.unwrap());
    for k in [&a, &b] {
        assert_eq!(h.engine.authenticate(&k.secret).await.unwrap().tenant, t.id);
    }
    let other = Engine::new(h.engine.ports().clone(), vec![], EngineConfig::default());

    h.engine.revoke_api_key(&t.id, &a.key.id).await.unwrap();
    let r = h.engine.authenticate(&a.secret).await;
    assert!(matches!(r, Err(CoreError::ApiKeyRevoked)), "{r:?}");

    other.revoke_api_key(&t.id, &b.key.id).await.unwrap();
    assert!(other.authenticate(&b.secret).await.is_err());
    h.clock.advance_ms(999);
    assert!(
        h.engine.authenticate(&b.secret).await.is_ok(),
        "still cached"
    );
    h.clock.advance_ms(1);
    let r = h.engine.authenticate(&b.secret).await;
    assert!(matches!(r, Err(CoreError::ApiKeyRevoked)), "{r:?}");

    let fee = ChainAddress("0x00000000000000000000000000000000000000fe".into());
    let pct = TenantPricing::Percentage {
        fee_bps: 100,
        fee_cap_micros: 0,
    };
    assert_eq!(
        h.engine.tenant(&t.id).await.unwrap().pricing,
        TenantPricing::None
    );
    other
        .set_pricing(&t.id, pct.clone(), Some(fee))
        .await
        .unwrap();
    assert_eq!(
        h.engine.tenant(&t.id).await.unwrap().pricing,
        TenantPricing::None
    );
    h.clock.advance_ms(1_000);
    assert_eq!(h.engine.tenant(&t.id).await.unwrap().pricing, pct);
    h.engine
        .set_pricing(&t.id, TenantPricing::None, None)
        .await
        .unwrap();
    assert_eq!(
        h.engine.tenant(&t.id).await.unwrap().pricing,
        TenantPricing::None
    );

    // With the cache off every read goes to the store.
    let uncached = Engine::new(
        h.engine.ports().clone(),
        vec![],
        EngineConfig {
            read_cache_ms: 0,
            ..Default::default()
        },
    );
    let c = issue().await.unwrap();
    assert!(uncached.authenticate(&c.secret).await.is_ok());
    h.engine.revoke_api_key(&t.id, &c.key.id).await.unwrap();
    assert!(uncached.authenticate(&c.secret).await.is_err());
}

/// A transfer reuses the wallets it read from memory (`wallet_cache_ms`), and its commit
/// checks that both are still at the version read. A wallet changed by another process
/// on the same database (here: a second engine over the same store) is never acted on:
/// the stale decision fails its commit, writes nothing, and the transfer is decided again
/// on fresh reads.
#[tokio::test]
async fn a_transfer_never_acts_on_a_cached_wallet_another_process_changed() {
    let h = harness();
    let acme = h.tenant("Acme", "100").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    for p in [&a, &b] {
        h.engine.provision(&acme, p).await.unwrap();
    }
    h.fund_usdc(&acme, &a, "10").await;
    h.settle().await;
    let send = |from: &Phone, to: &Phone| SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
    };
    // Caches both wallets.
    h.engine.send(&acme, &send(&a, &b), None).await.unwrap();
    let old_b = h.wallet(&b).await.id;
    let other = Engine::new(
        h.engine.ports().clone(),
        vec![h.sim.clone()],
        EngineConfig::default(),
    );
    let rekey = |from: Phone, to: Phone| {
        let (other, h, acme) = (&other, &h, &acme);
        async move {
            other.phone_change_request(acme, &from, &to).await.unwrap();
            let code = h.notifier.last_code_to(&to).unwrap();
            other
                .phone_change_confirm(acme, &from, &code)
                .await
                .unwrap();
        }
    };

    // The recipient's phone moved to another wallet's number: b is now nobody's, so the
    // transfer opens a new wallet for b instead of paying the re-keyed one.
    rekey(b.clone(), phone("+2250700000003")).await;
    let (commits, attempts) = (h.store.commit_count(), h.store.commit_attempts());
    let v = h.engine.send(&acme, &send(&a, &b), None).await.unwrap();
    let new_b = h.wallet(&b).await.id;
    assert_ne!(new_b, old_b, "b has a new wallet");
    let op = h.engine.operation(&acme, &v.id).await.unwrap();
    assert_eq!(
        op.to_wallet.map(|w| w.0),
        Some(new_b),
        "paid to b's new wallet"
    );
    assert_eq!(
        (h.store.commit_count(), h.store.commit_attempts()),
        (commits + 1, attempts + 2),
        "one stale commit refused, then one on fresh reads"
    );

    // The sender's phone moved: a has no wallet any more, and nothing is written.
    rekey(a.clone(), phone("+2250700000004")).await;
    let commits = h.store.commit_count();
    let err = h.engine.send(&acme, &send(&a, &b), None).await.unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND", "{err:?}");
    assert_eq!(h.store.commit_count(), commits, "nothing written");
    h.settle().await;
    h.assert_conserved().await;
}

/// A rail in front of the simulated one that watches submissions: how many are on
/// their way at once, and which payment ids each sender submitted.
struct SubmitProbe {
    inner: Arc<SimRail>,
    state: std::sync::Mutex<ProbeState>,
}

#[derive(Default)]
struct ProbeState {
    in_flight: usize,
    max_in_flight: usize,
    submitted: std::collections::HashMap<String, Vec<String>>,
}

#[async_trait::async_trait]
impl Rail for SubmitProbe {
    fn id(&self) -> RailId {
        self.inner.id()
    }
    fn tokens(&self) -> Vec<stablecoin::core::domain::money::Token> {
        self.inner.tokens()
    }
    async fn readiness(&self) -> stablecoin::core::ports::Readiness {
        self.inner.readiness().await
    }
    async fn address_for(
        &self,
        purpose: &KeyPurpose,
    ) -> Result<ChainAddress, stablecoin::core::ports::RailError> {
        self.inner.address_for(purpose).await
    }
    async fn prepare_wallet(
        &self,
        purpose: &KeyPurpose,
    ) -> Result<(), stablecoin::core::ports::RailError> {
        self.inner.prepare_wallet(purpose).await
    }
    async fn balance(
        &self,
        address: &ChainAddress,
        token: Token,
    ) -> Result<Micros, stablecoin::core::ports::RailError> {
        self.inner.balance(address, token).await
    }
    async fn submit(
        &self,
        payment: &stablecoin::core::ports::RailPayment,
    ) -> Result<stablecoin::core::ports::Submission, stablecoin::core::ports::RailError> {
        {
            let mut s = self.state.lock().unwrap();
            s.in_flight += 1;
            s.max_in_flight = s.max_in_flight.max(s.in_flight);
            s.submitted
                .entry(payment.from_address.0.clone())
                .or_default()
                .push(payment.id.clone());
        }
        // A network round trip: other submissions get their chance to start meanwhile.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let out = self.inner.submit(payment).await;
        self.state.lock().unwrap().in_flight -= 1;
        out
    }
    async fn status(
        &self,
        payment_id: &str,
    ) -> Result<stablecoin::core::ports::SubmissionStatus, stablecoin::core::ports::RailError> {
        self.inner.status(payment_id).await
    }
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<stablecoin::core::ports::ScanBatch, stablecoin::core::ports::RailError> {
        self.inner.scan(cursor, watched, limit).await
    }
}

#[tokio::test]
async fn a_tick_advances_its_claimed_operations_side_by_side() {
    let probe = Arc::new(std::sync::Mutex::new(None::<Arc<SubmitProbe>>));
    let slot = probe.clone();
    let h = harness_wrapping(move |sim| {
        let p = Arc::new(SubmitProbe {
            inner: sim,
            state: Default::default(),
        });
        *slot.lock().unwrap() = Some(p.clone());
        p
    });
    let probe = probe.lock().unwrap().clone().unwrap();
    let acme = h.tenant("Acme", "1000").await;
    let senders: Vec<Phone> = (1..=3)
        .map(|i| phone(&format!("+22507000001{i:02}")))
        .collect();
    let to = phone("+2250700000199");
    h.engine.provision(&acme, &to).await.unwrap();
    for p in &senders {
        h.engine.provision(&acme, p).await.unwrap();
        h.fund_usdc(&acme, p, "100").await;
    }
    h.settle().await;
    let treasury = h.sim.address_for(&KeyPurpose::Treasury).await.unwrap();
    {
        let mut s = probe.state.lock().unwrap();
        assert_eq!(s.submitted[&treasury.0].len(), 3);
        assert_eq!(s.max_in_flight, 3, "the three fundings went out together");
        *s = ProbeState::default();
    }

    // Four transfers from each sender.
    let mut made: std::collections::HashMap<String, Vec<String>> = Default::default();
    for round in 0..4 {
        for (i, p) in senders.iter().enumerate() {
            h.clock.advance_ms(1);
            let sent = h
                .engine
                .send(
                    &acme,
                    &SendRequest {
                        from_phone_number: p.clone(),
                        to_phone_number: to.clone(),
                        token: Token::Usdc,
                        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
                    },
                    Some(&format!("send-{round}-{i}")),
                )
                .await
                .unwrap();
            let address = h.engine.provision_lookup(p).await.0;
            made.entry(address).or_default().push(sent.id);
        }
    }
    // One tick claims all twelve and has them all on their way at once.
    let r = h.engine.tick().await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.submitted, 12);
    assert!(!r.more_due, "12 < batch_limit");
    {
        let s = probe.state.lock().unwrap();
        assert_eq!(s.max_in_flight, 12);
        // Claimed (and so started) oldest first; each payment submitted once.
        assert_eq!(s.submitted, made);
    }
    h.settle().await;
    assert_eq!(h.chain_balance(&to).await, m("11.964"), "12 x 0.997");
    assert_eq!(
        h.sim.submit_count(),
        15,
        "3 fundings + 12 transfers, none twice"
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn a_full_claim_reports_more_due() {
    let h = harness();
    let acme = h.tenant("Acme", "1000").await;
    let to = phone("+2250700000199");
    h.engine.provision(&acme, &to).await.unwrap();
    let limit = h.engine.config().batch_limit;
    for i in 0..limit + 1 {
        h.engine
            .fund(
                &acme,
                &FundRequest {
                    phone_number: to.clone(),
                    token: Token::Usdc,
                    amount: m("1"),
                },
                Some(&format!("f-{i}")),
            )
            .await
            .unwrap();
    }
    let first = h.engine.tick().await;
    assert_eq!(first.submitted, limit);
    assert!(first.more_due, "a full claim: more may be waiting");
    // The one left over, then the polls: all settle.
    h.settle().await;
    assert_eq!(h.chain_balance(&to).await, m("65"));
    h.assert_conserved().await;
}
