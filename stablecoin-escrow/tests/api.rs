//! Admission, bad input, tenancy, lists, sandbox, address uniqueness, idempotency.

#[path = "common/mod.rs"]
mod common;

const BACKEND: common::Backend = common::Backend::Sim;

use common::*;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{KeyKind, KeyMode};
use stablecoin_core::kernel::Kernel;
use stablecoin_core::memory::SeededEntropy;
use stablecoin_core::ports::{ChainAddress, Rail, Store};
use stablecoin_escrow::*;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Asserts `f` fails with `code` and writes nothing at all.
macro_rules! refused {
    ($w:expr, $code:expr, $call:expr) => {{
        let commits = $w.store.commit_count();
        let attempts = $w.store.commit_attempts();
        let outbox = $w.store.outbox_len();
        let err = $call.await.unwrap_err();
        assert_eq!(err.code(), $code, "{err}");
        assert_eq!($w.store.commit_count(), commits, "stored something: {err}");
        assert_eq!(
            $w.store.commit_attempts(),
            attempts,
            "tried to store: {err}"
        );
        assert_eq!($w.store.outbox_len(), outbox);
        err
    }};
}

#[tokio::test]
async fn sponsor_not_ready_refuses_create_and_stores_nothing() {
    let w = World::new().await;
    w.tron.set_sponsor_funded(false);
    let e = refused!(
        w,
        "RAIL_NOT_READY",
        w.escrow.create(&w.auth, &w.request("10"), None)
    );
    assert!(e.to_string().contains("INBOUND_READY"), "{e}");
    assert!(e.is_retryable());
    let list = w
        .escrow
        .list(&w.auth, &ListEscrowsQuery::default())
        .await
        .unwrap();
    assert_eq!(list.total, 0);
    // Back to READY: admitted.
    w.tron.set_sponsor_funded(true);
    let d = w.create("10").await;
    assert_eq!(d.state, "CREATED");

    // Releases are sponsored sends too: refused (nothing stored) while not READY.
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    w.tron.set_sponsor_funded(false);
    refused!(
        w,
        "RAIL_NOT_READY",
        w.escrow.release(&w.auth, &d.id, &w.act())
    );
    refused!(
        w,
        "RAIL_NOT_READY",
        w.escrow.refund(&w.auth, &d.id, &w.act())
    );
    w.tron.set_sponsor_funded(true);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    // A claimed payout waits while the rail cannot send, then goes out once.
    w.tron.set_sponsor_funded(false);
    let r = w.escrow.tick().await;
    assert_eq!(r.waiting, 1);
    assert_eq!(w.tron.submit_count(), 0);
    assert!(w.get(&d.id).await.payout_pending);
    w.tron.set_sponsor_funded(true);
    w.settle().await;
    assert_eq!(w.get(&d.id).await.state, "RELEASED");
    assert_eq!(w.tron.submit_count(), 1);
    w.assert_conserved().await;
}

#[tokio::test]
async fn deposits_disabled_refuses_create() {
    let w = World::with_config(EscrowConfig {
        deposits_enabled: false,
        ..test_config()
    })
    .await;
    refused!(
        w,
        "ESCROW_UNAVAILABLE",
        w.escrow.create(&w.auth, &w.request("10"), None)
    );
    let w2 = World::new().await;
    w2.tron.set_rpc_down(true);
    refused!(
        w2,
        "RAIL_NOT_READY",
        w2.escrow.create(&w2.auth, &w2.request("10"), None)
    );
}

#[tokio::test]
async fn bad_create_input_is_a_typed_error_and_stores_nothing() {
    let w = World::new().await;
    let base = w.request("10");
    let with = |f: &dyn Fn(&mut CreateEscrowRequest)| {
        let mut r = base.clone();
        f(&mut r);
        r
    };
    let cases: Vec<(CreateEscrowRequest, &str, Option<&str>)> = vec![
        (
            with(&|r| r.amount = "1.5".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "10.000000".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "0".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "-5".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "1e3".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "1000001".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.amount = "99999999999999999999".into()),
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            with(&|r| r.token = Some("USDC".into())),
            "UNSUPPORTED_TOKEN",
            Some("token"),
        ),
        (
            with(&|r| r.token = Some("usdt".into())),
            "UNKNOWN_TOKEN",
            Some("token"),
        ),
        (
            with(&|r| r.reference = "  ".into()),
            "MISSING_PARAMETER",
            Some("reference"),
        ),
        (
            with(&|r| r.reference = "x".repeat(201)),
            "INVALID_PARAMETER",
            Some("reference"),
        ),
        (
            with(&|r| r.funding_window_secs = Some(60)),
            "INVALID_PARAMETER",
            Some("funding_window_secs"),
        ),
        (
            with(&|r| r.funding_window_secs = Some(31 * 24 * 3600)),
            "INVALID_PARAMETER",
            Some("funding_window_secs"),
        ),
        (
            with(&|r| r.auto_release_after_secs = Some(0)),
            "INVALID_PARAMETER",
            Some("auto_release_after_secs"),
        ),
        (
            with(&|r| r.auto_release_after_secs = Some(91 * 24 * 3600)),
            "INVALID_PARAMETER",
            Some("auto_release_after_secs"),
        ),
        (
            with(&|r| r.buyer_phone_number = "0700000001".into()),
            "INVALID_PHONE",
            Some("buyer_phone_number"),
        ),
        (
            with(&|r| r.seller_phone_number = "+22507".into()),
            "INVALID_PHONE",
            Some("seller_phone_number"),
        ),
        (
            with(&|r| r.seller_phone_number = r.buyer_phone_number.clone()),
            "SAME_WALLET",
            None,
        ),
        // An unknown party: no wallet for that phone.
        (
            with(&|r| r.seller_phone_number = "+2250799999999".into()),
            "NOT_FOUND",
            Some("seller_phone_number"),
        ),
        (
            with(&|r| r.buyer_phone_number = "+2250799999998".into()),
            "NOT_FOUND",
            Some("buyer_phone_number"),
        ),
    ];
    for (req, code, param) in cases {
        let e = refused!(w, code, w.escrow.create(&w.auth, &req, None));
        assert_eq!(e.param(), param, "{req:?}");
        // The sandbox validates the same way.
        let e = refused!(w, code, w.escrow.create(&w.test_auth, &req, None));
        assert_eq!(e.param(), param);
    }
    // A wallet provisioned by another tenant and not linked to this one.
    let stranger = Phone::parse("+2250700000099").unwrap();
    w.core.provision(&w.other_tenant, &stranger).await.unwrap();
    let req = with(&|r| r.seller_phone_number = stranger.to_string());
    let e = refused!(w, "NOT_A_MEMBER", w.escrow.create(&w.auth, &req, None));
    assert!(e.to_string().contains("seller"));
    let req = with(&|r| r.buyer_phone_number = stranger.to_string());
    let e = refused!(w, "NOT_A_MEMBER", w.escrow.create(&w.auth, &req, None));
    assert!(e.to_string().contains("buyer"));
    // A checkout business key cannot use the escrow API.
    let biz = w
        .core
        .issue_api_key(&w.tenant, KeyKind::Business, KeyMode::Live)
        .await
        .unwrap();
    let biz = w.core.authenticate(&biz.secret).await.unwrap();
    refused!(w, "INVALID_API_KEY", w.escrow.create(&biz, &base, None));
    refused!(
        w,
        "INVALID_IDEMPOTENCY_KEY",
        w.escrow.create(&w.auth, &base, Some(""))
    );
    // Unknown request fields are rejected by the request type itself.
    let bad = serde_json::json!({
        "buyer_phone_number": "+2250700000001", "seller_phone_number": "+2250700000002",
        "amount": "10", "reference": "r", "payout_address": "TXYZ"
    });
    assert!(serde_json::from_value::<CreateEscrowRequest>(bad).is_err());
    for body in [
        serde_json::json!({"payout_address": "TXYZ"}),
        serde_json::json!({"idempotency_key": "k1"}),
        serde_json::json!({"on_behalf_of": "BUYER", "amount": "5"}),
    ] {
        assert!(serde_json::from_value::<EscrowActionRequest>(body).is_err());
    }
    let ok: EscrowActionRequest =
        serde_json::from_value(serde_json::json!({"on_behalf_of": "SELLER"})).unwrap();
    assert_eq!(ok.on_behalf_of.as_deref(), Some("SELLER"));
    assert!(serde_json::from_value::<EscrowActionRequest>(serde_json::json!({})).is_ok());
    assert_eq!(
        w.escrow
            .list(&w.auth, &ListEscrowsQuery::default())
            .await
            .unwrap()
            .total,
        0
    );
}

#[tokio::test]
async fn bad_action_input_is_a_typed_error_and_stores_nothing() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    for bad in ["buyer", "ESCROW_AGENT", "", "BUYER "] {
        let req = EscrowActionRequest {
            on_behalf_of: Some(bad.into()),
            reason: Some("x".into()),
        };
        let e = refused!(
            w,
            "INVALID_PARAMETER",
            w.escrow.release(&w.auth, &d.id, &req)
        );
        assert_eq!(e.param(), Some("on_behalf_of"));
        refused!(
            w,
            "INVALID_PARAMETER",
            w.escrow.dispute(&w.auth, &d.id, &req)
        );
    }
    let e = refused!(
        w,
        "MISSING_PARAMETER",
        w.escrow.dispute(&w.auth, &d.id, &w.act())
    );
    assert_eq!(e.param(), Some("reason"));
    let long = EscrowActionRequest {
        reason: Some("r".repeat(1001)),
        ..Default::default()
    };
    refused!(
        w,
        "INVALID_PARAMETER",
        w.escrow.dispute(&w.auth, &d.id, &long)
    );
    // Unknown and malformed ids are NOT_FOUND.
    refused!(
        w,
        "NOT_FOUND",
        w.escrow
            .release(&w.auth, "esc_00000000000000000000000000", &w.act())
    );
    refused!(w, "NOT_FOUND", w.escrow.release(&w.auth, "nope", &w.act()));
    // Admin input.
    let admin = w.escrow.admin();
    let e = refused!(
        w,
        "INVALID_PARAMETER",
        admin.authorize_recovery(
            &w.staff,
            &d.id,
            &RecoveryRequest {
                kind: "ALL".into(),
                token: None,
                note: "n".into()
            }
        )
    );
    assert_eq!(e.param(), Some("kind"));
    refused!(
        w,
        "MISSING_PARAMETER",
        admin.authorize_recovery(
            &w.staff,
            &d.id,
            &RecoveryRequest {
                kind: "EXCESS".into(),
                token: None,
                note: "".into()
            }
        )
    );
    assert_eq!(
        StaffActor::new(" ").unwrap_err().code(),
        "INVALID_PARAMETER"
    );
    assert_eq!(w.get(&d.id).await.state, "FUNDED");
}

#[tokio::test]
async fn another_tenants_escrow_is_not_found() {
    let w = World::new().await;
    let d = w.create("10").await;
    let o = &w.other_auth;
    refused!(w, "NOT_FOUND", w.escrow.get(o, &d.id));
    refused!(w, "NOT_FOUND", w.escrow.events(o, &d.id, None, None));
    refused!(w, "NOT_FOUND", w.escrow.cancel(o, &d.id, &w.act()));
    refused!(w, "NOT_FOUND", w.escrow.release(o, &d.id, &w.act()));
    let list = w
        .escrow
        .list(o, &ListEscrowsQuery::default())
        .await
        .unwrap();
    assert_eq!(list.total, 0);
    // Staff see every tenant's deal.
    assert_eq!(
        w.escrow.admin().get(&w.staff, &d.id).await.unwrap().id,
        d.id
    );
}

#[tokio::test]
async fn list_filters_and_paginates_newest_first() {
    let w = World::new().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        w.clock.advance_ms(1_000);
        let mut req = w.request("3");
        req.reference = format!("order-{i}");
        ids.push(w.create_with(req).await);
    }
    w.pay(&ids[1], Token::Usdt, usdt(3));
    w.pay(&ids[3], Token::Usdt, usdt(3));
    w.settle().await;
    let q = |state: Option<&str>, limit: Option<u32>, page: Option<u32>| ListEscrowsQuery {
        state: state.map(str::to_string),
        limit,
        page,
    };
    let all = w.escrow.list(&w.auth, &q(None, None, None)).await.unwrap();
    assert_eq!((all.total, all.limit, all.page), (5, 20, 1));
    let refs: Vec<_> = all.escrows.iter().map(|e| e.reference.as_str()).collect();
    assert_eq!(
        refs,
        ["order-4", "order-3", "order-2", "order-1", "order-0"]
    );
    let funded = w
        .escrow
        .list(&w.auth, &q(Some("FUNDED"), None, None))
        .await
        .unwrap();
    assert_eq!(funded.total, 2);
    assert_eq!(funded.escrows[0].id, ids[3].id);
    let p2 = w
        .escrow
        .list(&w.auth, &q(None, Some(2), Some(2)))
        .await
        .unwrap();
    assert_eq!(p2.total, 5);
    let refs: Vec<_> = p2.escrows.iter().map(|e| e.reference.as_str()).collect();
    assert_eq!(refs, ["order-2", "order-1"]);
    let p4 = w
        .escrow
        .list(&w.auth, &q(None, Some(2), Some(4)))
        .await
        .unwrap();
    assert!(p4.escrows.is_empty());
    for bad in [
        q(Some("funded"), None, None),
        q(None, Some(0), None),
        q(None, Some(101), None),
        q(None, None, Some(0)),
    ] {
        refused!(w, "INVALID_PARAMETER", w.escrow.list(&w.auth, &bad));
    }
    // History pages, newest first.
    let ev = w
        .escrow
        .events(&w.auth, &ids[1].id, Some(2), Some(1))
        .await
        .unwrap();
    assert_eq!(ev.total, 3);
    let names: Vec<_> = ev.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, ["escrow.funded", "escrow.deposit_recorded"]);
    let ev = w
        .escrow
        .events(&w.auth, &ids[1].id, Some(2), Some(2))
        .await
        .unwrap();
    assert_eq!(ev.events[0].event, "escrow.created");
    assert_eq!(ev.events[0].sequence, 0);
}

#[tokio::test]
async fn sandbox_simulation_is_never_stored_funded_or_fetched() {
    let w = World::new().await;
    let commits = w.store.commit_count();
    let outbox = w.store.outbox_len();
    let mut req = w.request("10");
    req.auto_release_after_secs = Some(3600);
    let sim = w
        .escrow
        .create(&w.test_auth, &req, Some("sandbox-key-1"))
        .await
        .unwrap();
    assert!(sim.simulated);
    assert!(sim.id.starts_with("esc_"));
    assert_eq!(sim.state, "CREATED");
    assert_eq!(sim.amount, "10000000");
    assert!(sim.escrow_address.starts_with('T'));
    let direct = w.escrow.simulate_create(&w.auth, &req).await.unwrap();
    assert!(direct.simulated);
    assert_ne!(direct.id, sim.id);
    // Each simulation stores its address's reservation only (issue #48: the scanner
    // owns sandbox addresses), no deal.
    assert_eq!(
        w.store.commit_count(),
        commits + 2,
        "a simulation stores only its address's reservation"
    );
    assert_eq!(w.store.outbox_len(), outbox, "and emits no webhook");
    // The sandbox works while the rail is not READY (nothing live happens).
    w.tron.set_sponsor_funded(false);
    assert!(
        w.escrow
            .create(&w.test_auth, &req, None)
            .await
            .unwrap()
            .simulated
    );
    w.tron.set_sponsor_funded(true);
    // Never fetched, never acted on.
    for auth in [&w.auth, &w.test_auth] {
        refused!(w, "NOT_FOUND", w.escrow.get(auth, &sim.id));
    }
    refused!(
        w,
        "SANDBOX_UNSUPPORTED",
        w.escrow.release(&w.test_auth, &sim.id, &w.act())
    );
    refused!(w, "NOT_FOUND", w.escrow.release(&w.auth, &sim.id, &w.act()));
    // Money sent to it is never recorded against any deal.
    w.tron
        .mint(
            &ChainAddress(sim.escrow_address.clone()),
            Token::Usdt,
            usdt(10),
        )
        .unwrap();
    w.settle().await;
    // Recorded once, as a stray deposit owed back (not against any deal).
    let (strays, _) = w
        .store
        .list(&stablecoin_core::ports::ListQuery {
            kind: "stray_deposit".into(),
            tenant: "_staff".into(),
            subkind: None,
            status: None,
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    let stray: stablecoin_core::kernel::stray::StrayDeposit =
        stablecoin_core::ports::Record::from_stored(&strays[0]).unwrap();
    assert_eq!(
        (strays.len(), stray.origin_id.as_str(), stray.amount),
        (1, sim.id.as_str(), usdt(10))
    );
    refused!(w, "NOT_FOUND", w.escrow.get(&w.auth, &sim.id));
    // Reads pass through in the sandbox: a live deal is visible with the test key.
    let live = w.create("5").await;
    assert_eq!(
        w.escrow.get(&w.test_auth, &live.id).await.unwrap().id,
        live.id
    );
    refused!(
        w,
        "SANDBOX_UNSUPPORTED",
        w.escrow.cancel(&w.test_auth, &live.id, &w.act())
    );
}

#[tokio::test]
async fn escrow_addresses_are_fresh_and_never_reused_even_across_a_restart() {
    let w = World::new().await;
    let mut addresses = BTreeSet::new();
    let mut ids = BTreeSet::new();
    let buyer_addr = w.wallet_tron_address(&w.buyer).await;
    let seller_addr = w.wallet_tron_address(&w.seller).await;
    for _ in 0..150 {
        let d = w.create("1").await;
        assert!(ids.insert(d.id.clone()));
        assert!(addresses.insert(d.escrow_address.clone()), "address reused");
        // The address is the deal's own key: derivable only from its id.
        let derived = w
            .tron
            .address_for(&stablecoin_core::ports::KeyPurpose::EscrowDeal(
                d.id.clone(),
            ))
            .await
            .unwrap();
        assert_eq!(derived.0, d.escrow_address);
    }
    assert!(!addresses.contains(&buyer_addr) && !addresses.contains(&seller_addr));
    // "Restart": a new engine on the same store, with the SAME seeded entropy and clock,
    // so it draws the very ids (and addresses) the first one already used.
    let commits = w.store.commit_count();
    let mut ports = w.ports.clone();
    ports.entropy = Arc::new(SeededEntropy::new(7));
    let restarted = EscrowEngine::new(
        &Kernel::new(ports.clone(), vec![w.tron.rail()]),
        test_config(),
    )
    .unwrap();
    // Replay the first engine's entropy stream position: World's core engine and the
    // first escrow engine shared seed 7, so fresh draws collide with stored ids.
    let mut fresh = 0;
    for _ in 0..20 {
        match restarted.create(&w.auth, &w.request("1"), None).await {
            Ok(d) => {
                fresh += 1;
                assert!(ids.insert(d.id.clone()), "an id was reused");
                assert!(
                    addresses.insert(d.escrow_address.clone()),
                    "an address was reused"
                );
                w.deals.lock().unwrap().insert(d.id);
            }
            Err(e) => assert_eq!(e.code(), "CONFLICT", "{e}"),
        }
    }
    assert!(fresh > 0);
    assert!(w.store.commit_count() > commits);
    // And with fresh entropy (a real restart), no collision at all.
    let mut ports = w.ports.clone();
    ports.entropy = Arc::new(SeededEntropy::new(99));
    let restarted = EscrowEngine::new(
        &Kernel::new(ports.clone(), vec![w.tron.rail()]),
        test_config(),
    )
    .unwrap();
    for _ in 0..50 {
        let d = restarted
            .create(&w.auth, &w.request("1"), None)
            .await
            .unwrap();
        assert!(addresses.insert(d.escrow_address.clone()));
        w.deals.lock().unwrap().insert(d.id);
    }
    // A forced clash: two engines whose entropy is constant draw the same id at the same
    // millisecond. The second must refuse (nothing stored) rather than hand out the
    // first deal's address; a millisecond later it draws a fresh id.
    struct Constant;
    impl stablecoin_core::ports::Entropy for Constant {
        fn fill(&self, buf: &mut [u8]) {
            buf.fill(0xA5);
        }
    }
    let mut ports = w.ports.clone();
    ports.entropy = Arc::new(Constant);
    let first = EscrowEngine::new(
        &Kernel::new(ports.clone(), vec![w.tron.rail()]),
        test_config(),
    )
    .unwrap();
    let d = first.create(&w.auth, &w.request("1"), None).await.unwrap();
    assert!(addresses.insert(d.escrow_address.clone()));
    w.deals.lock().unwrap().insert(d.id.clone());
    let again = EscrowEngine::new(
        &Kernel::new(ports.clone(), vec![w.tron.rail()]),
        test_config(),
    )
    .unwrap();
    refused!(w, "CONFLICT", again.create(&w.auth, &w.request("1"), None));
    w.clock.advance_ms(1);
    let d2 = again.create(&w.auth, &w.request("1"), None).await.unwrap();
    assert_ne!(d2.id, d.id);
    assert!(addresses.insert(d2.escrow_address.clone()));
    w.deals.lock().unwrap().insert(d2.id);
    // Every address maps back to exactly its deal through the store's unique index.
    let all: Vec<String> = w.deals.lock().unwrap().iter().cloned().collect();
    for id in &all {
        let v = w.escrow.admin().get(&w.staff, id).await.unwrap();
        let rec = w
            .store
            .get_by_unique(&format!("addr:tron:{}", v.escrow_address))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&rec.id, id);
    }
    // A payment to one deal's address never touches another deal.
    let one = w.deals.lock().unwrap().iter().next().cloned().unwrap();
    let v = w.get(&one).await;
    w.pay(&v, Token::Usdt, usdt(1));
    w.settle().await;
    let mut funded = 0;
    for id in &all {
        if w.escrow.admin().get(&w.staff, id).await.unwrap().state == "FUNDED" {
            funded += 1;
            assert_eq!(id, &one);
        }
    }
    assert_eq!(funded, 1);
    w.assert_conserved().await;
}

#[tokio::test]
async fn idempotent_create_replays_and_refuses_other_parameters() {
    let w = World::new().await;
    let a = w
        .escrow
        .create(&w.auth, &w.request("10"), Some("create-1"))
        .await
        .unwrap();
    let b = w
        .escrow
        .create(&w.auth, &w.request("10"), Some("create-1"))
        .await
        .unwrap();
    assert_eq!(a, b);
    refused!(
        w,
        "IDEMPOTENCY_KEY_REUSED",
        w.escrow.create(&w.auth, &w.request("11"), Some("create-1"))
    );
    let c = w
        .escrow
        .create(&w.auth, &w.request("10"), Some("create-2"))
        .await
        .unwrap();
    assert_ne!(a.id, c.id);
    assert_ne!(a.escrow_address, c.escrow_address);
    assert_eq!(
        w.escrow
            .list(&w.auth, &ListEscrowsQuery::default())
            .await
            .unwrap()
            .total,
        2
    );
}

#[tokio::test]
async fn on_behalf_of_is_evidence_next_to_the_key_authority() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    // Another key of the same tenant acts; the partner says it acts for the SELLER.
    let second = w
        .core
        .issue_api_key(&w.tenant, KeyKind::Tenant, KeyMode::Live)
        .await
        .unwrap();
    let second = w.core.authenticate(&second.secret).await.unwrap();
    let req = EscrowActionRequest {
        on_behalf_of: Some("SELLER".into()),
        reason: Some("buyer confirmed receipt by phone".into()),
    };
    w.escrow.release(&second, &d.id, &req).await.unwrap();
    let h = w.history(&d.id).await;
    let p = h.last().unwrap();
    assert_eq!(p.event, "escrow.payout_pending");
    assert_eq!(p.on_behalf_of.as_deref(), Some("SELLER"));
    assert_eq!(p.authority, format!("api_key:{}", second.key_id));
    assert_eq!(p.actor, "tenant");
    assert_eq!(p.actor_id, w.tenant.0);
    assert_eq!(
        p.reason.as_deref(),
        Some("buyer confirmed receipt by phone")
    );
    // The payout still goes to the linked seller wallet, whatever the request says.
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        10_000_000
    );
    // The webhook payload carries the same facts.
    let outbox = w.store.outbox_after(0, 1000).await.unwrap();
    let e = outbox
        .iter()
        .map(|(_, e)| e)
        .find(|e| e.event_type == "escrow.payout_pending")
        .unwrap();
    assert_eq!(e.payload["on_behalf_of"], "SELLER");
    assert_eq!(e.payload["authority"], format!("api_key:{}", second.key_id));
    assert_eq!(e.payload["escrow"]["payout_pending"], true);
    assert_eq!(e.payload["escrow"]["amount"], "10000000");
    let released = outbox
        .iter()
        .map(|(_, e)| e)
        .find(|e| e.event_type == "escrow.released")
        .unwrap();
    assert_eq!(released.payload["escrow"]["payout_pending"], false);
    assert_eq!(
        released.payload["escrow"]["payout_tx_hash"],
        v.payout_tx_hash.unwrap()
    );
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn config_is_validated() {
    let w = World::new().await;
    let bad = EscrowConfig {
        min_funding_window_secs: 100,
        default_funding_window_secs: 10,
        ..EscrowConfig::default()
    };
    let e = EscrowEngine::new(w.core.kernel(), bad).err().unwrap();
    assert_eq!(e.code(), "INVALID_CONFIG");
    let evm: Arc<dyn Rail> = Arc::new(stablecoin_rails::SimRail::new(
        stablecoin_rails::SimProfile::Evm(137),
        w.signer.clone(),
        stablecoin_rails::SimConfig::for_profile(stablecoin_rails::SimProfile::Evm(137)),
    ));
    let e = EscrowEngine::new(
        &Kernel::new(w.ports.clone(), vec![evm]),
        EscrowConfig::default(),
    )
    .err()
    .unwrap();
    assert_eq!(e.code(), "INVALID_CONFIG");
    let custom = EscrowEngine::new(
        w.core.kernel(),
        EscrowConfig {
            network: "nile".into(),
            chain_id: 3_448_148_188,
            ..test_config()
        },
    )
    .unwrap();
    let v = custom.create(&w.auth, &w.request("1"), None).await.unwrap();
    assert_eq!((v.network.as_str(), v.chain_id), ("nile", 3_448_148_188));
}
