//! The kernel's inbound router feeding the three products (issue #45): one scan of each
//! rail page per pump for all of them, and a product that fails its share holds back
//! only its own position.

use crate::support::{self, START};
use async_trait::async_trait;
use stablecoin::checkout::{CheckoutConfig, CheckoutEngine, CreateSessionRequest, SessionView};
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::engine::{AuthContext, Engine, EngineConfig, KeyKind, KeyMode};
use stablecoin::core::kernel::{InboundHandler, InboundRouter};
use stablecoin::core::memory::{LocalSigner, MemoryStore};
use stablecoin::core::ports::{
    Batch, ChainAddress, CommitReceipt, Ledger, Rail, RailError, RailId, ScanBatch, Store,
    StoreError,
};
use stablecoin::core::testkit::{DelegatingRail, DelegatingStore, RailOverride, StoreOverride};
use stablecoin::escrow::{CreateEscrowRequest, EscrowConfig, EscrowEngine, EscrowView};
use stablecoin::rails::sim::{SimProfile, SimRail};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Counts a rail's scans.
#[derive(Default)]
struct CountScans(AtomicUsize);

#[async_trait]
impl RailOverride for CountScans {
    async fn scan(
        &self,
        inner: &dyn Rail,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        inner.scan(cursor, watched, limit).await
    }
}

/// Fails every commit that records a checkout deposit while `on`: checkout's share of a
/// page fails, the other products' commits go through.
#[derive(Default)]
struct FailCheckout {
    on: AtomicBool,
}

#[async_trait]
impl StoreOverride for FailCheckout {
    async fn commit(&self, inner: &dyn Store, batch: Batch) -> Result<CommitReceipt, StoreError> {
        let checkout = batch
            .puts
            .iter()
            .any(|p| p.record.kind == "checkout_deposit");
        if checkout && self.on.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("disk full (injected)".into()));
        }
        inner.commit(batch).await
    }
}

struct World {
    polygon: Arc<SimRail>,
    tron: Arc<SimRail>,
    scans: BTreeMap<&'static str, Arc<DelegatingRail<CountScans>>>,
    failing: Arc<DelegatingStore<FailCheckout>>,
    wallets: Engine,
    escrow: EscrowEngine,
    checkout: CheckoutEngine,
    tenant: AuthContext,
    business: AuthContext,
    buyer_address: String,
}

impl World {
    async fn new() -> World {
        let memory = Arc::new(MemoryStore::new());
        let failing = Arc::new(DelegatingStore::new(
            memory.clone(),
            FailCheckout::default(),
        ));
        let signer = Arc::new(LocalSigner::from_seed([46; 32]));
        let polygon = support::chain(SimProfile::Evm(137), &signer);
        let tron = support::chain(SimProfile::Tron, &signer);
        let counted =
            |rail: Arc<SimRail>| Arc::new(DelegatingRail::new(rail, CountScans::default()));
        let scans = BTreeMap::from([
            ("polygon", counted(polygon.clone())),
            ("tron", counted(tron.clone())),
        ]);
        let ports = support::ports(failing.clone(), memory, signer.clone(), START, 46);
        let rails: Vec<Arc<dyn Rail>> = vec![scans["polygon"].clone(), scans["tron"].clone()];
        let wallets = Engine::new(ports.clone(), rails, EngineConfig::default());
        let escrow = EscrowEngine::new(wallets.kernel(), EscrowConfig::default()).unwrap();
        let checkout = CheckoutEngine::new(wallets.kernel(), CheckoutConfig::default()).unwrap();
        let t = wallets.create_tenant("Router Ltd").await.unwrap().id;
        let key = wallets
            .issue_api_key(&t, KeyKind::Tenant, KeyMode::Live)
            .await
            .unwrap();
        let tenant = wallets.authenticate(&key.secret).await.unwrap();
        let buyer = wallets.provision(&t, &phone(1)).await.unwrap();
        wallets.provision(&t, &phone(2)).await.unwrap();
        let b = checkout.create_business(&t, "Shop").await.unwrap();
        let business = wallets
            .authenticate(b.live_key.as_deref().unwrap())
            .await
            .unwrap();
        World {
            polygon,
            tron,
            scans,
            failing,
            wallets,
            escrow,
            checkout,
            tenant,
            business,
            buyer_address: buyer.address,
        }
    }

    /// One router over both rails feeding all three products, as a server runs them.
    fn router(&self) -> InboundRouter {
        let handlers: Vec<Arc<dyn InboundHandler>> = vec![
            Arc::new(self.wallets.clone()),
            Arc::new(self.escrow.clone()),
            Arc::new(self.checkout.clone()),
        ];
        handlers.into_iter().fold(
            self.wallets.kernel().inbound_router(100),
            InboundRouter::with_handler,
        )
    }

    fn scans(&self, rail: &str) -> usize {
        self.scans[rail].overrides().0.load(Ordering::SeqCst)
    }

    async fn deal(&self) -> EscrowView {
        let req = CreateEscrowRequest {
            buyer_phone_number: phone(1).to_string(),
            seller_phone_number: phone(2).to_string(),
            amount: "25".into(),
            token: None,
            reference: "order-1".into(),
            funding_window_secs: None,
            auto_release_after_secs: None,
        };
        self.escrow.create(&self.tenant, &req, None).await.unwrap()
    }

    async fn session(&self) -> SessionView {
        let req = CreateSessionRequest {
            amount: "10".into(),
            currency: "USDC".into(),
            reference: Some("order-2".into()),
            ..Default::default()
        };
        self.checkout
            .create_session(&self.business, &req, None)
            .await
            .unwrap()
    }

    /// A deposit to each product's address, each in its own mined block.
    async fn pay_all(&self) -> (EscrowView, SessionView) {
        let deal = self.deal().await;
        let session = self.session().await;
        let usdc = |n| Micros::from_whole_tokens(n).unwrap();
        self.polygon
            .mint(&addr(&self.buyer_address), Token::Usdc, usdc(5))
            .unwrap();
        self.polygon
            .mint(
                &addr(&session.payment_options[0].address),
                Token::Usdc,
                usdc(10),
            )
            .unwrap();
        self.tron
            .mint(&addr(&deal.escrow_address), Token::Usdt, usdc(25))
            .unwrap();
        self.polygon.mine(2);
        self.tron.mine(2);
        (deal, session)
    }

    async fn positions(&self, rail: &str) -> BTreeMap<String, String> {
        let rec = self
            .wallets
            .ports()
            .store
            .get("scan_cursor", rail)
            .await
            .unwrap()
            .unwrap();
        serde_json::from_value(rec.body.to_value().unwrap()["positions"].clone()).unwrap()
    }

    async fn wallet_usdc(&self) -> i128 {
        let id = self
            .wallets
            .ports()
            .store
            .get_by_unique(&format!("wallet_phone:{}", phone(1)))
            .await
            .unwrap()
            .unwrap()
            .id;
        let account = self.wallets.wallet_account(
            &stablecoin::core::domain::ids::WalletId(id),
            RailId::Evm(137),
            Token::Usdc,
        );
        let ledger = &self.wallets.ports().ledger;
        ledger.balance(&account.id).await.unwrap().posted()
    }
}

fn phone(n: u32) -> Phone {
    Phone::parse(&format!("+22507000000{n:02}")).unwrap()
}

fn addr(a: &str) -> ChainAddress {
    ChainAddress(a.to_string())
}

#[tokio::test]
async fn one_scan_of_each_rail_page_feeds_every_product() {
    let w = World::new().await;
    let (deal, session) = w.pay_all().await;
    let r = w.router().pump().await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(
        (w.scans("polygon"), w.scans("tron")),
        (1, 1),
        "one scan of each rail for three products"
    );
    assert_eq!(w.wallet_usdc().await, 5_000_000, "the wallet was credited");
    let deal = w.escrow.get(&w.tenant, &deal.id).await.unwrap();
    assert_eq!(deal.state, "FUNDED", "the deal was funded");
    let session = w
        .checkout
        .get_session(&w.business, &session.session_id)
        .await
        .unwrap();
    assert_eq!(session.status, "paid", "the session was paid");
    let polygon = w.positions("polygon").await;
    assert_eq!(
        polygon.keys().collect::<Vec<_>>(),
        ["checkout", "wallet"],
        "escrow watches TRON only"
    );
    assert_eq!(polygon["wallet"], polygon["checkout"]);
    let tron = w.positions("tron").await;
    assert_eq!(tron.len(), 3);
    assert_eq!(tron["wallet"], tron["escrow"]);
}

#[tokio::test]
async fn a_product_that_fails_its_share_holds_back_only_its_own_position() {
    let w = World::new().await;
    w.failing.overrides().on.store(true, Ordering::SeqCst);
    let (deal, session) = w.pay_all().await;
    let r = w.router().pump().await;
    assert!(
        r.errors
            .iter()
            .any(|e| e.starts_with("checkout deposit polygon:")),
        "checkout's failure is reported: {:?}",
        r.errors
    );
    // The others took their share.
    assert_eq!(w.wallet_usdc().await, 5_000_000);
    let funded = w.escrow.get(&w.tenant, &deal.id).await.unwrap();
    assert_eq!(funded.state, "FUNDED");
    let open = w
        .checkout
        .get_session(&w.business, &session.session_id)
        .await
        .unwrap();
    assert_eq!(open.status, session.status, "checkout recorded nothing");
    assert_ne!(open.status, "paid");
    // Checkout stays before the page; the wallet moved past it.
    let polygon = w.positions("polygon").await;
    assert!(!polygon.contains_key("checkout"), "{polygon:?}");
    assert!(polygon.contains_key("wallet"));

    // Healed, checkout scans from its own position (a scan of its own beside the
    // wallet's), takes the payment, and the positions meet.
    w.failing.overrides().on.store(false, Ordering::SeqCst);
    let before = w.scans("polygon");
    let r = w.router().pump().await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(w.scans("polygon") - before, 2, "two positions, two scans");
    let paid = w
        .checkout
        .get_session(&w.business, &session.session_id)
        .await
        .unwrap();
    assert_eq!(paid.status, "paid");
    assert_eq!(w.wallet_usdc().await, 5_000_000, "nothing credited twice");
    let polygon = w.positions("polygon").await;
    assert_eq!(polygon["wallet"], polygon["checkout"], "the positions met");
    let before = w.scans("polygon");
    w.router().pump().await;
    assert_eq!(w.scans("polygon") - before, 1, "one scan again");
}

/// A base58 address that differs from a customer's only in letter case is another
/// account: a transfer to it is no deposit of that customer's (the wallet keys used to be
/// lower-cased on every rail, which credited it, money the service never received).
#[tokio::test]
async fn a_transfer_to_a_case_variant_of_a_solana_wallet_is_not_credited() {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([47; 32]));
    let solana = support::chain(SimProfile::Solana, &signer);
    let evm = support::chain(SimProfile::Evm(137), &signer);
    let ports = support::ports(store.clone(), store.clone(), signer.clone(), START, 47);
    let rails: Vec<Arc<dyn Rail>> = vec![evm, solana.clone()];
    let wallets = Engine::new(ports, rails, EngineConfig::default());
    let t = wallets.create_tenant("Case Ltd").await.unwrap().id;
    let view = wallets
        .provision_on(&t, &phone(1), RailId::Solana)
        .await
        .unwrap();
    let account = wallets.wallet_account(
        &stablecoin::core::domain::ids::WalletId(view.wallet_id.clone()),
        RailId::Solana,
        Token::Usdc,
    );
    // An account no transfer touched yet does not exist: nothing credited.
    let credited = || async {
        match store.balance(&account.id).await {
            Ok(b) => b.posted(),
            Err(stablecoin::core::ports::LedgerError::UnknownAccount { .. }) => 0,
            Err(e) => panic!("{e}"),
        }
    };
    let one = Micros::from_whole_tokens(1).unwrap();

    // Every variant the chain takes as an address of its own (flip one letter's case).
    let exact = view.address.clone();
    let mut variants = 0;
    for (i, c) in exact
        .char_indices()
        .filter(|(_, c)| c.is_ascii_alphabetic())
    {
        let flipped = if c.is_ascii_lowercase() {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        };
        let mut variant = exact.clone();
        variant.replace_range(i..i + 1, &flipped.to_string());
        if solana.mint(&addr(&variant), Token::Usdc, one).is_ok() {
            variants += 1;
        }
    }
    assert!(variants > 0, "some case variant is a Solana address");
    solana.mine(2);
    let r = wallets.settle_all(10).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(credited().await, 0, "{variants} variants, none credited");

    solana.mint(&addr(&exact), Token::Usdc, one).unwrap();
    solana.mine(2);
    wallets.settle_all(10).await;
    assert_eq!(credited().await, 1_000_000, "the exact address is");
}
