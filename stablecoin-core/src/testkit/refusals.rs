//! Conformance cases of refused batches: a batch that fails any of its checks (version,
//! unique key, idempotency key, ledger rule) writes nothing, whatever order a store runs
//! its steps in; and idempotency records, written once per (tenant, key).

use super::fixtures::*;
use std::sync::Arc;

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
        // One put and a key (a keyed send's shape): a store may record the key after the
        // put, but a refused put must still leave the key unrecorded.
        (
            "a fresh idempotency key and a stale update",
            vec![update(record("w2", "t1", 2), 7)],
            Some(idem("t1", "k-new", "h")),
            good(),
            version_conflict,
        ),
        (
            "a fresh idempotency key and an insert with a key another record holds",
            vec![insert(with_keys(record("w9", "t1", 9), &["k:w1"]))],
            Some(idem("t1", "k-new", "h")),
            good(),
            unique,
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
