//! Engine hot paths: the pure fee split, and accepting a P2P transfer (validation, quote
//! parse, fees, ledger holds, one atomic commit) — the work behind a `202` from
//! `POST /v1/transfers/send`, without HTTP: on the in-memory adapters, and on the
//! SQLite store (a file, `synchronous=FULL`) from one caller and from 64 at once.
//!
//! Run: `cargo bench --bench engine`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use stablecoin::core::domain::fees::{TenantPricing, split_fees};
use stablecoin::core::domain::ids::TenantId;
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::engine::{Engine, EngineConfig, FundRequest, Ports, SendRequest};
use stablecoin::core::memory::*;
use stablecoin::core::ports::{KeyPurpose, Rail};
use stablecoin::core::ports::{Ledger, Store};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use stablecoin_store::{SqliteConfig, SqliteStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn fees(c: &mut Criterion) {
    let pricing = TenantPricing::Percentage {
        fee_bps: 75,
        fee_cap_micros: 2_000_000,
    };
    let mut g = c.benchmark_group("domain");
    g.throughput(Throughput::Elements(1));
    let mut n = 1u64;
    g.bench_function("split_fees", |b| {
        b.iter(|| {
            n = n.wrapping_mul(6364136223846793005).wrapping_add(1) % 10_000_000_000 + 1;
            split_fees(Micros::new(n), &pricing)
        })
    });
    g.finish();
}

fn send(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let memory = Arc::new(MemoryStore::new());
    let (engine, tenant, from, to) = rt.block_on(setup(memory.clone(), memory));
    let seq = AtomicU64::new(0);
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(1));
    g.bench_function("send_accept_memory", |b| {
        b.to_async(&rt).iter(|| {
            let key = format!("k{}", seq.fetch_add(1, Ordering::Relaxed));
            let req = send_request(&from, &to);
            let engine = engine.clone();
            let tenant = tenant.clone();
            async move { engine.send(&tenant, &req, Some(&key)).await.unwrap() }
        })
    });

    let dir = tempfile::tempdir().unwrap();
    let sqlite = rt
        .block_on(SqliteStore::open(SqliteConfig::file(
            dir.path().join("bench.db"),
        )))
        .unwrap();
    let sqlite = Arc::new(sqlite);
    let (engine, tenant, from, to) = rt.block_on(setup(sqlite.clone(), sqlite));
    g.bench_function("send_accept_sqlite_1", |b| {
        b.to_async(&rt).iter(|| {
            let req = send_request(&from, &to);
            let engine = engine.clone();
            let tenant = tenant.clone();
            async move { engine.send(&tenant, &req, None).await.unwrap() }
        })
    });
    g.bench_function("send_accept_sqlite_64", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (engine, tenant, from, to) =
                (engine.clone(), tenant.clone(), from.clone(), to.clone());
            async move {
                let per_caller = (iters as usize).div_ceil(64).max(1);
                let start = Instant::now();
                let mut tasks = Vec::new();
                for _ in 0..64 {
                    let req = send_request(&from, &to);
                    let (engine, tenant) = (engine.clone(), tenant.clone());
                    tasks.push(tokio::spawn(async move {
                        for _ in 0..per_caller {
                            engine.send(&tenant, &req, None).await.unwrap();
                        }
                    }));
                }
                for t in tasks {
                    t.await.unwrap();
                }
                start
                    .elapsed()
                    .mul_f64(iters as f64 / (per_caller * 64) as f64)
            }
        })
    });
    g.finish();
}

fn send_request(from: &Phone, to: &Phone) -> SendRequest {
    SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:0.01".into(),
    }
}

/// An engine on `store`, a tenant, and two provisioned wallets, the first funded.
async fn setup(store: Arc<dyn Store>, ledger: Arc<dyn Ledger>) -> (Engine, TenantId, Phone, Phone) {
    {
        let signer = Arc::new(LocalSigner::from_seed([3; 32]));
        let chain = Arc::new(SimRail::new(
            SimProfile::Evm(137),
            signer.clone(),
            SimConfig {
                confirmations: 1,
                auto_mine: true,
            },
        ));
        let ports = Ports {
            store,
            ledger,
            signer,
            notifier: Arc::new(MemoryNotifier::new()),
            rates: Arc::new(FixedRates::demo()),
            payouts: Arc::new(MemoryPayouts::new()),
            clock: Arc::new(SystemClock),
            entropy: Arc::new(OsEntropy),
        };
        let engine = Engine::new(
            ports,
            vec![chain.clone() as Arc<dyn Rail>],
            EngineConfig {
                poll_interval_ms: 0,
                ..Default::default()
            },
        );
        let tenant = engine.create_tenant("bench").await.unwrap().id;
        let treasury = chain.address_for(&KeyPurpose::Treasury).await.unwrap();
        let float = Micros::new(10_000_000_000_000);
        chain.mint(&treasury, Token::Usdc, float).unwrap();
        chain.mine(1);
        engine
            .credit_treasury(&tenant, Token::Usdc, float, "bench")
            .await
            .unwrap();
        let from = Phone::parse("+2250700000001").unwrap();
        let to = Phone::parse("+2250700000002").unwrap();
        engine.provision(&tenant, &from).await.unwrap();
        engine.provision(&tenant, &to).await.unwrap();
        engine
            .fund(
                &tenant,
                &FundRequest {
                    phone_number: from.clone(),
                    token: Token::Usdc,
                    amount: float,
                },
                None,
            )
            .await
            .unwrap();
        engine.settle_all(20).await;
        (engine, tenant, from, to)
    }
}

criterion_group!(benches, fees, send);
criterion_main!(benches);
