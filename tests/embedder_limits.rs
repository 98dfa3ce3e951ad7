//! What the service pays for is bounded by the engine, for an embedder as for the server:
//! a send below the rail's floor is AMOUNT_TOO_SMALL before anything is written, and a
//! tenant's rent-paying provisionings (Solana token accounts) stop at its quota, and a
//! deployment without a payout provider refuses withdrawals before holding anything.

use stablecoin::core::CoreError;
use stablecoin::core::domain::ids::TenantId;
use stablecoin::core::domain::limits::{MinSend, RentQuota};
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{Engine, EngineConfig, Ports, SendRequest, WithdrawRequest};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin::core::ports::{ChainAddress, KeyPurpose, Rail, RailId, Store};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

struct H {
    engine: Engine,
    store: Arc<MemoryStore>,
    solana: Arc<SimRail>,
    clock: Arc<ManualClock>,
}

fn phone(n: u32) -> Phone {
    Phone::parse(&format!("+22507{n:08}")).unwrap()
}

fn harness(min_send: MinSend, rent_quota: RentQuota) -> H {
    harness_with(EngineConfig {
        min_send,
        rent_quota,
        ..Default::default()
    })
}

fn harness_with(config: EngineConfig) -> H {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([7; 32]));
    let sim = |p: SimProfile| Arc::new(SimRail::new(p, signer.clone(), SimConfig::for_profile(p)));
    let evm = sim(SimProfile::Evm(137));
    let solana = sim(SimProfile::Solana);
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(3)),
    };
    let config = EngineConfig {
        poll_interval_ms: 0,
        ..config
    };
    let engine = Engine::new(ports, vec![evm, solana.clone()], config);
    H {
        engine,
        store,
        solana,
        clock,
    }
}

fn send(from: &Phone, to: &Phone, quote_id: &str) -> SendRequest {
    SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token: Token::Usdc,
        quote_id: quote_id.into(),
    }
}

/// Outbox events so far: every committed use case appends one, so an unchanged count
/// shows nothing was written.
async fn rows(store: &MemoryStore) -> usize {
    store.outbox_after(0, 10_000).await.unwrap().len()
}

fn fails<T: std::fmt::Debug>(r: Result<T, CoreError>, code: &str) -> CoreError {
    let e = r.expect_err(code);
    assert_eq!(e.code(), code, "{e}");
    e
}

#[tokio::test]
async fn a_send_below_the_rail_floor_is_amount_too_small_and_writes_nothing() {
    let floor = MinSend {
        evm_micros: 100_000,
        tron_micros: 1_000_000,
        solana_micros: 250_000,
    };
    let h = harness(floor, RentQuota::default());
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let (a, b) = (phone(1), phone(2));
    let view = h.engine.provision_on(&t, &a, RailId::Solana).await.unwrap();
    h.solana
        .mint(&ChainAddress(view.address), Token::Usdc, Micros(5_000_000))
        .unwrap();
    h.engine.settle_all(100).await;
    let before = rows(&h.store).await;

    let e = fails(
        h.engine
            .send_on(
                &t,
                RailId::Solana,
                &send(&a, &b, "DIRECT_CRYPTO:USDC:0.249999"),
                None,
            )
            .await,
        "AMOUNT_TOO_SMALL",
    );
    assert_eq!(e.param(), Some("amount"));
    assert!(e.to_string().contains("0.25"), "names the floor: {e}");
    assert_eq!(rows(&h.store).await, before, "nothing written");
    // The sandbox (EVM sends) applies the same floors.
    fails(
        h.engine
            .sandbox()
            .send(&t, &send(&a, &b, "DIRECT_CRYPTO:USDC:0.000001"))
            .await,
        "AMOUNT_TOO_SMALL",
    );
    // The EVM floor is the EVM one.
    fails(
        h.engine
            .send(&t, &send(&a, &b, "DIRECT_CRYPTO:USDC:0.099999"), None)
            .await,
        "AMOUNT_TOO_SMALL",
    );

    // At the floor, accepted.
    let op = h
        .engine
        .send_on(
            &t,
            RailId::Solana,
            &send(&a, &b, "DIRECT_CRYPTO:USDC:0.25"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(op.status, "QUEUED");
}

#[tokio::test]
async fn solana_provisionings_stop_at_the_tenant_rent_quota_until_the_window_ends() {
    let quota = RentQuota {
        max_per_tenant: 3,
        window_ms: 3_600_000,
    };
    let h = harness(MinSend::default(), quota);
    let acme = h.engine.create_tenant("Acme").await.unwrap().id;
    let other: TenantId = h.engine.create_tenant("Other").await.unwrap().id;
    for n in 1..=3 {
        h.engine
            .provision_on(&acme, &phone(n), RailId::Solana)
            .await
            .unwrap();
    }
    // Provisioning an already-prepared wallet again pays nothing and is not counted.
    h.engine
        .provision_on(&acme, &phone(2), RailId::Solana)
        .await
        .unwrap();
    // EVM provisioning pays no rent: not counted.
    h.engine.provision(&acme, &phone(9)).await.unwrap();

    // The refused phone's wallet exists on EVM (free); its Solana accounts are not opened.
    let w4 = h
        .engine
        .provision(&acme, &phone(4))
        .await
        .unwrap()
        .wallet_id;
    let a4 = h.solana.address_for(&KeyPurpose::Wallet(w4)).await.unwrap();
    let e = fails(
        h.engine
            .provision_on(&acme, &phone(4), RailId::Solana)
            .await,
        "RATE_LIMITED",
    );
    let wait = e.retry_after_ms().expect("Retry-After");
    assert!(wait > 0 && wait <= 3_600_000, "{wait}");
    assert!(
        !h.solana.token_account_exists(&a4, Token::Usdc),
        "no rent paid"
    );
    // Another tenant has its own quota.
    h.engine
        .provision_on(&other, &phone(5), RailId::Solana)
        .await
        .unwrap();

    // After the window, Acme may provision again.
    h.clock.advance_ms(3_600_000);
    h.engine
        .provision_on(&acme, &phone(4), RailId::Solana)
        .await
        .unwrap();
    assert!(h.solana.token_account_exists(&a4, Token::Usdc));
}

#[tokio::test]
async fn without_a_payout_provider_a_withdrawal_is_refused_before_anything_is_held() {
    let h = harness_with(EngineConfig {
        withdrawals_enabled: false,
        ..Default::default()
    });
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    h.engine.provision(&t, &phone(1)).await.unwrap();
    let before = rows(&h.store).await;
    let req = WithdrawRequest {
        phone_number: phone(1),
        token: Token::Usdc,
        amount: Micros(1_000_000),
        payout_currency: "XOF".into(),
    };
    let e = fails(
        h.engine.withdraw(&t, &req, Some("w1")).await,
        "WITHDRAWALS_UNAVAILABLE",
    );
    assert!(!e.is_retryable());
    assert_eq!(rows(&h.store).await, before, "nothing written");
}
