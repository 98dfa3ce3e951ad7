//! Concurrency on SQLite: many callers debiting one account at once never overdraw it,
//! group commit really groups them, two stores (two writers) on one database file stay
//! consistent, and concurrent claimers never receive the same record.
#![cfg(feature = "sqlite")]

use serde_json::json;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{Batch, OutboxEvent, Put, Store, StoreError, StoredRecord};
use stablecoin_store::{SqliteConfig, SqliteStore};
use std::collections::HashSet;
use std::sync::Arc;

fn single(id: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    LedgerTransfer {
        id: id.into(),
        debit: debit.into(),
        credit: credit.into(),
        amount: Micros(amount),
        phase: Phase::Single,
    }
}

fn record(kind: &str, id: &str, due: Option<i64>) -> StoredRecord {
    StoredRecord {
        kind: kind.into(),
        id: id.into(),
        tenant: Some("t1".into()),
        version: 0,
        created_at: Timestamp::from_millis(1),
        status: None,
        subkind: None,
        due_at: due.map(Timestamp::from_millis),
        lane: 0,
        unique_keys: vec![],
        body: json!({ "id": id }).into(),
    }
}

/// Deterministic amounts 1..=100 without a rand dependency.
fn amount_of(i: usize) -> u64 {
    ((i as u64).wrapping_mul(2_654_435_761) % 100) + 1
}

async fn fund_treasury(store: &SqliteStore, funds: u64) {
    let batch = Batch {
        accounts: vec![
            LedgerAccount {
                id: "world".into(),
                allow_negative: true,
            },
            LedgerAccount {
                id: "treasury".into(),
                allow_negative: false,
            },
            LedgerAccount {
                id: "users".into(),
                allow_negative: false,
            },
        ],
        ledger: vec![single("fund", "world", "treasury", funds)],
        ..Batch::default()
    };
    store.commit(batch).await.expect("funding");
}

/// 64 tasks over `stores` (round-robin) debit the treasury at once; returns the amounts
/// accepted. Every refusal must be `InsufficientFunds`. Every third debit is background
/// work, which the writer holds and reorders behind interactive commits: the ledger
/// rules must hold whatever order the group applies them in.
async fn debit_concurrently(stores: &[SqliteStore], tasks: usize) -> Vec<u64> {
    let barrier = Arc::new(tokio::sync::Barrier::new(tasks));
    let mut handles = Vec::new();
    for i in 0..tasks {
        let store = stores[i % stores.len()].clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let amount = amount_of(i);
            let batch = Batch {
                ledger: vec![single(&format!("debit-{i}"), "treasury", "users", amount)],
                puts: vec![Put {
                    record: record("payout", &format!("payout-{i}"), None),
                    expected_version: None,
                }],
                outbox: vec![OutboxEvent {
                    id: format!("evt_{i}"),
                    tenant: "t1".into(),
                    event_type: "payout.created".into(),
                    occurred_at: Timestamp::from_millis(1),
                    payload: json!({ "i": i }),
                }],
                background: i % 3 == 0,
                ..Batch::default()
            };
            (amount, store.commit(batch).await)
        }));
    }
    let mut accepted = Vec::new();
    for handle in handles {
        match handle.await.expect("task") {
            (amount, Ok(_)) => accepted.push(amount),
            (_, Err(StoreError::Ledger(LedgerError::InsufficientFunds { account, .. }))) => {
                assert_eq!(account, "treasury")
            }
            (_, Err(e)) => panic!("a concurrent debit failed with {e:?}, not InsufficientFunds"),
        }
    }
    accepted
}

async fn check_treasury(store: &SqliteStore, funds: u64, accepted: &[u64], tasks: usize) {
    let spent: u64 = accepted.iter().sum();
    assert!(spent <= funds, "accepted {spent} out of {funds}: overdrawn");
    let treasury = store.balance("treasury").await.unwrap();
    assert_eq!(treasury.posted(), (funds - spent) as i128, "final balance");
    assert!(treasury.posted() >= 0);
    assert_eq!(
        store.balance("users").await.unwrap().posted(),
        spent as i128
    );
    assert_eq!(store.posted_sum().await.unwrap(), 0);
    let history = store.history("treasury", 0, 1_000).await.unwrap();
    assert_eq!(
        history.len(),
        1 + accepted.len(),
        "one entry per accepted debit"
    );
    // Outbox: one event per accepted debit, gap-free sequence numbers 1..=n.
    let outbox = store.outbox_after(0, 1_000).await.unwrap();
    let seqs: Vec<u64> = outbox.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (1..=accepted.len() as u64).collect::<Vec<_>>());
    assert!(accepted.len() < tasks, "the funds were meant to run out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_64_concurrent_debits_of_one_account_never_overdraw() {
    const TASKS: usize = 64;
    const FUNDS: u64 = 2_000; // ~40 of the 64 debits (1..=100 each) fit
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(SqliteConfig::file(dir.path().join("c.db")))
        .await
        .unwrap();
    fund_treasury(&store, FUNDS).await;
    let accepted = debit_concurrently(std::slice::from_ref(&store), TASKS).await;
    check_treasury(&store, FUNDS, &accepted, TASKS).await;
    let stats = store.writer_stats();
    assert!(
        stats.largest_group > 1,
        "64 simultaneous callers must share transactions (group commit): {stats:?}"
    );
    assert!(stats.groups < stats.operations, "{stats:?}");
    assert_eq!(stats.failed_groups, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_two_stores_on_one_file_debit_one_account_without_overdraft() {
    // Two writers (as two processes would have) take turns on SQLite's write lock; each
    // must notice the other's commits and drop its cached account rows.
    const TASKS: usize = 64;
    const FUNDS: u64 = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.db");
    let a = SqliteStore::open(SqliteConfig::file(&path)).await.unwrap();
    let b = SqliteStore::open(SqliteConfig::file(&path)).await.unwrap();
    fund_treasury(&a, FUNDS).await;
    for round in 0..3 {
        // Warm both caches with the treasury row, then race.
        let _ = a
            .commit(Batch {
                ledger: vec![single(&format!("warm-a-{round}"), "world", "users", 1)],
                ..Batch::default()
            })
            .await
            .unwrap();
        let _ = b
            .commit(Batch {
                ledger: vec![single(&format!("warm-b-{round}"), "world", "users", 1)],
                ..Batch::default()
            })
            .await
            .unwrap();
    }
    let accepted = debit_concurrently(&[a.clone(), b.clone()], TASKS).await;
    let spent: u64 = accepted.iter().sum();
    assert!(
        spent <= FUNDS,
        "two writers overdrew the account: {spent} > {FUNDS}"
    );
    for store in [&a, &b] {
        let treasury = store.balance("treasury").await.unwrap();
        assert_eq!(treasury.posted(), (FUNDS - spent) as i128);
        assert_eq!(store.posted_sum().await.unwrap(), 0);
    }
    // Outbox numbers stay unique and gap-free across the two writers.
    let outbox = a.outbox_after(0, 1_000).await.unwrap();
    let seqs: Vec<u64> = outbox.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (1..=accepted.len() as u64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_concurrent_claimers_never_get_the_same_record() {
    const RECORDS: usize = 300;
    const WORKERS: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claims.db");
    let a = SqliteStore::open(SqliteConfig::file(&path)).await.unwrap();
    let b = SqliteStore::open(SqliteConfig::file(&path)).await.unwrap();
    let puts = (0..RECORDS)
        .map(|i| Put {
            record: record("job", &format!("job-{i:03}"), Some(i as i64)),
            expected_version: None,
        })
        .collect();
    a.commit(Batch {
        puts,
        ..Batch::default()
    })
    .await
    .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(WORKERS));
    let mut handles = Vec::new();
    for w in 0..WORKERS {
        let store = if w % 2 == 0 { a.clone() } else { b.clone() };
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_due(
                        "job",
                        0,
                        &format!("w{w}"),
                        Timestamp::from_millis(10_000),
                        60_000,
                        4,
                    )
                    .await
                    .expect("claim_due");
                if got.is_empty() {
                    break mine;
                }
                mine.extend(got.into_iter().map(|r| r.id));
            }
        }));
    }
    let mut seen = HashSet::new();
    for handle in handles {
        for id in handle.await.unwrap() {
            assert!(seen.insert(id.clone()), "{id} was claimed twice");
        }
    }
    assert_eq!(
        seen.len(),
        RECORDS,
        "every due record is claimed exactly once"
    );
}
