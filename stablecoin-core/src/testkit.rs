//! Conformance suites every adapter runs (BDK `persist_test_utils` style).
//!
//! [`store_suite`] runs every `case_*` function on a fresh store from `make` and checks
//! after each that the ledger still sums to zero (double entry). Each case is public, so
//! an adapter can also run one alone while debugging:
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread")]
//! async fn my_store_conforms() {
//!     stablecoin_core::testkit::store_suite(|| async { Arc::new(MyStore::open_temp().await) }).await;
//! }
//! ```
//!
//! Cases panic with a message naming the broken rule. The concurrency cases spawn tokio
//! tasks, so run the suite inside a tokio runtime (a multi-thread one exercises more).
//! A case assumes its store is empty and only it uses it.

use crate::domain::money::Micros;
use crate::domain::time::Timestamp;
use crate::ports::ledger::{Balance, Ledger, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use crate::ports::store::{
    Batch, IdempotencyRecord, ListQuery, OutboxEvent, Put, Store, StoreError, StoredRecord,
    Unchanged,
};
use serde_json::json;
use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

/// Runs every store + ledger case, each on a fresh store from `make`.
pub async fn store_suite<F, Fut, S>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Store + Ledger + ?Sized + 'static,
{
    macro_rules! run {
        ($($case:ident),* $(,)?) => {$(
            let store = make().await;
            $case(store.clone()).await;
            assert_posted_sum_zero(&*store, stringify!($case)).await;
        )*};
    }
    run!(
        case_insert_and_get,
        case_many_puts_in_one_batch,
        case_version_conflict,
        case_unchanged_checks,
        case_unique_keys,
        case_unique_violation_rolls_back_batch,
        case_single_step_failures_write_nothing,
        case_list,
        case_idempotency,
        case_ledger_accounts,
        case_ledger_single_transfer,
        case_ledger_invalid_transfers,
        case_ledger_idempotent_transfer,
        case_ledger_insufficient_funds,
        case_ledger_allow_negative,
        case_ledger_pending_post,
        case_ledger_pending_void,
        case_ledger_resolution_rules,
        case_failed_transfer_rolls_back_batch,
        case_outbox_sequence,
        case_claim_due,
        case_concurrent_debits,
        case_concurrent_claims,
    );
}

/// Panics unless the ledger's posted sums add up to zero.
pub async fn assert_posted_sum_zero<S: Ledger + ?Sized>(store: &S, case: &str) {
    let sum = store
        .posted_sum()
        .await
        .unwrap_or_else(|e| panic!("{case}: posted_sum failed: {e}"));
    assert_eq!(
        sum, 0,
        "{case}: posted_sum must be 0 (double entry), got {sum}"
    );
}

// ---------------------------------------------------------------------------------------
// Helpers

const KIND: &str = "widget";

fn ts(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn record(id: &str, tenant: &str, created_ms: i64) -> StoredRecord {
    StoredRecord {
        kind: KIND.to_string(),
        id: id.to_string(),
        tenant: Some(tenant.to_string()),
        version: 0,
        created_at: ts(created_ms),
        status: None,
        due_at: None,
        unique_keys: Vec::new(),
        body: json!({ "id": id }).into(),
    }
}

fn with_keys(mut r: StoredRecord, keys: &[&str]) -> StoredRecord {
    r.unique_keys = keys.iter().map(|k| k.to_string()).collect();
    r
}

fn with_status(mut r: StoredRecord, status: &str) -> StoredRecord {
    r.status = Some(status.to_string());
    r
}

fn with_due(mut r: StoredRecord, due_ms: Option<i64>) -> StoredRecord {
    r.due_at = due_ms.map(ts);
    r
}

fn insert(r: StoredRecord) -> Put {
    Put {
        record: r,
        expected_version: None,
    }
}

fn update(r: StoredRecord, expected: u64) -> Put {
    Put {
        record: r,
        expected_version: Some(expected),
    }
}

fn puts(puts: Vec<Put>) -> Batch {
    Batch {
        puts,
        ..Batch::default()
    }
}

fn account(id: &str, allow_negative: bool) -> LedgerAccount {
    LedgerAccount {
        id: id.to_string(),
        allow_negative,
    }
}

fn transfer(id: &str, debit: &str, credit: &str, amount: u64, phase: Phase) -> LedgerTransfer {
    LedgerTransfer {
        id: id.to_string(),
        debit: debit.to_string(),
        credit: credit.to_string(),
        amount: Micros(amount),
        phase,
    }
}

fn single(id: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    transfer(id, debit, credit, amount, Phase::Single)
}

fn post(id: &str, pending: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    let phase = Phase::Post {
        pending_id: pending.to_string(),
    };
    transfer(id, debit, credit, amount, phase)
}

fn void(id: &str, pending: &str, debit: &str, credit: &str, amount: u64) -> LedgerTransfer {
    let phase = Phase::Void {
        pending_id: pending.to_string(),
    };
    transfer(id, debit, credit, amount, phase)
}

fn transfers(ledger: Vec<LedgerTransfer>) -> Batch {
    Batch {
        ledger,
        ..Batch::default()
    }
}

fn event(id: &str) -> OutboxEvent {
    OutboxEvent {
        id: id.to_string(),
        tenant: "t1".to_string(),
        event_type: "widget.changed".to_string(),
        occurred_at: ts(1_000),
        payload: json!({ "event": id }),
    }
}

fn idem(tenant: &str, key: &str, hash: &str) -> IdempotencyRecord {
    IdempotencyRecord {
        tenant: tenant.to_string(),
        key: key.to_string(),
        request_hash: hash.to_string(),
        response: json!({ "hash": hash }),
        created_at: ts(1_000),
    }
}

async fn commit_ok<S: Store + ?Sized>(store: &S, batch: Batch, what: &str) {
    if let Err(e) = store.commit(batch).await {
        panic!("{what}: commit should succeed, got {e:?}");
    }
}

async fn commit_err<S: Store + ?Sized>(store: &S, batch: Batch, what: &str) -> StoreError {
    match store.commit(batch).await {
        Ok(r) => panic!("{what}: commit should fail, got Ok({r:?})"),
        Err(e) => e,
    }
}

async fn get<S: Store + ?Sized>(store: &S, id: &str) -> Option<StoredRecord> {
    store.get(KIND, id).await.expect("get")
}

async fn balance<S: Ledger + ?Sized>(store: &S, account: &str) -> Balance {
    store
        .balance(account)
        .await
        .unwrap_or_else(|e| panic!("balance of {account}: {e:?}"))
}

async fn outbox_all<S: Store + ?Sized>(store: &S) -> Vec<(u64, OutboxEvent)> {
    store
        .outbox_after(0, usize::MAX)
        .await
        .expect("outbox_after")
}

fn posted(credits: u64, debits: u64) -> Balance {
    Balance {
        debits_posted: debits,
        credits_posted: credits,
        debits_pending: 0,
        credits_pending: 0,
    }
}

/// Creates `world` (allow_negative) and `alice`, and funds alice with `funds`.
async fn funded<S: Store + ?Sized>(store: &S, funds: u64) {
    let batch = Batch {
        accounts: vec![
            account("world", true),
            account("alice", false),
            account("bob", false),
        ],
        ledger: vec![single("fund-alice", "world", "alice", funds)],
        ..Batch::default()
    };
    commit_ok(store, batch, "funding alice").await;
}

fn is_ledger(e: &StoreError, f: impl Fn(&LedgerError) -> bool) -> bool {
    matches!(e, StoreError::Ledger(l) if f(l))
}

// ---------------------------------------------------------------------------------------
// Records

/// Insert sets version 1, each update adds one, `get` returns what was committed.
pub async fn case_insert_and_get<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    assert_eq!(
        get(s, "w1").await,
        None,
        "get of a missing record must be None"
    );
    let mut r = with_status(record("w1", "t1", 1_000), "pending");
    r.version = 42; // the store sets it
    commit_ok(s, puts(vec![insert(r.clone())]), "insert").await;
    let got = get(s, "w1")
        .await
        .expect("inserted record must be readable");
    assert_eq!(got.version, 1, "version must be 1 on insert");
    assert_eq!(got.body, r.body);
    assert_eq!(got.status.as_deref(), Some("pending"));
    assert_eq!(got.tenant.as_deref(), Some("t1"));
    assert_eq!(got.created_at, ts(1_000));

    let mut r2 = with_status(r.clone(), "done");
    r2.body = json!({ "id": "w1", "n": 2 }).into();
    commit_ok(s, puts(vec![update(r2.clone(), 1)]), "update at version 1").await;
    let got = get(s, "w1").await.unwrap();
    assert_eq!(got.version, 2, "version must be 2 after one update");
    assert_eq!(got.body, r2.body, "update must replace the body");
    assert_eq!(got.status.as_deref(), Some("done"));

    commit_ok(s, puts(vec![update(r2.clone(), 2)]), "update at version 2").await;
    assert_eq!(get(s, "w1").await.unwrap().version, 3);

    // Two puts of one record in one batch apply in order.
    let b = puts(vec![
        insert(record("w2", "t1", 1)),
        update(record("w2", "t1", 1), 1),
    ]);
    commit_ok(s, b, "insert then update in one batch").await;
    assert_eq!(get(s, "w2").await.unwrap().version, 2);

    // Same id, other kind: another record.
    let mut other = record("w1", "t1", 5);
    other.kind = "gadget".to_string();
    commit_ok(s, puts(vec![insert(other)]), "same id under another kind").await;
    assert_eq!(store.get("gadget", "w1").await.unwrap().unwrap().version, 1);
    assert_eq!(get(s, "w1").await.unwrap().version, 3);
}

/// Many puts in one batch (a webhook fan-out, a round of delivery outcomes) behave as
/// the same puts one by one: every field written, versions counted, claims released, and
/// the first put in order that conflicts fails the whole batch with nothing written.
pub async fn case_many_puts_in_one_batch<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let n = 50;
    let id = |i: usize| format!("m{i:03}");
    let fresh: Vec<Put> = (0..n)
        .map(|i| {
            let mut r = with_due(
                with_status(record(&id(i), "t1", i as i64), "pending"),
                (i % 2 == 0).then_some(100),
            );
            r.body = json!({ "id": id(i), "n": 1 }).into();
            insert(r)
        })
        .collect();
    commit_ok(s, puts(fresh.clone()), "50 inserts in one batch").await;
    for (i, put) in fresh.iter().enumerate() {
        let got = get(s, &id(i)).await.expect("inserted");
        assert_eq!(got.version, 1, "{}", id(i));
        assert_eq!(got.body, put.record.body);
        assert_eq!(got.status.as_deref(), Some("pending"));
        assert_eq!(got.tenant.as_deref(), Some("t1"));
        assert_eq!(got.created_at, ts(i as i64));
        assert_eq!(got.due_at, put.record.due_at);
    }
    let claimed = store
        .claim_due(KIND, "w1", ts(1_000), 60_000, 100)
        .await
        .unwrap();
    assert_eq!(claimed.len(), n / 2, "the due half");

    // Updating them all releases the claims: what is still due is claimable again.
    let updated: Vec<Put> = (0..n)
        .map(|i| {
            let mut r = with_due(
                with_status(record(&id(i), "t1", i as i64), "done"),
                (i < 10).then_some(200),
            );
            r.body = json!({ "id": id(i), "n": 2 }).into();
            update(r, 1)
        })
        .collect();
    commit_ok(s, puts(updated.clone()), "50 updates in one batch").await;
    for (i, put) in updated.iter().enumerate() {
        let got = get(s, &id(i)).await.unwrap();
        assert_eq!((got.version, &got.body), (2, &put.record.body), "{}", id(i));
        assert_eq!(got.status.as_deref(), Some("done"));
        assert_eq!(got.due_at, put.record.due_at);
    }
    let again = store
        .claim_due(KIND, "w2", ts(1_000), 60_000, 100)
        .await
        .unwrap();
    assert_eq!(again.len(), 10, "claims released by the update");

    // One stale version among many: nothing of the batch is written.
    let mut stale = updated.clone();
    for p in &mut stale {
        p.expected_version = Some(2);
        p.record.body = json!({ "n": 3 }).into();
    }
    stale[37].expected_version = Some(1);
    stale[41].expected_version = Some(9);
    let err = commit_err(s, puts(stale), "one stale version among 50").await;
    assert!(
        matches!(&err, StoreError::VersionConflict { id: bad, .. } if bad == &id(37)),
        "the first conflicting put is reported: {err:?}"
    );
    for i in 0..n {
        assert_eq!(
            get(s, &id(i)).await.unwrap().version,
            2,
            "{} unchanged",
            id(i)
        );
    }
    // An insert of an existing record among new ones: none inserted.
    let mut mixed: Vec<Put> = (n..n + 9)
        .map(|i| insert(record(&id(i), "t1", 1)))
        .collect();
    mixed.push(insert(record(&id(3), "t1", 1)));
    let err = commit_err(s, puts(mixed), "an existing record among inserts").await;
    assert!(matches!(err, StoreError::VersionConflict { .. }), "{err:?}");
    assert_eq!(get(s, &id(n)).await, None);
}

/// Both directions of a version mismatch fail with `VersionConflict` and change nothing.
pub async fn case_version_conflict<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let r = record("w1", "t1", 1_000);
    commit_ok(s, puts(vec![insert(r.clone())]), "insert").await;
    let before = get(s, "w1").await;

    let mut changed = r.clone();
    changed.body = json!({ "changed": true }).into();
    let cases = [
        (insert(changed.clone()), "insert of an existing record"),
        (
            update(changed.clone(), 2),
            "update with a newer expected version",
        ),
        (
            update(changed.clone(), 0),
            "update with an older expected version",
        ),
        (
            update(record("missing", "t1", 1), 1),
            "update of a missing record",
        ),
    ];
    for (put, what) in cases {
        let batch = Batch {
            puts: vec![insert(record("side", "t1", 2)), put],
            accounts: vec![account("acct", false)],
            outbox: vec![event("evt_conflict")],
            idempotency: Some(idem("t1", "k-conflict", "h")),
            ..Batch::default()
        };
        let err = commit_err(s, batch, what).await;
        assert!(
            matches!(&err, StoreError::VersionConflict { kind, .. } if kind == KIND),
            "{what}: expected VersionConflict, got {err:?}"
        );
        assert_eq!(
            get(s, "w1").await,
            before,
            "{what}: record must be unchanged"
        );
        assert_eq!(
            get(s, "side").await,
            None,
            "{what}: other puts must roll back"
        );
        assert_eq!(get(s, "missing").await, None, "{what}: nothing inserted");
        assert!(
            outbox_all(s).await.is_empty(),
            "{what}: outbox must roll back"
        );
        assert!(
            store
                .idempotency("t1", "k-conflict")
                .await
                .unwrap()
                .is_none(),
            "{what}: idempotency record must roll back"
        );
        assert!(
            store.balance("acct").await.is_err(),
            "{what}: account creation must roll back"
        );
    }
}

fn unchanged(id: &str, version: u64) -> Unchanged {
    Unchanged {
        kind: KIND.to_string(),
        id: id.to_string(),
        version,
    }
}

/// `Batch::unchanged`: a batch commits only while the records it relied on are at the
/// version it read, and does not rewrite them; a stale check fails the whole batch.
pub async fn case_unchanged_checks<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    let r = record("w1", "t1", 1_000);
    commit_ok(s, puts(vec![insert(r.clone())]), "insert").await;
    commit_ok(s, puts(vec![update(r.clone(), 1)]), "update to v2").await;
    let before = get(s, "w1").await;
    assert_eq!(before.as_ref().map(|r| r.version), Some(2));

    let ok = Batch {
        unchanged: vec![unchanged("w1", 2)],
        puts: vec![insert(record("side-ok", "t1", 2))],
        ledger: vec![single("ok-1", "alice", "bob", 100)],
        outbox: vec![event("evt_ok")],
        ..Batch::default()
    };
    commit_ok(s, ok, "a check at the current version").await;
    assert_eq!(
        get(s, "w1").await,
        before,
        "a checked record is not rewritten"
    );
    assert!(
        get(s, "side-ok").await.is_some(),
        "the batch's put is written"
    );
    commit_ok(
        s,
        Batch {
            unchanged: vec![unchanged("w1", 2)],
            ..Batch::default()
        },
        "a batch of checks only",
    )
    .await;

    let alice = balance(s, "alice").await;
    let outbox_before = outbox_all(s).await;
    let cases = [
        (
            vec![unchanged("w1", 1)],
            "w1",
            "a check at an older version",
        ),
        (vec![unchanged("w1", 3)], "w1", "a check at a newer version"),
        (
            vec![unchanged("gone", 1)],
            "gone",
            "a check of a missing record",
        ),
        (
            vec![unchanged("side-ok", 1), unchanged("w1", 1)],
            "w1",
            "a good check then a stale one",
        ),
    ];
    for (checks, stale, what) in cases {
        let batch = Batch {
            unchanged: checks,
            puts: vec![
                insert(record("side", "t1", 3)),
                update(with_status(r.clone(), "moved"), 2),
            ],
            accounts: vec![account("acct", false)],
            ledger: vec![single("never", "alice", "bob", 10)],
            outbox: vec![event("evt_stale")],
            idempotency: Some(idem("t1", "k-stale", "h")),
            background: false,
        };
        let err = commit_err(s, batch, what).await;
        assert!(
            matches!(&err, StoreError::VersionConflict { kind, id } if kind == KIND && id == stale),
            "{what}: expected VersionConflict on {stale}, got {err:?}"
        );
        assert_eq!(get(s, "w1").await, before, "{what}: w1 must be unchanged");
        assert_eq!(get(s, "side").await, None, "{what}: puts must roll back");
        assert_eq!(
            balance(s, "alice").await,
            alice,
            "{what}: ledger must roll back"
        );
        assert_eq!(
            outbox_all(s).await,
            outbox_before,
            "{what}: outbox must roll back"
        );
        assert!(
            store.idempotency("t1", "k-stale").await.unwrap().is_none(),
            "{what}: idempotency record must roll back"
        );
        assert!(
            store.balance("acct").await.is_err(),
            "{what}: account creation must roll back"
        );
    }
    let err = commit_err(
        s,
        Batch {
            unchanged: vec![unchanged("w1", 1)],
            ..Batch::default()
        },
        "a stale batch of checks only",
    )
    .await;
    assert!(matches!(err, StoreError::VersionConflict { .. }), "{err:?}");
}

/// Unique keys resolve to their record and follow it when it is re-keyed.
pub async fn case_unique_keys<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    assert_eq!(store.get_by_unique("phone:1").await.unwrap(), None);
    let r = with_keys(record("w1", "t1", 1), &["phone:1", "email:a"]);
    commit_ok(s, puts(vec![insert(r)]), "insert with keys").await;
    for key in ["phone:1", "email:a"] {
        let got = store.get_by_unique(key).await.unwrap();
        assert_eq!(
            got.map(|r| r.id),
            Some("w1".to_string()),
            "key {key} must resolve"
        );
    }

    // Re-key: phone:1 -> phone:2, email:a kept.
    let r2 = with_keys(record("w1", "t1", 1), &["phone:2", "email:a"]);
    commit_ok(s, puts(vec![update(r2, 1)]), "re-key").await;
    assert_eq!(
        store.get_by_unique("phone:1").await.unwrap(),
        None,
        "a key dropped by an update must no longer resolve"
    );
    let got = store
        .get_by_unique("phone:2")
        .await
        .unwrap()
        .expect("new key resolves");
    assert_eq!((got.id.as_str(), got.version), ("w1", 2));
    assert!(
        store.get_by_unique("email:a").await.unwrap().is_some(),
        "kept key resolves"
    );

    // The freed key may go to another record.
    let other = with_keys(record("w2", "t1", 2), &["phone:1"]);
    commit_ok(s, puts(vec![insert(other)]), "reuse of a freed key").await;
    let got = store.get_by_unique("phone:1").await.unwrap().unwrap();
    assert_eq!(got.id, "w2");

    // A taken key is refused, on insert and on update.
    let err = commit_err(
        s,
        puts(vec![insert(with_keys(record("w3", "t1", 3), &["phone:2"]))]),
        "insert with a taken key",
    )
    .await;
    assert!(
        matches!(&err, StoreError::UniqueViolation { key } if key == "phone:2"),
        "expected UniqueViolation(phone:2), got {err:?}"
    );
    assert_eq!(get(s, "w3").await, None);
    let err = commit_err(
        s,
        puts(vec![update(
            with_keys(record("w2", "t1", 2), &["email:a"]),
            1,
        )]),
        "update to a taken key",
    )
    .await;
    assert!(
        matches!(err, StoreError::UniqueViolation { .. }),
        "got {err:?}"
    );
    let w2 = get(s, "w2").await.unwrap();
    assert_eq!(w2.version, 1, "refused update must not change the record");
    assert_eq!(w2.unique_keys, vec!["phone:1".to_string()]);
    assert_eq!(
        store.get_by_unique("email:a").await.unwrap().unwrap().id,
        "w1"
    );
}

/// A unique violation rolls back the whole batch: puts, accounts, transfers, outbox,
/// idempotency record.
pub async fn case_unique_violation_rolls_back_batch<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    let taken = with_keys(record("w1", "t1", 1), &["k:taken"]);
    commit_ok(s, puts(vec![insert(taken)]), "insert key holder").await;
    let alice = balance(s, "alice").await;
    let outbox_before = outbox_all(s).await;

    let batch = Batch {
        unchanged: vec![],
        puts: vec![
            insert(with_keys(record("w2", "t1", 2), &["k:fresh"])),
            update(with_keys(record("w1", "t1", 1), &["k:renamed"]), 1),
            insert(with_keys(record("w3", "t1", 3), &["k:fresh"])),
        ],
        accounts: vec![account("carol", false)],
        ledger: vec![single("x1", "alice", "bob", 10)],
        outbox: vec![event("evt_uv")],
        idempotency: Some(idem("t1", "k-uv", "h")),
        // A background batch is held to exactly the same rules.
        background: true,
    };
    let err = commit_err(s, batch, "two records with one key").await;
    assert!(
        matches!(&err, StoreError::UniqueViolation { key } if key == "k:fresh"),
        "expected UniqueViolation(k:fresh), got {err:?}"
    );
    assert_eq!(get(s, "w2").await, None, "earlier insert must roll back");
    assert_eq!(get(s, "w3").await, None);
    let w1 = get(s, "w1").await.unwrap();
    assert_eq!(w1.version, 1, "earlier update must roll back");
    assert_eq!(
        store.get_by_unique("k:taken").await.unwrap().unwrap().id,
        "w1"
    );
    assert_eq!(store.get_by_unique("k:renamed").await.unwrap(), None);
    assert_eq!(store.get_by_unique("k:fresh").await.unwrap(), None);
    assert!(
        store.balance("carol").await.is_err(),
        "account must roll back"
    );
    assert_eq!(balance(s, "alice").await, alice, "ledger must roll back");
    assert!(store.history("alice", 0, 100).await.unwrap().len() == 1);
    assert_eq!(outbox_all(s).await, outbox_before, "outbox must roll back");
    assert!(store.idempotency("t1", "k-uv").await.unwrap().is_none());
    // The transfer id was not consumed: it may be used with other fields.
    commit_ok(
        s,
        transfers(vec![single("x1", "alice", "bob", 20)]),
        "reuse x1",
    )
    .await;
    assert_eq!(balance(s, "bob").await, posted(20, 0));
}

/// A batch with ONE SQL-checked step (one put, or only an idempotency record) beside
/// good or bad ledger transfers fails with the same error, in the same order of
/// precedence, and writes nothing, like a batch of many steps. (A store may skip its
/// savepoint for such batches: this is what makes that safe.)
pub async fn case_single_step_failures_write_nothing<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    commit_ok(
        s,
        puts(vec![
            insert(with_keys(record("w1", "t1", 1), &["k:w1"])),
            insert(with_keys(record("w2", "t1", 2), &["k:w2"])),
        ]),
        "setup",
    )
    .await;
    commit_ok(
        s,
        Batch {
            idempotency: Some(idem("t1", "k-used", "h")),
            ..Default::default()
        },
        "used key",
    )
    .await;
    let before = (
        balance(s, "alice").await,
        balance(s, "bob").await,
        outbox_all(s).await,
    );
    let good = || vec![single("ss-ok", "alice", "bob", 10)];
    let bad = || vec![single("ss-bad", "alice", "bob", 5_000)];
    type Check = fn(&StoreError) -> bool;
    /// What the batch is, its puts, its idempotency record, its transfers, its error.
    type Case = (
        &'static str,
        Vec<Put>,
        Option<IdempotencyRecord>,
        Vec<LedgerTransfer>,
        Check,
    );
    let version_conflict: Check = |e| matches!(e, StoreError::VersionConflict { .. });
    let unique: Check = |e| matches!(e, StoreError::UniqueViolation { key } if key == "k:w1");
    let idem_exists: Check = |e| matches!(e, StoreError::IdempotencyExists { .. });
    let overdraft: Check = |e| matches!(e, StoreError::Ledger(_));
    let cases: Vec<Case> = vec![
        (
            "insert of an existing record",
            vec![insert(record("w2", "t1", 9))],
            None,
            good(),
            version_conflict,
        ),
        (
            "insert with a key another record holds",
            vec![insert(with_keys(record("w9", "t1", 9), &["k:w1"]))],
            None,
            good(),
            unique,
        ),
        (
            "insert of an existing record whose key another holds: the conflict first",
            vec![insert(with_keys(record("w2", "t1", 9), &["k:w1"]))],
            None,
            good(),
            version_conflict,
        ),
        (
            "update at a stale version",
            vec![update(record("w2", "t1", 2), 7)],
            None,
            good(),
            version_conflict,
        ),
        (
            "update to a key another record holds",
            vec![update(with_keys(record("w2", "t1", 2), &["k:w1"]), 1)],
            None,
            good(),
            unique,
        ),
        (
            "a good insert and an overdraft",
            vec![insert(record("w9", "t1", 9))],
            None,
            bad(),
            overdraft,
        ),
        (
            "a stale update and an overdraft: the put first",
            vec![update(record("w2", "t1", 2), 7)],
            None,
            bad(),
            version_conflict,
        ),
        (
            "a used idempotency key",
            vec![],
            Some(idem("t1", "k-used", "h")),
            good(),
            idem_exists,
        ),
        (
            "a fresh idempotency key and an overdraft",
            vec![],
            Some(idem("t1", "k-new", "h")),
            bad(),
            overdraft,
        ),
    ];
    for (what, puts, idempotency, ledger, check) in cases {
        let batch = Batch {
            puts,
            idempotency,
            ledger,
            outbox: vec![event("evt_ss")],
            ..Default::default()
        };
        let err = commit_err(s, batch, what).await;
        assert!(check(&err), "{what}: got {err:?}");
        assert_eq!(get(s, "w9").await, None, "{what}: no record may be created");
        let w2 = get(s, "w2").await.unwrap();
        assert_eq!(w2.version, 1, "{what}: w2 must be unchanged");
        assert_eq!(w2.unique_keys, vec!["k:w2".to_string()], "{what}");
        assert_eq!(
            store.get_by_unique("k:w1").await.unwrap().unwrap().id,
            "w1",
            "{what}"
        );
        assert!(
            store.idempotency("t1", "k-new").await.unwrap().is_none(),
            "{what}: no idempotency record may be written"
        );
        let after = (
            balance(s, "alice").await,
            balance(s, "bob").await,
            outbox_all(s).await,
        );
        assert_eq!(after, before, "{what}: ledger and outbox must be unchanged");
    }
}

/// Lists are per kind and tenant, newest first by (created_at, id), filterable by
/// status, paged by limit/offset, with the total of all matches.
pub async fn case_list<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let mut ps = vec![
        insert(with_status(record("a", "t1", 100), "open")),
        insert(with_status(record("b", "t1", 300), "done")),
        insert(with_status(record("c", "t1", 200), "open")),
        insert(with_status(record("d", "t1", 300), "open")), // ties with b: d first
        insert(record("e", "t1", 50)),
        insert(with_status(record("x", "t2", 400), "open")),
    ];
    let mut untenanted = record("sys", "t1", 500);
    untenanted.tenant = None;
    ps.push(insert(untenanted));
    let mut other_kind = record("g", "t1", 600);
    other_kind.kind = "gadget".to_string();
    ps.push(insert(other_kind));
    commit_ok(s, puts(ps), "insert list fixtures").await;

    let q = |status: Option<&str>, limit: usize, offset: usize| ListQuery {
        kind: KIND.to_string(),
        tenant: "t1".to_string(),
        status: status.map(str::to_string),
        limit,
        offset,
    };
    let ids = |page: &[StoredRecord]| page.iter().map(|r| r.id.clone()).collect::<Vec<_>>();

    let (page, total) = store.list(&q(None, 100, 0)).await.unwrap();
    assert_eq!(
        ids(&page),
        ["d", "b", "c", "a", "e"],
        "newest first by (created_at, id)"
    );
    assert_eq!(total, 5);

    let (page, total) = store.list(&q(Some("open"), 100, 0)).await.unwrap();
    assert_eq!(ids(&page), ["d", "c", "a"], "status filter");
    assert_eq!(total, 3);

    let (page, total) = store.list(&q(None, 2, 1)).await.unwrap();
    assert_eq!(ids(&page), ["b", "c"], "limit/offset");
    assert_eq!(total, 5, "total counts every match, not the page");

    let (page, total) = store.list(&q(Some("open"), 2, 2)).await.unwrap();
    assert_eq!(ids(&page), ["a"]);
    assert_eq!(total, 3);

    let (page, total) = store.list(&q(None, 10, 10)).await.unwrap();
    assert!(page.is_empty(), "offset past the end");
    assert_eq!(total, 5);

    let (page, total) = store.list(&q(None, 0, 0)).await.unwrap();
    assert!(page.is_empty(), "limit 0");
    assert_eq!(total, 5);

    let mut t2 = q(None, 100, 0);
    t2.tenant = "t2".to_string();
    let (page, total) = store.list(&t2).await.unwrap();
    assert_eq!(
        (ids(&page), total),
        (vec!["x".to_string()], 1),
        "tenant isolation"
    );

    let mut none = q(None, 100, 0);
    none.tenant = "t3".to_string();
    assert_eq!(
        store.list(&none).await.unwrap(),
        (vec![], 0),
        "unknown tenant"
    );
    none.tenant = "t1".to_string();
    none.kind = "nothing".to_string();
    assert_eq!(
        store.list(&none).await.unwrap(),
        (vec![], 0),
        "unknown kind"
    );

    // An update keeps the record listed once, with its new status.
    let c2 = with_status(record("c", "t1", 200), "done");
    commit_ok(s, puts(vec![update(c2, 1)]), "update status").await;
    let (page, total) = store.list(&q(Some("done"), 100, 0)).await.unwrap();
    assert_eq!(
        (ids(&page), total),
        (vec!["b".to_string(), "c".to_string()], 2)
    );
    let (_, total) = store.list(&q(None, 100, 0)).await.unwrap();
    assert_eq!(total, 5, "an update must not duplicate the record in lists");
}

/// Idempotency records are written once per (tenant, key) and read back.
pub async fn case_idempotency<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    assert_eq!(store.idempotency("t1", "k1").await.unwrap(), None);
    let first = idem("t1", "k1", "hash-a");
    let batch = Batch {
        idempotency: Some(first.clone()),
        puts: vec![insert(record("w1", "t1", 1))],
        ..Batch::default()
    };
    commit_ok(s, batch, "first idempotency record").await;
    assert_eq!(
        store.idempotency("t1", "k1").await.unwrap(),
        Some(first.clone())
    );

    let batch = Batch {
        idempotency: Some(idem("t1", "k1", "hash-b")),
        puts: vec![insert(record("w2", "t1", 2))],
        outbox: vec![event("evt_dup")],
        ..Batch::default()
    };
    let err = commit_err(s, batch, "duplicate idempotency key").await;
    assert!(
        matches!(&err, StoreError::IdempotencyExists { key } if key == "k1"),
        "expected IdempotencyExists(k1), got {err:?}"
    );
    assert_eq!(
        store.idempotency("t1", "k1").await.unwrap(),
        Some(first),
        "the first record must be kept"
    );
    assert_eq!(
        get(s, "w2").await,
        None,
        "the duplicate's batch must roll back"
    );
    assert!(outbox_all(s).await.is_empty());

    let other_tenant = idem("t2", "k1", "hash-c");
    let batch = Batch {
        idempotency: Some(other_tenant.clone()),
        ..Batch::default()
    };
    commit_ok(s, batch, "same key, other tenant").await;
    assert_eq!(
        store.idempotency("t2", "k1").await.unwrap(),
        Some(other_tenant)
    );
}

// ---------------------------------------------------------------------------------------
// Ledger

/// Accounts are created if absent; other flags are refused; unknown ones are errors.
pub async fn case_ledger_accounts<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let err = store.balance("nobody").await.unwrap_err();
    assert!(
        matches!(err, LedgerError::UnknownAccount { .. }),
        "got {err:?}"
    );
    let err = store.history("nobody", 0, 10).await.unwrap_err();
    assert!(
        matches!(err, LedgerError::UnknownAccount { .. }),
        "got {err:?}"
    );

    let batch = Batch {
        accounts: vec![account("a", false), account("w", true), account("a", false)],
        ..Batch::default()
    };
    commit_ok(s, batch, "create accounts").await;
    assert_eq!(balance(s, "a").await, Balance::default());
    assert_eq!(balance(s, "w").await, Balance::default());
    assert!(store.history("a", 0, 10).await.unwrap().is_empty());

    let again = Batch {
        accounts: vec![account("a", false)],
        ..Batch::default()
    };
    commit_ok(s, again, "re-create with the same flags").await;

    let batch = Batch {
        accounts: vec![account("b", false), account("a", true)],
        puts: vec![insert(record("w1", "t1", 1))],
        ..Batch::default()
    };
    let err = commit_err(s, batch, "re-create with other flags").await;
    assert!(
        is_ledger(
            &err,
            |l| matches!(l, LedgerError::AccountExists { account } if account == "a")
        ),
        "expected AccountExists(a), got {err:?}"
    );
    assert!(store.balance("b").await.is_err(), "b must roll back");
    assert_eq!(get(s, "w1").await, None);
}

/// One posted transfer moves posted sums and appears in both histories.
pub async fn case_ledger_single_transfer<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    assert_eq!(balance(s, "alice").await, posted(1_000, 0));
    assert_eq!(balance(s, "world").await, posted(0, 1_000));
    assert_eq!(balance(s, "alice").await.available(), 1_000);

    commit_ok(
        s,
        transfers(vec![single("t1", "alice", "bob", 300)]),
        "alice -> bob",
    )
    .await;
    assert_eq!(balance(s, "alice").await, posted(1_000, 300));
    assert_eq!(balance(s, "bob").await, posted(300, 0));
    assert_eq!(balance(s, "alice").await.posted(), 700);

    // Exactly to zero is allowed.
    commit_ok(
        s,
        transfers(vec![single("t2", "alice", "bob", 700)]),
        "drain alice",
    )
    .await;
    assert_eq!(balance(s, "alice").await.posted(), 0);

    let h = store.history("alice", 0, 100).await.unwrap();
    let ids: Vec<_> = h.iter().map(|e| e.transfer_id.as_str()).collect();
    assert_eq!(ids, ["fund-alice", "t1", "t2"], "history oldest first");
    assert_eq!(h[1].debit, "alice");
    assert_eq!(h[1].credit, "bob");
    assert_eq!(h[1].amount, Micros(300));
    assert_eq!(h[1].phase, Phase::Single);
    let page = store.history("alice", 1, 1).await.unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].transfer_id, "t1", "history offset/limit");
    let bob: Vec<_> = store.history("bob", 0, 100).await.unwrap();
    assert_eq!(bob.len(), 2, "the credit side has the entries too");
    assert_eq!(store.history("world", 0, 100).await.unwrap().len(), 1);
}

/// Zero amounts, self-transfers and unknown accounts are refused.
pub async fn case_ledger_invalid_transfers<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    let cases = [
        (single("z", "alice", "bob", 0), "zero amount"),
        (single("z", "alice", "alice", 10), "debit == credit"),
        (
            transfer("z", "alice", "bob", 0, Phase::Pending),
            "zero pending",
        ),
    ];
    for (t, what) in cases {
        let err = commit_err(s, transfers(vec![t]), what).await;
        assert!(
            is_ledger(&err, |l| matches!(l, LedgerError::InvalidTransfer { .. })),
            "{what}: expected InvalidTransfer, got {err:?}"
        );
    }
    for (t, missing) in [
        (single("u", "ghost", "bob", 10), "ghost"),
        (single("u", "alice", "ghost", 10), "ghost"),
    ] {
        let err = commit_err(s, transfers(vec![t]), "unknown account").await;
        assert!(
            is_ledger(
                &err,
                |l| matches!(l, LedgerError::UnknownAccount { account } if account == missing)
            ),
            "expected UnknownAccount({missing}), got {err:?}"
        );
    }
    assert_eq!(balance(s, "alice").await, posted(1_000, 0));
    assert_eq!(balance(s, "bob").await, Balance::default());
}

/// A transfer id applies once: the same fields replay as a no-op, other fields fail.
pub async fn case_ledger_idempotent_transfer<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    let t = single("t1", "alice", "bob", 100);
    commit_ok(s, transfers(vec![t.clone()]), "first").await;
    commit_ok(s, transfers(vec![t.clone()]), "replay").await;
    commit_ok(
        s,
        transfers(vec![t.clone(), t.clone()]),
        "replay twice in one batch",
    )
    .await;
    assert_eq!(
        balance(s, "alice").await,
        posted(1_000, 100),
        "replays must not apply"
    );
    assert_eq!(balance(s, "bob").await, posted(100, 0));
    assert_eq!(
        store.history("bob", 0, 100).await.unwrap().len(),
        1,
        "one entry"
    );

    let others = [
        single("t1", "alice", "bob", 101),
        single("t1", "bob", "alice", 100),
        single("t1", "alice", "world", 100),
        transfer("t1", "alice", "bob", 100, Phase::Pending),
    ];
    for other in others {
        let batch = Batch {
            ledger: vec![other.clone()],
            puts: vec![insert(record("w1", "t1", 1))],
            ..Batch::default()
        };
        let err = commit_err(s, batch, "same id, other fields").await;
        assert!(
            is_ledger(
                &err,
                |l| matches!(l, LedgerError::TransferExists { id } if id == "t1")
            ),
            "{other:?}: expected TransferExists(t1), got {err:?}"
        );
        assert_eq!(get(s, "w1").await, None);
    }
    assert_eq!(balance(s, "alice").await, posted(1_000, 100));
}

/// An overdraft is refused with `InsufficientFunds` and its batch changes nothing.
pub async fn case_ledger_insufficient_funds<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 100).await;
    let batch = Batch {
        ledger: vec![single("big", "alice", "bob", 150)],
        puts: vec![insert(record("w1", "t1", 1))],
        outbox: vec![event("evt_big")],
        idempotency: Some(idem("t1", "k-big", "h")),
        ..Batch::default()
    };
    let err = commit_err(s, batch, "overdraft").await;
    assert!(
        is_ledger(&err, |l| matches!(
            l,
            LedgerError::InsufficientFunds { account, needed: 150, .. } if account == "alice"
        )),
        "expected InsufficientFunds(alice, 150), got {err:?}"
    );
    assert_eq!(err.code(), "INSUFFICIENT_FUNDS");
    assert_eq!(balance(s, "alice").await, posted(100, 0));
    assert_eq!(balance(s, "bob").await, Balance::default());
    assert_eq!(get(s, "w1").await, None);
    assert!(outbox_all(s).await.is_empty());
    assert!(store.idempotency("t1", "k-big").await.unwrap().is_none());

    // A pending debit counts against the balance.
    let hold = transfer("hold", "alice", "bob", 60, Phase::Pending);
    commit_ok(s, transfers(vec![hold]), "hold 60").await;
    let err = commit_err(
        s,
        transfers(vec![single("more", "alice", "bob", 50)]),
        "50 > 40",
    )
    .await;
    assert!(
        is_ledger(&err, |l| matches!(l, LedgerError::InsufficientFunds { .. })),
        "pending debits must count: got {err:?}"
    );
    let err = commit_err(
        s,
        transfers(vec![transfer("hold2", "alice", "bob", 41, Phase::Pending)]),
        "pending 41 > 40",
    )
    .await;
    assert!(
        is_ledger(&err, |l| matches!(l, LedgerError::InsufficientFunds { .. })),
        "{err:?}"
    );
    // Pending credits do not count as funds.
    let err = commit_err(
        s,
        transfers(vec![single("b1", "bob", "alice", 1)]),
        "bob spends pending",
    )
    .await;
    assert!(
        is_ledger(&err, |l| matches!(l, LedgerError::InsufficientFunds { .. })),
        "{err:?}"
    );
    commit_ok(
        s,
        transfers(vec![single("rest", "alice", "bob", 40)]),
        "exactly 40",
    )
    .await;
    assert_eq!(balance(s, "alice").await.available(), 0);
    // The refused ids were not consumed.
    commit_ok(
        s,
        transfers(vec![single("big", "world", "bob", 150)]),
        "reuse refused id",
    )
    .await;
    commit_ok(
        s,
        transfers(vec![void("v", "hold", "alice", "bob", 60)]),
        "release hold",
    )
    .await;
}

/// An `allow_negative` account may go below zero; the others never do.
pub async fn case_ledger_allow_negative<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 500).await;
    commit_ok(
        s,
        transfers(vec![single("m", "world", "bob", 1_000_000)]),
        "mint",
    )
    .await;
    let world = balance(s, "world").await;
    assert_eq!(world.posted(), -1_000_500, "world went negative");
    commit_ok(
        s,
        transfers(vec![transfer("p", "world", "bob", 7, Phase::Pending)]),
        "pend",
    )
    .await;
    assert_eq!(balance(s, "world").await.available(), -1_000_507);
    commit_ok(
        s,
        transfers(vec![void("pv", "p", "world", "bob", 7)]),
        "void",
    )
    .await;
    // Money comes back to world from alice and bob; bob never goes negative.
    commit_ok(
        s,
        transfers(vec![single("r", "bob", "world", 1_000_000)]),
        "redeem",
    )
    .await;
    assert_eq!(balance(s, "bob").await.posted(), 0);
    let err = commit_err(
        s,
        transfers(vec![single("r2", "bob", "world", 1)]),
        "bob below 0",
    )
    .await;
    assert!(
        is_ledger(&err, |l| matches!(l, LedgerError::InsufficientFunds { .. })),
        "{err:?}"
    );
}

/// Pending reserves on both sides; post moves the amount to posted.
pub async fn case_ledger_pending_post<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    let p = transfer("p1", "alice", "bob", 400, Phase::Pending);
    commit_ok(s, transfers(vec![p.clone()]), "pending").await;
    let a = balance(s, "alice").await;
    assert_eq!(
        a,
        Balance {
            debits_posted: 0,
            credits_posted: 1_000,
            debits_pending: 400,
            credits_pending: 0
        }
    );
    assert_eq!((a.posted(), a.available()), (1_000, 600));
    let b = balance(s, "bob").await;
    assert_eq!((b.credits_pending, b.posted()), (400, 0));
    commit_ok(s, transfers(vec![p]), "pending replay").await;
    assert_eq!(
        balance(s, "alice").await.debits_pending,
        400,
        "replay is a no-op"
    );

    let post1 = post("p1-post", "p1", "alice", "bob", 400);
    commit_ok(s, transfers(vec![post1.clone()]), "post").await;
    assert_eq!(balance(s, "alice").await, posted(1_000, 400));
    assert_eq!(balance(s, "bob").await, posted(400, 0));
    commit_ok(s, transfers(vec![post1]), "post replay (same id)").await;
    assert_eq!(
        balance(s, "bob").await,
        posted(400, 0),
        "post replay is a no-op"
    );

    let h: Vec<_> = store.history("bob", 0, 10).await.unwrap();
    let phases: Vec<_> = h.iter().map(|e| e.phase.clone()).collect();
    assert_eq!(
        phases,
        [
            Phase::Pending,
            Phase::Post {
                pending_id: "p1".to_string()
            }
        ]
    );

    // Pending and post in one batch.
    let batch = transfers(vec![
        transfer("p2", "alice", "bob", 100, Phase::Pending),
        post("p2-post", "p2", "alice", "bob", 100),
    ]);
    commit_ok(s, batch, "pending + post in one batch").await;
    assert_eq!(balance(s, "alice").await, posted(1_000, 500));
}

/// Void releases a pending transfer in full.
pub async fn case_ledger_pending_void<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    commit_ok(
        s,
        transfers(vec![transfer("p1", "alice", "bob", 1_000, Phase::Pending)]),
        "reserve everything",
    )
    .await;
    assert_eq!(balance(s, "alice").await.available(), 0);
    commit_ok(
        s,
        transfers(vec![void("p1-void", "p1", "alice", "bob", 1_000)]),
        "void",
    )
    .await;
    assert_eq!(
        balance(s, "alice").await,
        posted(1_000, 0),
        "void releases the hold"
    );
    assert_eq!(balance(s, "bob").await, Balance::default());
    commit_ok(
        s,
        transfers(vec![single("t", "alice", "bob", 1_000)]),
        "spend after void",
    )
    .await;
    assert_eq!(balance(s, "bob").await, posted(1_000, 0));
}

/// A pending transfer is resolved once, by a post/void that matches it.
pub async fn case_ledger_resolution_rules<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    let batch = transfers(vec![
        transfer("pa", "alice", "bob", 100, Phase::Pending),
        transfer("pb", "alice", "bob", 100, Phase::Pending),
        single("s", "alice", "bob", 100),
    ]);
    commit_ok(s, batch, "two holds and a single").await;
    commit_ok(
        s,
        transfers(vec![post("pa-post", "pa", "alice", "bob", 100)]),
        "post pa",
    )
    .await;
    commit_ok(
        s,
        transfers(vec![void("pb-void", "pb", "alice", "bob", 100)]),
        "void pb",
    )
    .await;
    let settled = (balance(s, "alice").await, balance(s, "bob").await);

    let resolved = [
        (post("pa-post2", "pa", "alice", "bob", 100), "double post"),
        (
            void("pa-void", "pa", "alice", "bob", 100),
            "void after post",
        ),
        (void("pb-void2", "pb", "alice", "bob", 100), "double void"),
        (
            post("pb-post", "pb", "alice", "bob", 100),
            "post after void",
        ),
    ];
    for (t, what) in resolved {
        let err = commit_err(s, transfers(vec![t]), what).await;
        assert!(
            is_ledger(&err, |l| matches!(l, LedgerError::PendingResolved { .. })),
            "{what}: expected PendingResolved, got {err:?}"
        );
    }
    let not_found = [
        (
            post("x1", "nope", "alice", "bob", 100),
            "post of an unknown pending",
        ),
        (
            void("x2", "nope", "alice", "bob", 100),
            "void of an unknown pending",
        ),
        (
            post("x3", "s", "alice", "bob", 100),
            "post of a single transfer",
        ),
    ];
    for (t, what) in not_found {
        let err = commit_err(s, transfers(vec![t]), what).await;
        assert!(
            is_ledger(&err, |l| matches!(l, LedgerError::PendingNotFound { .. })),
            "{what}: expected PendingNotFound, got {err:?}"
        );
    }

    commit_ok(
        s,
        transfers(vec![transfer("pc", "alice", "bob", 100, Phase::Pending)]),
        "hold pc",
    )
    .await;
    let mismatched = [
        (
            post("y1", "pc", "alice", "bob", 99),
            "post with another amount",
        ),
        (
            post("y2", "pc", "alice", "world", 100),
            "post with another credit",
        ),
        (
            void("y3", "pc", "world", "bob", 100),
            "void with another debit",
        ),
    ];
    for (t, what) in mismatched {
        let err = commit_err(s, transfers(vec![t]), what).await;
        assert!(
            is_ledger(&err, |l| matches!(l, LedgerError::InvalidTransfer { .. })),
            "{what}: expected InvalidTransfer, got {err:?}"
        );
    }
    // A failed post in a batch also un-resolves an earlier post of that batch.
    let batch = transfers(vec![
        post("pc-post", "pc", "alice", "bob", 100),
        post("pc-post2", "pc", "alice", "bob", 100),
    ]);
    let err = commit_err(s, batch, "post twice in one batch").await;
    assert!(
        is_ledger(&err, |l| matches!(l, LedgerError::PendingResolved { .. })),
        "{err:?}"
    );
    let alice = balance(s, "alice").await;
    assert_eq!(alice.debits_pending, 100, "pc must still be pending");
    assert_eq!(alice.debits_posted, settled.0.debits_posted);
    commit_ok(
        s,
        transfers(vec![void("pc-void", "pc", "alice", "bob", 100)]),
        "void pc",
    )
    .await;
    assert_eq!(
        (balance(s, "alice").await, balance(s, "bob").await),
        settled
    );
}

/// A transfer failing in the middle of a batch rolls back the puts, the earlier
/// transfers, the outbox and the idempotency record of that batch.
pub async fn case_failed_transfer_rolls_back_batch<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    commit_ok(
        s,
        puts(vec![insert(record("w0", "t1", 1))]),
        "existing record",
    )
    .await;
    let before = (balance(s, "alice").await, balance(s, "bob").await);
    let batch = Batch {
        unchanged: vec![],
        puts: vec![
            insert(with_keys(record("w1", "t1", 2), &["k:w1"])),
            update(with_status(record("w0", "t1", 1), "moved"), 1),
        ],
        accounts: vec![account("carol", false)],
        ledger: vec![
            single("ok1", "alice", "bob", 600),
            transfer("ok2", "alice", "carol", 300, Phase::Pending),
            single("bad", "alice", "bob", 200), // 600 + 300 + 200 > 1000
            single("never", "alice", "bob", 1),
        ],
        outbox: vec![event("evt_a"), event("evt_b")],
        idempotency: Some(idem("t1", "k-batch", "h")),
        background: false,
    };
    let err = commit_err(s, batch, "third transfer overdraws").await;
    assert!(
        is_ledger(&err, |l| matches!(l, LedgerError::InsufficientFunds { .. })),
        "expected InsufficientFunds, got {err:?}"
    );
    assert_eq!((balance(s, "alice").await, balance(s, "bob").await), before);
    assert!(
        store.balance("carol").await.is_err(),
        "account must roll back"
    );
    assert_eq!(store.history("alice", 0, 100).await.unwrap().len(), 1);
    assert_eq!(store.history("bob", 0, 100).await.unwrap().len(), 0);
    assert_eq!(get(s, "w1").await, None);
    assert_eq!(store.get_by_unique("k:w1").await.unwrap(), None);
    let w0 = get(s, "w0").await.unwrap();
    assert_eq!((w0.version, w0.status), (1, None));
    assert!(outbox_all(s).await.is_empty());
    assert!(store.idempotency("t1", "k-batch").await.unwrap().is_none());
    // Earlier transfer ids of the failed batch were not consumed.
    commit_ok(
        s,
        transfers(vec![single("ok1", "alice", "bob", 5)]),
        "reuse ok1",
    )
    .await;
    assert_eq!(balance(s, "bob").await, posted(5, 0));
}

/// Outbox sequence numbers start at 1 and increase; `outbox_after` pages by them.
pub async fn case_outbox_sequence<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    assert!(outbox_all(s).await.is_empty());
    let mut seqs = Vec::new();
    let mut ids = Vec::new();
    for i in 0..4 {
        let events: Vec<_> = (0..=i % 2)
            .map(|j| event(&format!("evt_{i}_{j}")))
            .collect();
        ids.extend(events.iter().map(|e| e.id.clone()));
        let n = events.len();
        let batch = Batch {
            outbox: events,
            ..Batch::default()
        };
        let receipt = s.commit(batch).await.expect("commit events");
        assert_eq!(receipt.outbox_seqs.len(), n, "one seq per event");
        seqs.extend(receipt.outbox_seqs);
    }
    // A failed batch's events never appear.
    let bad = Batch {
        outbox: vec![event("evt_bad")],
        puts: vec![update(record("missing", "t1", 1), 1)],
        ..Batch::default()
    };
    commit_err(s, bad, "failing batch with an event").await;
    let ok = s
        .commit(Batch {
            outbox: vec![event("evt_last")],
            ..Batch::default()
        })
        .await
        .expect("commit last");
    seqs.extend(ok.outbox_seqs);
    ids.push("evt_last".to_string());

    assert_eq!(seqs[0], 1, "outbox sequence numbers start at 1");
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs must increase: {seqs:?}"
    );
    let all = outbox_all(s).await;
    assert_eq!(all.iter().map(|(q, _)| *q).collect::<Vec<_>>(), seqs);
    assert_eq!(
        all.iter().map(|(_, e)| e.id.clone()).collect::<Vec<_>>(),
        ids
    );
    assert_eq!(all[0].1, event("evt_0_0"), "events are stored as given");

    // Page through with limit 2.
    let mut after = 0;
    let mut paged = Vec::new();
    loop {
        let page = s.outbox_after(after, 2).await.unwrap();
        assert!(page.len() <= 2, "limit respected");
        let Some(last) = page.last() else { break };
        after = last.0;
        paged.extend(page);
    }
    assert_eq!(paged, all, "paging sees every event once, in order");
    let last = *seqs.last().unwrap();
    assert!(s.outbox_after(last, 10).await.unwrap().is_empty());
    let tail = s.outbox_after(seqs[2], 10).await.unwrap();
    assert_eq!(tail.first().map(|(q, _)| *q), Some(seqs[3]));
    assert!(s.outbox_after(0, 0).await.unwrap().is_empty(), "limit 0");
}

/// `claim_due` returns due, unclaimed records of one kind; leases lapse; a commit that
/// puts a record releases its claim.
pub async fn case_claim_due<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let now = 10_000;
    let mut other_kind = with_due(record("g1", "t1", 1), Some(0));
    other_kind.kind = "gadget".to_string();
    let batch = puts(vec![
        insert(with_due(record("d1", "t1", 1), Some(1_000))),
        insert(with_due(record("d2", "t1", 2), Some(now))),
        insert(with_due(record("d3", "t1", 3), Some(5_000))),
        insert(with_due(record("future", "t1", 4), Some(now + 1))),
        insert(with_due(record("never", "t1", 5), None)),
        insert(other_kind),
    ]);
    commit_ok(s, batch, "claim fixtures").await;
    let claim = |worker: &'static str, at: i64, lease: i64, limit: usize| {
        let store = store.clone();
        async move {
            let mut ids: Vec<String> = store
                .claim_due(KIND, worker, ts(at), lease, limit)
                .await
                .expect("claim_due")
                .into_iter()
                .map(|r| r.id)
                .collect();
            ids.sort();
            ids
        }
    };

    assert_eq!(claim("w1", now, 1_000, 2).await.len(), 2, "limit respected");
    let rest = claim("w1", now, 1_000, 10).await;
    assert_eq!(rest.len(), 1, "only the third due record is left: {rest:?}");
    assert!(
        claim("w2", now, 1_000, 10).await.is_empty(),
        "all due records are leased"
    );
    assert_eq!(
        claim("w1", now + 500, 500, 10).await,
        ["future"],
        "d1..d3 are still leased; `future` has become due"
    );

    // After the lease, every due record (now including `future`) is claimable again.
    let again = claim("w2", now + 1_000, 1_000, 10).await;
    assert_eq!(again, ["d1", "d2", "d3", "future"], "leases lapse");
    assert!(claim("w1", now + 1_500, 1_000, 10).await.is_empty());

    // A commit that puts a record releases its claim.
    let d1 = get(s, "d1").await.unwrap();
    commit_ok(s, puts(vec![update(d1.clone(), d1.version)]), "touch d1").await;
    assert_eq!(
        claim("w1", now + 1_500, 1_000, 10).await,
        ["d1"],
        "put releases the claim"
    );
    // A put that clears the due time makes the record not due.
    let d2 = get(s, "d2").await.unwrap();
    commit_ok(s, puts(vec![update(with_due(d2, None), 1)]), "d2 done").await;
    assert!(
        claim("w1", now + 5_000, 1_000, 10)
            .await
            .iter()
            .all(|id| id != "d2")
    );
    // A failed commit does not release the claim.
    let d3 = get(s, "d3").await.unwrap();
    let _ = claim("w3", now + 10_000, 1_000, 10).await;
    let bad = puts(vec![
        update(d3.clone(), d3.version),
        update(record("missing", "t1", 1), 1),
    ]);
    commit_err(s, bad, "failed put").await;
    assert!(
        claim("w4", now + 10_000, 1_000, 10).await.is_empty(),
        "a failed commit must not release claims"
    );
    let gadgets = store
        .claim_due("gadget", "w1", ts(now), 1_000, 10)
        .await
        .unwrap();
    assert_eq!(gadgets.len(), 1, "claims are per kind");
    assert!(
        store
            .claim_due("none", "w1", ts(now), 1_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// 32 tasks debit one account with funds for 10 of them: exactly 10 succeed, the rest
/// fail with `InsufficientFunds`, and the balance is exact and never negative.
pub async fn case_concurrent_debits<S: Store + Ledger + ?Sized + 'static>(store: Arc<S>) {
    const TASKS: usize = 32;
    const AMOUNT: u64 = 100;
    const FUNDS: u64 = 10 * AMOUNT;
    funded(&*store, FUNDS).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
    let mut handles = Vec::new();
    for i in 0..TASKS {
        let store = store.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let batch = Batch {
                ledger: vec![single(&format!("debit-{i}"), "alice", "bob", AMOUNT)],
                puts: vec![insert(record(&format!("op-{i}"), "t1", i as i64))],
                outbox: vec![event(&format!("evt_{i}"))],
                ..Batch::default()
            };
            store.commit(batch).await
        }));
    }
    let mut accepted = 0u64;
    let mut refused = 0u64;
    for handle in handles {
        match handle.await.expect("task panicked") {
            Ok(_) => accepted += 1,
            Err(e) if is_ledger(&e, |l| matches!(l, LedgerError::InsufficientFunds { .. })) => {
                refused += 1
            }
            Err(e) => panic!("concurrent debit failed with {e:?}, expected InsufficientFunds"),
        }
    }
    assert_eq!(
        accepted,
        FUNDS / AMOUNT,
        "exactly the funded debits are accepted"
    );
    assert_eq!(refused, TASKS as u64 - accepted);
    let alice = balance(&*store, "alice").await;
    assert_eq!(alice.posted(), (FUNDS - accepted * AMOUNT) as i128);
    assert!(alice.posted() >= 0);
    assert_eq!(
        balance(&*store, "bob").await.posted(),
        (accepted * AMOUNT) as i128
    );
    let outbox = outbox_all(&*store).await;
    assert_eq!(
        outbox.len() as u64,
        accepted,
        "only accepted batches wrote events"
    );
    let mut seqs: Vec<_> = outbox.iter().map(|(q, _)| *q).collect();
    seqs.dedup();
    assert_eq!(seqs.len() as u64, accepted, "sequence numbers are distinct");
    let q = ListQuery {
        kind: KIND.to_string(),
        tenant: "t1".to_string(),
        status: None,
        limit: 100,
        offset: 0,
    };
    assert_eq!(
        store.list(&q).await.unwrap().1,
        accepted,
        "only accepted puts exist"
    );
}

/// 8 workers claiming concurrently never receive the same record.
pub async fn case_concurrent_claims<S: Store + Ledger + ?Sized + 'static>(store: Arc<S>) {
    const WORKERS: usize = 8;
    const RECORDS: usize = 40;
    let batch = puts(
        (0..RECORDS)
            .map(|i| {
                insert(with_due(
                    record(&format!("job-{i:02}"), "t1", i as i64),
                    Some(i as i64),
                ))
            })
            .collect(),
    );
    commit_ok(&*store, batch, "jobs").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(WORKERS));
    let mut handles = Vec::new();
    for w in 0..WORKERS {
        let store = store.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let worker = format!("worker-{w}");
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_due(KIND, &worker, ts(1_000), 60_000, 3)
                    .await
                    .expect("claim_due");
                if got.is_empty() {
                    break mine;
                }
                mine.extend(got.into_iter().map(|r| r.id));
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut seen = HashSet::new();
    for handle in handles {
        for id in handle.await.expect("worker panicked") {
            assert!(
                seen.insert(id.clone()),
                "record {id} was claimed by two workers"
            );
        }
    }
    assert_eq!(seen.len(), RECORDS, "every due record is claimed once");
}
