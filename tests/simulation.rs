//! Deterministic simulation (TigerBeetle style): seeded random workloads of fundings and
//! transfers across tenants, with injected chain faults and failed commits, and money
//! invariants checked after every step:
//! - double entry: the ledger's posted sum is zero;
//! - once every operation is terminal, each wallet's on-chain balance equals its ledger
//!   balance (no double payment, no lost value), and no ledger hold is left pending;
//! - every operation ends terminal after reconciliation.

use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::state::OpKind;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{Engine, EngineConfig, FundRequest, Ports, SendRequest, accounts};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin::core::ports::{ChainAddress, KeyPurpose, Ledger, Rail, Store};
use stablecoin::rails::sim::{Fault, SimConfig, SimProfile, SimRail};
use std::sync::Arc;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

async fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed | 1);
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([seed as u8; 32]));
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_800_000_000)));
    // The chain keeps the engine's time: payment deadlines pass on it too.
    let sim = Arc::new(
        SimRail::new(
            SimProfile::Evm(8453),
            signer.clone(),
            SimConfig {
                confirmations: 2,
                auto_mine: true,
            },
        )
        .with_clock(clock.clone()),
    );
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(seed)),
    };
    let engine = Engine::new(
        ports,
        vec![sim.clone() as Arc<dyn Rail>],
        EngineConfig {
            poll_interval_ms: 0,
            unknown_grace_ms: 0,
            // A dropped payment fails once its deadline has passed: within the drain.
            payment_validity_ms: 60_000,
            ..Default::default()
        },
    );

    let treasury = sim.address_for(&KeyPurpose::Treasury).await.unwrap();
    sim.mint(&treasury, Token::Usdc, Micros::new(1_000_000_000_000))
        .unwrap();
    sim.mine(1);
    let mut tenants = Vec::new();
    for i in 0..3 {
        let t = engine
            .create_tenant(&format!("tenant {i}"))
            .await
            .unwrap()
            .id;
        engine
            .credit_treasury(
                &t,
                Token::Usdc,
                Micros::new(5_000_000_000),
                &format!("w{i}"),
            )
            .await
            .unwrap();
        tenants.push(t);
    }
    let phones: Vec<Phone> = (0..8)
        .map(|i| Phone::parse(&format!("+22507000000{i:02}")).unwrap())
        .collect();
    for (i, p) in phones.iter().enumerate().take(6) {
        engine.provision(&tenants[i % 3], p).await.unwrap();
    }

    let faults = [
        Fault::Reject,
        Fault::Revert,
        Fault::LostResponse,
        Fault::Drop,
        Fault::Delay(2),
    ];
    for step in 0..steps {
        if rng.below(6) == 0 {
            sim.inject(faults[rng.below(faults.len() as u64) as usize]);
        }
        if rng.below(10) == 0 {
            store.fail_next_commits(1);
        }
        let t = &tenants[rng.below(3) as usize];
        let amount = Micros::new(1 + rng.below(300_000_000));
        let key = format!("k{}", rng.below(40)); // collisions exercise idempotency
        let result = match rng.below(3) {
            0 => {
                let p = phones[rng.below(6) as usize].clone();
                engine
                    .fund(
                        t,
                        &FundRequest {
                            phone_number: p,
                            token: Token::Usdc,
                            amount,
                        },
                        Some(&key),
                    )
                    .await
                    .map(|_| ())
            }
            1 => {
                let from = phones[rng.below(6) as usize].clone();
                let to = phones[rng.below(8) as usize].clone();
                let quote_id = format!("DIRECT_CRYPTO:USDC:{}", amount.to_decimal_string());
                engine
                    .send(
                        t,
                        &SendRequest {
                            from_phone_number: from,
                            to_phone_number: to,
                            token: Token::Usdc,
                            quote_id,
                        },
                        Some(&key),
                    )
                    .await
                    .map(|_| ())
            }
            _ => {
                let r = engine.tick().await;
                clock.advance_ms(1_000);
                let _ = r;
                Ok(())
            }
        };
        if let Err(e) = result {
            // Only the refusals a client can cause (or the injected storage failure).
            assert!(
                matches!(
                    e.code(),
                    "INSUFFICIENT_FUNDS"
                        | "NOT_A_MEMBER"
                        | "SAME_WALLET"
                        | "IDEMPOTENCY_KEY_REUSED"
                        | "STORAGE_ERROR"
                        | "CONFLICT"
                ),
                "seed {seed} step {step}: unexpected {e:?}"
            );
        }
        assert_eq!(
            store.posted_sum().await.unwrap(),
            0,
            "seed {seed} step {step}: double entry"
        );
    }

    // Drain: every operation reaches a terminal state. A worker whose commit failed
    // leaves its claim to lapse (30 s lease), so the clock moves past leases.
    for _ in 0..20 {
        engine.settle_all(200).await;
        let mut open = 0;
        for t in &tenants {
            for kind in OpKind::ALL {
                let (ops, _) = engine
                    .list_operations(t, kind, None, 100_000, 0)
                    .await
                    .unwrap();
                open += ops.iter().filter(|o| !o.status.is_terminal()).count();
            }
        }
        if open == 0 {
            break;
        }
        clock.advance_ms(31_000);
    }
    for (t, kind) in tenants.iter().flat_map(|t| OpKind::ALL.map(|k| (t, k))) {
        let (ops, total) = engine
            .list_operations(t, kind, None, 100_000, 0)
            .await
            .unwrap();
        assert_eq!(ops.len() as u64, total);
        for op in ops {
            assert_eq!(op.kind, kind, "a list of one kind holds only that kind");
            assert!(
                op.status.is_terminal(),
                "seed {seed}: {} left {}",
                op.id,
                op.status.as_str()
            );
        }
    }
    // Chain and ledger agree for every wallet, and no hold is left pending.
    for p in &phones {
        let Some(rec) = store
            .get_by_unique(&format!("wallet_phone:{p}"))
            .await
            .unwrap()
        else {
            continue;
        };
        let addr = ChainAddress(
            rec.body.to_value().unwrap()["addresses"]["base"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        let chain = sim.balance(&addr, Token::Usdc).await.unwrap();
        let id = stablecoin::core::domain::ids::WalletId(rec.id.clone());
        let acct = accounts::wallet(&id, Token::Usdc).id;
        let bal = store.balance(&acct).await.unwrap_or_default();
        assert_eq!(bal.debits_pending, 0, "seed {seed}: hold left on {acct}");
        assert_eq!(
            bal.posted(),
            chain.get() as i128,
            "seed {seed}: chain != ledger for {p}"
        );
    }
    for t in &tenants {
        let b = store
            .balance(&accounts::treasury(t, Token::Usdc).id)
            .await
            .unwrap();
        assert_eq!(b.debits_pending, 0, "seed {seed}: treasury hold left");
        assert!(b.available() >= 0);
    }
    let svc = sim.address_for(&KeyPurpose::ServiceFees).await.unwrap();
    let svc_ledger = store
        .balance(&accounts::service_fees(Token::Usdc).id)
        .await
        .map(|b| b.posted())
        .unwrap_or(0);
    assert_eq!(
        svc_ledger,
        sim.balance(&svc, Token::Usdc).await.unwrap().get() as i128,
        "seed {seed}: fees"
    );
}

#[tokio::test]
async fn seeded_workloads_with_faults_conserve_money() {
    for seed in 1..=12u64 {
        run(seed * 7919, 300).await;
    }
}
