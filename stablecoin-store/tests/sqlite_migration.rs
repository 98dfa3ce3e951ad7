//! Upgrading a database written by schema v1 (`0001_init.sql`, records and idempotency
//! as WITHOUT ROWID tables) to the current schema: every row survives, keys stay unique,
//! and the store works on the migrated file as on a new one.
#![cfg(feature = "sqlite")]

use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::store::{
    Batch, IdempotencyRecord, ListQuery, Put, Store, StoreError, StoredRecord,
};
use stablecoin_store::SqliteStore;
use std::path::Path;

const V1: &str = include_str!("../migrations/sqlite/0001_init.sql");

/// A database file at schema v1, as a release with only `0001_init.sql` left it.
async fn v1_database(dir: &Path, file: &Path) {
    let migrations = dir.join("v1-migrations");
    std::fs::create_dir_all(&migrations).unwrap();
    std::fs::write(migrations.join("0001_init.sql"), V1).unwrap();
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(file)
                .create_if_missing(true),
        )
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(migrations.as_path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    // Two operations, one with a body large enough to overflow a v1 key cell.
    let big = "x".repeat(3000);
    for (id, created, body) in [
        ("op_1", 1_i64, format!(r#"{{"n":1,"pad":"{big}"}}"#)),
        ("op_2", 2, r#"{"n":2}"#.to_string()),
    ] {
        sqlx::query(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
             unique_keys, body) VALUES ('operation', ?1, 't1', 3, ?2, 'QUEUED', ?2, ?3, ?4)",
        )
        .bind(id)
        .bind(created)
        .bind(format!(r#"["optx:{id}"]"#))
        .bind(body)
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query("INSERT INTO unique_keys (key, kind, id) VALUES (?1, 'operation', ?2)")
            .bind(format!("optx:{id}"))
            .bind(id)
            .execute(&pool)
            .await
            .unwrap();
    }
    sqlx::query(
        "INSERT INTO idempotency (tenant, key, request_hash, response, created_at) \
         VALUES ('t1', 'key-1', 'hash-1', '{\"id\":\"op_1\"}', 5)",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

fn put(id: &str, version: Option<u64>, body: serde_json::Value) -> Put {
    Put {
        record: StoredRecord {
            kind: "operation".into(),
            id: id.into(),
            tenant: Some("t1".into()),
            version: 0,
            created_at: Timestamp::from_millis(1),
            status: Some("SETTLED".into()),
            due_at: None,
            unique_keys: vec![format!("optx:{id}")],
            body: body.into(),
        },
        expected_version: version,
    }
}

#[tokio::test]
async fn a_v1_database_is_migrated_with_every_row_and_key_intact() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v1.db");
    v1_database(dir.path(), &file).await;

    let store = SqliteStore::open_path(&file).await.unwrap();

    // Rows survive with their metadata and full bodies.
    let op1 = store.get("operation", "op_1").await.unwrap().unwrap();
    assert_eq!(op1.version, 3);
    assert_eq!(op1.status.as_deref(), Some("QUEUED"));
    assert_eq!(
        op1.body.to_value().unwrap()["pad"].as_str().map(str::len),
        Some(3000)
    );
    let by_key = store.get_by_unique("optx:op_2").await.unwrap().unwrap();
    assert_eq!(by_key.id, "op_2");
    let (page, total) = store
        .list(&ListQuery {
            kind: "operation".into(),
            tenant: "t1".into(),
            status: Some("QUEUED".into()),
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!(total, 2);
    assert_eq!(
        page.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["op_2", "op_1"]
    );
    let idem = store.idempotency("t1", "key-1").await.unwrap().unwrap();
    assert_eq!(idem.request_hash, "hash-1");

    // (kind, id) and (tenant, key) are still unique: a second insert of either fails,
    // and an update at the migrated version goes through.
    let dup = store
        .commit(Batch {
            puts: vec![put("op_1", None, json!({}))],
            ..Default::default()
        })
        .await;
    assert!(
        matches!(dup, Err(StoreError::VersionConflict { .. })),
        "{dup:?}"
    );
    let dup_key = store
        .commit(Batch {
            idempotency: Some(IdempotencyRecord {
                tenant: "t1".into(),
                key: "key-1".into(),
                request_hash: "hash-2".into(),
                response: json!({}),
                created_at: Timestamp::from_millis(6),
            }),
            ..Default::default()
        })
        .await;
    assert!(
        matches!(dup_key, Err(StoreError::IdempotencyExists { .. })),
        "{dup_key:?}"
    );
    store
        .commit(Batch {
            puts: vec![put("op_1", Some(3), json!({"n": 1, "settled": true}))],
            ..Default::default()
        })
        .await
        .unwrap();
    let op1 = store.get("operation", "op_1").await.unwrap().unwrap();
    assert_eq!(
        (
            op1.version,
            op1.body.to_value().unwrap()["settled"].as_bool()
        ),
        (4, Some(true))
    );
    store.close().await;

    // The new layout is in place, and reopening applies nothing twice.
    let store = SqliteStore::open_path(&file).await.unwrap();
    assert_eq!(
        store
            .get("operation", "op_2")
            .await
            .unwrap()
            .unwrap()
            .version,
        3
    );
    store.close().await;
    let pool = SqlitePoolOptions::new()
        .connect_with(SqliteConnectOptions::new().filename(&file))
        .await
        .unwrap();
    for table in ["records", "idempotency"] {
        let sql: String = sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE name = ?1")
            .bind(table)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert!(!sql.contains("WITHOUT ROWID"), "{table}: {sql}");
    }
    pool.close().await;
}
