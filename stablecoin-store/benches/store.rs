//! Store + ledger throughput and commit latency: memory, SQLite (FULL, file on disk) and
//! PostgreSQL (feature `postgres`, when `STABLECOIN_TEST_PG_URL` is set).
//!
//! ```text
//! cargo bench -p stablecoin-store --bench store -- --warm-up-time 1 --measurement-time 3
//! scripts/test-postgres.sh --bench --warm-up-time 1 --measurement-time 3   # + PostgreSQL
//! ```
//!
//! Workloads (a "transfer" below is one ledger transfer: a pending or a post; a two-phase
//! payment is two of them):
//! - `batch1000/<backend>/<accounts>`: one `commit(Batch)` of 1,000 transfers, half of
//!   them posting pending transfers of the previous batch (a steady two-phase pipeline).
//! - `concurrent64/<backend>/<accounts>`: 64 tasks each committing single-transfer batches
//!   (a pending, then its post) as fast as they can: group commit at work.
//!
//! `<accounts>`: `uniform` debits and credits random accounts among 10,000; `hot` debits
//! one treasury account in every transfer. Criterion reports transfers/s (elements);
//! after each benchmark the p50/p99 latency of single `commit` calls is printed.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::memory::MemoryStore;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{Batch, Store};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACCOUNTS: usize = 10_000;
const BATCH: usize = 1_000;
const CALLERS: usize = 64;

trait Both: Store + Ledger {}
impl<T: Store + Ledger> Both for T {}
type Shared = Arc<dyn Both>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Accounts {
    Uniform,
    Hot,
}

impl Accounts {
    fn name(self) -> &'static str {
        match self {
            Accounts::Uniform => "uniform",
            Accounts::Hot => "hot",
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn next_id(prefix: &str) -> String {
    format!("{prefix}{}", NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// xorshift64*: deterministic, dependency-free account picking.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

fn user(i: usize) -> String {
    format!("user-{i:05}")
}

/// Creates world, treasury and the users, and funds treasury and every user.
async fn setup(store: &Shared) {
    let mut accounts = vec![
        LedgerAccount {
            id: "world".into(),
            allow_negative: true,
        },
        LedgerAccount {
            id: "treasury".into(),
            allow_negative: false,
        },
    ];
    accounts.extend((0..ACCOUNTS).map(|i| LedgerAccount {
        id: user(i),
        allow_negative: false,
    }));
    let mut ledger = vec![LedgerTransfer {
        id: next_id("fund-"),
        debit: "world".into(),
        credit: "treasury".into(),
        amount: Micros(1 << 60),
        phase: Phase::Single,
    }];
    ledger.extend((0..ACCOUNTS).map(|i| LedgerTransfer {
        id: next_id("fund-"),
        debit: "world".into(),
        credit: user(i),
        amount: Micros(1 << 40),
        phase: Phase::Single,
    }));
    store
        .commit(Batch {
            accounts,
            ledger,
            ..Batch::default()
        })
        .await
        .expect("setup commit");
}

fn pick(rng: &mut Rng, accounts: Accounts) -> (String, String) {
    let credit = rng.below(ACCOUNTS);
    let debit = match accounts {
        Accounts::Hot => "treasury".to_string(),
        Accounts::Uniform => {
            let mut d = rng.below(ACCOUNTS);
            if d == credit {
                d = (d + 1) % ACCOUNTS;
            }
            user(d)
        }
    };
    (debit, user(credit))
}

fn pending(debit: String, credit: String) -> LedgerTransfer {
    LedgerTransfer {
        id: next_id("p-"),
        debit,
        credit,
        amount: Micros(1),
        phase: Phase::Pending,
    }
}

fn post_of(p: &LedgerTransfer) -> LedgerTransfer {
    LedgerTransfer {
        id: format!("{}-post", p.id),
        debit: p.debit.clone(),
        credit: p.credit.clone(),
        amount: p.amount,
        phase: Phase::Post {
            pending_id: p.id.clone(),
        },
    }
}

type Latencies = Arc<Mutex<Vec<Duration>>>;

fn report(name: &str, latencies: &Latencies) {
    let mut l = latencies.lock().unwrap();
    if l.is_empty() {
        return;
    }
    l.sort();
    let at = |q: f64| l[((l.len() as f64 * q) as usize).min(l.len() - 1)];
    println!(
        "{name}: commit latency p50 {:.3} ms, p99 {:.3} ms over {} commits",
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        l.len()
    );
    l.clear();
}

/// One batch of BATCH transfers: posts of up to half of the outstanding pendings, then
/// new pendings.
fn pipeline_batch(
    outstanding: &mut VecDeque<LedgerTransfer>,
    rng: &mut Rng,
    accounts: Accounts,
) -> Batch {
    let mut ledger = Vec::with_capacity(BATCH);
    while ledger.len() < BATCH / 2 {
        let Some(p) = outstanding.pop_front() else {
            break;
        };
        ledger.push(post_of(&p));
    }
    while ledger.len() < BATCH {
        let (d, c) = pick(rng, accounts);
        let p = pending(d, c);
        outstanding.push_back(p.clone());
        ledger.push(p);
    }
    Batch {
        ledger,
        ..Batch::default()
    }
}

fn bench_backend(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    backend: &str,
    make: &dyn Fn() -> Shared,
) {
    for accounts in [Accounts::Uniform, Accounts::Hot] {
        let store = make();
        rt.block_on(setup(&store));
        let latencies: Latencies = Arc::default();

        let mut group = c.benchmark_group("batch1000");
        group.throughput(Throughput::Elements(BATCH as u64));
        group.sample_size(10);
        let outstanding = Arc::new(Mutex::new(VecDeque::new()));
        let rng = Arc::new(Mutex::new(Rng(0x9E37_79B9_7F4A_7C15)));
        group.bench_function(BenchmarkId::new(backend, accounts.name()), |b| {
            b.to_async(rt).iter_custom(|iters| {
                let store = store.clone();
                let latencies = latencies.clone();
                let outstanding = outstanding.clone();
                let rng = rng.clone();
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let batch = {
                            let mut o = outstanding.lock().unwrap();
                            pipeline_batch(&mut o, &mut rng.lock().unwrap(), accounts)
                        };
                        let start = Instant::now();
                        store.commit(batch).await.expect("batch commit");
                        let took = start.elapsed();
                        total += took;
                        latencies.lock().unwrap().push(took);
                    }
                    total
                }
            })
        });
        group.finish();
        report(
            &format!("batch1000/{backend}/{}", accounts.name()),
            &latencies,
        );

        let mut group = c.benchmark_group("concurrent64");
        group.throughput(Throughput::Elements(1));
        group.sample_size(10);
        group.bench_function(BenchmarkId::new(backend, accounts.name()), |b| {
            b.to_async(rt).iter_custom(|iters| {
                let store = store.clone();
                let latencies = latencies.clone();
                async move {
                    // iters transfers in all: each caller does pending + post pairs.
                    let per_caller = (iters as usize).div_ceil(2 * CALLERS).max(1);
                    let start = Instant::now();
                    let mut tasks = Vec::with_capacity(CALLERS);
                    for caller in 0..CALLERS {
                        let store = store.clone();
                        let latencies = latencies.clone();
                        tasks.push(tokio::spawn(async move {
                            let mut rng = Rng(0x1234_5678 + caller as u64 * 7919);
                            let mut mine = Vec::with_capacity(per_caller * 2);
                            for _ in 0..per_caller {
                                let (d, c) = pick(&mut rng, accounts);
                                let p = pending(d, c);
                                let post = post_of(&p);
                                for t in [p, post] {
                                    let s = Instant::now();
                                    store
                                        .commit(Batch {
                                            ledger: vec![t],
                                            ..Batch::default()
                                        })
                                        .await
                                        .expect("single-transfer commit");
                                    mine.push(s.elapsed());
                                }
                            }
                            latencies.lock().unwrap().extend(mine);
                        }));
                    }
                    for t in tasks {
                        t.await.expect("caller task");
                    }
                    let took = start.elapsed();
                    // Scale to the iters criterion asked for.
                    let done = (per_caller * 2 * CALLERS) as f64;
                    took.mul_f64(iters as f64 / done)
                }
            })
        });
        group.finish();
        report(
            &format!("concurrent64/{backend}/{}", accounts.name()),
            &latencies,
        );
        let sum = rt.block_on(store.posted_sum()).expect("posted_sum");
        assert_eq!(sum, 0, "{backend}: ledger must balance after the bench");
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    bench_backend(c, &rt, "memory", &|| Arc::new(MemoryStore::new()) as Shared);

    #[cfg(feature = "sqlite")]
    {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
        let n = AtomicU64::new(0);
        let make = || {
            let path = dir
                .path()
                .join(format!("bench-{}.db", n.fetch_add(1, Ordering::Relaxed)));
            let config = stablecoin_store::SqliteConfig::file(path)
                .durability(stablecoin_store::Durability::Full);
            let store = rt
                .block_on(stablecoin_store::SqliteStore::open(config))
                .expect("open sqlite");
            Arc::new(store) as Shared
        };
        bench_backend(c, &rt, "sqlite_full", &make);
    }

    #[cfg(feature = "postgres")]
    match std::env::var("STABLECOIN_TEST_PG_URL") {
        Ok(url) => {
            let n = AtomicU64::new(0);
            let make = || {
                let schema = format!(
                    "bench_{}_{}",
                    std::process::id(),
                    n.fetch_add(1, Ordering::Relaxed)
                );
                let config = stablecoin_store::PgConfig::new(url.clone())
                    .schema(schema)
                    .max_connections(16);
                let store = rt
                    .block_on(stablecoin_store::PgStore::connect(config))
                    .expect("connect postgres");
                Arc::new(store) as Shared
            };
            bench_backend(c, &rt, "postgres", &make);
        }
        Err(_) => eprintln!("STABLECOIN_TEST_PG_URL not set: PostgreSQL benches skipped"),
    }
}

criterion_group! {
    name = store;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(store);
