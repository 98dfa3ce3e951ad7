//! A whole escrow world: MemoryStore, ManualClock, SeededEntropy, LocalSigner, the core
//! engine (tenants, wallets) over a simulated EVM rail, and the TRON rail escrow runs on:
//! simulated, or the real `TronRail` on the local TRON node ([`chain`]), as the test
//! parent module's `BACKEND` constant says.
#![allow(dead_code)]

pub mod chain;

pub use chain::{Backend, TestChain};

use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{AuthContext, Engine, EngineConfig, KeyKind, KeyMode, Ports};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{ChainAddress, Rail, Signer};
use stablecoin_escrow::*;
use stablecoin_rails::{SimConfig, SimProfile, SimRail};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub const START: Timestamp = Timestamp::from_secs(1_795_341_600); // 2026-11-22T10:00:00Z

pub fn usdt(n: u64) -> Micros {
    Micros::from_whole_tokens(n).unwrap()
}

pub struct World {
    pub store: Arc<MemoryStore>,
    pub clock: Arc<ManualClock>,
    pub signer: Arc<LocalSigner>,
    pub tron: Arc<TestChain>,
    pub core: Engine,
    pub ports: Ports,
    pub escrow: EscrowEngine,
    pub tenant: TenantId,
    pub auth: AuthContext,
    pub test_auth: AuthContext,
    pub other_tenant: TenantId,
    pub other_auth: AuthContext,
    pub buyer: Phone,
    pub seller: Phone,
    pub staff: StaffActor,
    /// Every micro-unit minted to a deal address, per token (USDT, USDC).
    pub minted_usdt: AtomicU64,
    pub minted_usdc: AtomicU64,
    /// Deals created in this world (for the conservation check).
    pub deals: std::sync::Mutex<BTreeSet<String>>,
}

pub fn test_config() -> EscrowConfig {
    EscrowConfig {
        poll_interval_ms: 0,
        send_retry_ms: 0,
        ..EscrowConfig::default()
    }
}

impl World {
    pub async fn new() -> World {
        World::with_config(test_config()).await
    }

    pub async fn with_config(config: EscrowConfig) -> World {
        let store = Arc::new(MemoryStore::new());
        let clock = Arc::new(ManualClock::new(START));
        let signer = Arc::new(LocalSigner::from_seed([42; 32]));
        let dyn_signer: Arc<dyn Signer> = signer.clone();
        let tron = Arc::new(match super::BACKEND {
            Backend::Sim => TestChain::sim(dyn_signer.clone()),
            Backend::Tron => {
                TestChain::tron(dyn_signer.clone(), store.clone(), clock.clone()).await
            }
        });
        let evm = Arc::new(SimRail::new(
            SimProfile::Evm(137),
            dyn_signer.clone(),
            SimConfig::for_profile(SimProfile::Evm(137)),
        ));
        let ports = Ports {
            store: store.clone(),
            ledger: store.clone(),
            signer: dyn_signer,
            notifier: Arc::new(MemoryNotifier::new()),
            rates: Arc::new(FixedRates::demo()),
            payouts: Arc::new(MemoryPayouts::new()),
            clock: clock.clone(),
            entropy: Arc::new(SeededEntropy::new(7)),
        };
        let rails: Vec<Arc<dyn Rail>> = vec![evm, tron.rail()];
        let core = Engine::new(ports.clone(), rails, EngineConfig::default());
        let escrow = EscrowEngine::new(core.kernel(), config).unwrap();

        let tenant = core.create_tenant("Acme Marketplace").await.unwrap().id;
        let auth = key(&core, &tenant, KeyMode::Live).await;
        let test_auth = key(&core, &tenant, KeyMode::Test).await;
        let other_tenant = core.create_tenant("Other Fintech").await.unwrap().id;
        let other_auth = key(&core, &other_tenant, KeyMode::Live).await;
        let buyer = Phone::parse("+2250700000001").unwrap();
        let seller = Phone::parse("+2250700000002").unwrap();
        core.provision(&tenant, &buyer).await.unwrap();
        core.provision(&tenant, &seller).await.unwrap();
        World {
            store,
            clock,
            signer,
            tron,
            core,
            ports,
            escrow,
            tenant,
            auth,
            test_auth,
            other_tenant,
            other_auth,
            buyer,
            seller,
            staff: StaffActor::new("ops@service.example").unwrap(),
            minted_usdt: AtomicU64::new(0),
            minted_usdc: AtomicU64::new(0),
            deals: Default::default(),
        }
    }

    pub fn request(&self, amount: &str) -> CreateEscrowRequest {
        CreateEscrowRequest {
            buyer_phone_number: self.buyer.to_string(),
            seller_phone_number: self.seller.to_string(),
            amount: amount.into(),
            token: None,
            reference: "order-1001".into(),
            funding_window_secs: None,
            auto_release_after_secs: None,
        }
    }

    pub async fn create(&self, amount: &str) -> EscrowView {
        self.create_with(self.request(amount)).await
    }

    pub async fn create_with(&self, req: CreateEscrowRequest) -> EscrowView {
        let v = self.escrow.create(&self.auth, &req, None).await.unwrap();
        self.deals.lock().unwrap().insert(v.id.clone());
        v
    }

    /// An outside payment of `amount` to the deal address (executes in the next block).
    pub fn pay(&self, deal: &EscrowView, token: Token, amount: Micros) {
        self.tron
            .mint(&ChainAddress(deal.escrow_address.clone()), token, amount)
            .unwrap();
        match token {
            Token::Usdt => self.minted_usdt.fetch_add(amount.get(), Ordering::SeqCst),
            Token::Usdc => self.minted_usdc.fetch_add(amount.get(), Ordering::SeqCst),
        };
    }

    /// Mines past the TRON confirmation depth and runs the workers until idle.
    pub async fn settle(&self) -> EscrowTickReport {
        self.tron.mine(20);
        let r = self.escrow.settle_all(200).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
        r
    }

    pub async fn get(&self, id: &str) -> EscrowView {
        self.escrow.get(&self.auth, id).await.unwrap()
    }

    pub fn act(&self) -> EscrowActionRequest {
        EscrowActionRequest::default()
    }

    pub async fn chain_balance(&self, address: &str, token: Token) -> u64 {
        self.tron
            .balance(&ChainAddress(address.to_string()), token)
            .await
            .unwrap()
            .get()
    }

    /// No micro-unit appears or vanishes, on the ledger and on chain:
    /// - per deal and token: deposited == held + recoverables + paid_out (ledger);
    /// - per deal, once nothing is in flight: the chain balance of the deal address ==
    ///   held + recoverables;
    /// - in total: every minted micro-unit was recorded as deposited, and the buyer and
    ///   seller wallets hold on chain exactly what the ledger says was paid out.
    pub async fn assert_conserved(&self) {
        let ids: Vec<String> = self.deals.lock().unwrap().iter().cloned().collect();
        let admin = self.escrow.admin();
        for token in [Token::Usdt, Token::Usdc] {
            let mut deposited = 0u64;
            let mut paid = 0u64;
            let mut custody_chain = 0u64;
            for id in &ids {
                let acc = admin.accounting(&self.staff, id).await.unwrap();
                assert!(acc.is_balanced(), "deal {id} is not balanced: {acc:?}");
                let t = acc.token(token);
                assert_eq!(t.in_flight, 0, "deal {id} still has a payout in flight");
                let on_chain = self.chain_balance(&acc.escrow_address, token).await;
                assert_eq!(on_chain, t.custody(), "deal {id} {token}: chain vs ledger");
                deposited += t.deposited;
                paid += t.paid_out;
                custody_chain += on_chain;
            }
            let minted = match token {
                Token::Usdt => self.minted_usdt.load(Ordering::SeqCst),
                Token::Usdc => self.minted_usdc.load(Ordering::SeqCst),
            };
            assert_eq!(deposited, minted, "{token}: every deposit recorded once");
            let buyer_addr = self.wallet_tron_address(&self.buyer).await;
            let seller_addr = self.wallet_tron_address(&self.seller).await;
            let wallets = self.chain_balance(&buyer_addr, token).await
                + self.chain_balance(&seller_addr, token).await;
            assert_eq!(
                wallets, paid,
                "{token}: payouts on chain == ledger paid_out"
            );
            assert_eq!(custody_chain + wallets, minted, "{token}: chain total");
        }
    }

    pub async fn wallet_tron_address(&self, phone: &Phone) -> String {
        let w = stablecoin_core::ports::get_record_by_unique::<
            stablecoin_core::domain::consent::Wallet,
        >(
            &*self.store,
            &stablecoin_core::domain::consent::Wallet::phone_key(phone),
        )
        .await
        .unwrap()
        .unwrap()
        .record;
        self.tron
            .address_for(&stablecoin_core::ports::KeyPurpose::Wallet(w.id.0))
            .await
            .unwrap()
            .0
    }

    /// Event names of a deal's history, oldest first.
    pub async fn history(&self, id: &str) -> Vec<EscrowEventView> {
        let mut ev = self
            .escrow
            .events(&self.auth, id, Some(100), None)
            .await
            .unwrap()
            .events;
        ev.reverse();
        ev
    }

    pub async fn history_names(&self, id: &str) -> Vec<String> {
        self.history(id)
            .await
            .into_iter()
            .map(|e| e.event)
            .collect()
    }

    /// Asserts the outbox holds exactly one event per history entry, same ids, same names.
    pub async fn assert_outbox_matches_history(&self) {
        use stablecoin_core::ports::Store;
        let outbox = self.store.outbox_after(0, 100_000).await.unwrap();
        let escrow_events: Vec<_> = outbox
            .iter()
            .filter(|(_, e)| e.event_type.starts_with("escrow."))
            .collect();
        let ids: Vec<String> = self.deals.lock().unwrap().iter().cloned().collect();
        let mut history = Vec::new();
        for id in &ids {
            history.extend(self.history(id).await);
        }
        assert_eq!(escrow_events.len(), history.len());
        for h in &history {
            let (_, e) = escrow_events
                .iter()
                .find(|(_, e)| e.id == h.event_id)
                .unwrap_or_else(|| panic!("no outbox event for {}", h.event_id));
            assert_eq!(e.event_type, h.event);
            assert_eq!(e.tenant, self.tenant.0);
            assert!(e.id.starts_with("evt_"));
            assert_eq!(e.payload["event_id"], h.event_id);
            assert_eq!(e.payload["event"], h.event);
            assert_eq!(e.payload["escrow"]["id"], h.escrow_id);
            assert_eq!(e.payload["escrow"]["state"], h.state);
        }
    }
}

async fn key(core: &Engine, tenant: &TenantId, mode: KeyMode) -> AuthContext {
    let issued = core
        .issue_api_key(tenant, KeyKind::Tenant, mode)
        .await
        .unwrap();
    core.authenticate(&issued.secret).await.unwrap()
}
