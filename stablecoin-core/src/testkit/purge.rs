//! Conformance case of [`Store::purge`]: what retention relies on. Only the rows asked
//! for go (older than the cut-off, of the kind and statuses named), at most `limit` per
//! call and oldest first, with their unique keys; the ledger never changes, and the
//! outbox only through an outbox purge, up to its consumer's cursor.

use super::fixtures::*;
use crate::ports::store::{Purge, PurgeTarget};
use std::sync::Arc;

/// A record-purge of [`KIND`] before `before`, in `statuses` (`None`: any).
fn purge_widgets(before: i64, statuses: Option<&[&str]>, limit: usize) -> Purge {
    Purge {
        target: PurgeTarget::Records {
            kind: KIND.to_string(),
            statuses: statuses.map(|s| s.iter().map(|x| x.to_string()).collect()),
        },
        before: ts(before),
        limit,
    }
}

fn purge_idempotency(before: i64, limit: usize) -> Purge {
    Purge {
        target: PurgeTarget::Idempotency,
        before: ts(before),
        limit,
    }
}

async fn purged<S: Store + ?Sized>(store: &S, purge: Purge, what: &str) -> u64 {
    store
        .purge(&purge)
        .await
        .unwrap_or_else(|e| panic!("{what}: purge failed: {e:?}"))
}

async fn exists<S: Store + ?Sized>(store: &S, id: &str) -> bool {
    get(store, id).await.is_some()
}

fn idem_at(tenant: &str, key: &str, created_ms: i64) -> IdempotencyRecord {
    IdempotencyRecord {
        created_at: ts(created_ms),
        ..idem(tenant, key, &format!("hash-{key}"))
    }
}

/// Purges delete exactly the selected rows, oldest first, `limit` at a time, free their
/// unique keys (a new record can take them, and the id itself can be used again), drop
/// their claims, and leave other kinds, other statuses, newer rows, idempotency records
/// (for a record purge), the ledger and the outbox as they were.
pub async fn case_purge<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    commit_ok(
        s,
        Batch {
            outbox: vec![event("evt_keep")],
            ..Batch::default()
        },
        "an outbox event",
    )
    .await;
    let mut gadget = with_status(record("g_old", "t1", 100), "DONE");
    gadget.kind = "gadget".to_string();
    let fixtures = vec![
        insert(with_keys(
            with_status(record("old_done", "t1", 100), "DONE"),
            &["purge:a"],
        )),
        insert(with_status(record("old_pending", "t2", 200), "PENDING")),
        insert(record("old_no_status", "t1", 250)),
        insert(with_due(
            with_keys(
                with_status(record("old_dead", "t2", 300), "DEAD"),
                &["purge:c"],
            ),
            Some(0),
        )),
        insert(with_status(record("at_cutoff", "t1", 350), "DONE")),
        insert(with_keys(
            with_status(record("new_done", "t1", 400), "DONE"),
            &["purge:new"],
        )),
        insert(gadget),
    ];
    commit_ok(s, puts(fixtures), "purge fixtures").await;
    let idempotency = [
        idem_at("t1", "k_old", 100),
        idem_at("t2", "k_old2", 200),
        idem_at("t1", "k_new", 400),
    ];
    for rec in &idempotency {
        let batch = Batch {
            idempotency: Some(rec.clone()),
            ..Batch::default()
        };
        commit_ok(s, batch, "an idempotency record").await;
    }
    let claimed = store
        .claim_due(KIND, 0, "worker-a", ts(1_000), 60_000, 10)
        .await
        .expect("claim_due");
    assert_eq!(
        claimed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["old_dead"],
        "fixture: old_dead is claimed"
    );
    let ledger_before = (balance(s, "alice").await, balance(s, "world").await);
    let outbox_before = outbox_all(s).await;
    let final_states: &[&str] = &["DONE", "DEAD"];

    // Limit 0 and an empty status list delete nothing.
    assert_eq!(
        purged(s, purge_widgets(350, Some(final_states), 0), "limit 0").await,
        0
    );
    assert_eq!(
        purged(s, purge_widgets(350, Some(&[]), 10), "no status").await,
        0
    );
    assert!(exists(s, "old_done").await, "limit 0 deleted a record");

    // Final statuses only, one per call, oldest first.
    let one = purge_widgets(350, Some(final_states), 1);
    assert_eq!(purged(s, one.clone(), "first of one").await, 1);
    assert!(
        !exists(s, "old_done").await,
        "the oldest match must go first"
    );
    assert!(
        exists(s, "old_dead").await,
        "limit 1 must leave the second match"
    );
    assert_eq!(purged(s, one.clone(), "second of one").await, 1);
    assert!(!exists(s, "old_dead").await);
    assert_eq!(purged(s, one, "nothing left").await, 0);
    for id in ["old_pending", "old_no_status", "at_cutoff", "new_done"] {
        assert!(
            exists(s, id).await,
            "{id} must be kept (status, or not old)"
        );
    }
    assert!(
        store.get("gadget", "g_old").await.unwrap().is_some(),
        "another kind must be kept"
    );
    let (ids, total) = list_ids(s, list_query("t1")).await;
    assert_eq!(
        (ids, total),
        (strings(&["new_done", "at_cutoff", "old_no_status"]), 3),
        "lists no longer see purged records"
    );

    // The purged records' keys, ids and claims are free; the kept ones' are not.
    assert_eq!(store.get_by_unique("purge:a").await.unwrap(), None);
    assert_eq!(store.get_by_unique("purge:c").await.unwrap(), None);
    let again = store
        .claim_due(KIND, 0, "worker-b", ts(1_000), 60_000, 10)
        .await
        .expect("claim_due");
    assert!(
        again.is_empty(),
        "a purged record cannot be claimed: {again:?}"
    );
    let reuse = puts(vec![
        insert(with_keys(record("taker", "t1", 1_000), &["purge:a"])),
        insert(with_keys(
            with_status(record("old_dead", "t2", 2_000), "PENDING"),
            &["purge:c"],
        )),
    ]);
    commit_ok(s, reuse, "taking a purged record's key and id").await;
    assert_eq!(get(s, "old_dead").await.unwrap().version, 1, "a new record");
    let err = commit_err(
        s,
        puts(vec![insert(with_keys(
            record("thief", "t1", 1_000),
            &["purge:new"],
        ))]),
        "a kept record's key",
    )
    .await;
    assert!(
        matches!(&err, StoreError::UniqueViolation { key } if key == "purge:new"),
        "a kept record keeps its key, got {err:?}"
    );

    // Any status: the rest of the old ones, the one at the cut-off kept.
    let any = purge_widgets(350, None, 100);
    assert_eq!(purged(s, any.clone(), "any status").await, 2);
    assert!(!exists(s, "old_pending").await && !exists(s, "old_no_status").await);
    for id in ["at_cutoff", "new_done", "taker", "old_dead"] {
        assert!(exists(s, id).await, "{id} is not older than the cut-off");
    }
    assert_eq!(purged(s, any, "nothing left").await, 0);
    assert!(store.get("gadget", "g_old").await.unwrap().is_some());
    for rec in &idempotency {
        assert!(
            store
                .idempotency(&rec.tenant, &rec.key)
                .await
                .unwrap()
                .is_some(),
            "a record purge must not touch idempotency records"
        );
    }

    // Idempotency records: every tenant's, oldest first, `limit` at a time.
    let one = purge_idempotency(350, 1);
    assert_eq!(purged(s, one.clone(), "first idempotency record").await, 1);
    assert_eq!(store.idempotency("t1", "k_old").await.unwrap(), None);
    assert!(store.idempotency("t2", "k_old2").await.unwrap().is_some());
    assert_eq!(purged(s, one.clone(), "second idempotency record").await, 1);
    assert_eq!(store.idempotency("t2", "k_old2").await.unwrap(), None);
    assert_eq!(purged(s, one, "no idempotency record left").await, 0);
    assert_eq!(
        store.idempotency("t1", "k_new").await.unwrap(),
        Some(idempotency[2].clone()),
        "a newer idempotency record is kept"
    );
    let batch = Batch {
        idempotency: Some(idem_at("t1", "k_old", 5_000)),
        ..Batch::default()
    };
    commit_ok(s, batch, "a purged idempotency key recorded again").await;
    assert!(
        exists(s, "new_done").await,
        "an idempotency purge keeps records"
    );

    // Nothing of the ledger or the outbox moved.
    assert_eq!(
        (balance(s, "alice").await, balance(s, "world").await),
        ledger_before,
        "a purge must not touch the ledger"
    );
    assert_eq!(
        outbox_all(s).await,
        outbox_before,
        "a purge must not touch the outbox"
    );
    let unknown = Purge {
        target: PurgeTarget::Records {
            kind: "no_such_kind".to_string(),
            statuses: None,
        },
        before: ts(i64::MAX),
        limit: 10,
    };
    assert_eq!(purged(s, unknown, "an unknown kind").await, 0);
}

fn list_query(tenant: &str) -> ListQuery {
    ListQuery {
        kind: KIND.to_string(),
        tenant: tenant.to_string(),
        subkind: None,
        status: None,
        limit: 10,
        offset: 0,
    }
}

fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

/// An outbox purge through `through_seq` of what occurred before `before`.
fn purge_outbox(through_seq: u64, before: i64, limit: usize) -> Purge {
    Purge {
        target: PurgeTarget::Outbox { through_seq },
        before: ts(before),
        limit,
    }
}

/// An outbox event `id` that occurred at `at_ms`.
fn event_at(id: &str, at_ms: i64) -> OutboxEvent {
    OutboxEvent {
        occurred_at: ts(at_ms),
        ..event(id)
    }
}

/// Outbox purges (what the webhook fan-out's retention relies on): only events up to the
/// consumer's cursor and older than the cut-off go, lowest sequence number first, `limit`
/// at a time; the rest keep their numbers; a new event is numbered after every event
/// ever committed, however many were purged (a consumer's cursor never misses one); and
/// records, idempotency records and the ledger stay as they were.
pub async fn case_purge_outbox<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    funded(s, 1_000).await;
    commit_ok(s, puts(vec![insert(record("w1", "t1", 100))]), "a record").await;
    let batch = Batch {
        outbox: vec![
            event_at("e1", 100),
            event_at("e2", 200),
            event_at("e3", 300),
            event_at("e4", 900),
            event_at("e5", 500),
        ],
        ..Batch::default()
    };
    let receipt = s.commit(batch).await.expect("five outbox events");
    let first = receipt.outbox_seqs[0];
    assert_eq!(receipt.outbox_seqs, (first..first + 5).collect::<Vec<_>>());
    let ids = |page: &[(u64, OutboxEvent)]| -> Vec<(u64, String)> {
        page.iter().map(|(seq, e)| (*seq, e.id.clone())).collect()
    };
    let expect = |names: &[(u64, &str)]| -> Vec<(u64, String)> {
        names
            .iter()
            .map(|(n, id)| (first + n - 1, id.to_string()))
            .collect()
    };
    let ledger_before = (balance(s, "alice").await, balance(s, "world").await);

    assert_eq!(
        purged(s, purge_outbox(first + 1, 10_000, 0), "limit 0").await,
        0
    );
    // Through e2: e1 and e2, one call at a time.
    assert_eq!(
        purged(s, purge_outbox(first + 1, 10_000, 1), "first").await,
        1
    );
    assert_eq!(
        ids(&outbox_all(s).await),
        expect(&[(2, "e2"), (3, "e3"), (4, "e4"), (5, "e5")]),
        "the lowest sequence number goes first"
    );
    assert_eq!(
        purged(s, purge_outbox(first + 1, 10_000, 10), "second").await,
        1,
        "nothing after the cursor goes"
    );
    // Through e4, before 600: e3 goes; e4 occurred at 900 and stays.
    assert_eq!(
        purged(s, purge_outbox(first + 3, 600, 10), "by time").await,
        1
    );
    assert_eq!(
        ids(&outbox_all(s).await),
        expect(&[(4, "e4"), (5, "e5")]),
        "an event newer than the cut-off is kept, with its number"
    );
    assert_eq!(
        ids(&s.outbox_after(first + 1, 10).await.unwrap()),
        expect(&[(4, "e4"), (5, "e5")]),
        "a cursor behind the purged events reads on from the first kept one"
    );
    // Through everything: e4 goes; whether the newest does is the store's (SQLite keeps
    // it to number new events from), but a new event is numbered after it either way.
    purged(s, purge_outbox(first + 4, 10_000, 10), "everything").await;
    let left = ids(&outbox_all(s).await);
    assert!(
        left.is_empty() || left == expect(&[(5, "e5")]),
        "only the newest may be kept: {left:?}"
    );
    let next = s
        .commit(Batch {
            outbox: vec![event_at("e6", 1_000)],
            ..Batch::default()
        })
        .await
        .expect("an event after the purge");
    assert_eq!(
        next.outbox_seqs,
        vec![first + 5],
        "numbers are never reused"
    );
    assert_eq!(
        ids(&s.outbox_after(first + 4, 10).await.unwrap()),
        expect(&[(6, "e6")]),
        "the consumer's cursor sees the new event, and only it"
    );

    // Nothing else moved.
    assert!(exists(s, "w1").await, "an outbox purge keeps records");
    assert_eq!(
        (balance(s, "alice").await, balance(s, "world").await),
        ledger_before,
        "an outbox purge must not touch the ledger"
    );
}
