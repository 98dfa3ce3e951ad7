//! Bad input at the store layer: every batch that violates a rule is refused with a
//! typed error and leaves the database byte-for-byte unchanged (checked by dumping every
//! table through a separate connection), including amounts that do not fit in i64; and a
//! bad batch committed in the same group as good ones fails alone.
#![cfg(feature = "sqlite")]

use serde_json::json;
use sqlx::{Connection, Row, SqliteConnection};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{
    Batch, IdempotencyRecord, OutboxEvent, Put, Store, StoreError, StoredRecord,
};
use stablecoin_store::{MAX_AMOUNT_MICROS, SqliteConfig, SqliteStore};
use std::path::Path;
use std::sync::Arc;

fn transfer(id: &str, debit: &str, credit: &str, amount: u64, phase: Phase) -> LedgerTransfer {
    LedgerTransfer {
        id: id.into(),
        debit: debit.into(),
        credit: credit.into(),
        amount: Micros(amount),
        phase,
    }
}

fn single(id: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    transfer(id, debit, credit, amount, Phase::Single)
}

fn record(id: &str, keys: &[&str]) -> StoredRecord {
    StoredRecord {
        kind: "widget".into(),
        id: id.into(),
        tenant: Some("t1".into()),
        version: 0,
        created_at: Timestamp::from_millis(5),
        status: Some("open".into()),
        subkind: None,
        due_at: Some(Timestamp::from_millis(7)),
        lane: 0,
        unique_keys: keys.iter().map(|k| k.to_string()).collect(),
        body: json!({ "id": id }).into(),
    }
}

fn insert(r: StoredRecord) -> Put {
    Put {
        record: r,
        expected_version: None,
    }
}

fn event(id: &str) -> OutboxEvent {
    OutboxEvent {
        id: id.into(),
        tenant: "t1".into(),
        event_type: "widget.changed".into(),
        occurred_at: Timestamp::from_millis(9),
        payload: json!({ "id": id }),
    }
}

fn idem(key: &str) -> IdempotencyRecord {
    IdempotencyRecord {
        tenant: "t1".into(),
        key: key.into(),
        request_hash: "h".into(),
        response: json!({ "ok": true }),
        created_at: Timestamp::from_millis(3),
    }
}

/// Every row of every table, as text, in a stable order.
async fn dump(path: &Path) -> Vec<String> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let mut conn = SqliteConnection::connect(&url).await.unwrap();
    let mut out = Vec::new();
    for table in [
        "records",
        "unique_keys",
        "idempotency",
        "ledger_accounts",
        "ledger_transfers",
        "ledger_meta",
        "outbox",
    ] {
        let sql = format!("SELECT * FROM {table} ORDER BY 1, 2");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        for row in rows {
            let mut cells = vec![table.to_string()];
            for i in 0..row.len() {
                let cell = row
                    .try_get::<Option<String>, _>(i)
                    .ok()
                    .flatten()
                    .or_else(|| {
                        row.try_get::<Option<i64>, _>(i)
                            .ok()
                            .flatten()
                            .map(|v| v.to_string())
                    })
                    .unwrap_or_else(|| "NULL".into());
                cells.push(cell);
            }
            out.push(cells.join("|"));
        }
    }
    conn.close().await.unwrap();
    out
}

async fn setup(store: &SqliteStore) {
    let batch = Batch {
        unchanged: vec![],
        accounts: vec![
            LedgerAccount {
                id: "world".into(),
                allow_negative: true,
            },
            LedgerAccount {
                id: "alice".into(),
                allow_negative: false,
            },
            LedgerAccount {
                id: "bob".into(),
                allow_negative: false,
            },
        ],
        ledger: vec![
            single("fund", "world", "alice", 1_000),
            transfer("hold", "alice", "bob", 100, Phase::Pending),
        ],
        puts: vec![insert(record("w1", &["key:1"]))],
        outbox: vec![event("evt_setup")],
        idempotency: Some(idem("k-setup")),
        background: false,
    };
    store.commit(batch).await.expect("setup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_bad_batches_are_typed_errors_and_leave_the_database_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.db");
    let store = SqliteStore::open(SqliteConfig::file(&path)).await.unwrap();
    setup(&store).await;
    let before = dump(&path).await;
    assert!(
        before.len() > 8,
        "the dump must see the setup rows: {before:?}"
    );

    // Each bad batch also carries good parts (a fresh record, an account, a transfer, an
    // event, an idempotency record) that must roll back with it.
    let good_parts = || Batch {
        unchanged: vec![],
        puts: vec![insert(record("fresh", &["key:fresh"]))],
        accounts: vec![LedgerAccount {
            id: "carol".into(),
            allow_negative: false,
        }],
        ledger: vec![single("ok", "alice", "bob", 10)],
        outbox: vec![event("evt_bad")],
        idempotency: Some(idem("k-bad")),
        background: false,
    };
    type Check = fn(&StoreError) -> bool;
    let cases: Vec<(&str, Batch, Check)> = vec![
        (
            "unique key taken",
            {
                let mut b = good_parts();
                b.puts.push(insert(record("w2", &["key:1"])));
                b
            },
            |e| matches!(e, StoreError::UniqueViolation { key } if key == "key:1"),
        ),
        (
            "version conflict",
            {
                let mut b = good_parts();
                b.puts.push(Put {
                    record: record("w1", &["key:1"]),
                    expected_version: Some(7),
                });
                b
            },
            |e| matches!(e, StoreError::VersionConflict { .. }),
        ),
        (
            "idempotency key reused",
            {
                let mut b = good_parts();
                b.idempotency = Some(idem("k-setup"));
                b
            },
            |e| matches!(e, StoreError::IdempotencyExists { .. }),
        ),
        (
            "overdraft",
            {
                let mut b = good_parts();
                b.ledger.push(single("big", "alice", "bob", 1_000));
                b
            },
            |e| matches!(e, StoreError::Ledger(LedgerError::InsufficientFunds { .. })),
        ),
        (
            "amount above i64::MAX",
            {
                let mut b = good_parts();
                b.ledger
                    .push(single("huge", "world", "bob", MAX_AMOUNT_MICROS + 1));
                b
            },
            |e| {
                matches!(e, StoreError::Ledger(LedgerError::InvalidTransfer { reason, .. })
                    if reason.contains("2^63"))
            },
        ),
        (
            "account sum would pass i64::MAX",
            {
                let mut b = good_parts();
                b.ledger
                    .push(single("m1", "world", "bob", MAX_AMOUNT_MICROS));
                b.ledger.push(single("m2", "world", "bob", 1));
                b
            },
            |e| matches!(e, StoreError::Ledger(LedgerError::InvalidTransfer { .. })),
        ),
        (
            "unknown account",
            {
                let mut b = good_parts();
                b.ledger.push(single("g", "ghost", "bob", 1));
                b
            },
            |e| matches!(e, StoreError::Ledger(LedgerError::UnknownAccount { .. })),
        ),
        (
            "transfer id reused with other fields",
            {
                let mut b = good_parts();
                b.ledger.push(single("fund", "world", "alice", 999));
                b
            },
            |e| matches!(e, StoreError::Ledger(LedgerError::TransferExists { .. })),
        ),
        (
            "account re-created with other flags",
            {
                let mut b = good_parts();
                b.accounts.push(LedgerAccount {
                    id: "alice".into(),
                    allow_negative: true,
                });
                b
            },
            |e| matches!(e, StoreError::Ledger(LedgerError::AccountExists { .. })),
        ),
        (
            "post of a pending with another amount",
            {
                let mut b = good_parts();
                b.ledger.push(transfer(
                    "hold-post",
                    "alice",
                    "bob",
                    99,
                    Phase::Post {
                        pending_id: "hold".into(),
                    },
                ));
                b
            },
            |e| matches!(e, StoreError::Ledger(LedgerError::InvalidTransfer { .. })),
        ),
    ];
    for (what, batch, check) in cases {
        let err = store
            .commit(batch)
            .await
            .expect_err(&format!("{what}: must fail"));
        assert!(check(&err), "{what}: unexpected error {err:?}");
        assert_ne!(err.code(), "STORAGE_ERROR", "{what}: must be a typed error");
        assert_eq!(dump(&path).await, before, "{what}: database changed");
    }
    // The store still works, and the ids of refused batches were not consumed.
    store
        .commit(good_parts())
        .await
        .expect("good batch after bad ones");
    assert_eq!(store.balance("bob").await.unwrap().posted(), 10);
    assert_eq!(store.posted_sum().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_bad_batches_in_a_group_fail_alone() {
    // Good and bad batches arrive together and share group transactions; each bad one
    // is rolled back to its savepoint, every good one commits.
    const N: usize = 48;
    let store = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    setup(&store).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut handles = Vec::new();
    for i in 0..N {
        let store = store.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            let bad = i % 2 == 1;
            let mut batch = Batch {
                puts: vec![insert(record(&format!("r{i}"), &[&format!("key:r{i}")]))],
                ledger: vec![single(&format!("t{i}"), "world", "bob", 1)],
                outbox: vec![event(&format!("evt_{i}"))],
                idempotency: Some(idem(&format!("k{i}"))),
                ..Batch::default()
            };
            if bad {
                // Fails after its put, idempotency record and first transfer were applied.
                batch
                    .ledger
                    .push(single(&format!("x{i}"), "alice", "bob", 5_000));
            }
            barrier.wait().await;
            (bad, store.commit(batch).await)
        }));
    }
    let mut good = 0;
    for handle in handles {
        match handle.await.unwrap() {
            (false, Ok(_)) => good += 1,
            (true, Err(StoreError::Ledger(LedgerError::InsufficientFunds { .. }))) => {}
            (bad, other) => panic!("bad={bad}: unexpected {other:?}"),
        }
    }
    assert_eq!(good, N / 2);
    assert!(
        store.writer_stats().largest_group > 1,
        "{:?}",
        store.writer_stats()
    );
    for i in 0..N {
        let exists = store
            .get("widget", &format!("r{i}"))
            .await
            .unwrap()
            .is_some();
        let idem = store
            .idempotency("t1", &format!("k{i}"))
            .await
            .unwrap()
            .is_some();
        assert_eq!(exists, i % 2 == 0, "record r{i}");
        assert_eq!(idem, i % 2 == 0, "idempotency k{i}");
    }
    // bob: 100 pending from setup; +1 posted per good batch.
    assert_eq!(
        store.balance("bob").await.unwrap().posted(),
        (N / 2) as i128
    );
    let outbox = store.outbox_after(0, 1_000).await.unwrap();
    assert_eq!(outbox.len(), 1 + N / 2);
    let seqs: Vec<u64> = outbox.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (1..=(1 + N / 2) as u64).collect::<Vec<_>>(),
        "gap-free"
    );
    assert_eq!(store.posted_sum().await.unwrap(), 0);
}
