//! The policy decision's unit and property tests: each rule refuses what it names, the
//! same inputs always give the same decision, and no sequence of admitted requests ever
//! exceeds a window's limit, with every admitted operation still in flight.

use super::*;
use proptest::prelude::*;

fn tenant() -> TenantId {
    TenantId("ten_1".into())
}

fn wallet() -> WalletId {
    WalletId("wal_1".into())
}

fn policy(id: &str) -> Policy {
    Policy {
        id: id.into(),
        tenant: tenant(),
        wallet: None,
        rail: None,
        token: None,
        max_per_transaction: None,
        windows: vec![],
        allow_list: vec![],
        deny_list: vec![],
        require_address_book: false,
        cooling_off_hours: None,
        approval_threshold: None,
        created_at: Timestamp::from_millis(0),
        updated_at: Timestamp::from_millis(0),
        deleted_at: None,
    }
}

fn request(amount: u64) -> PolicyRequest {
    PolicyRequest {
        tenant: tenant(),
        wallet: wallet(),
        rail: "polygon".into(),
        token: Token::Usdc,
        amount: Micros(amount),
        destination: DestinationFacts {
            key: Some(momo_key("+2250700000001")),
            book_usable_at: None,
            first_seen: None,
        },
        approved: false,
    }
}

fn rule_of(d: &Decision) -> &str {
    match d {
        Decision::Deny { rule_id, .. } | Decision::ApprovalRequired { rule_id } => rule_id,
        Decision::Allow => "",
    }
}

#[test]
fn each_rule_refuses_what_it_names() {
    let now = Timestamp::from_millis(100 * BUCKET_MS);
    let mut p = policy("pol_a");
    p.max_per_transaction = Some(Micros(10));
    let ps = vec![(p.clone(), WindowUsage::default())];
    assert_eq!(evaluate(&ps, &request(10), now), Decision::Allow);
    assert_eq!(
        rule_of(&evaluate(&ps, &request(11), now)),
        "pol_a:max_per_transaction"
    );

    let mut p = policy("pol_a");
    p.deny_list = vec![momo_key("+2250700000001")];
    let ps = vec![(p, WindowUsage::default())];
    assert_eq!(rule_of(&evaluate(&ps, &request(1), now)), "pol_a:deny_list");

    let mut p = policy("pol_a");
    p.allow_list = vec![chain_key("0xAbC0000000000000000000000000000000000001")];
    let ps = vec![(p, WindowUsage::default())];
    assert_eq!(
        rule_of(&evaluate(&ps, &request(1), now)),
        "pol_a:allow_list"
    );
    let mut r = request(1);
    r.destination.key = Some(chain_key("0xabc0000000000000000000000000000000000001"));
    assert_eq!(evaluate(&ps, &r, now), Decision::Allow, "EVM case folded");

    let mut p = policy("pol_a");
    p.require_address_book = true;
    let ps = vec![(p, WindowUsage::default())];
    assert_eq!(
        rule_of(&evaluate(&ps, &request(1), now)),
        "pol_a:address_book"
    );
    let mut r = request(1);
    r.destination.book_usable_at = Some(now.plus_millis(1));
    assert_eq!(rule_of(&evaluate(&ps, &r, now)), "pol_a:address_book");
    r.destination.book_usable_at = Some(now);
    assert_eq!(evaluate(&ps, &r, now), Decision::Allow);

    let mut p = policy("pol_a");
    p.cooling_off_hours = Some(24);
    let ps = vec![(p, WindowUsage::default())];
    assert_eq!(
        rule_of(&evaluate(&ps, &request(1), now)),
        "pol_a:cooling_off"
    );
    let mut r = request(1);
    r.destination.first_seen = Some(now.plus_millis(-24 * BUCKET_MS + 1));
    assert_eq!(rule_of(&evaluate(&ps, &r, now)), "pol_a:cooling_off");
    r.destination.first_seen = Some(now.plus_millis(-24 * BUCKET_MS));
    assert_eq!(evaluate(&ps, &r, now), Decision::Allow);
    let mut r = request(1);
    r.destination.book_usable_at = Some(now);
    assert_eq!(
        evaluate(&ps, &r, now),
        Decision::Allow,
        "a usable book entry"
    );

    let mut p = policy("pol_a");
    p.approval_threshold = Some(Micros(5));
    let ps = vec![(p, WindowUsage::default())];
    assert_eq!(evaluate(&ps, &request(5), now), Decision::Allow);
    assert_eq!(
        evaluate(&ps, &request(6), now),
        Decision::ApprovalRequired {
            rule_id: "pol_a:approval_threshold".into()
        }
    );
    let mut r = request(6);
    r.approved = true;
    assert_eq!(evaluate(&ps, &r, now), Decision::Allow);
}

#[test]
fn a_policy_applies_only_to_its_wallet_rail_and_token() {
    let now = Timestamp::from_millis(0);
    let mut p = policy("pol_a");
    p.max_per_transaction = Some(Micros(1));
    p.wallet = Some(WalletId("wal_other".into()));
    assert_eq!(
        evaluate(&[(p.clone(), WindowUsage::default())], &request(2), now),
        Decision::Allow
    );
    p.wallet = None;
    p.rail = Some("tron".into());
    assert_eq!(
        evaluate(&[(p.clone(), WindowUsage::default())], &request(2), now),
        Decision::Allow
    );
    p.rail = None;
    p.token = Some(Token::Usdt);
    assert_eq!(
        evaluate(&[(p.clone(), WindowUsage::default())], &request(2), now),
        Decision::Allow
    );
    p.token = Some(Token::Usdc);
    p.tenant = TenantId("ten_2".into());
    assert_eq!(
        evaluate(&[(p, WindowUsage::default())], &request(2), now),
        Decision::Allow
    );
}

#[test]
fn a_refusal_wins_over_an_approval_and_the_lowest_policy_id_first() {
    let now = Timestamp::from_millis(0);
    let mut a = policy("pol_b");
    a.approval_threshold = Some(Micros(1));
    let mut b = policy("pol_c");
    b.max_per_transaction = Some(Micros(5));
    let mut c = policy("pol_a");
    c.max_per_transaction = Some(Micros(4));
    let ps = vec![
        (a, WindowUsage::default()),
        (b, WindowUsage::default()),
        (c, WindowUsage::default()),
    ];
    assert_eq!(
        rule_of(&evaluate(&ps, &request(6), now)),
        "pol_a:max_per_transaction"
    );
    assert_eq!(
        rule_of(&evaluate(&ps, &request(3), now)),
        "pol_b:approval_threshold"
    );
}

#[test]
fn a_window_counts_until_its_hour_has_left_it() {
    let mut p = policy("pol_a");
    p.windows = vec![WindowLimit {
        window: WindowSpan::Day,
        max_amount: Some(Micros(30)),
        max_count: Some(2),
    }];
    let t0 = Timestamp::from_millis(1_000 * BUCKET_MS + 1_000);
    let mut usage = WindowUsage::default();
    usage.record(t0, Micros(20));
    let ps = |u: &WindowUsage| vec![(p.clone(), u.clone())];
    assert_eq!(
        rule_of(&evaluate(&ps(&usage), &request(11), t0)),
        "pol_a:window_24h_amount"
    );
    assert_eq!(evaluate(&ps(&usage), &request(10), t0), Decision::Allow);
    usage.record(t0, Micros(1));
    assert_eq!(
        rule_of(&evaluate(&ps(&usage), &request(1), t0)),
        "pol_a:window_24h_count"
    );
    // Exactly 24 h later the hour of t0 still overlaps the window; an hour on it does not.
    let later = t0.plus_millis(WindowSpan::Day.millis());
    assert!(matches!(
        evaluate(&ps(&usage), &request(1), later),
        Decision::Deny { .. }
    ));
    let gone = t0.plus_millis(WindowSpan::Day.millis() + BUCKET_MS);
    assert_eq!(evaluate(&ps(&usage), &request(30), gone), Decision::Allow);
}

#[test]
fn usage_forgets_hours_no_window_counts() {
    let mut u = WindowUsage::default();
    u.record(Timestamp::from_millis(0), Micros(5));
    u.record(
        Timestamp::from_millis(WindowSpan::Month.millis() + 2 * BUCKET_MS),
        Micros(1),
    );
    assert_eq!(u.buckets.len(), 1);
}

#[test]
fn destination_keys_tell_numbers_from_addresses() {
    assert_eq!(destination_key(" +2250700000001 "), "momo:+2250700000001");
    assert_eq!(
        destination_key("0xABCDEF0000000000000000000000000000000001"),
        "chain:0xabcdef0000000000000000000000000000000001"
    );
    assert_eq!(destination_key("TXYZabc"), "chain:TXYZabc");
}

fn any_policy() -> impl Strategy<Value = Policy> {
    (
        proptest::option::of(1u64..100),
        proptest::option::of(1u64..300),
        proptest::option::of(1u32..8),
        proptest::option::of(1u64..600),
        proptest::option::of(1u64..200),
        any::<bool>(),
        proptest::option::of(0u32..48),
    )
        .prop_map(
            |(per_tx, day_amount, day_count, week_amount, threshold, book, cool)| {
                let mut p = policy("pol_p");
                p.max_per_transaction = per_tx.map(Micros);
                p.windows = vec![
                    WindowLimit {
                        window: WindowSpan::Day,
                        max_amount: day_amount.map(Micros),
                        max_count: day_count,
                    },
                    WindowLimit {
                        window: WindowSpan::Week,
                        max_amount: week_amount.map(Micros),
                        max_count: None,
                    },
                ];
                p.approval_threshold = threshold.map(Micros);
                p.require_address_book = book;
                p.cooling_off_hours = cool;
                p
            },
        )
}

proptest! {
    /// The same inputs always give the same decision, whatever order the policies come in.
    #[test]
    fn the_same_inputs_give_the_same_decision(
        p in any_policy(),
        q in any_policy(),
        amount in 1u64..400,
        seen_ago in proptest::option::of(0i64..100),
        used in proptest::collection::vec((0i64..200, 1u64..50), 0..10),
        approved in any::<bool>(),
    ) {
        let now = Timestamp::from_millis(10_000 * BUCKET_MS);
        let mut usage = WindowUsage::default();
        for (h, a) in used {
            usage.record(now.plus_millis(-h * BUCKET_MS), Micros(a));
        }
        let mut q = q;
        q.id = "pol_q".into();
        let mut r = request(amount);
        r.approved = approved;
        r.destination.first_seen = seen_ago.map(|h| now.plus_millis(-h * BUCKET_MS));
        let a = vec![(p.clone(), usage.clone()), (q.clone(), WindowUsage::default())];
        let b = vec![(q, WindowUsage::default()), (p, usage)];
        let first = evaluate(&a, &r, now);
        prop_assert_eq!(&first, &evaluate(&a, &r, now));
        prop_assert_eq!(&first, &evaluate(&b, &r, now));
    }

    /// Requests at any times, every admitted one still in flight (counted, never
    /// released): at no moment does any window hold more than its limits, counted
    /// exactly over the rolling window.
    #[test]
    fn no_sequence_of_requests_exceeds_a_window(
        p in any_policy(),
        steps in proptest::collection::vec((0i64..(6 * BUCKET_MS), 1u64..120), 1..60),
    ) {
        let mut p = p;
        p.require_address_book = false;
        p.cooling_off_hours = None;
        p.approval_threshold = None;
        let mut usage = WindowUsage::default();
        let mut admitted: Vec<(i64, u64)> = Vec::new();
        let mut now = Timestamp::from_millis(5_000 * BUCKET_MS);
        for (dt, amount) in steps {
            now = now.plus_millis(dt);
            let r = request(amount);
            if evaluate(&[(p.clone(), usage.clone())], &r, now) == Decision::Allow {
                prop_assert!(p.max_per_transaction.is_none_or(|m| r.amount <= m));
                usage.record(now, r.amount);
                admitted.push((now.millis(), amount));
            }
            for w in &p.windows {
                let start = now.millis() - w.window.millis();
                let inside = admitted.iter().filter(|(t, _)| *t > start);
                let (sum, count) = inside.fold((0u64, 0u32), |(s, c), (_, a)| (s + a, c + 1));
                if let Some(max) = w.max_amount {
                    prop_assert!(sum <= max.0, "{} > {} in {}", sum, max.0, w.window.name());
                }
                if let Some(max) = w.max_count {
                    prop_assert!(count <= max, "{} > {} in {}", count, max, w.window.name());
                }
            }
        }
    }
}
