//! Conformance cases of lists: per kind and tenant, newest first, filtered by subkind and
//! status in the store, paged, with the total of every match.

use super::fixtures::*;
use std::sync::Arc;

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
        subkind: None,
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

/// A list runs on one subkind, matched exactly (`None`: the records without one), with
/// or without a status, newest first, with the total of that subkind and status alone;
/// an update that changes a record's subkind or status moves it between lists.
pub async fn case_list_subkinds<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    // Interleaved in time, so a store that ignored the subkind would mix them.
    let fixtures = [
        ("a1", 100, Some("apple"), Some("open")),
        ("p1", 150, Some("pear"), Some("open")),
        ("a2", 200, Some("apple"), Some("done")),
        ("n1", 250, None, Some("open")),
        ("a3", 300, Some("apple"), Some("open")),
        ("p2", 350, Some("pear"), Some("done")),
        ("a4", 400, Some("apple"), None),
        ("a5", 400, Some("apple"), Some("open")), // ties with a4: a5 first
    ];
    let mut ps = Vec::new();
    for (id, at, subkind, status) in fixtures {
        let mut r = record(id, "t1", at);
        r.subkind = subkind.map(str::to_string);
        r.status = status.map(str::to_string);
        ps.push(insert(r));
    }
    ps.push(insert(with_status(
        with_subkind(record("x1", "t2", 500), "apple"),
        "open",
    )));
    let mut other_kind = with_status(with_subkind(record("g1", "t1", 600), "apple"), "open");
    other_kind.kind = "gadget".to_string();
    ps.push(insert(other_kind));
    commit_ok(s, puts(ps), "insert subkind fixtures").await;

    let q = |subkind: Option<&str>, status: Option<&str>, limit: usize, offset: usize| ListQuery {
        kind: KIND.to_string(),
        tenant: "t1".to_string(),
        subkind: subkind.map(str::to_string),
        status: status.map(str::to_string),
        limit,
        offset,
    };
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    assert_eq!(
        list_ids(s, q(Some("apple"), None, 100, 0)).await,
        (ids(&["a5", "a4", "a3", "a2", "a1"]), 5),
        "one subkind, every status, newest first by (created_at, id)"
    );
    assert_eq!(
        list_ids(s, q(Some("apple"), Some("open"), 100, 0)).await,
        (ids(&["a5", "a3", "a1"]), 3),
        "subkind and status"
    );
    assert_eq!(
        list_ids(s, q(Some("apple"), Some("open"), 1, 1)).await,
        (ids(&["a3"]), 3),
        "a page of subkind and status; the total counts every match"
    );
    assert_eq!(
        list_ids(s, q(Some("apple"), None, 2, 4)).await,
        (ids(&["a1"]), 5),
        "the last page"
    );
    assert_eq!(
        list_ids(s, q(Some("pear"), Some("done"), 100, 0)).await,
        (ids(&["p2"]), 1)
    );
    assert_eq!(
        list_ids(s, q(None, None, 100, 0)).await,
        (ids(&["n1"]), 1),
        "None lists the records without a subkind, not every subkind"
    );
    assert_eq!(
        list_ids(s, q(None, Some("open"), 100, 0)).await,
        (ids(&["n1"]), 1)
    );
    assert_eq!(
        list_ids(s, q(Some("plum"), None, 100, 0)).await,
        (vec![], 0),
        "an unknown subkind"
    );
    assert_eq!(
        list_ids(s, q(Some("apple"), Some("lost"), 100, 0)).await,
        (vec![], 0),
        "a status no record of the subkind has"
    );

    // An update moves a record between status lists: out of the old (subkind, status),
    // into the new, counted once. Its subkind is fixed at insert: an update that names
    // another keeps the stored one (`Store::commit`).
    let moved = with_status(with_subkind(record("a3", "t1", 300), "pear"), "done");
    commit_ok(s, puts(vec![update(moved, 1)]), "move a3 to done").await;
    assert_eq!(
        list_ids(s, q(Some("apple"), Some("open"), 100, 0)).await,
        (ids(&["a5", "a1"]), 2)
    );
    assert_eq!(
        list_ids(s, q(Some("apple"), None, 100, 0)).await,
        (ids(&["a5", "a4", "a3", "a2", "a1"]), 5),
        "still listed under its subkind, once"
    );
    assert_eq!(
        list_ids(s, q(Some("apple"), Some("done"), 100, 0)).await,
        (ids(&["a3", "a2"]), 2)
    );
    assert_eq!(
        list_ids(s, q(Some("pear"), Some("done"), 100, 0)).await,
        (ids(&["p2"]), 1),
        "an update cannot move a record to another subkind"
    );
    let got = store.get(KIND, "a3").await.unwrap().unwrap();
    assert_eq!(
        (got.subkind.as_deref(), got.status.as_deref()),
        (Some("apple"), Some("done")),
        "a read returns the subkind inserted and the status written"
    );
}

/// Keyset pages (`Store::list_before`): strictly after a position in list order, newest
/// first, on one subkind and optionally one status; a walk from page to page sees every
/// record once although records are inserted ahead of it between pages; a position
/// built from a time alone starts at the records created strictly before it.
pub async fn case_list_before<S: Store + Ledger + ?Sized>(store: Arc<S>) {
    let s = &*store;
    let mut ps = Vec::new();
    // 30 records, three per millisecond (ties broken by id), two statuses.
    for i in 0..30 {
        let status = if i % 3 == 0 { "odd" } else { "even" };
        ps.push(insert(with_status(
            record(&format!("r{i:02}"), "t1", 1_000 + (i / 3) * 10),
            status,
        )));
    }
    ps.push(insert(record("other-tenant", "t2", 1_050)));
    ps.push(insert(with_subkind(
        record("other-subkind", "t1", 1_050),
        "s",
    )));
    commit_ok(s, puts(ps), "insert keyset fixtures").await;
    let q = |status: Option<&str>, limit: usize| ListQuery {
        kind: KIND.to_string(),
        tenant: "t1".to_string(),
        subkind: None,
        status: status.map(str::to_string),
        limit,
        // Ignored by a keyset page.
        offset: 7,
    };
    let ids = |page: &[StoredRecord]| page.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    let expected: Vec<String> = (0..30).rev().map(|i| format!("r{i:02}")).collect();

    let first = store.list_before(&q(None, 4), None).await.unwrap();
    assert_eq!(ids(&first), expected[..4], "no position: the newest");

    // Walk in pages of 4 while a newer record arrives before every page.
    let mut seen = ids(&first);
    let mut at = ListPosition::of(first.last().unwrap());
    for n in 0.. {
        let newer = with_status(record(&format!("new{n:02}"), "t1", 5_000 + n), "odd");
        commit_ok(s, puts(vec![insert(newer)]), "insert ahead of the walk").await;
        let page = store.list_before(&q(None, 4), Some(&at)).await.unwrap();
        assert!(page.len() <= 4, "a page holds at most `limit`");
        seen.extend(ids(&page));
        match page.last() {
            Some(last) if page.len() == 4 => at = ListPosition::of(last),
            _ => break,
        }
    }
    assert_eq!(
        seen, expected,
        "the walk sees every record once, in order, and none inserted ahead of it"
    );

    let odd = store
        .list_before(&q(Some("odd"), 3), Some(&ListPosition::of(&first[1])))
        .await
        .unwrap();
    assert_eq!(
        ids(&odd),
        ["r27", "r24", "r21"],
        "status filter after a position"
    );

    // Time-only positions: strictly before 1_050 (r15..r17 are at 1_050).
    let before_time = ListPosition::before_time(ts(1_050));
    let page = store
        .list_before(&q(None, 5), Some(&before_time))
        .await
        .unwrap();
    assert_eq!(ids(&page), ["r14", "r13", "r12", "r11", "r10"]);

    let past_end = ListPosition::of(
        store
            .list_before(&q(None, 100), None)
            .await
            .unwrap()
            .last()
            .unwrap(),
    );
    assert!(
        store
            .list_before(&q(None, 5), Some(&past_end))
            .await
            .unwrap()
            .is_empty(),
        "after the oldest record: nothing"
    );
    assert!(
        store
            .list_before(&q(None, 0), None)
            .await
            .unwrap()
            .is_empty(),
        "limit 0"
    );
    let mut t2 = q(None, 10);
    t2.tenant = "t2".into();
    assert_eq!(
        ids(&store.list_before(&t2, None).await.unwrap()),
        ["other-tenant"],
        "tenant isolation"
    );
}
