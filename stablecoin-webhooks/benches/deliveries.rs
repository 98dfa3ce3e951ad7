//! Durable deliveries per second: N events already in the outbox, one subscribed
//! endpoint on a loopback axum receiver answering 200, W tasks running rounds of one
//! `Deliverer` (as a server process would; each `round` fans out a page unless another
//! task is, and attempts what is due, committing every outcome). Timed from the first round to the last delivery committed; every event must
//! arrive exactly once or the run fails.
//!
//! `cargo bench -p stablecoin-webhooks --bench deliveries` (env: `DELIVERIES_N`, default
//! 20000; `DELIVERIES_WORKERS`, default 4; `DELIVERIES_BATCH`, records per round, default
//! 512; `DELIVERIES_CONCURRENCY`, requests in flight per round, default 64). Prints one
//! line per store.

use axum::body::Bytes;
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::{MemoryStore, SeededEntropy, SystemClock};
use stablecoin_core::ports::{Batch, Clock, Store};
use stablecoin_store::sqlite::{SqliteConfig, SqliteStore};
use stablecoin_webhooks::delivery::outbox_event;
use stablecoin_webhooks::{Deliverer, DeliveryConfig, DeliveryState};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// As the reference server runs: glibc's malloc spent ~15% of this benchmark's CPU
/// freeing and coalescing the large JSON strings of fan-out and claims.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn receiver() -> (String, Arc<Mutex<HashSet<Bytes>>>) {
    let seen: Arc<Mutex<HashSet<Bytes>>> = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |body: Bytes| {
            let s = s.clone();
            async move {
                assert!(s.lock().unwrap().insert(body), "delivered twice");
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

async fn run(label: &str, store: Arc<dyn Store>, n: usize, workers: usize) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let tenant = TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into());
    let (url, seen) = receiver().await;
    let config = |i: usize| DeliveryConfig {
        timeout: Duration::from_secs(10),
        lease_ms: 60_000,
        batch_limit: env("DELIVERIES_BATCH", 512),
        concurrency: env("DELIVERIES_CONCURRENCY", 64),
        worker_id: format!("bench-{i}"),
        allow_networks: stablecoin_webhooks::ssrf::AllowList::loopback(),
        ..DeliveryConfig::default()
    };
    let make = |i: usize| {
        Deliverer::new(
            store.clone(),
            clock.clone(),
            Arc::new(SeededEntropy::new(i as u64 + 1)),
            config(i),
        )
        .unwrap()
    };
    make(0)
        .register(&tenant, &url, &["transfer.settled".into()])
        .await
        .unwrap();
    let now = clock.now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let outbox = chunk
            .iter()
            .map(|i| {
                let e = DomainEvent::TransferSettled {
                    transfer_id: format!("tr_{i:08}"),
                    amount: Micros(25_000_000),
                    token: Token::Usdc,
                    tx_hash: format!("0x{i:064x}"),
                    updated_at: now,
                };
                outbox_event(&format!("evt_{i:08}"), &tenant, now, &e).unwrap()
            })
            .collect();
        store
            .commit(Batch {
                outbox,
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    let shared = make(0);
    for _ in 0..workers {
        let d = shared.clone();
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            while seen.lock().unwrap().len() < n {
                let r = d.round().await.unwrap();
                if r.fanned_out == 0 && r.delivered == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                assert_eq!(r.dead, 0);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Wait until the last outcome is committed, not only received.
    let d = make(99);
    loop {
        let page = d
            .list_deliveries(&tenant, Some(DeliveryState::Delivered), 1, 0)
            .await
            .unwrap();
        if page.total as usize >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(seen.lock().unwrap().len(), n);
    println!(
        "{label:<28} {n} events, {workers} workers: {secs:.2} s, {:.0} deliveries/s",
        n as f64 / secs
    );
}

fn main() {
    // `cargo test --benches` passes `--bench`-less args; only run under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = env("DELIVERIES_N", 20_000);
    let workers = env("DELIVERIES_WORKERS", 4);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        run("memory store", Arc::new(MemoryStore::new()), n, workers).await;
        let dir = std::env::temp_dir().join(format!("deliveries-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sqlite = SqliteStore::open(SqliteConfig::file(dir.join("bench.db")))
            .await
            .unwrap();
        run("sqlite (synchronous=FULL)", Arc::new(sqlite), n, workers).await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
