//! The conformance suite of `stablecoin-core` (the same one `MemoryStore` passes), on
//! SQLite: a database file in a temporary directory, and `:memory:`.
#![cfg(feature = "sqlite")]

use stablecoin_core::testkit;
use stablecoin_store::{Durability, SqliteConfig, SqliteStore};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_file_passes_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    testkit::store_suite(|| {
        let path = dir.path().join(format!(
            "suite-{}.db",
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        async move { Arc::new(SqliteStore::open(SqliteConfig::file(path)).await.unwrap()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_memory_passes_store_suite() {
    testkit::store_suite(|| async { Arc::new(SqliteStore::open_in_memory().await.unwrap()) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_file_with_normal_durability_and_one_reader_passes_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    testkit::store_suite(|| {
        let path = dir.path().join(format!(
            "normal-{}.db",
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let config = SqliteConfig::file(path)
            .durability(Durability::Normal)
            .readers(1)
            .max_group(3);
        async move { Arc::new(SqliteStore::open(config).await.unwrap()) }
    })
    .await;
}

/// The outbox numbers its events from its rows when the database opens, so a purge
/// keeps the newest row: after purging everything a consumer has passed and reopening
/// the file, the next event still comes after the consumer's cursor (issue 47's outbox
/// retention; were the table emptied, numbering would restart at 1 and the consumer would
/// skip every event up to its old cursor).
#[tokio::test]
async fn sqlite_outbox_numbers_continue_after_a_purge_and_a_reopen() {
    use serde_json::json;
    use stablecoin_core::domain::time::Timestamp;
    use stablecoin_core::ports::store::{Batch, OutboxEvent, Purge, PurgeTarget, Store};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let event = |id: &str| OutboxEvent {
        id: id.to_string(),
        tenant: "t1".to_string(),
        event_type: "widget.changed".to_string(),
        occurred_at: Timestamp::from_millis(1_000),
        payload: json!({ "event": id }),
    };
    let store = SqliteStore::open(SqliteConfig::file(path.clone()))
        .await
        .unwrap();
    let receipt = store
        .commit(Batch {
            outbox: vec![event("e1"), event("e2"), event("e3")],
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(receipt.outbox_seqs, vec![1, 2, 3]);
    let cursor = 3;
    let purge = Purge {
        target: PurgeTarget::Outbox {
            through_seq: cursor,
        },
        before: Timestamp::from_millis(i64::MAX),
        limit: 100,
    };
    assert_eq!(store.purge(&purge).await.unwrap(), 2, "all but the newest");
    store.close().await;

    let store = SqliteStore::open(SqliteConfig::file(path)).await.unwrap();
    let receipt = store
        .commit(Batch {
            outbox: vec![event("e4")],
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        receipt.outbox_seqs,
        vec![4],
        "numbered after every event ever committed"
    );
    let after: Vec<_> = store
        .outbox_after(cursor, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|(seq, e)| (seq, e.id))
        .collect();
    assert_eq!(after, vec![(4, "e4".to_string())]);
    store.close().await;
}
