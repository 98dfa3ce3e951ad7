//! The harness of the engine flow tests: an engine on in-memory adapters with the
//! simulated EVM (Polygon) and TRON rails, and helpers that fund, settle and check the
//! ledger and the chain.

use stablecoin_core::domain::fx::QuoteView;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Currency, Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, EngineConfig, FundRequest, OperationView, Ports};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Ledger, Rail, Store};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

pub(crate) struct H {
    pub(crate) engine: Engine,
    pub(crate) store: Arc<MemoryStore>,
    pub(crate) sim: Arc<SimRail>,
    /// The simulated TRON rail beside it (wallets get TRON addresses on demand).
    pub(crate) tron: Arc<SimRail>,
    pub(crate) notifier: Arc<MemoryNotifier>,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) payouts: Arc<MemoryPayouts>,
}

pub(crate) fn m(s: &str) -> Micros {
    Micros::parse_decimal(s).unwrap()
}

pub(crate) fn phone(s: &str) -> Phone {
    Phone::parse(s).unwrap()
}

pub(crate) fn harness() -> H {
    harness_wrapping(|sim| sim)
}

/// The harness with the EVM rail the engine sees wrapped (the test keeps the bare one).
pub(crate) fn harness_wrapping(wrap: impl FnOnce(Arc<SimRail>) -> Arc<dyn Rail>) -> H {
    harness_with(wrap, |store| store)
}

/// The harness with the rail and the store the engine sees wrapped (the test keeps the
/// bare memory store; the ledger port stays on it).
pub(crate) fn harness_with(
    wrap: impl FnOnce(Arc<SimRail>) -> Arc<dyn Rail>,
    wrap_store: impl FnOnce(Arc<MemoryStore>) -> Arc<dyn Store>,
) -> H {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([9; 32]));
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    // The chain keeps the engine's time, so payment deadlines pass on it as they do here.
    let sim = Arc::new(
        SimRail::new(
            SimProfile::Evm(137),
            signer.clone(),
            SimConfig::for_profile(SimProfile::Evm(137)),
        )
        .with_clock(clock.clone()),
    );
    let notifier = Arc::new(MemoryNotifier::new());
    let payouts = Arc::new(MemoryPayouts::new());
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
    let tron = Arc::new(
        SimRail::new(
            SimProfile::Tron,
            ports.signer.clone(),
            SimConfig::for_profile(SimProfile::Tron),
        )
        .with_clock(clock.clone()),
    );
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
    pub(crate) async fn tenant(&self, name: &str, amount: &str) -> TenantId {
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
    pub(crate) async fn fund_usdc(&self, t: &TenantId, p: &Phone, amount: &str) -> OperationView {
        let req = FundRequest {
            phone_number: p.clone(),
            token: Token::Usdc,
            amount: m(amount),
        };
        self.engine.fund(t, &req, None).await.unwrap()
    }

    pub(crate) async fn chain_balance(&self, p: &Phone) -> Micros {
        let w = self.engine.provision_lookup(p).await;
        self.sim.balance(&w, Token::Usdc).await.unwrap()
    }

    /// The stored wallet record of a phone.
    pub(crate) async fn wallet(&self, p: &Phone) -> stablecoin_core::ports::StoredRecord {
        self.store
            .get_by_unique(&format!("wallet_phone:{p}"))
            .await
            .unwrap()
            .expect("wallet")
    }

    /// Tenant "Acme", two provisioned phones (the first funded with 100 USDC, settled) and
    /// an FX quote of 6000 XOF for USDC (10 USDC at the demo rate).
    pub(crate) async fn quote_for_a_funded_pair(&self) -> (TenantId, Phone, Phone, QuoteView) {
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

    pub(crate) async fn ledger_available(&self, account: &str) -> i128 {
        self.store
            .balance(account)
            .await
            .map(|b| b.available())
            .unwrap_or(0)
    }

    pub(crate) async fn settle(&self) {
        let r = self.engine.settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
    }

    pub(crate) async fn assert_conserved(&self) {
        assert_eq!(
            self.store.posted_sum().await.unwrap(),
            0,
            "double entry broken"
        );
    }
}

/// Looks a wallet's chain address up by phone (test helper over the engine's records).
pub(crate) trait Lookup {
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

/// A store through which "another request" changes a record of `kind` between a use
/// case's read of it and its commit: on the first batch that updates such a record, the
/// record is first re-put as it is (its version moves), then the batch goes on to the
/// store and loses the race (or the use case reads again and retries).
pub(crate) struct RaceOn {
    kind: &'static str,
    raced: std::sync::atomic::AtomicBool,
}

impl RaceOn {
    pub(crate) fn kind(kind: &'static str) -> Self {
        RaceOn {
            kind,
            raced: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

#[async_trait::async_trait]
impl stablecoin_core::testkit::StoreOverride for RaceOn {
    async fn commit(
        &self,
        inner: &dyn Store,
        batch: stablecoin_core::ports::Batch,
    ) -> Result<stablecoin_core::ports::CommitReceipt, stablecoin_core::ports::StoreError> {
        let raced = batch
            .puts
            .iter()
            .find(|p| p.record.kind == self.kind && p.expected_version.is_some());
        if let Some(put) = raced
            && !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let current = inner.get(self.kind, &put.record.id).await?.unwrap();
            let version = current.version;
            inner
                .commit(stablecoin_core::ports::Batch {
                    puts: vec![stablecoin_core::ports::Put {
                        record: current,
                        expected_version: Some(version),
                    }],
                    ..Default::default()
                })
                .await?;
        }
        inner.commit(batch).await
    }
}
