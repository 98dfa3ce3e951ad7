//! Conformance cases of the ledger: accounts, single and two-phase transfers,
//! idempotency by transfer id, balance limits, and rollback of a failed batch.

use super::fixtures::*;
use std::sync::Arc;

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

/// Every store holds amounts and account sums up to `MAX_AMOUNT_MICROS` (2^63 - 1) and
/// refuses beyond it with the same `InvalidTransfer`, changing nothing (the limit of the
/// shared rules, `domain::ledger`, so a batch means the same in memory as on disk).
pub async fn case_ledger_amount_limits<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let accounts = Batch {
        accounts: vec![account("world", true), account("bob", false)],
        ..Batch::default()
    };
    commit_ok(s, accounts, "create accounts").await;
    let batch = Batch {
        ledger: vec![single("huge", "world", "bob", MAX_AMOUNT_MICROS + 1)],
        puts: vec![insert(record("w1", "t1", 1))],
        ..Batch::default()
    };
    let err = commit_err(s, batch, "amount above 2^63 - 1").await;
    assert!(
        is_ledger(&err, |l| matches!(
            l,
            LedgerError::InvalidTransfer { id, reason } if id == "huge" && reason.contains("2^63")
        )),
        "expected InvalidTransfer(huge) naming the limit, got {err:?}"
    );
    assert_eq!(get(s, "w1").await, None, "the batch must roll back");

    commit_ok(
        s,
        transfers(vec![single("max", "world", "bob", MAX_AMOUNT_MICROS)]),
        "exactly the limit",
    )
    .await;
    assert_eq!(balance(s, "bob").await, posted(MAX_AMOUNT_MICROS, 0));
    let held = transfer("held", "world", "bob", MAX_AMOUNT_MICROS, Phase::Pending);
    commit_ok(
        s,
        transfers(vec![held]),
        "a pending sum of exactly the limit",
    )
    .await;
    for (t, what) in [
        (
            single("more", "world", "bob", 1),
            "a posted sum past the limit",
        ),
        (
            transfer("more", "world", "bob", 1, Phase::Pending),
            "a pending sum past the limit",
        ),
        (
            post("more", "held", "world", "bob", MAX_AMOUNT_MICROS),
            "posting past the limit",
        ),
    ] {
        let err = commit_err(s, transfers(vec![t]), what).await;
        assert!(
            is_ledger(&err, |l| matches!(
                l,
                LedgerError::InvalidTransfer { reason, .. } if reason.contains("overflows")
            )),
            "{what}: expected InvalidTransfer (overflows), got {err:?}"
        );
    }
    let mut bob = posted(MAX_AMOUNT_MICROS, 0);
    bob.credits_pending = MAX_AMOUNT_MICROS;
    assert_eq!(
        balance(s, "bob").await,
        bob,
        "nothing refused may change a sum"
    );
    let release = void("release", "held", "world", "bob", MAX_AMOUNT_MICROS);
    commit_ok(s, transfers(vec![release]), "the pending limit is released").await;
    assert_eq!(balance(s, "bob").await, posted(MAX_AMOUNT_MICROS, 0));
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

/// The wall clock, as the stores stamp commits.
fn wall_now() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Timestamp::from_millis(ms)
}

/// Waits until the wall clock has passed `t` (ordering, not timing: the stamps of the
/// commits after it are then later than every stamp before it).
async fn clock_past(t: Timestamp) {
    while wall_now() <= t {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// `Ledger::entries_since`: the balance and the transfers of an account, oldest first,
/// in one snapshot; with commit times (a store that records them) only those committed
/// at or after `since`, stamps never decreasing, each within its commit; without, the
/// whole history untimed. Either way the balance minus the listed postings is the
/// balance before them.
pub async fn case_ledger_entries_since<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let start = wall_now();
    funded(s, 1_000).await; // world -> alice 1_000
    commit_ok(s, transfers(vec![single("t1", "alice", "bob", 100)]), "t1").await;
    let middle = wall_now();
    let bob_at_middle = balance(s, "bob").await;
    clock_past(middle).await;
    let since = wall_now();
    commit_ok(s, transfers(vec![single("t2", "bob", "alice", 30)]), "t2").await;
    let p = transfer("p1", "alice", "bob", 50, Phase::Pending);
    commit_ok(s, transfers(vec![p]), "pending").await;
    let post1 = post("p1-post", "p1", "alice", "bob", 50);
    commit_ok(s, transfers(vec![post1]), "post").await;
    let end = wall_now();

    let all = store.entries_since("bob", None).await.unwrap();
    let ids = |e: &[TimedEntry]| {
        e.iter()
            .map(|t| t.entry.transfer_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&all.entries),
        ["t1", "t2", "p1", "p1-post"],
        "the whole history, in order"
    );
    assert_eq!(
        all.balance,
        balance(s, "bob").await,
        "the balance after the last entry"
    );
    let net: i128 = all
        .entries
        .iter()
        .filter(|t| !matches!(t.entry.phase, Phase::Pending | Phase::Void { .. }))
        .map(|t| {
            let a = i128::from(t.entry.amount.0);
            if t.entry.credit == "bob" { a } else { -a }
        })
        .sum();
    assert_eq!(
        net,
        all.balance.posted(),
        "posted postings add up to the balance"
    );

    let recent = store.entries_since("bob", Some(since)).await.unwrap();
    assert_eq!(recent.timed, all.timed);
    if all.timed {
        let stamps: Vec<Timestamp> = all
            .entries
            .iter()
            .map(|t| t.committed_at.expect("a timed store stamps every entry"))
            .collect();
        assert!(
            stamps.windows(2).all(|w| w[0] <= w[1]),
            "stamps never decrease: {stamps:?}"
        );
        assert!(
            stamps[0] >= start && stamps[0] <= middle,
            "t1 stamped within its commit"
        );
        assert!(
            stamps[1] >= since && stamps[3] <= end,
            "later commits stamped within them"
        );
        assert_eq!(
            ids(&recent.entries),
            ["t2", "p1", "p1-post"],
            "only entries since `since`"
        );
        assert_eq!(recent.balance, all.balance);
        // The balance at `middle`: today's minus what was posted after it.
        let after: i128 = recent
            .entries
            .iter()
            .filter(|t| !matches!(t.entry.phase, Phase::Pending | Phase::Void { .. }))
            .map(|t| {
                let a = i128::from(t.entry.amount.0);
                if t.entry.credit == "bob" { a } else { -a }
            })
            .sum();
        assert_eq!(recent.balance.posted() - after, bob_at_middle.posted());
        let none = store
            .entries_since("bob", Some(Timestamp::from_millis(end.0 + 60_000)))
            .await
            .unwrap();
        assert!(
            none.entries.is_empty(),
            "nothing committed after the future"
        );
    } else {
        assert!(all.entries.iter().all(|t| t.committed_at.is_none()));
        assert_eq!(recent, all, "an untimed store answers the whole history");
    }
    assert!(
        matches!(
            store.entries_since("nobody", None).await,
            Err(LedgerError::UnknownAccount { .. })
        ),
        "an unknown account"
    );
}
