//! The compact layout of issue 47 on SQLite: record bodies stored in the compact
//! encoding (BLOB) and ledger rows naming their accounts by number (migration 0010), and
//! a database written before both (v9: JSON text bodies, account names in every ledger
//! row) opening with every balance, history entry, statement stamp and body intact.
#![cfg(feature = "sqlite")]

use serde_json::json;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{Batch, JsonText, Put, Store, StoredRecord};
use stablecoin_store::SqliteStore;
use std::path::Path;

const BODY: &str = r#"{"id":"tr_01M8M500664Q12X4SRJ050EDMF","kind":"Transfer","tenant":"ten_01M8M4ZYKZVGNYG45AXE7KATC2","status":"SETTLED","rail":{"Evm":137},"amount":10000,"from_wallet":"wal_01M8M4ZYSMD5G65MADFG62JFBA","holds":[{"id":"tr_01M8M500664Q12X4SRJ050EDMF:recipient","debit":"wallet:wal_01M8M4ZYSMD5G65MADFG62JFBA:USDC","credit":"wallet:wal_01M8M4ZYT9MY9CSJ4PD016N6V9:USDC","amount":9970,"phase":"Pending"}],"tx_hash":"0x02368d9fb0bcc8440243270897cd337211155c2126b4cf9d614c50963515f106","note":"quote \" and \\ and é","neg":-3,"none":null}"#;

/// The shipped migrations up to and including `last` (by number), as files.
fn migrations_up_to(dir: &Path, last: u32) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    let out = dir.join(format!("migrations-{last}"));
    std::fs::create_dir_all(&out).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let number: u32 = name[..4].parse().unwrap();
        if number <= last {
            std::fs::copy(&path, out.join(&name)).unwrap();
        }
    }
    out
}

async fn pool(file: &Path) -> sqlx::SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(file)
                .create_if_missing(true),
        )
        .await
        .unwrap()
}

async fn exec(pool: &sqlx::SqlitePool, sql: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(pool)
        .await
        .unwrap();
}

/// A v9 database (the layout before 0010) with two accounts, a posted pending transfer,
/// a single one, and an operation whose body is JSON text.
async fn v9_database(dir: &Path, file: &Path) {
    let pool = pool(file).await;
    sqlx::migrate::Migrator::new(migrations_up_to(dir, 9).as_path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    exec(
        &pool,
        "INSERT INTO ledger_accounts (id, allow_negative, debits_posted, credits_posted, \
           debits_pending, credits_pending) VALUES \
           ('world', 1, 1000, 0, 0, 0), ('wallet:wal_a:USDC', 0, 300, 1000, 50, 0), \
           ('wallet:wal_b:USDC', 0, 0, 300, 0, 50); \
         INSERT INTO ledger_transfers (id, seq, debit, credit, amount, phase, pending_id, \
           resolved, committed_at) VALUES \
           ('fund', 1, 'world', 'wallet:wal_a:USDC', 1000, 'single', NULL, 0, NULL), \
           ('tr_1:hold', 2, 'wallet:wal_a:USDC', 'wallet:wal_b:USDC', 300, 'pending', NULL, 1, 100), \
           ('tr_1:hold:post', 3, 'wallet:wal_a:USDC', 'wallet:wal_b:USDC', 300, 'post', 'tr_1:hold', 0, 200), \
           ('tr_2:hold', 4, 'wallet:wal_a:USDC', 'wallet:wal_b:USDC', 50, 'pending', NULL, 0, 300); \
         UPDATE ledger_meta SET value = 5 WHERE key = 'next_transfer_seq'; \
         UPDATE ledger_meta SET value = 300 WHERE key = 'ledger_clock';",
    )
    .await;
    sqlx::query(
        "INSERT INTO records (kind, id, tenant, version, created_at, status, unique_keys, body) \
         VALUES ('operation', 'tr_old', 't1', 2, 1, 'SETTLED', '[]', ?1)",
    )
    .bind(BODY)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

fn put(id: &str, body: &str) -> Put {
    Put {
        record: StoredRecord {
            kind: "operation".into(),
            id: id.into(),
            tenant: Some("t1".into()),
            version: 0,
            created_at: Timestamp::from_millis(2),
            status: Some("SETTLED".into()),
            subkind: None,
            due_at: None,
            lane: 0,
            unique_keys: vec![],
            // The text as a typed record encodes it (fields in their order), kept as is.
            body: JsonText::from_stored_text(body.to_string()),
        },
        expected_version: None,
    }
}

fn transfer(id: &str, debit: &str, credit: &str, amount: u64, phase: Phase) -> LedgerTransfer {
    LedgerTransfer {
        id: id.into(),
        debit: debit.into(),
        credit: credit.into(),
        amount: Micros(amount),
        phase,
    }
}

/// (id, debit, credit, amount, phase) of an account's history.
async fn history(store: &SqliteStore, account: &str) -> Vec<(String, String, String, u64)> {
    store
        .history(account, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.transfer_id, e.debit, e.credit, e.amount.0))
        .collect()
}

#[tokio::test]
async fn a_v9_database_keeps_every_ledger_row_and_body_and_new_rows_are_compact() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v9.db");
    v9_database(dir.path(), &file).await;

    let store = SqliteStore::open_path(&file).await.unwrap();
    // Balances and histories as the old rows sum them, in seq order.
    let a = store.balance("wallet:wal_a:USDC").await.unwrap();
    assert_eq!(
        (
            a.debits_posted,
            a.credits_posted,
            a.debits_pending,
            a.credits_pending
        ),
        (300, 1000, 50, 0)
    );
    let s = |v: &str| v.to_string();
    assert_eq!(
        history(&store, "wallet:wal_a:USDC").await,
        vec![
            (s("fund"), s("world"), s("wallet:wal_a:USDC"), 1000),
            (
                s("tr_1:hold"),
                s("wallet:wal_a:USDC"),
                s("wallet:wal_b:USDC"),
                300
            ),
            (
                s("tr_1:hold:post"),
                s("wallet:wal_a:USDC"),
                s("wallet:wal_b:USDC"),
                300
            ),
            (
                s("tr_2:hold"),
                s("wallet:wal_a:USDC"),
                s("wallet:wal_b:USDC"),
                50
            ),
        ]
    );
    let since = store
        .entries_since("wallet:wal_b:USDC", Some(Timestamp(150)))
        .await
        .unwrap();
    assert_eq!(
        since
            .entries
            .iter()
            .map(|e| (e.entry.transfer_id.as_str(), e.committed_at))
            .collect::<Vec<_>>(),
        [
            ("tr_1:hold:post", Some(Timestamp(200))),
            ("tr_2:hold", Some(Timestamp(300)))
        ]
    );
    assert_eq!(store.posted_sum().await.unwrap(), 0);
    // The old text body reads as written.
    let old = store.get("operation", "tr_old").await.unwrap().unwrap();
    assert_eq!(old.body.text(), BODY);

    // The old pending posts, a new account and transfers go in on the new layout.
    store
        .commit(Batch {
            accounts: vec![LedgerAccount {
                id: "fees:service:USDC".into(),
                allow_negative: false,
            }],
            ledger: vec![
                transfer(
                    "tr_2:hold:post",
                    "wallet:wal_a:USDC",
                    "wallet:wal_b:USDC",
                    50,
                    Phase::Post {
                        pending_id: "tr_2:hold".into(),
                    },
                ),
                transfer(
                    "fee",
                    "wallet:wal_b:USDC",
                    "fees:service:USDC",
                    7,
                    Phase::Single,
                ),
            ],
            puts: vec![put("tr_new", BODY)],
            ..Default::default()
        })
        .await
        .unwrap();
    let b = store.balance("wallet:wal_b:USDC").await.unwrap();
    assert_eq!(
        (
            b.debits_posted,
            b.credits_posted,
            b.debits_pending,
            b.credits_pending
        ),
        (7, 350, 0, 0)
    );
    assert_eq!(
        history(&store, "fees:service:USDC").await,
        vec![(s("fee"), s("wallet:wal_b:USDC"), s("fees:service:USDC"), 7)]
    );
    // A pending transfer posted once cannot be posted again (its row was found by id).
    let again = store
        .commit(Batch {
            ledger: vec![transfer(
                "tr_2:hold:post2",
                "wallet:wal_a:USDC",
                "wallet:wal_b:USDC",
                50,
                Phase::Post {
                    pending_id: "tr_2:hold".into(),
                },
            )],
            ..Default::default()
        })
        .await;
    assert!(again.is_err(), "{again:?}");
    let new = store.get("operation", "tr_new").await.unwrap().unwrap();
    assert_eq!(new.body.text(), BODY);
    store.close().await;

    // On disk: the new body is a compact BLOB, less than half the text; the old one is
    // still text; ledger rows carry account numbers.
    let pool = pool(&file).await;
    let rows = sqlx::query("SELECT id, typeof(body), length(body) FROM records ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    let cells: Vec<(String, String, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(cells[0].0, "tr_new");
    assert_eq!(cells[0].1, "blob");
    assert!(cells[0].2 * 2 < BODY.len() as i64, "{cells:?}");
    assert_eq!(
        (cells[1].0.as_str(), cells[1].1.as_str()),
        ("tr_old", "text")
    );
    let kinds: Vec<(String, String)> =
        sqlx::query("SELECT DISTINCT typeof(debit), typeof(credit) FROM ledger_transfers")
            .fetch_all(&pool)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
    assert_eq!(kinds, [(s("integer"), s("integer"))]);
    pool.close().await;

    // Reopened: everything reads the same.
    let store = SqliteStore::open_path(&file).await.unwrap();
    assert_eq!(history(&store, "wallet:wal_a:USDC").await.len(), 5);
    let new = store.get("operation", "tr_new").await.unwrap().unwrap();
    assert_eq!(
        new.body.to_value().unwrap(),
        json!(serde_json::from_str::<serde_json::Value>(BODY).unwrap())
    );
    store.close().await;
}

/// A body holding a number beyond 64-bit integers (a `u128` of wei) or a fraction is kept
/// as its exact text, never rounded through an `f64` (found in review: the compact
/// encoding read such numbers as floats).
#[tokio::test]
async fn a_body_with_a_u128_or_a_fraction_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.db");
    let store = SqliteStore::open_path(&file).await.unwrap();
    let big = r#"{"id":"sb_1","native":20000000000000000001,"max":340282366920938463463374607431768211455,"ratio":0.25}"#;
    store
        .commit(Batch {
            puts: vec![put("sb_1", big)],
            ..Default::default()
        })
        .await
        .unwrap();
    let got = store.get("operation", "sb_1").await.unwrap().unwrap();
    assert_eq!(got.body.text(), big);
    store.close().await;
    let pool = pool(&file).await;
    let kind: String = sqlx::query("SELECT typeof(body) FROM records WHERE id = 'sb_1'")
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "text");
    pool.close().await;
}
