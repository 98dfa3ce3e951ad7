//! Conformance cases of what background workers rely on: the outbox's gap-free
//! sequence, claims of due records, and concurrent commits.

use super::fixtures::*;
use std::collections::HashSet;
use std::sync::Arc;

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
                .claim_due(KIND, 0, worker, ts(at), lease, limit)
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
        .claim_due("gadget", 0, "w1", ts(now), 1_000, 10)
        .await
        .unwrap();
    assert_eq!(gadgets.len(), 1, "claims are per kind");
    assert!(
        store
            .claim_due("none", 0, "w1", ts(now), 1_000, 10)
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
        subkind: None,
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
                    .claim_due(KIND, 0, &worker, ts(1_000), 60_000, 3)
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

/// Lanes split one kind's due records into queues claimed apart: a claim of one lane
/// never returns another's records, however much older they are due; a put that moves
/// a record to another lane makes it due there only; records read back carry their lane;
/// and an update keeps the tenant, creation time and subkind of the insert.
pub async fn case_claim_lanes<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let in_lane = |id: &str, due: i64, lane: u8| {
        let mut r = with_due(record(id, "t1", due), Some(due));
        r.lane = lane;
        insert(r)
    };
    let batch = puts(vec![
        in_lane("new-1", 1, 0),
        in_lane("new-2", 2, 0),
        in_lane("new-3", 3, 0),
        in_lane("sent-1", 50, 1),
        in_lane("sent-2", 60, 1),
    ]);
    commit_ok(s, batch, "lane fixtures").await;
    let claim = |lane: u8, worker: &'static str, limit: usize| {
        let store = store.clone();
        async move {
            store
                .claim_due(KIND, lane, worker, ts(100), 1_000, limit)
                .await
                .expect("claim_due")
                .into_iter()
                .map(|r| (r.id, r.lane))
                .collect::<Vec<_>>()
        }
    };
    // The oldest due records are lane 0's; lane 1's claim skips them.
    assert_eq!(
        claim(1, "poller", 1).await,
        [("sent-1".to_string(), 1)],
        "lane 1 is claimed apart from the older lane 0"
    );
    assert_eq!(
        claim(0, "submitter", 10)
            .await
            .into_iter()
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        ["new-1", "new-2", "new-3"],
        "lane 0 holds only its own, oldest due first"
    );
    assert_eq!(claim(2, "nobody", 10).await, [], "an empty lane");
    // new-1 is submitted: its put moves it to lane 1 (and releases its claim).
    let new1 = get(s, "new-1").await.expect("new-1");
    assert_eq!(new1.lane, 0, "get reads the lane");
    let mut moved = new1.clone();
    moved.lane = 1;
    moved.due_at = Some(ts(70));
    // An update cannot move a record's fixed fields.
    moved.tenant = Some("t2".to_string());
    moved.created_at = ts(999);
    moved.subkind = Some("other".to_string());
    commit_ok(
        s,
        puts(vec![update(moved, new1.version)]),
        "new-1 submitted",
    )
    .await;
    let back = get(s, "new-1").await.expect("new-1 again");
    assert_eq!(back.lane, 1, "the put moved it to lane 1");
    assert_eq!(
        (
            back.tenant.as_deref(),
            back.created_at,
            back.subkind.as_deref()
        ),
        (Some("t1"), ts(1), None),
        "tenant, created_at and subkind are fixed at insert"
    );
    assert_eq!(
        claim(0, "submitter-2", 10).await,
        [],
        "not in lane 0 any more"
    );
    assert_eq!(
        claim(1, "poller-2", 10).await,
        [("sent-2".to_string(), 1), ("new-1".to_string(), 1)],
        "due in lane 1 now (sent-1 is still leased)"
    );
}

/// Two workers per lane race on one store: every due record of each lane is claimed
/// exactly once, and only by a worker of its lane.
pub async fn case_concurrent_lane_claims<S: Store + Ledger + ?Sized + 'static>(store: Arc<S>) {
    const PER_LANE: usize = 30;
    let mut all = Vec::new();
    for lane in 0..2u8 {
        for i in 0..PER_LANE {
            let mut r = with_due(
                record(&format!("lane{lane}-{i:02}"), "t1", i as i64),
                Some(i as i64),
            );
            r.lane = lane;
            all.push(insert(r));
        }
    }
    commit_ok(&*store, puts(all), "jobs in two lanes").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let mut handles = Vec::new();
    for w in 0..4u8 {
        let lane = w % 2;
        let store = store.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let worker = format!("worker-{w}");
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_due(KIND, lane, &worker, ts(1_000), 60_000, 4)
                    .await
                    .expect("claim_due");
                if got.is_empty() {
                    break (lane, mine);
                }
                mine.extend(got.into_iter().map(|r| (r.id, r.lane)));
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut seen = HashSet::new();
    for handle in handles {
        let (lane, got) = handle.await.expect("worker panicked");
        for (id, record_lane) in got {
            assert_eq!(record_lane, lane, "{id} claimed from another lane");
            assert!(seen.insert(id.clone()), "{id} was claimed twice");
        }
    }
    assert_eq!(seen.len(), 2 * PER_LANE, "every due record claimed once");
}
