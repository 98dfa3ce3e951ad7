//! A database at every earlier schema upgrades with every balance, operation and
//! idempotency record intact, on SQLite and on PostgreSQL (issue #46 item 5).
//!
//! For each migration set before the last one shipped (read from
//! `stablecoin-store/migrations/{sqlite,postgres}/` when the test runs, so a migration
//! added later is covered without touching this file), the test builds a database at that
//! schema by applying the migration files up to it with sqlx's migrator (the one the store
//! runs, so the bookkeeping table is what the old code left; the files are immutable,
//! sqlx refuses an edited one), fills it with the rows of
//! `tests/fixtures/schema_upgrades/data.json` in that schema's shape (its README says
//! where they come from), reads everything back as the old database holds it, then opens
//! it with today's store, which migrates it, and checks, to the row:
//!
//! - every record is readable through `Store::get` as it was (tenant, version, status,
//!   subkind, lane, creation time, unique keys, body), save the documented rewrites of
//!   the migrations it crossed (below), decodes with today's typed decoder of its kind,
//!   and the count of records of each kind is unchanged (or changed exactly as documented);
//! - every unique key resolves to its owner (`Store::get_by_unique`);
//! - every ledger account's balance (posted and pending, debits and credits) is the one
//!   the old transfers sum to, to the micro-unit, its history lists the same transfers,
//!   and the ledger's `posted_sum` is the old one;
//! - every operation reads through `Engine::operation` and is listed under its kind;
//! - every idempotency record answers `Store::idempotency` as stored, and the engine
//!   replays each keyed request with the stored response and writes nothing new;
//! - the outbox is unchanged.
//!
//! The documented rewrites, by migration name (the same on both backends):
//! "record subkind" backfills an operation's subkind from its body's kind; "claim lanes"
//! puts every record in lane 0; "wallet list" lists wallets under `_system`; "one inbound
//! router" rekeys deposit addresses into `addr:{rail}:{address}` and folds the three
//! products' scan cursors into one record per rail. The test writes the rows before such a
//! migration in the shape before it, so the upgrade has to do the rewrite.
//!
//! The PostgreSQL test needs `STABLECOIN_TEST_PG_URL`; without it, it prints `SKIPPED`,
//! unless `STABLECOIN_REQUIRE_PG` is set, when it fails. `scripts/test-postgres.sh` starts
//! a throwaway cluster and sets it.

use crate::support;
use serde_json::{Map, Value, json};
use sqlx::migrate::Migrator;
use sqlx::{AssertSqlSafe, Row};
use stablecoin::checkout::model::{Business, Session};
use stablecoin::core::domain::ids::TenantId;
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::state::OpKind;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{
    ApiKey, DepositRecord, Engine, EngineConfig, FundRequest, Operation, SendRequest, Tenant,
    WithdrawRequest,
};
use stablecoin::core::kernel::address_key;
use stablecoin::core::kernel::inbound::ScanPositions;
use stablecoin::core::memory::LocalSigner;
use stablecoin::core::ports::record::Record;
use stablecoin::core::ports::store::{IdempotencyRecord, ListQuery, StoredRecord};
use stablecoin::core::ports::{Ledger, Rail, RailId, Store};
use stablecoin::escrow::model::{Deal, HistoryEntry};
use stablecoin::escrow::queue::StaffQueueEntry;
use stablecoin::rails::sim::SimProfile;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The migrations whose data rewrites the test expects (see the module docs).
const SUBKIND: &str = "record subkind";
const LANES: &str = "claim lanes";
const WALLET_LIST: &str = "wallet list";
const ROUTER: &str = "one inbound router";
/// The cursor kinds before "one inbound router": the wallet scanner's, escrow's, checkout's.
const OLD_CURSORS: [(&str, &str); 3] = [
    ("scan_cursor", "wallet"),
    ("escrow_scan_cursor", "escrow"),
    ("checkout_scan_cursor", "checkout"),
];
/// Tables in the order they are filled (ledger accounts before the transfers naming them).
const TABLES: [&str; 6] = [
    "records",
    "unique_keys",
    "idempotency",
    "ledger_accounts",
    "ledger_transfers",
    "outbox",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The rows, and the migration they were written at.
struct Data {
    written_at: String,
    tables: BTreeMap<String, Vec<Map<String, Value>>>,
}

fn data() -> Data {
    let path = root().join("tests/fixtures/schema_upgrades/data.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let tables = v["tables"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(t, rows)| {
            let rows = rows.as_array().unwrap();
            let rows = rows.iter().map(|r| r.as_object().unwrap().clone());
            (t.clone(), rows.collect())
        })
        .collect();
    Data {
        written_at: v["written_at_migration"].as_str().unwrap().to_string(),
        tables,
    }
}

/// Today's migration files of one backend, as the store's `sqlx::migrate!` reads them.
async fn migrator(backend: &str) -> Migrator {
    let dir = root().join("stablecoin-store/migrations").join(backend);
    let m = Migrator::new(dir.as_path()).await.unwrap();
    let names: Vec<_> = m.iter().map(|m| m.description.to_string()).collect();
    for name in [SUBKIND, LANES, WALLET_LIST, ROUTER] {
        assert!(names.iter().any(|n| n == name), "{backend}: no {name:?}");
    }
    assert!(m.iter().count() >= 2, "{backend}: no earlier schema");
    m
}

fn version_of(m: &Migrator, name: &str) -> i64 {
    m.iter()
        .find(|m| m.description == name)
        .unwrap_or_else(|| panic!("no migration {name:?}"))
        .version
}

/// The old database, one backend or the other (opened by sqlx, as the old store did).
enum Db {
    Lite(sqlx::SqlitePool),
    Pg(sqlx::PgPool),
}

impl Db {
    async fn migrate_to(&self, m: &Migrator, version: i64) {
        match self {
            Db::Lite(p) => m.run_to(version, p).await,
            Db::Pg(p) => m.run_to(version, p).await,
        }
        .unwrap_or_else(|e| panic!("migrating to {version}: {e}"));
    }

    async fn exec(&self, sql: String) {
        match self {
            Db::Lite(p) => sqlx::raw_sql(AssertSqlSafe(sql)).execute(p).await.map(drop),
            Db::Pg(p) => sqlx::raw_sql(AssertSqlSafe(sql)).execute(p).await.map(drop),
        }
        .unwrap();
    }

    /// A table's columns, and whether each is a PostgreSQL BOOLEAN.
    async fn columns(&self, table: &str) -> Vec<(String, bool)> {
        match self {
            Db::Lite(p) => sqlx::query("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
                .bind(table)
                .fetch_all(p)
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), false))
                .collect(),
            Db::Pg(p) => sqlx::query(
                "SELECT column_name::text, data_type = 'boolean' FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 \
                 ORDER BY ordinal_position",
            )
            .bind(table)
            .fetch_all(p)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect(),
        }
    }

    /// Every row of `table` as JSON (booleans as 0/1 on both backends), in key order.
    async fn rows(&self, table: &str) -> Vec<Map<String, Value>> {
        let cols = self.columns(table).await;
        let order = match table {
            "records" => "kind, id",
            "unique_keys" => "key",
            "idempotency" => "tenant, key",
            "ledger_accounts" => "id",
            _ => "seq",
        };
        let texts: Vec<String> = match self {
            Db::Lite(p) => {
                let fields: Vec<_> = cols.iter().map(|(c, _)| format!("'{c}', {c}")).collect();
                let sql = format!(
                    "SELECT json_object({}) FROM {table} ORDER BY {order}",
                    fields.join(", ")
                );
                let rows = sqlx::query(AssertSqlSafe(sql)).fetch_all(p).await.unwrap();
                rows.iter().map(|r| r.get(0)).collect()
            }
            Db::Pg(p) => {
                let sql = format!("SELECT row_to_json(t)::text FROM {table} t ORDER BY {order}");
                let rows = sqlx::query(AssertSqlSafe(sql)).fetch_all(p).await.unwrap();
                rows.iter().map(|r| r.get(0)).collect()
            }
        };
        texts
            .iter()
            .map(|t| {
                let mut row: Map<String, Value> = serde_json::from_str(t).unwrap();
                for v in row.values_mut() {
                    if let Value::Bool(b) = v {
                        *v = json!(i64::from(*b));
                    }
                }
                row
            })
            .collect()
    }

    async fn close(self) {
        match self {
            Db::Lite(p) => p.close().await,
            Db::Pg(p) => p.close().await,
        }
    }
}

fn literal(v: &Value, boolean: bool) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Number(n) if boolean => (if n.as_i64() == Some(0) {
            "FALSE"
        } else {
            "TRUE"
        })
        .into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        other => panic!("no literal for {other}"),
    }
}

/// Builds the database at schema `k`: the migrations up to the data's own schema (or `k`
/// if older), the rows in that schema's shape, then the migrations up to `k` (a database
/// that lived through them).
async fn build(db: &Db, m: &Migrator, data: &Data, k: i64) {
    let written_at = version_of(m, &data.written_at);
    let shape = k.min(written_at);
    db.migrate_to(m, shape).await;
    let mut sql = String::from("BEGIN;\n");
    for table in TABLES {
        let cols = db.columns(table).await;
        for row in &data.tables[table] {
            let mut row = row.clone();
            if table == "records" && row["kind"] == "wallet" && shape < version_of(m, WALLET_LIST) {
                // Before "wallet list" a wallet had no list owner.
                row["tenant"] = Value::Null;
            }
            let present: Vec<_> = cols.iter().filter(|(c, _)| row.contains_key(c)).collect();
            for (c, _) in &cols {
                assert!(
                    row.contains_key(c),
                    "{table}.{c} at {shape}: not in the data"
                );
            }
            let names: Vec<_> = present.iter().map(|(c, _)| c.as_str()).collect();
            let values: Vec<_> = present.iter().map(|(c, b)| literal(&row[c], *b)).collect();
            let overriding = match db {
                Db::Pg(_) if table == "ledger_transfers" => "OVERRIDING SYSTEM VALUE ",
                _ => "",
            };
            sql += &format!(
                "INSERT INTO {table} ({}) {overriding}VALUES ({});\n",
                names.join(", "),
                values.join(", ")
            );
        }
    }
    // The counters the old stores kept next to the rows.
    sql += match db {
        Db::Lite(_) => {
            "UPDATE ledger_meta SET value = (SELECT coalesce(max(seq), 0) + 1 \
             FROM ledger_transfers) WHERE key = 'next_transfer_seq';\n"
        }
        Db::Pg(_) => {
            "SELECT setval(pg_get_serial_sequence('ledger_transfers', 'seq'), \
             (SELECT max(seq) FROM ledger_transfers));\n\
             UPDATE outbox_counter SET last_seq = (SELECT coalesce(max(seq), 0) FROM outbox);\n"
        }
    };
    sql += "COMMIT;\n";
    db.exec(sql).await;
    if k > shape {
        db.migrate_to(m, k).await;
    }
}

/// What the old database holds, table by table.
struct Old {
    tables: BTreeMap<&'static str, Vec<Map<String, Value>>>,
}

async fn read_old(db: &Db) -> Old {
    let mut tables = BTreeMap::new();
    for table in TABLES {
        tables.insert(table, db.rows(table).await);
    }
    Old { tables }
}

fn s(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not text: {v}"))
        .to_string()
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A record as today's store must return it.
#[derive(Debug, PartialEq)]
struct Expected {
    tenant: Option<String>,
    version: u64,
    created_at: i64,
    status: Option<String>,
    subkind: Option<String>,
    lane: u8,
    unique_keys: BTreeSet<String>,
    body: Value,
}

impl Expected {
    fn of(r: &StoredRecord) -> Self {
        Expected {
            tenant: r.tenant.clone(),
            version: r.version,
            created_at: r.created_at.millis(),
            status: r.status.clone(),
            subkind: r.subkind.clone(),
            lane: r.lane,
            unique_keys: r.unique_keys.iter().cloned().collect(),
            body: r.body.to_value().unwrap(),
        }
    }
}

/// The old rows after the migrations above `k` (`crossed`): the records by (kind, id) and
/// the unique keys with their owners.
#[allow(clippy::type_complexity)]
fn expected(
    old: &Old,
    crossed: &BTreeSet<String>,
) -> (
    BTreeMap<(String, String), Expected>,
    BTreeMap<String, (String, String)>,
) {
    let records = &old.tables["records"];
    let body_of = |kind: &str, id: &str| -> Value {
        let r = records
            .iter()
            .find(|r| r["kind"] == kind && r["id"] == id)
            .unwrap_or_else(|| panic!("no owner {kind}/{id}"));
        serde_json::from_str(&s(&r["body"])).unwrap()
    };
    let router = crossed.contains(ROUTER);
    // "one inbound router": one namespace; a wallet's base58 address exactly as in its body.
    let rekey = |kind: &str, id: &str, key: &str| -> String {
        if !router {
            return key.to_string();
        }
        for (prefix, owner) in [
            ("wallet_addr:", "wallet"),
            ("escrow_addr:", "escrow"),
            ("checkout_addr:", "payment_session"),
        ] {
            if let Some(rest) = key.strip_prefix(prefix) {
                assert_eq!(kind, owner, "{key}");
                let (rail, address) = rest.split_once(':').unwrap();
                let address = if kind == "wallet" {
                    s(&body_of(kind, id)["addresses"][rail])
                } else {
                    address.to_string()
                };
                return address_key(rail, &address);
            }
        }
        key.to_string()
    };

    let mut out = BTreeMap::new();
    for r in records {
        let (kind, id) = (s(&r["kind"]), s(&r["id"]));
        let body: Value = serde_json::from_str(&s(&r["body"])).unwrap();
        let mut tenant = r["tenant"].as_str().map(String::from);
        if kind == "wallet" && tenant.is_none() && crossed.contains(WALLET_LIST) {
            tenant = Some("_system".into());
        }
        let subkind = match r.get("subkind") {
            Some(v) => v.as_str().map(String::from),
            None => {
                assert!(crossed.contains(SUBKIND));
                (kind == "operation").then(|| s(&body["kind"]).to_lowercase())
            }
        };
        let lane = match r.get("lane") {
            Some(v) => u8::try_from(i(v)).unwrap(),
            None => {
                assert!(crossed.contains(LANES));
                0
            }
        };
        let keys: Vec<String> = serde_json::from_str(&s(&r["unique_keys"])).unwrap();
        out.insert(
            (kind.clone(), id.clone()),
            Expected {
                tenant,
                version: u64::try_from(i(&r["version"])).unwrap(),
                created_at: i(&r["created_at"]),
                status: r["status"].as_str().map(String::from),
                subkind,
                lane,
                unique_keys: keys.iter().map(|k| rekey(&kind, &id, k)).collect(),
                body,
            },
        );
    }
    if router {
        // Each product's cursor becomes its position in the rail's one cursor record.
        let mut merged: BTreeMap<String, Expected> = BTreeMap::new();
        for (kind, product) in OLD_CURSORS {
            let rails: Vec<_> = out
                .keys()
                .filter(|(k, _)| k == kind)
                .map(|(_, id)| id.clone())
                .collect();
            for rail in rails {
                let old = out.remove(&(kind.to_string(), rail.clone())).unwrap();
                let cursor = merged.entry(rail.clone()).or_insert_with(|| Expected {
                    tenant: None,
                    version: 1,
                    created_at: old.created_at,
                    status: None,
                    subkind: None,
                    lane: 0,
                    unique_keys: BTreeSet::new(),
                    body: json!({"rail": rail, "positions": {}, "created_at": old.created_at}),
                });
                if kind == "scan_cursor" {
                    // The wallet scanner's record is rewritten in place: one version more.
                    cursor.version = old.version + 1;
                    cursor.created_at = old.created_at;
                    cursor.body["created_at"] = old.body["created_at"].clone();
                    cursor.tenant = old.tenant;
                    cursor.lane = old.lane;
                } else if cursor.version == 1 && cursor.created_at > old.created_at {
                    cursor.created_at = old.created_at;
                    cursor.body["created_at"] = json!(old.created_at);
                }
                cursor.body["positions"][product] = old.body["cursor"].clone();
            }
        }
        for (rail, cursor) in merged {
            out.insert(("scan_cursor".into(), rail), cursor);
        }
    }
    let mut keys = BTreeMap::new();
    for u in &old.tables["unique_keys"] {
        let (kind, id) = (s(&u["kind"]), s(&u["id"]));
        let key = rekey(&kind, &id, &s(&u["key"]));
        assert!(
            keys.insert(key.clone(), (kind, id)).is_none(),
            "{key} twice"
        );
    }
    (out, keys)
}

/// Decodes `rec` with today's type of its kind.
fn decode(rec: &StoredRecord) {
    let ok = match rec.kind.as_str() {
        "operation" => Operation::from_stored(rec).map(drop),
        "wallet" => stablecoin::core::domain::consent::Wallet::from_stored(rec).map(drop),
        "tenant" => Tenant::from_stored(rec).map(drop),
        "api_key" => ApiKey::from_stored(rec).map(drop),
        "deposit" => DepositRecord::from_stored(rec).map(drop),
        "scan_cursor" => ScanPositions::from_stored(rec).map(drop),
        "escrow" => Deal::from_stored(rec).map(drop),
        "escrow_event" => HistoryEntry::from_stored(rec).map(drop),
        "escrow_staff_queue" => StaffQueueEntry::from_stored(rec).map(drop),
        "checkout_business" => Business::from_stored(rec).map(drop),
        "payment_session" => Session::from_stored(rec).map(drop),
        other => panic!("no decoder for kind {other:?}: add it here"),
    };
    ok.unwrap_or_else(|e| panic!("{}/{}: {e}", rec.kind, rec.id));
}

/// The balances the old transfers sum to, per account: (debits, credits) posted, then
/// (debits, credits) pending.
fn balances(transfers: &[Map<String, Value>]) -> BTreeMap<String, [u64; 4]> {
    let mut out: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    let amount = |t: &Map<String, Value>| u64::try_from(i(&t["amount"])).unwrap();
    let by_id: BTreeMap<String, &Map<String, Value>> =
        transfers.iter().map(|t| (s(&t["id"]), t)).collect();
    for t in transfers {
        let (debit, credit) = (s(&t["debit"]), s(&t["credit"]));
        let phase = s(&t["phase"]);
        if phase == "post" || phase == "void" {
            // The hold it resolves is released, whatever its outcome.
            let held = by_id[&s(&t["pending_id"])];
            let held_amount = amount(held);
            out.entry(s(&held["debit"])).or_default()[2] -= held_amount;
            out.entry(s(&held["credit"])).or_default()[3] -= held_amount;
        }
        match phase.as_str() {
            "single" | "post" => {
                out.entry(debit).or_default()[0] += amount(t);
                out.entry(credit).or_default()[1] += amount(t);
            }
            "pending" => {
                out.entry(debit).or_default()[2] += amount(t);
                out.entry(credit).or_default()[3] += amount(t);
            }
            "void" => {}
            other => panic!("phase {other}"),
        }
    }
    out
}

/// Record counts by kind, read from the database after the upgrade.
async fn counts(db: &Db) -> BTreeMap<String, i64> {
    let sql = "SELECT kind, count(*) FROM records GROUP BY kind";
    match db {
        Db::Lite(p) => sqlx::query(sql)
            .fetch_all(p)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect(),
        Db::Pg(p) => sqlx::query(sql)
            .fetch_all(p)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect(),
    }
}

/// Everything the old database held, checked through today's store after the upgrade.
async fn intact(
    label: &str,
    old: &Old,
    crossed: &BTreeSet<String>,
    store: Arc<dyn Store>,
    ledger: Arc<dyn Ledger>,
    after: &Db,
) {
    let (records, keys) = expected(old, crossed);
    eprintln!(
        "{label}: {} records, {} unique keys, {} ledger accounts, {} transfers, {} \
         idempotency records, {} outbox events; migrations run: {crossed:?}",
        records.len(),
        keys.len(),
        old.tables["ledger_accounts"].len(),
        old.tables["ledger_transfers"].len(),
        old.tables["idempotency"].len(),
        old.tables["outbox"].len(),
    );

    // Records: counts by kind, then each one as stored, decoded.
    let mut want_counts: BTreeMap<String, i64> = BTreeMap::new();
    for (kind, _) in records.keys() {
        *want_counts.entry(kind.clone()).or_default() += 1;
    }
    assert_eq!(counts(after).await, want_counts, "{label}: records by kind");
    for ((kind, id), want) in &records {
        let rec = store.get(kind, id).await.unwrap();
        let rec = rec.unwrap_or_else(|| panic!("{label}: {kind}/{id} is gone"));
        assert_eq!(&Expected::of(&rec), want, "{label}: {kind}/{id}");
        decode(&rec);
    }
    let (_, wallets) = store
        .list(&ListQuery {
            kind: "wallet".into(),
            tenant: "_system".into(),
            subkind: None,
            status: None,
            limit: 100,
            offset: 0,
        })
        .await
        .unwrap();
    let want = records.keys().filter(|(k, _)| k == "wallet").count();
    assert_eq!(wallets, want as u64, "{label}: wallets listed");

    // Unique keys: each resolves to its owner.
    for (key, (kind, id)) in &keys {
        let rec = store.get_by_unique(key).await.unwrap();
        let owner = rec.map(|r| (r.kind, r.id));
        assert_eq!(owner, Some((kind.clone(), id.clone())), "{label}: {key}");
    }

    // The ledger: each account's sums, history, and the whole.
    let transfers = &old.tables["ledger_transfers"];
    let sums = balances(transfers);
    let mut posted_sum = 0i128;
    for account in &old.tables["ledger_accounts"] {
        let id = s(&account["id"]);
        let [dp, cp, dq, cq] = sums.get(&id).copied().unwrap_or_default();
        if account.contains_key("debits_posted") {
            let cols = [
                "debits_posted",
                "credits_posted",
                "debits_pending",
                "credits_pending",
            ];
            let stored = cols.map(|c| u64::try_from(i(&account[c])).unwrap());
            assert_eq!(
                stored,
                [dp, cp, dq, cq],
                "{label}: old {id} and its transfers"
            );
        }
        let b = ledger.balance(&id).await.unwrap();
        let got = [
            b.debits_posted,
            b.credits_posted,
            b.debits_pending,
            b.credits_pending,
        ];
        assert_eq!(got, [dp, cp, dq, cq], "{label}: balance of {id}");
        posted_sum += i128::from(cp) - i128::from(dp);
        let history = ledger.history(&id, 0, 10_000).await.unwrap();
        let got: Vec<_> = history.iter().map(|e| e.transfer_id.clone()).collect();
        let want: Vec<_> = transfers
            .iter()
            .filter(|t| t["debit"] == id.as_str() || t["credit"] == id.as_str())
            .map(|t| s(&t["id"]))
            .collect();
        assert_eq!(got, want, "{label}: history of {id}");
    }
    for id in sums.keys() {
        let known = old.tables["ledger_accounts"]
            .iter()
            .any(|a| a["id"] == id.as_str());
        assert!(known, "{label}: a transfer names {id}, which is no account");
    }
    assert_eq!(
        ledger.posted_sum().await.unwrap(),
        posted_sum,
        "{label}: posted_sum"
    );

    // The outbox, row for row.
    assert_eq!(
        after.rows("outbox").await,
        old.tables["outbox"],
        "{label}: outbox"
    );

    // Operations and idempotency records, through the engine.
    let signer = Arc::new(LocalSigner::from_seed([45; 32]));
    let polygon = support::chain(SimProfile::Evm(137), &signer);
    let tron = support::chain(SimProfile::Tron, &signer);
    let ports = support::ports(
        store.clone(),
        ledger,
        signer,
        support::START.plus_secs(3_600),
        46,
    );
    let rails: Vec<Arc<dyn Rail>> = vec![polygon, tron];
    let config = EngineConfig {
        poll_interval_ms: 0,
        ..EngineConfig::default()
    };
    let engine = Engine::new(ports, rails, config);
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut tenants = BTreeSet::new();
    for ((kind, id), want) in &records {
        if kind != "operation" {
            continue;
        }
        let tenant = TenantId(want.tenant.clone().unwrap());
        let op = engine.operation(&tenant, id).await;
        let op = op.unwrap_or_else(|e| panic!("{label}: operation {id}: {e}"));
        assert_eq!(
            Some(op.kind.as_str().to_string()),
            want.subkind,
            "{label}: {id}"
        );
        *by_kind.entry(op.kind.as_str().to_string()).or_default() += 1;
        tenants.insert(tenant);
    }
    assert!(!by_kind.is_empty(), "the data holds operations");
    for tenant in &tenants {
        for (kind, want) in &by_kind {
            let kind = OpKind::ALL
                .into_iter()
                .find(|k| k.as_str() == kind)
                .unwrap();
            let (_, total) = engine
                .list_operations(tenant, kind, None, 100, 0)
                .await
                .unwrap();
            assert_eq!(total, *want, "{label}: {} listed", kind.as_str());
        }
    }
    let idempotency = &old.tables["idempotency"];
    assert!(
        !idempotency.is_empty(),
        "the data holds idempotency records"
    );
    for row in idempotency {
        let (tenant, key) = (s(&row["tenant"]), s(&row["key"]));
        let want = IdempotencyRecord {
            tenant: tenant.clone(),
            key: key.clone(),
            request_hash: s(&row["request_hash"]),
            response: serde_json::from_str(&s(&row["response"])).unwrap(),
            created_at: Timestamp::from_millis(i(&row["created_at"])),
        };
        let got = store.idempotency(&tenant, &key).await.unwrap();
        assert_eq!(got.as_ref(), Some(&want), "{label}: idempotency {key}");
        let replayed = replay(&engine, &TenantId(tenant), &key).await;
        assert_eq!(replayed, want.response, "{label}: replay of {key}");
    }
    assert_eq!(
        counts(after).await,
        want_counts,
        "{label}: the replays wrote nothing"
    );
}

/// The request first made with `key` (see the fixture's README), made again.
async fn replay(engine: &Engine, tenant: &TenantId, key: &str) -> Value {
    let buyer = Phone::parse("+2250700000001").unwrap();
    let seller = Phone::parse("+2250700000002").unwrap();
    let micros = |a: &str| Micros::parse_decimal(a).unwrap();
    let send = |from: &Phone, to: &Phone, token, quote: &str| SendRequest {
        from_phone_number: from.clone(),
        to_phone_number: to.clone(),
        token,
        quote_id: quote.into(),
    };
    let k = Some(key);
    let view = match key {
        "fund-seller-1" => {
            let req = FundRequest {
                phone_number: seller,
                token: Token::Usdc,
                amount: micros("4"),
            };
            engine.fund(tenant, &req, k).await
        }
        "send-1" => {
            let req = send(&buyer, &seller, Token::Usdc, "DIRECT_CRYPTO:USDC:2");
            engine.send(tenant, &req, k).await
        }
        "send-tron-1" => {
            let req = send(&buyer, &seller, Token::Usdt, "DIRECT_CRYPTO:USDT:3");
            engine.send_on(tenant, RailId::Tron, &req, k).await
        }
        "withdraw-1" => {
            let req = WithdrawRequest {
                phone_number: buyer,
                token: Token::Usdc,
                amount: micros("1.5"),
                payout_currency: "XOF".into(),
            };
            engine.withdraw(tenant, &req, k).await
        }
        "send-2" => {
            let req = send(&seller, &buyer, Token::Usdc, "DIRECT_CRYPTO:USDC:1.25");
            engine.send(tenant, &req, k).await
        }
        other => panic!("no request known for idempotency key {other:?}: add it here"),
    };
    serde_json::to_value(view.unwrap_or_else(|e| panic!("replay of {key}: {e}"))).unwrap()
}

/// The migrations above `k`, by name.
fn crossed(m: &Migrator, k: i64) -> BTreeSet<String> {
    m.iter()
        .filter(|m| m.version > k)
        .map(|m| m.description.to_string())
        .collect()
}

/// The schemas to start from: every migration set but the last.
fn earlier(m: &Migrator) -> Vec<i64> {
    let versions: Vec<i64> = m.iter().map(|m| m.version).collect();
    versions[..versions.len() - 1].to_vec()
}

#[tokio::test]
async fn schema_upgrades_sqlite_from_every_earlier_schema_keep_every_row() {
    let m = migrator("sqlite").await;
    let data = data();
    for k in earlier(&m) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("schema_{k}.db"));
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .unwrap();
        let db = Db::Lite(pool);
        build(&db, &m, &data, k).await;
        let old = read_old(&db).await;
        db.close().await;

        let store = stablecoin::store::sqlite::SqliteStore::open_path(&path).await;
        let store = Arc::new(store.unwrap_or_else(|e| panic!("sqlite from {k}: {e}")));
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.read_only(true))
            .await
            .unwrap();
        let after = Db::Lite(pool);
        let label = format!("sqlite from {k}");
        intact(&label, &old, &crossed(&m, k), store.clone(), store, &after).await;
        after.close().await;
    }
}

#[tokio::test]
async fn schema_upgrades_postgres_from_every_earlier_schema_keep_every_row() {
    let Some(url) = pg_url() else {
        return;
    };
    let m = migrator("postgres").await;
    let data = data();
    for k in earlier(&m) {
        let schema = format!("schema_upgrade_{}_{k}", std::process::id());
        let admin = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .unwrap();
        let create = format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}");
        sqlx::raw_sql(AssertSqlSafe(create))
            .execute(&admin)
            .await
            .unwrap();
        let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        let options = options.options([("search_path", schema.as_str())]);
        let connect = || {
            sqlx::postgres::PgPoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone())
        };
        let db = Db::Pg(connect().await.unwrap());
        build(&db, &m, &data, k).await;
        let old = read_old(&db).await;
        db.close().await;

        let config = stablecoin::store::postgres::PgConfig::new(url.clone()).schema(&schema);
        let store = stablecoin::store::postgres::PgStore::connect(config).await;
        let store = Arc::new(store.unwrap_or_else(|e| panic!("postgres from {k}: {e}")));
        let after = Db::Pg(connect().await.unwrap());
        let label = format!("postgres from {k}");
        intact(
            &label,
            &old,
            &crossed(&m, k),
            store.clone(),
            store.clone(),
            &after,
        )
        .await;
        after.close().await;
        store.close().await;
        let drop = format!("DROP SCHEMA {schema} CASCADE");
        sqlx::raw_sql(AssertSqlSafe(drop))
            .execute(&admin)
            .await
            .unwrap();
        admin.close().await;
    }
}

/// The database URL, or `None` (skip) when none is configured and none was promised.
fn pg_url() -> Option<String> {
    match std::env::var("STABLECOIN_TEST_PG_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("STABLECOIN_REQUIRE_PG").is_some() => {
            panic!("STABLECOIN_TEST_PG_URL is not set: run scripts/test-postgres.sh")
        }
        Err(_) => {
            eprintln!("SKIPPED: STABLECOIN_TEST_PG_URL is not set (scripts/test-postgres.sh)");
            None
        }
    }
}
