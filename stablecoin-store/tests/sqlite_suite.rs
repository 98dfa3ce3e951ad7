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
