//! PostgreSQL group commit (#46, item 1): concurrent interactive commits share one
//! transaction, and each still gets the outcome it would have had alone.
//!
//! To put chosen batches in one group, a test holds a record row locked from another
//! connection, commits a batch that updates it (the only group writer waits on the
//! lock, which `pg_blocking_pids` shows), queues the batches of the group meanwhile (`GroupStats::waiting` says when
//! they are), then lets go. Skipped without `STABLECOIN_TEST_PG_URL`, like `postgres`.

use crate::postgres::{event, pg_available, pg_url, record, schema, single};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerError};
use stablecoin_core::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, Put, Store, StoreError,
};
use stablecoin_store::{PgConfig, PgStore};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// A store whose interactive commits all go through one group writer.
async fn one_writer(tag: &str) -> PgStore {
    PgStore::connect(
        PgConfig::new(pg_url())
            .schema(schema(tag))
            .max_connections(8)
            .group_writers(1),
    )
    .await
    .unwrap()
}

fn new(kind: &str, id: &str) -> Put {
    Put {
        record: record(kind, id, None),
        expected_version: None,
    }
}

fn at(kind: &str, id: &str, version: u64) -> Put {
    Put {
        record: record(kind, id, None),
        expected_version: Some(version),
    }
}

fn idem(key: &str) -> Option<IdempotencyRecord> {
    Some(IdempotencyRecord {
        tenant: "t1".into(),
        key: key.into(),
        request_hash: "h".into(),
        response: serde_json::json!({ "key": key }),
        created_at: Timestamp::from_millis(1),
    })
}

async fn wait_until(store: &PgStore, waiting: u64) {
    for _ in 0..2_000 {
        if store.group_commit_stats().waiting == waiting {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "never {waiting} batches waiting: {:?}",
        store.group_commit_stats()
    );
}

/// Queues `batches` in order behind a commit held on the locked `gate` record (at
/// `gate_version`), releases it, and answers each batch's outcome.
async fn as_one_group(
    store: &PgStore,
    gate_version: u64,
    batches: Vec<Batch>,
) -> Vec<Result<CommitReceipt, StoreError>> {
    let mut holder = store.pool().begin().await.unwrap();
    sqlx::query("SELECT id FROM records WHERE kind = 'gate' FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let spawn = |batch: Batch| -> JoinHandle<Result<CommitReceipt, StoreError>> {
        let store = store.clone();
        tokio::spawn(async move { store.commit(batch).await })
    };
    let holder_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *holder)
        .await
        .unwrap();
    let gate = spawn(Batch {
        puts: vec![at("gate", "gate", gate_version)],
        ..Batch::default()
    });
    // The writer is in the gate's commit once that waits on the holder's lock.
    for tries in 0.. {
        let blocked: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        )
        .bind(holder_pid)
        .fetch_one(store.pool())
        .await
        .unwrap();
        if blocked > 0 {
            break;
        }
        assert!(tries < 2_000, "the gate's commit never waited on the lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut handles = Vec::new();
    for (i, batch) in batches.into_iter().enumerate() {
        handles.push(spawn(batch));
        wait_until(store, i as u64 + 1).await;
    }
    holder.rollback().await.unwrap();
    gate.await.unwrap().unwrap();
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.push(h.await.unwrap());
    }
    outcomes
}

/// `world` (may go negative), `alice` with 100, `fees`; the `gate` record, record `x`
/// at version 1, and the idempotency key `used`.
async fn setup(store: &PgStore) {
    store
        .commit(Batch {
            accounts: ["world", "alice", "fees"]
                .iter()
                .map(|id| LedgerAccount {
                    id: id.to_string(),
                    allow_negative: *id == "world",
                })
                .collect(),
            ledger: vec![single("fund", "world", "alice", 100)],
            puts: vec![new("gate", "gate"), new("x", "x")],
            idempotency: idem("used"),
            ..Batch::default()
        })
        .await
        .unwrap();
}

async fn exists(store: &PgStore, id: &str) -> bool {
    store.get("op", id).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_failing_group_gives_each_batch_its_own_outcome() {
    if !pg_available("postgres_a_failing_group_gives_each_batch_its_own_outcome") {
        return;
    }
    let store = one_writer("group_fail").await;
    setup(&store).await;
    let outcomes = as_one_group(
        &store,
        1,
        vec![
            Batch {
                puts: vec![new("op", "op-1")],
                ledger: vec![single("t1", "alice", "fees", 30)],
                outbox: vec![event("evt_1")],
                ..Batch::default()
            },
            // Stale: `x` is at version 1.
            Batch {
                puts: vec![new("op", "op-2"), at("x", "x", 5)],
                ..Batch::default()
            },
            Batch {
                puts: vec![new("op", "op-3")],
                idempotency: idem("used"),
                ..Batch::default()
            },
            // More than alice has once op-1 took 30.
            Batch {
                puts: vec![new("op", "op-4")],
                ledger: vec![single("t4", "alice", "fees", 80)],
                ..Batch::default()
            },
            Batch {
                puts: vec![new("op", "op-5")],
                ledger: vec![single("t5", "alice", "fees", 50)],
                outbox: vec![event("evt_5a"), event("evt_5b")],
                ..Batch::default()
            },
        ],
    )
    .await;
    let stats = store.group_commit_stats();
    assert_eq!(stats.fallbacks, 1, "{stats:?}");
    assert_eq!(stats.groups, 0, "{stats:?}");

    let mut outcomes = outcomes.into_iter();
    let first = outcomes.next().unwrap().unwrap();
    assert!(matches!(
        outcomes.next().unwrap(),
        Err(StoreError::VersionConflict { id, .. }) if id == "x"
    ));
    assert!(matches!(
        outcomes.next().unwrap(),
        Err(StoreError::IdempotencyExists { key }) if key == "used"
    ));
    assert!(matches!(
        outcomes.next().unwrap(),
        Err(StoreError::Ledger(LedgerError::InsufficientFunds { .. }))
    ));
    let last = outcomes.next().unwrap().unwrap();
    // One by one, in queue order: each gets its own sequence numbers.
    assert_eq!(first.outbox_seqs, vec![1]);
    assert_eq!(last.outbox_seqs, vec![2, 3]);
    for (id, there) in [
        ("op-1", true),
        ("op-2", false),
        ("op-3", false),
        ("op-4", false),
        ("op-5", true),
    ] {
        assert_eq!(exists(&store, id).await, there, "{id}");
    }
    assert_eq!(store.balance("alice").await.unwrap().posted(), 20);
    assert_eq!(store.balance("fees").await.unwrap().posted(), 80);
    assert_eq!(store.get("x", "x").await.unwrap().unwrap().version, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_group_commits_in_one_transaction_and_overlaps_wait_their_turn() {
    if !pg_available("postgres_a_group_commits_in_one_transaction_and_overlaps_wait_their_turn") {
        return;
    }
    let store = one_writer("group_ok").await;
    setup(&store).await;
    let mut batches: Vec<Batch> = (1..=4)
        .map(|i| Batch {
            puts: vec![new("op", &format!("op-{i}"))],
            ledger: vec![single(&format!("t{i}"), "alice", "fees", 10)],
            outbox: (0..i).map(|j| event(&format!("evt_{i}_{j}"))).collect(),
            idempotency: idem(&format!("k{i}")),
            ..Batch::default()
        })
        .collect();
    // Updates op-1, which the first batch creates: it must run after it, alone.
    batches.push(Batch {
        puts: vec![at("op", "op-1", 1)],
        ..Batch::default()
    });
    let outcomes = as_one_group(&store, 1, batches).await;
    let receipts: Vec<CommitReceipt> = outcomes.into_iter().map(Result::unwrap).collect();
    let stats = store.group_commit_stats();
    assert_eq!((stats.groups, stats.grouped_batches), (1, 4), "{stats:?}");
    assert_eq!(stats.fallbacks, 0);
    // Sequence numbers handed back batch by batch, in queue order.
    let seqs: Vec<Vec<u64>> = receipts.iter().map(|r| r.outbox_seqs.clone()).collect();
    assert_eq!(
        seqs,
        vec![
            vec![1],
            vec![2, 3],
            vec![4, 5, 6],
            vec![7, 8, 9, 10],
            vec![]
        ]
    );
    // One transaction wrote the four records.
    let xmins: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM records WHERE kind = 'op' \
         AND id IN ('op-2', 'op-3', 'op-4')",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(xmins.len(), 1, "{xmins:?}");
    assert_eq!(store.get("op", "op-1").await.unwrap().unwrap().version, 2);
    assert_eq!(store.balance("alice").await.unwrap().posted(), 60);
    for i in 1..=4 {
        let key = format!("k{i}");
        assert!(store.idempotency("t1", &key).await.unwrap().is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_commits_with_duplicates_each_commit_once() {
    if !pg_available("postgres_concurrent_commits_with_duplicates_each_commit_once") {
        return;
    }
    const TASKS: usize = 160;
    let s = schema("group_load");
    let connect = || async {
        PgStore::connect(
            PgConfig::new(pg_url())
                .schema(s.clone())
                .max_connections(6)
                .group_writers(2),
        )
        .await
        .unwrap()
    };
    let (a, b) = (connect().await, connect().await);
    setup(&a).await;
    a.commit(Batch {
        ledger: vec![single("more", "world", "alice", 1_000)],
        ..Batch::default()
    })
    .await
    .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
    let mut handles = Vec::new();
    for i in 0..TASKS {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let barrier = barrier.clone();
        // Task 10n+3 repeats the idempotency key of 10n+2, and 10n+7 claims the unique
        // key of 10n+6: one of each pair commits.
        let key = if i % 10 == 3 { i - 1 } else { i };
        let unique = if i % 10 == 7 { i - 1 } else { i };
        let mut put = new("op", &format!("op-{i}"));
        put.record.unique_keys = vec![format!("u:{unique}")];
        let batch = Batch {
            puts: vec![put],
            ledger: vec![single(&format!("t{i}"), "alice", "fees", 1)],
            outbox: vec![event(&format!("evt_{i}"))],
            idempotency: idem(&format!("k{key}")),
            ..Batch::default()
        };
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            store.commit(batch).await
        }));
    }
    let mut committed = 0u64;
    let mut seqs = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.await.unwrap() {
            Ok(r) => {
                committed += 1;
                seqs.extend(r.outbox_seqs);
                assert!(exists(&a, &format!("op-{i}")).await);
            }
            Err(StoreError::IdempotencyExists { .. } | StoreError::UniqueViolation { .. }) => {
                assert!(!exists(&a, &format!("op-{i}")).await, "op-{i} half written");
            }
            Err(e) => panic!("op-{i}: {e:?}"),
        }
    }
    // Of each pair sharing a key, one commits (the pairs do not overlap).
    let pairs = (0..TASKS).filter(|i| i % 10 == 3 || i % 10 == 7).count() as u64;
    assert_eq!(committed, TASKS as u64 - pairs);
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (1..=committed).collect::<Vec<_>>(),
        "gap-free, none twice"
    );
    assert_eq!(
        a.balance("alice").await.unwrap().posted(),
        1_100 - committed as i128
    );
    assert_eq!(a.posted_sum().await.unwrap(), 0);
    let grouped = a.group_commit_stats().groups + b.group_commit_stats().groups;
    assert!(
        grouped > 0,
        "no group formed under {TASKS} concurrent commits"
    );
}
