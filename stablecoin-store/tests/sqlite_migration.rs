//! Upgrading databases written by earlier schemas to the current one: v1
//! (`0001_init.sql`, records and idempotency as WITHOUT ROWID tables) and v2 (no record
//! subkind). Every row survives, keys stay unique, operations get their subkind from
//! their bodies, and the store works on the migrated file as on a new one.
#![cfg(feature = "sqlite")]

use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use stablecoin_core::domain::state::OpKind;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::store::{
    Batch, IdempotencyRecord, ListQuery, Put, Store, StoreError, StoredRecord,
};
use stablecoin_store::SqliteStore;
use std::path::Path;

const V1: &str = include_str!("../migrations/sqlite/0001_init.sql");
const V2: &str = include_str!("../migrations/sqlite/0002_large_rows_in_rowid_tables.sql");

/// A database file migrated with exactly `migrations` (name, SQL), as a release that
/// shipped only those left it; the pool is open on it.
async fn database_at(dir: &Path, file: &Path, migrations: &[(&str, &str)]) -> sqlx::SqlitePool {
    let folder = dir.join(format!("migrations-{}", migrations.len()));
    std::fs::create_dir_all(&folder).unwrap();
    for (name, sql) in migrations {
        std::fs::write(folder.join(name), sql).unwrap();
    }
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(file)
                .create_if_missing(true),
        )
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(folder.as_path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    pool
}

/// A database file at schema v1, as a release with only `0001_init.sql` left it.
async fn v1_database(dir: &Path, file: &Path) {
    let pool = database_at(dir, file, &[("0001_init.sql", V1)]).await;
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
            subkind: None,
            due_at: None,
            lane: 0,
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
            subkind: None,
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

/// A database file at schema v2: operations of every kind and several statuses, whose
/// op kind is only in their bodies, written by the engine's serializer.
async fn v2_database(dir: &Path, file: &Path) {
    let pool = database_at(
        dir,
        file,
        &[
            ("0001_init.sql", V1),
            ("0002_large_rows_in_rowid_tables.sql", V2),
        ],
    )
    .await;
    let ops = [
        ("tr_1", 10, "Transfer", "SETTLED"),
        ("fd_1", 15, "Funding", "SETTLED"),
        ("tr_2", 20, "Transfer", "QUEUED"),
        ("wd_1", 25, "Withdrawal", "COMPLETED"),
        ("tr_3", 30, "Transfer", "SETTLED"),
        ("sw_1", 35, "Swap", "FAILED"),
        ("tr_4", 40, "Transfer", "SETTLED"),
    ];
    for (id, created, kind, status) in ops {
        sqlx::query(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
             unique_keys, body) VALUES ('operation', ?1, 't1', 1, ?2, ?3, NULL, '[]', ?4)",
        )
        .bind(id)
        .bind(created)
        .bind(status)
        .bind(json!({ "id": id, "kind": kind, "status": status }).to_string())
        .execute(&pool)
        .await
        .unwrap();
    }
    // A record of another kind, and an operation of another tenant.
    for (kind, id, tenant) in [("wallet_note", "n_1", "t1"), ("operation", "tr_9", "t2")] {
        sqlx::query(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
             unique_keys, body) VALUES (?1, ?2, ?3, 1, 50, 'SETTLED', NULL, '[]', ?4)",
        )
        .bind(kind)
        .bind(id)
        .bind(tenant)
        .bind(json!({ "id": id, "kind": "Transfer" }).to_string())
        .execute(&pool)
        .await
        .unwrap();
    }
    // A corrupt body does not stop the migration; it just gets no subkind.
    sqlx::query(
        "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
         unique_keys, body) VALUES ('operation', 'tr_bad', 't3', 1, 5, 'QUEUED', NULL, '[]', \
         '{\"kind\": \"Transfer\"')",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

fn ops(subkind: &str, status: Option<&str>) -> ListQuery {
    ListQuery {
        kind: "operation".into(),
        tenant: "t1".into(),
        subkind: Some(subkind.into()),
        status: status.map(str::to_string),
        limit: 10,
        offset: 0,
    }
}

async fn ids(store: &SqliteStore, query: ListQuery) -> (Vec<String>, u64) {
    let (page, total) = store.list(&query).await.unwrap();
    (page.into_iter().map(|r| r.id).collect(), total)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The backfill lowercases the serde name of the op kind; the engine writes
/// `OpKind::as_str`. The two agree for every kind, so a migrated operation lists with
/// the ones written after the migration.
#[test]
fn the_backfill_rule_gives_every_op_kind_its_subkind() {
    for kind in OpKind::ALL {
        let serde_name = serde_json::to_value(kind).unwrap();
        assert_eq!(
            serde_name.as_str().unwrap().to_lowercase(),
            kind.as_str(),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_v2_database_gets_operation_subkinds_and_lists_by_kind_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v2.db");
    v2_database(dir.path(), &file).await;

    let store = SqliteStore::open_path(&file).await.unwrap();
    assert_eq!(
        ids(&store, ops("transfer", None)).await,
        (strings(&["tr_4", "tr_3", "tr_2", "tr_1"]), 4),
        "every transfer of the tenant, newest first"
    );
    assert_eq!(
        ids(&store, ops("transfer", Some("SETTLED"))).await,
        (strings(&["tr_4", "tr_3", "tr_1"]), 3)
    );
    let mut page = ops("transfer", Some("SETTLED"));
    (page.limit, page.offset) = (1, 1);
    assert_eq!(ids(&store, page).await, (strings(&["tr_3"]), 3));
    for (subkind, id) in [
        ("funding", "fd_1"),
        ("withdrawal", "wd_1"),
        ("swap", "sw_1"),
    ] {
        assert_eq!(
            ids(&store, ops(subkind, None)).await,
            (strings(&[id]), 1),
            "{subkind}"
        );
    }
    let op = store.get("operation", "wd_1").await.unwrap().unwrap();
    assert_eq!(op.subkind.as_deref(), Some("withdrawal"));
    let bad = store.get("operation", "tr_bad").await.unwrap().unwrap();
    assert_eq!(bad.subkind, None, "a corrupt body keeps no subkind");
    let other = store.get("wallet_note", "n_1").await.unwrap().unwrap();
    assert_eq!(other.subkind, None, "only operations are backfilled");
    let mut notes = ops("x", None);
    (notes.kind, notes.subkind) = ("wallet_note".into(), None);
    assert_eq!(ids(&store, notes).await, (strings(&["n_1"]), 1));

    // A transfer written after the migration lists with the migrated ones.
    store
        .commit(Batch {
            puts: vec![Put {
                record: StoredRecord {
                    kind: "operation".into(),
                    id: "tr_5".into(),
                    tenant: Some("t1".into()),
                    version: 0,
                    created_at: Timestamp::from_millis(60),
                    status: Some("SETTLED".into()),
                    subkind: Some("transfer".into()),
                    due_at: None,
                    lane: 0,
                    unique_keys: vec![],
                    body: json!({ "id": "tr_5", "kind": "Transfer" }).into(),
                },
                expected_version: None,
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        ids(&store, ops("transfer", Some("SETTLED"))).await,
        (strings(&["tr_5", "tr_4", "tr_3", "tr_1"]), 4)
    );
    store.close().await;

    // The two list indexes were replaced (not joined) by ones keyed on subkind.
    let pool = SqlitePoolOptions::new()
        .connect_with(SqliteConnectOptions::new().filename(&file))
        .await
        .unwrap();
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' \
         AND sql IS NOT NULL ORDER BY name",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        indexes,
        [
            "records_created",
            "records_due",
            "records_key",
            "records_list",
            "records_list_status"
        ]
    );
    for (index, columns) in [
        ("records_created", "kind,created_at"),
        ("records_list", "kind,tenant,subkind,created_at,id"),
        (
            "records_list_status",
            "kind,tenant,subkind,status,created_at,id",
        ),
    ] {
        let names: Vec<String> =
            sqlx::query_scalar("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
                .bind(index)
                .fetch_all(&pool)
                .await
                .unwrap();
        assert_eq!(names.join(","), columns, "{index}");
    }
    pool.close().await;
}
