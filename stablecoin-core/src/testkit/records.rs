//! Conformance cases of records: inserts, versions, `unchanged` checks, unique keys,
//! the address namespace (lists are in `lists`, refused batches and idempotency records in
//! `refusals`).

use super::fixtures::*;
use std::sync::Arc;

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
        .claim_due(KIND, 0, "w1", ts(1_000), 60_000, 100)
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
        .claim_due(KIND, 0, "w2", ts(1_000), 60_000, 100)
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

/// Unique keys moving between the records of one batch, as if its puts were written one
/// after the other in order: a key a put drops is free for a later put, but not for an
/// earlier one; a record put twice sees its own first write; and the error reported is
/// that of the first put that fails (a store that writes many puts per statement must
/// still answer this way).
pub async fn case_keys_change_hands_in_one_batch<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let holder = with_keys(record("w1", "t1", 1), &["k:a"]);
    commit_ok(s, puts(vec![insert(holder)]), "w1 holds k:a").await;

    // Dropped first, claimed after: the key changes hands.
    let batch = puts(vec![
        update(with_keys(record("w1", "t1", 1), &[]), 1),
        insert(with_keys(record("w2", "t1", 2), &["k:a"])),
    ]);
    commit_ok(s, batch, "w1 drops k:a, then w2 claims it").await;
    let got = store.get_by_unique("k:a").await.unwrap().unwrap();
    assert_eq!(got.id, "w2");

    // Claimed first, dropped after: still held when claimed, nothing written.
    let batch = puts(vec![
        insert(with_keys(record("w3", "t1", 3), &["k:a"])),
        update(with_keys(record("w2", "t1", 2), &["k:b"]), 1),
    ]);
    let err = commit_err(s, batch, "w3 claims k:a before w2 drops it").await;
    assert!(
        matches!(&err, StoreError::UniqueViolation { key } if key == "k:a"),
        "expected UniqueViolation(k:a), got {err:?}"
    );
    assert_eq!(get(s, "w3").await, None);
    let w2 = get(s, "w2").await.unwrap();
    assert_eq!(
        (w2.version, w2.unique_keys.clone()),
        (1, vec!["k:a".to_string()])
    );
    assert_eq!(store.get_by_unique("k:b").await.unwrap(), None);

    // One record inserted and updated in one batch: the update sees the insert.
    let batch = puts(vec![
        insert(with_keys(record("w4", "t1", 4), &["k:c"])),
        update(with_keys(record("w4", "t1", 4), &["k:d"]), 1),
    ]);
    commit_ok(s, batch, "insert and re-key of one record").await;
    let w4 = get(s, "w4").await.unwrap();
    assert_eq!((w4.version, w4.unique_keys), (2, vec!["k:d".to_string()]));
    assert_eq!(store.get_by_unique("k:c").await.unwrap(), None);

    // The first failing put reports, whichever check it fails.
    let stale = update(with_keys(record("w2", "t1", 2), &[]), 9);
    let taken = insert(with_keys(record("w5", "t1", 5), &["k:d"]));
    let err = commit_err(
        s,
        puts(vec![stale.clone(), taken.clone()]),
        "stale put first",
    )
    .await;
    assert!(
        matches!(&err, StoreError::VersionConflict { id, .. } if id == "w2"),
        "expected VersionConflict(w2), got {err:?}"
    );
    let err = commit_err(s, puts(vec![taken, stale]), "taken key first").await;
    assert!(
        matches!(&err, StoreError::UniqueViolation { key } if key == "k:d"),
        "expected UniqueViolation(k:d), got {err:?}"
    );
    assert_eq!(get(s, "w5").await, None);
    assert_eq!(get(s, "w2").await.unwrap().version, 1);
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

pub(super) fn unchanged(id: &str, version: u64) -> Unchanged {
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

/// The kernel's one address namespace (`kernel::inbound`): an address one product's
/// record reserved is refused at commit to another product's record, on the same rail,
/// and the refused batch writes nothing. An EVM address is one key in any letter case;
/// a base58 one is not (two case variants are two accounts).
pub async fn case_address_owned_by_one_product<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    use crate::kernel::inbound::address_key;
    use crate::ports::kinds::kind;
    let s = &*store;
    let owner = |kind: &str, id: &str, keys: Vec<String>| {
        let mut r = record(id, "t1", 1);
        r.kind = kind.to_string();
        r.unique_keys = keys;
        r
    };
    let evm = "0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B";
    let tron = "TPfTHuNtw2SwWi7YT8scDfoGZyWtv6oSXF";
    let wallet = owner(
        kind::WALLET,
        "wal_1",
        vec![address_key("polygon", evm), address_key("tron", tron)],
    );
    commit_ok(
        s,
        puts(vec![insert(wallet)]),
        "a wallet reserves two addresses",
    )
    .await;

    let session = owner(
        kind::PAYMENT_SESSION,
        "cs_1",
        vec![address_key("polygon", &evm.to_ascii_lowercase())],
    );
    let err = commit_err(
        s,
        puts(vec![insert(session)]),
        "a session on the wallet's address",
    )
    .await;
    assert!(
        matches!(err, StoreError::UniqueViolation { .. }),
        "the second product is refused by the unique key: {err:?}"
    );
    assert_eq!(
        store.get(kind::PAYMENT_SESSION, "cs_1").await.unwrap(),
        None
    );
    let deal = owner(kind::ESCROW, "esc_1", vec![address_key("tron", tron)]);
    let err = commit_err(
        s,
        puts(vec![insert(deal)]),
        "a deal on the wallet's address",
    )
    .await;
    assert!(matches!(err, StoreError::UniqueViolation { .. }), "{err:?}");

    // The same text on another rail, or a base58 case variant, is another address.
    let variant = tron.to_ascii_lowercase();
    let deal = owner(
        kind::ESCROW,
        "esc_2",
        vec![address_key("tron", &variant), address_key("solana", tron)],
    );
    commit_ok(
        s,
        puts(vec![insert(deal)]),
        "a case variant and another rail",
    )
    .await;
    let got = store
        .get_by_unique(&address_key("polygon", evm))
        .await
        .unwrap();
    assert_eq!(
        got.map(|r| (r.kind, r.id)),
        Some((kind::WALLET.into(), "wal_1".into()))
    );
}
