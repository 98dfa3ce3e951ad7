//! PostgreSQL: the conformance suite, concurrent debits and claims from two `PgStore`s
//! (two engine processes' worth of pools) on one database, outbox readers that never skip
//! an event, and migrations. Each test works in its own schema.
//!
//! These tests need `STABLECOIN_TEST_PG_URL`. Without it they print `SKIPPED` and return
//! (the `postgres` feature is on in every workspace build, because the server enables
//! it), unless `STABLECOIN_REQUIRE_PG` is set, when they FAIL. `scripts/test-postgres.sh`
//! starts a throwaway cluster, sets both and runs them.
#![cfg(feature = "postgres")]

use serde_json::json;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{Batch, OutboxEvent, Put, Store, StoreError, StoredRecord};
use stablecoin_core::testkit;
use stablecoin_store::{MAX_AMOUNT_MICROS, PgConfig, PgStore};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Whether a database is configured; without one a test skips, or fails when
/// `STABLECOIN_REQUIRE_PG` says a database was promised.
pub(crate) fn pg_available(test: &str) -> bool {
    if std::env::var_os("STABLECOIN_TEST_PG_URL").is_some() {
        return true;
    }
    if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() {
        pg_url();
    }
    eprintln!(
        "SKIPPED {test}: STABLECOIN_TEST_PG_URL is not set (scripts/test-postgres.sh runs it)"
    );
    false
}

pub(crate) fn pg_url() -> String {
    std::env::var("STABLECOIN_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "STABLECOIN_TEST_PG_URL is not set. The PostgreSQL tests (compiled because the \
             `postgres` feature is on) need a database: run scripts/test-postgres.sh, which \
             starts a throwaway cluster, or set STABLECOIN_TEST_PG_URL=postgres://user@host:port/db"
        )
    })
}

pub(crate) fn schema(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t_{tag}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) async fn store_in(schema: &str, max_connections: u32) -> PgStore {
    PgStore::connect(
        PgConfig::new(pg_url())
            .schema(schema)
            .max_connections(max_connections),
    )
    .await
    .unwrap_or_else(|e| panic!("connect to {schema}: {e}"))
}

pub(crate) fn single(id: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    LedgerTransfer {
        id: id.into(),
        debit: debit.into(),
        credit: credit.into(),
        amount: Micros(amount),
        phase: Phase::Single,
    }
}

pub(crate) fn record(kind: &str, id: &str, due: Option<i64>) -> StoredRecord {
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

pub(crate) fn event(id: &str) -> OutboxEvent {
    OutboxEvent {
        id: id.into(),
        tenant: "t1".into(),
        event_type: "x.happened".into(),
        occurred_at: Timestamp::from_millis(1),
        payload: json!({ "id": id }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_passes_store_suite() {
    if !pg_available("postgres_passes_store_suite") {
        return;
    }
    testkit::store_suite(|| async { Arc::new(store_in(&schema("suite"), 8).await) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_64_concurrent_debits_from_two_stores_never_overdraw() {
    if !pg_available("postgres_64_concurrent_debits_from_two_stores_never_overdraw") {
        return;
    }
    const TASKS: usize = 64;
    const FUNDS: u64 = 2_000;
    let s = schema("debits");
    // Two stores = two processes' worth of pools on one database.
    let a = store_in(&s, 16).await;
    let b = store_in(&s, 16).await;
    a.commit(Batch {
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
        ledger: vec![single("fund", "world", "treasury", FUNDS)],
        ..Batch::default()
    })
    .await
    .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
    let mut handles = Vec::new();
    for i in 0..TASKS {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            let amount = ((i as u64).wrapping_mul(2_654_435_761) % 100) + 1;
            let batch = Batch {
                ledger: vec![single(&format!("debit-{i}"), "treasury", "users", amount)],
                puts: vec![Put {
                    record: record("payout", &format!("payout-{i}"), None),
                    expected_version: None,
                }],
                outbox: vec![event(&format!("evt_{i}"))],
                ..Batch::default()
            };
            barrier.wait().await;
            (amount, store.commit(batch).await)
        }));
    }
    let mut accepted = Vec::new();
    for h in handles {
        match h.await.unwrap() {
            (amount, Ok(_)) => accepted.push(amount),
            (_, Err(StoreError::Ledger(LedgerError::InsufficientFunds { .. }))) => {}
            (_, Err(e)) => panic!("a concurrent debit failed with {e:?}, not InsufficientFunds"),
        }
    }
    let spent: u64 = accepted.iter().sum();
    assert!(spent <= FUNDS, "overdrawn: {spent} > {FUNDS}");
    assert!(accepted.len() < TASKS, "the funds were meant to run out");
    for store in [&a, &b] {
        let treasury = store.balance("treasury").await.unwrap();
        assert_eq!(treasury.posted(), (FUNDS - spent) as i128, "final balance");
        assert!(treasury.posted() >= 0);
        assert_eq!(store.posted_sum().await.unwrap(), 0);
    }
    assert_eq!(
        a.history("treasury", 0, 1_000).await.unwrap().len(),
        1 + accepted.len()
    );
    let seqs: Vec<u64> = a
        .outbox_after(0, 1_000)
        .await
        .unwrap()
        .iter()
        .map(|(s, _)| *s)
        .collect();
    assert_eq!(
        seqs,
        (1..=accepted.len() as u64).collect::<Vec<_>>(),
        "gap-free"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_claimers_on_two_stores_never_share_a_record() {
    if !pg_available("postgres_concurrent_claimers_on_two_stores_never_share_a_record") {
        return;
    }
    const RECORDS: usize = 300;
    const WORKERS: usize = 16;
    let s = schema("claims");
    let a = store_in(&s, 8).await;
    let b = store_in(&s, 8).await;
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
    for h in handles {
        for id in h.await.unwrap() {
            assert!(seen.insert(id.clone()), "{id} was claimed twice");
        }
    }
    assert_eq!(seen.len(), RECORDS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_outbox_readers_never_skip_an_event() {
    if !pg_available("postgres_outbox_readers_never_skip_an_event") {
        return;
    }
    // Writers on two stores commit events concurrently (with variable transaction
    // lengths) while a reader pages with outbox_after; every page must continue exactly
    // where the previous one stopped, so a cursor-based reader never skips a seq.
    const WRITERS: usize = 16;
    const PER_WRITER: usize = 25;
    let s = schema("outbox");
    let a = store_in(&s, 12).await;
    let b = store_in(&s, 12).await;
    let reader = a.clone();
    let total = WRITERS * PER_WRITER * 2;
    let read = tokio::spawn(async move {
        let mut after = 0u64;
        let mut seen = Vec::new();
        while seen.len() < total {
            let page = reader.outbox_after(after, 7).await.unwrap();
            for (seq, e) in page {
                assert_eq!(seq, after + 1, "reader skipped from {after} to {seq}");
                after = seq;
                seen.push(e.id);
            }
            tokio::task::yield_now().await;
        }
        seen
    });
    let mut handles = Vec::new();
    for w in 0..WRITERS {
        let store = if w % 2 == 0 { a.clone() } else { b.clone() };
        handles.push(tokio::spawn(async move {
            for n in 0..PER_WRITER {
                let batch = Batch {
                    puts: (0..(n % 3))
                        .map(|k| Put {
                            record: record("pad", &format!("pad-{w}-{n}-{k}"), None),
                            expected_version: None,
                        })
                        .collect(),
                    outbox: vec![
                        event(&format!("e-{w}-{n}-a")),
                        event(&format!("e-{w}-{n}-b")),
                    ],
                    ..Batch::default()
                };
                let receipt = store.commit(batch).await.unwrap();
                assert_eq!(receipt.outbox_seqs.len(), 2);
                assert_eq!(receipt.outbox_seqs[1], receipt.outbox_seqs[0] + 1);
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let seen = tokio::time::timeout(std::time::Duration::from_secs(60), read)
        .await
        .expect("reader finished")
        .unwrap();
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), total, "every event seen exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refuses_amounts_above_i64_and_migrates_idempotently() {
    if !pg_available("postgres_refuses_amounts_above_i64_and_migrates_idempotently") {
        return;
    }
    let s = schema("misc");
    let store = store_in(&s, 4).await;
    // Running the migrations again (as a `migrate` command would) changes nothing.
    stablecoin_store::postgres::migrate(&PgConfig::new(pg_url()).schema(&s))
        .await
        .unwrap();
    let again = store_in(&s, 2).await;
    store
        .commit(Batch {
            accounts: vec![
                LedgerAccount {
                    id: "world".into(),
                    allow_negative: true,
                },
                LedgerAccount {
                    id: "bob".into(),
                    allow_negative: false,
                },
            ],
            ..Batch::default()
        })
        .await
        .unwrap();
    let err = again
        .commit(Batch {
            ledger: vec![single("huge", "world", "bob", MAX_AMOUNT_MICROS + 1)],
            puts: vec![Put {
                record: record("w", "w1", None),
                expected_version: None,
            }],
            ..Batch::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Ledger(LedgerError::InvalidTransfer { reason, .. }) if reason.contains("2^63")),
        "{err:?}"
    );
    assert!(store.get("w", "w1").await.unwrap().is_none(), "rolled back");
    store
        .commit(Batch {
            ledger: vec![single("max", "world", "bob", MAX_AMOUNT_MICROS)],
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        store.balance("bob").await.unwrap().credits_posted,
        MAX_AMOUNT_MICROS
    );
    assert_eq!(store.posted_sum().await.unwrap(), 0);
}

/// A database written by schema v1 (no record subkind) is migrated: operations get
/// their op kind from their bodies, the list indexes are replaced by ones keyed on
/// subkind, and lists by kind and status are right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_v1_operations_get_their_subkind_when_migrated() {
    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
    use stablecoin_core::ports::store::ListQuery;
    use std::str::FromStr;
    if !pg_available("postgres_v1_operations_get_their_subkind_when_migrated") {
        return;
    }
    let s = schema("v1");
    let options = PgConnectOptions::from_str(&pg_url()).unwrap();
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options.clone())
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {s}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options.options([("search_path", s.as_str())]))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("0001_init.sql"),
        include_str!("../migrations/postgres/0001_init.sql"),
    )
    .unwrap();
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    for (id, created, kind, status) in [
        ("tr_1", 10_i64, "Transfer", "SETTLED"),
        ("fd_1", 15, "Funding", "SETTLED"),
        ("tr_2", 20, "Transfer", "QUEUED"),
        ("wd_1", 25, "Withdrawal", "COMPLETED"),
        ("tr_3", 30, "Transfer", "SETTLED"),
    ] {
        sqlx::query(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
             unique_keys, body) VALUES ('operation', $1, 't1', 1, $2, $3, NULL, '[]', $4)",
        )
        .bind(id)
        .bind(created)
        .bind(status)
        .bind(json!({ "id": id, "kind": kind }).to_string())
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let store = store_in(&s, 2).await;
    let list = |subkind: &str, status: Option<&str>| ListQuery {
        kind: "operation".into(),
        tenant: "t1".into(),
        subkind: Some(subkind.into()),
        status: status.map(str::to_string),
        limit: 2,
        offset: 0,
    };
    let (page, total) = store.list(&list("transfer", None)).await.unwrap();
    let ids: Vec<_> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!((ids, total), (vec!["tr_3", "tr_2"], 3));
    let (page, total) = store
        .list(&list("transfer", Some("SETTLED")))
        .await
        .unwrap();
    let ids: Vec<_> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!((ids, total), (vec!["tr_3", "tr_1"], 2));
    let (page, total) = store.list(&list("withdrawal", None)).await.unwrap();
    assert_eq!((page[0].id.as_str(), total), ("wd_1", 1));
    assert_eq!(page[0].subkind.as_deref(), Some("withdrawal"));

    let defs: Vec<String> = sqlx::query_scalar(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'records' \
         AND indexname LIKE 'records_list%' ORDER BY indexname",
    )
    .bind(&s)
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(defs.len(), 2, "{defs:?}");
    assert!(
        defs[0].ends_with("(kind, tenant, subkind, created_at, id)"),
        "{defs:?}"
    );
    assert!(
        defs[1].ends_with("(kind, tenant, subkind, status, created_at, id)"),
        "{defs:?}"
    );
}

/// Migration 0003's indexes serve a purge's shapes (`Store::purge` walks the oldest rows
/// of one kind, or of every idempotency record, in creation order): PostgreSQL can answer
/// them from an index in order, with no scan of the table and no sort. (Sequential scans
/// are switched off for the check: on a near-empty table the planner would rightly
/// prefer one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_purges_walk_the_creation_time_indexes() {
    if !pg_available("postgres_purges_walk_the_creation_time_indexes") {
        return;
    }
    let s = schema("purge");
    let store = store_in(&s, 2).await;
    let mut tx = store.pool().begin().await.unwrap();
    sqlx::query("SET LOCAL enable_seqscan = off")
        .execute(&mut *tx)
        .await
        .unwrap();
    for (select, index) in [
        (
            "SELECT kind, id FROM records WHERE kind = 'quote' AND created_at < 5 \
             ORDER BY created_at LIMIT 10 FOR UPDATE SKIP LOCKED",
            "records_created",
        ),
        (
            "SELECT kind, id FROM records WHERE kind = 'webhook_delivery' AND created_at < 5 \
             AND status = ANY(ARRAY['DELIVERED', 'DEAD']) ORDER BY created_at LIMIT 10",
            "records_created",
        ),
        (
            "SELECT tenant, key FROM idempotency WHERE created_at < 5 \
             ORDER BY created_at LIMIT 10",
            "idempotency_created",
        ),
        (
            "SELECT seq FROM outbox WHERE seq <= 100 AND occurred_at < 5 \
             ORDER BY seq LIMIT 10",
            "outbox_pkey",
        ),
    ] {
        let plan: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN {select}")))
                .fetch_all(&mut *tx)
                .await
                .unwrap();
        let plan = plan.join(" | ");
        assert!(
            plan.contains(&format!("Index Scan using {index}")),
            "{select}: {plan}"
        );
        assert!(!plan.contains("Sort"), "no sort: {plan}");
    }
    tx.rollback().await.unwrap();
}

/// The shared rate-limit state (`PgStore::rate_limit`, migration 0008): a burst of the
/// quota, then refusals that leave the state as it was; budgets per key and class;
/// concurrent requests of one key from two stores (two nodes' pools) never get more than
/// the quota between them; rows whose budget is whole again are purged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_rate_limits_share_one_budget_across_stores() {
    if !pg_available("postgres_rate_limits_share_one_budget_across_stores") {
        return;
    }
    let schema = schema("rate_limits");
    let (a, b) = (store_in(&schema, 8).await, store_in(&schema, 8).await);
    // 5 per second: an interval of 200 ms, a burst of 5.
    let (interval, tolerance) = (200_000, 800_000);
    let mut last = None;
    for _ in 0..5 {
        let step = a
            .rate_limit("k", "money", interval, tolerance)
            .await
            .unwrap();
        assert!(step.allowed, "{step:?}");
        last = Some(step.tat_us);
    }
    for s in [&a, &b, &a] {
        let step = s
            .rate_limit("k", "money", interval, tolerance)
            .await
            .unwrap();
        assert!(!step.allowed, "{step:?}");
        assert_eq!(Some(step.tat_us), last, "a refusal leaves the state");
        assert!(step.tat_us - step.now_us > tolerance);
    }
    assert!(
        b.rate_limit("k", "read", interval, tolerance)
            .await
            .unwrap()
            .allowed
    );
    assert!(
        b.rate_limit("k2", "money", interval, tolerance)
            .await
            .unwrap()
            .allowed
    );

    // 60 requests of one fresh key at once, half through each store, with a budget of
    // 20 an hour (nothing refills during the test): exactly 20 pass.
    let (interval, tolerance) = (180_000_000, 180_000_000 * 19);
    let calls = (0..60).map(|i| {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        tokio::spawn(async move {
            s.rate_limit("burst", "write", interval, tolerance)
                .await
                .unwrap()
                .allowed
        })
    });
    let mut allowed = 0;
    for c in calls.collect::<Vec<_>>() {
        allowed += usize::from(c.await.unwrap());
    }
    assert_eq!(allowed, 20);

    // Nothing whole yet but `k`'s read and `k2` in a second: purged then, `k` too.
    assert_eq!(a.purge_rate_limits(100).await.unwrap(), 0);
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(a.purge_rate_limits(100).await.unwrap(), 3);
    assert!(
        a.rate_limit("k", "money", 200_000, 800_000)
            .await
            .unwrap()
            .allowed
    );
}

/// PgBouncer in transaction pooling mode in front of the database
/// (`STABLECOIN_TEST_PGBOUNCER_URL`, set by `scripts/test-postgres.sh`); `None` (SKIPPED)
/// without one.
fn pgbouncer_url(test: &str) -> Option<String> {
    match std::env::var("STABLECOIN_TEST_PGBOUNCER_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() => panic!(
            "STABLECOIN_TEST_PGBOUNCER_URL is not set but STABLECOIN_REQUIRE_PG is: \
             scripts/test-postgres.sh starts PgBouncer"
        ),
        Err(_) => {
            eprintln!("SKIPPED {test}: STABLECOIN_TEST_PGBOUNCER_URL is not set");
            None
        }
    }
}

/// `url` with its database replaced by `db`.
fn with_database(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{db}")
}

/// The PgBouncer URL of database `db`: with `pooler=transaction` (no named prepared
/// statements, every statement in a transaction) unless the PgBouncer is 1.21 or later,
/// which keeps named statements itself (`max_prepared_statements`, set by the script).
fn through_pgbouncer(bouncer: &str, db: &str) -> String {
    let version = std::env::var("STABLECOIN_TEST_PGBOUNCER_VERSION").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let url = with_database(bouncer, db);
    if (major, minor) >= (1, 21) {
        url
    } else {
        format!("{url}?pooler=transaction")
    }
}

/// A fresh database (through PgBouncer the schema cannot come as a startup option:
/// PgBouncer passes no `options`), copied from `template`, created on the server directly.
async fn database_from(template: &str, tag: &str) -> String {
    use sqlx::Connection as _;
    let name = schema(tag);
    let mut admin = sqlx::PgConnection::connect(&pg_url()).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE DATABASE {name} TEMPLATE {template}"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let _ = admin.close().await;
    name
}

/// The store through PgBouncer in transaction pooling mode: the conformance suite, each
/// case on a database of its own (migrated directly, then used only through the pooler).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_passes_store_suite_through_pgbouncer_in_transaction_mode() {
    let test = "postgres_passes_store_suite_through_pgbouncer_in_transaction_mode";
    if !pg_available(test) {
        return;
    }
    let Some(bouncer) = pgbouncer_url(test) else {
        return;
    };
    // A migrated template: CREATE DATABASE .. TEMPLATE copies it per case.
    let template = {
        use sqlx::Connection as _;
        let name = schema("bouncer_template");
        let mut admin = sqlx::PgConnection::connect(&pg_url()).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        let _ = admin.close().await;
        let direct = PgStore::connect(PgConfig::new(with_database(&pg_url(), &name)))
            .await
            .unwrap();
        direct.close().await;
        name
    };
    let template = Arc::new(template);
    testkit::store_suite(|| {
        let (template, bouncer) = (template.clone(), bouncer.clone());
        async move {
            let db = database_from(&template, "bouncer").await;
            let config = PgConfig::new(through_pgbouncer(&bouncer, &db)).max_connections(8);
            Arc::new(PgStore::connect(config).await.unwrap())
        }
    })
    .await;
}
