//! Several EVM chains at once (Polygon 137, primary, and BNB Smart Chain 56): a wallet
//! has its address on each, every value operation takes the chain it runs on, and each
//! chain's balance is its own, on chain and in the ledger.

use super::harness::*;
use stablecoin_core::domain::ids::{TenantId, WalletId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{
    Engine, EngineConfig, FundRequest, Ports, SendRequest, WithdrawRequest,
};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Ledger, Rail, RailId};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

const BSC: RailId = RailId::Evm(56);

struct Two {
    engine: Engine,
    payouts: Arc<MemoryPayouts>,
    store: Arc<MemoryStore>,
    polygon: Arc<SimRail>,
    bsc: Arc<SimRail>,
}

fn two_chains() -> Two {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([9; 32]));
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let sim = |p: SimProfile| {
        Arc::new(
            SimRail::new(p, signer.clone(), SimConfig::for_profile(p)).with_clock(clock.clone()),
        )
    };
    let polygon = sim(SimProfile::Evm(137));
    let bsc = sim(SimProfile::Evm(56));
    let payouts = Arc::new(MemoryPayouts::new());
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer: signer.clone(),
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: payouts.clone(),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(42)),
    };
    let config = EngineConfig {
        primary_evm_rail: Some(RailId::Evm(137)),
        poll_interval_ms: 0,
        unknown_grace_ms: 0,
        ..Default::default()
    };
    let rails: Vec<Arc<dyn Rail>> = vec![polygon.clone(), bsc.clone()];
    Two {
        engine: Engine::new(ports, rails, config),
        payouts,
        store,
        polygon,
        bsc,
    }
}

impl Two {
    async fn tenant(&self) -> TenantId {
        let t = self.engine.create_tenant("Acme").await.unwrap().id;
        for rail in [&self.polygon, &self.bsc] {
            let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
            rail.mint(&treasury, Token::Usdc, m("1000")).unwrap();
            rail.mine(1);
        }
        self.engine
            .credit_treasury(&t, Token::Usdc, m("1000"), "wire-1")
            .await
            .unwrap();
        t
    }

    async fn wallet(&self, p: &Phone) -> stablecoin_core::domain::consent::Wallet {
        let rec = self
            .store
            .get_by_unique(&format!("wallet_phone:{p}"))
            .await
            .unwrap()
            .unwrap();
        self.engine.wallet(&WalletId(rec.id)).await.unwrap()
    }

    async fn ledger(&self, account: &str) -> i128 {
        self.store
            .balance(account)
            .await
            .map(|b| b.available())
            .unwrap_or(0)
    }

    async fn settle(&self) {
        for _ in 0..3 {
            let r = self.engine.settle_all(100).await;
            assert!(r.errors.is_empty(), "{:?}", r.errors);
        }
    }
}

fn fund(p: &Phone, amount: &str) -> FundRequest {
    FundRequest {
        phone_number: p.clone(),
        token: Token::Usdc,
        amount: m(amount),
    }
}

use stablecoin_core::ports::Store;

#[tokio::test]
async fn each_chain_has_its_own_address_balance_and_ledger_account() {
    let x = two_chains();
    let t = x.tenant().await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    x.engine.provision(&t, &a).await.unwrap();
    x.engine.provision(&t, &b).await.unwrap();
    let wa = x.wallet(&a).await;
    let on_polygon = wa.address("polygon").cloned().expect("polygon address");
    let on_bsc = wa.address("bsc").cloned().expect("bsc address");

    // Funded on BSC: only BSC moves, on chain and in the ledger.
    let f = x
        .engine
        .fund_on(&t, Some(BSC), &fund(&a, "50"), None)
        .await
        .unwrap();
    assert_eq!(f.rail, "bsc");
    x.settle().await;
    assert_eq!(x.bsc.balance(&on_bsc, Token::Usdc).await.unwrap(), m("50"));
    assert_eq!(
        x.polygon.balance(&on_polygon, Token::Usdc).await.unwrap(),
        Micros::ZERO
    );
    let bsc_acct = format!("wallet:{}:bsc:USDC", wa.id);
    let primary_acct = format!("wallet:{}:USDC", wa.id);
    assert_eq!(x.ledger(&bsc_acct).await, 50_000_000);
    assert_eq!(x.ledger(&primary_acct).await, 0);
    let v = x.engine.balance_on(&t, &a, BSC).await.unwrap();
    assert_eq!(v.of(Token::Usdc), m("50"));
    assert_eq!(
        x.engine.balance(&t, &a).await.unwrap().balance_usdc,
        "0.000000"
    );

    // A send on the primary chain cannot spend what sits on BSC.
    let send = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:10".into(),
    };
    let err = x.engine.send(&t, &send, None).await.unwrap_err();
    assert_eq!(err.code(), "INSUFFICIENT_FUNDS", "{err}");
    // On BSC it settles there, fees and all.
    let s = x.engine.send_on(&t, BSC, &send, None).await.unwrap();
    x.settle().await;
    let s = x.engine.operation(&t, &s.id).await.unwrap().view();
    assert_eq!((s.status.as_str(), s.rail.as_str()), ("SETTLED", "bsc"));
    let wb = x.wallet(&b).await;
    let b_bsc = wb.address("bsc").cloned().unwrap();
    assert_eq!(
        x.bsc.balance(&b_bsc, Token::Usdc).await.unwrap(),
        m(s.recipient_amount.as_deref().unwrap())
    );
    assert_eq!(x.ledger(&bsc_acct).await, 40_000_000);

    // A deposit on BSC from outside is credited to the BSC account only.
    x.bsc.mint(&on_bsc, Token::Usdc, m("7")).unwrap();
    x.settle().await;
    assert_eq!(x.ledger(&bsc_acct).await, 47_000_000);
    assert_eq!(x.ledger(&primary_acct).await, 0);

    // A withdrawal on BSC sweeps there.
    let w = x
        .engine
        .withdraw_on(
            &t,
            Some(BSC),
            &WithdrawRequest {
                phone_number: a.clone(),
                token: Token::Usdc,
                amount: m("20"),
                payout_currency: "XOF".into(),
            },
            None,
        )
        .await
        .unwrap();
    x.settle().await;
    x.payouts.settle_all();
    x.settle().await;
    let w = x.engine.operation(&t, &w.id).await.unwrap().view();
    assert_eq!((w.status.as_str(), w.rail.as_str()), ("COMPLETED", "bsc"));
    assert_eq!(x.ledger(&bsc_acct).await, 27_000_000);
    assert_eq!(x.bsc.balance(&on_bsc, Token::Usdc).await.unwrap(), m("27"));
    assert_eq!(x.store.posted_sum().await.unwrap(), 0);
}

#[tokio::test]
async fn a_network_must_be_an_enabled_evm_chain_and_a_key_names_one_chain() {
    let x = two_chains();
    let t = x.tenant().await;
    let a = phone("+2250700000001");
    x.engine.provision(&t, &a).await.unwrap();
    for bad in [RailId::Tron, RailId::Evm(8453)] {
        let e = x
            .engine
            .fund_on(&t, Some(bad), &fund(&a, "1"), None)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_PARAMETER", "{e}");
    }
    // The chain is part of the request: one key on another chain is a reused key, never
    // a replay of the first chain's funding.
    let p = x
        .engine
        .fund_on(&t, None, &fund(&a, "1"), Some("k-1"))
        .await
        .unwrap();
    let e = x
        .engine
        .fund_on(&t, Some(BSC), &fund(&a, "1"), Some("k-1"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "IDEMPOTENCY_KEY_REUSED");
    let again = x
        .engine
        .fund_on(&t, Some(RailId::Evm(137)), &fund(&a, "1"), Some("k-1"))
        .await
        .unwrap();
    assert_eq!(
        (again.id.as_str(), again.rail.as_str()),
        (p.id.as_str(), "polygon")
    );
}

#[tokio::test]
async fn provisioning_again_records_the_address_on_a_chain_enabled_later() {
    // A wallet created while only Polygon ran has no BSC address; provisioning it again
    // once BSC is enabled records it, so BSC deposits find the wallet.
    let x = two_chains();
    let t = x.tenant().await;
    let a = phone("+2250700000001");
    x.engine.provision(&t, &a).await.unwrap();
    let rec = x
        .store
        .get_by_unique(&format!("wallet_phone:{a}"))
        .await
        .unwrap()
        .unwrap();
    let mut w = x.engine.wallet(&WalletId(rec.id.clone())).await.unwrap();
    w.addresses.remove("bsc");
    use stablecoin_core::ports::{Batch, Record};
    x.store
        .commit(Batch {
            puts: vec![w.update(rec.version).unwrap()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(x.wallet(&a).await.address("bsc").is_none());
    let v = x.engine.provision(&t, &a).await.unwrap();
    assert_eq!(v.outcome, "ALREADY_EXISTS");
    let bsc: ChainAddress = x
        .wallet(&a)
        .await
        .address("bsc")
        .cloned()
        .expect("recorded");
    assert_eq!(
        bsc,
        x.bsc
            .address_for(&KeyPurpose::Wallet(rec.id))
            .await
            .unwrap()
    );
}
