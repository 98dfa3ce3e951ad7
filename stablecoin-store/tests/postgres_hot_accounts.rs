//! PostgreSQL: no hot ledger row held across a durable commit (#46, item 2).
//!
//! A transfer into an account, or the posting of a pending transfer, appends a delta and
//! locks no account row; only a debit whose balance the rules check locks its account.
//! These tests hold an account row locked from another connection and show that credits
//! and postings into it still commit, that a pending transfer is still resolved once
//! under concurrency, and that balances stay exact through concurrent credits, checked
//! debits and compactions. Skipped without `STABLECOIN_TEST_PG_URL`, like `postgres`.

use crate::postgres::{pg_available, schema, single, store_in};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::ledger::{Ledger, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use stablecoin_core::ports::store::{Batch, Store, StoreError};
use stablecoin_store::PgStore;
use std::time::Duration;

fn account(id: &str, allow_negative: bool) -> LedgerAccount {
    LedgerAccount {
        id: id.into(),
        allow_negative,
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

/// `world` (may go negative), `alice` funded with `funds`, and `fees`, empty.
async fn fund(store: &PgStore, funds: u64) {
    store
        .commit(Batch {
            accounts: vec![
                account("world", true),
                account("alice", false),
                account("fees", false),
            ],
            ledger: vec![single("fund", "world", "alice", funds)],
            ..Batch::default()
        })
        .await
        .unwrap();
}

async fn deltas(store: &PgStore) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM ledger_deltas")
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_credits_and_postings_do_not_wait_for_a_locked_account_row() {
    if !pg_available("postgres_credits_and_postings_do_not_wait_for_a_locked_account_row") {
        return;
    }
    let store = store_in(&schema("hot"), 4).await;
    fund(&store, 1_000).await;
    store
        .commit(Batch {
            ledger: vec![transfer("hold", "alice", "fees", 100, Phase::Pending)],
            ..Batch::default()
        })
        .await
        .unwrap();

    // Another transaction holds the fee account's row (as a checked debit of it does,
    // until its COMMIT), and alice's.
    let mut holder = store.pool().begin().await.unwrap();
    sqlx::query("SELECT id FROM ledger_accounts WHERE id IN ('fees', 'alice') FOR NO KEY UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();

    // A credit into the held account, and the posting of a pending transfer between the
    // two held accounts: neither needs their balance checked, neither waits.
    let credit = Batch {
        ledger: vec![single("fee-2", "world", "fees", 7)],
        ..Batch::default()
    };
    let post = Batch {
        ledger: vec![transfer(
            "hold-post",
            "alice",
            "fees",
            100,
            Phase::Post {
                pending_id: "hold".into(),
            },
        )],
        ..Batch::default()
    };
    for (what, batch) in [("a credit", credit), ("a posting", post)] {
        tokio::time::timeout(Duration::from_secs(10), store.commit(batch))
            .await
            .unwrap_or_else(|_| panic!("{what} waited for the locked account row"))
            .unwrap();
    }
    // A debit of a held non-negative account must wait: its balance is checked.
    let debit = store.commit(Batch {
        ledger: vec![single("spend", "alice", "world", 1)],
        ..Batch::default()
    });
    tokio::pin!(debit);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut debit)
            .await
            .is_err(),
        "a checked debit went ahead of the transaction holding its account"
    );
    holder.rollback().await.unwrap();
    debit.await.unwrap();

    let fees = store.balance("fees").await.unwrap();
    assert_eq!((fees.credits_posted, fees.credits_pending), (107, 0));
    let alice = store.balance("alice").await.unwrap();
    assert_eq!(
        (
            alice.debits_posted,
            alice.debits_pending,
            alice.credits_posted
        ),
        (101, 0, 1_000)
    );
    assert_eq!(store.posted_sum().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_pending_transfer_is_resolved_once_by_racing_commits() {
    if !pg_available("postgres_a_pending_transfer_is_resolved_once_by_racing_commits") {
        return;
    }
    let s = schema("resolve");
    let (a, b) = (store_in(&s, 4).await, store_in(&s, 4).await);
    fund(&a, 1_000).await;
    for round in 0..20 {
        let pending = format!("p{round}");
        a.commit(Batch {
            ledger: vec![transfer(&pending, "alice", "fees", 10, Phase::Pending)],
            ..Batch::default()
        })
        .await
        .unwrap();
        // One store posts it, the other voids it, at the same time.
        let post = transfer(
            &format!("{pending}-post"),
            "alice",
            "fees",
            10,
            Phase::Post {
                pending_id: pending.clone(),
            },
        );
        let void = transfer(
            &format!("{pending}-void"),
            "alice",
            "fees",
            10,
            Phase::Void {
                pending_id: pending.clone(),
            },
        );
        let (x, y) = tokio::join!(
            a.commit(Batch {
                ledger: vec![post],
                ..Batch::default()
            }),
            b.commit(Batch {
                ledger: vec![void],
                ..Batch::default()
            })
        );
        let won = [&x, &y].iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "round {round}: {x:?} / {y:?}");
        for r in [x, y] {
            if let Err(e) = r {
                assert!(
                    matches!(e, StoreError::Ledger(LedgerError::PendingResolved { .. })),
                    "round {round}: the loser got {e:?}"
                );
            }
        }
    }
    let fees = a.balance("fees").await.unwrap();
    let alice = a.balance("alice").await.unwrap();
    assert_eq!(fees.credits_pending, 0, "every hold resolved");
    assert_eq!(alice.debits_pending, 0);
    assert_eq!(alice.debits_posted, fees.credits_posted, "posted once each");
    assert_eq!(a.posted_sum().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_balances_stay_exact_through_concurrent_credits_debits_and_compactions() {
    if !pg_available(
        "postgres_balances_stay_exact_through_concurrent_credits_debits_and_compactions",
    ) {
        return;
    }
    const CREDITS: u64 = 200;
    let s = schema("exact");
    let (a, b) = (store_in(&s, 8).await, store_in(&s, 8).await);
    fund(&a, 10_000).await;
    // Many commits credit `fees` (deltas, no lock) while others debit it (locked,
    // folding its deltas) and compactions fold it too: nothing counted twice or lost,
    // and `fees` never overdrawn.
    let mut handles = Vec::new();
    for i in 0..CREDITS {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        handles.push(tokio::spawn(async move {
            let batch = Batch {
                ledger: vec![
                    transfer(&format!("c{i}"), "alice", "fees", 3, Phase::Pending),
                    single(&format!("s{i}"), "world", "fees", 2),
                ],
                ..Batch::default()
            };
            store.commit(batch).await.map(|_| 0u64)
        }));
        if i % 4 == 0 {
            let store = if i % 8 == 0 { b.clone() } else { a.clone() };
            handles.push(tokio::spawn(async move {
                let batch = Batch {
                    ledger: vec![single(&format!("d{i}"), "fees", "world", 5)],
                    ..Batch::default()
                };
                match store.commit(batch).await {
                    Ok(_) => Ok(5),
                    Err(StoreError::Ledger(LedgerError::InsufficientFunds { .. })) => Ok(0),
                    Err(e) => Err(e),
                }
            }));
        }
        if i % 16 == 0 {
            let store = a.clone();
            handles.push(tokio::spawn(async move {
                store.compact_ledger().await.unwrap();
                Ok(0)
            }));
        }
    }
    let mut debited = 0;
    for h in handles {
        debited += h.await.unwrap().unwrap();
    }
    let check = |fees: stablecoin_core::ports::ledger::Balance| {
        assert_eq!(fees.credits_posted, 2 * CREDITS, "credits");
        assert_eq!(fees.credits_pending, 3 * CREDITS, "pending credits");
        assert_eq!(fees.debits_posted, debited, "debits");
        assert!(fees.debits_posted <= fees.credits_posted, "overdrawn");
    };
    check(a.balance("fees").await.unwrap());
    assert_eq!(b.posted_sum().await.unwrap(), 0);
    // Compaction leaves nothing to fold and changes no balance.
    a.compact_ledger().await.unwrap();
    assert_eq!(deltas(&a).await, 0, "every delta folded");
    check(b.balance("fees").await.unwrap());
    let alice = b.balance("alice").await.unwrap();
    assert_eq!(alice.debits_pending, 3 * CREDITS);
    assert_eq!(a.posted_sum().await.unwrap(), 0);
}
