// The escrow lifecycle suite, included by `lifecycle.rs` (simulated TRON rail) and
// `lifecycle_tron.rs` (the real TronRail on the local TRON node): the same tests on both.

use common::*;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_escrow::*;
use stablecoin_rails::Fault;

fn ts(s: &Option<String>) -> Timestamp {
    Timestamp::parse_rfc3339(s.as_deref().expect("timestamp")).unwrap()
}

#[tokio::test]
async fn create_fund_exactly_release_confirm() {
    let w = World::new().await;
    let d = w.create("150").await;
    assert!(d.id.starts_with("esc_"));
    assert_eq!(d.state, "CREATED");
    assert_eq!(d.amount, "150000000");
    assert_eq!(d.token, "USDT");
    assert_eq!(d.rail, "tron");
    assert_eq!(d.network, "mainnet");
    assert_eq!(d.chain_id, TRON_MAINNET_CHAIN_ID);
    assert_eq!(d.reference, "order-1001");
    assert!(d.escrow_address.starts_with('T'));
    assert_eq!(d.funded_amount, "0");
    assert!(!d.payout_pending);
    assert_eq!(
        d.funding_expires_at,
        START.plus_secs(24 * 3600).to_rfc3339()
    );
    assert_eq!(d.auto_release_at, None);
    assert_eq!(d.buyer_address, w.wallet_tron_address(&w.buyer).await);
    assert_eq!(d.seller_address, w.wallet_tron_address(&w.seller).await);
    let json = serde_json::to_value(&d).unwrap();
    assert!(json.get("funded_at").is_none(), "absent fields are omitted");
    assert!(json.get("simulated").is_none());

    w.pay(&d, Token::Usdt, usdt(150));
    let r = w.settle().await;
    assert_eq!((r.deposits, r.funded), (1, 1));
    let f = w.get(&d.id).await;
    assert_eq!(f.state, "FUNDED");
    assert_eq!(f.funded_amount, "150000000");
    assert!(f.funded_at.is_some());
    assert!(f.recoverable.is_empty());

    let accepted = w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    assert_eq!(accepted.state, "FUNDED");
    assert!(accepted.payout_pending);
    assert_eq!(accepted.payout_tx_hash, None);
    // A repeated release while one is in flight, and a dispute after it: 409.
    let again = w
        .escrow
        .release(&w.auth, &d.id, &w.act())
        .await
        .unwrap_err();
    assert_eq!(again.code(), "PAYOUT_IN_FLIGHT");
    let dispute = EscrowActionRequest {
        reason: Some("item never arrived".into()),
        ..Default::default()
    };
    let e = w
        .escrow
        .dispute(&w.auth, &d.id, &dispute)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "PAYOUT_IN_FLIGHT");
    let e = w.escrow.refund(&w.auth, &d.id, &w.act()).await.unwrap_err();
    assert_eq!(e.code(), "PAYOUT_IN_FLIGHT");

    w.settle().await;
    let done = w.get(&d.id).await;
    assert_eq!(done.state, "RELEASED");
    assert!(!done.payout_pending);
    assert!(
        done.payout_tx_hash
            .as_deref()
            .is_some_and(|h| h.len() == 64)
    );
    assert!(done.released_at.is_some());
    assert_eq!(
        w.chain_balance(&done.seller_address, Token::Usdt).await,
        150_000_000
    );
    assert_eq!(w.chain_balance(&done.escrow_address, Token::Usdt).await, 0);
    assert_eq!(w.tron.submit_count(), 1);
    // Released is terminal.
    let e = w
        .escrow
        .release(&w.auth, &d.id, &w.act())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_STATE");

    assert_eq!(
        w.history_names(&d.id).await,
        [
            "escrow.created",
            "escrow.deposit_recorded",
            "escrow.funded",
            "escrow.payout_pending",
            "escrow.released"
        ]
    );
    let h = w.history(&d.id).await;
    assert_eq!(h[0].actor, "tenant");
    assert_eq!(h[0].authority, format!("api_key:{}", w.auth.key_id));
    assert_eq!(h[0].previous_state, None);
    assert_eq!(h[1].authority, "chain:tron");
    assert_eq!(h[3].previous_state.as_deref(), Some("FUNDED"));
    assert!(h[3].payout_pending);
    assert_eq!(h[4].authority, "system:payout");
    assert_eq!(
        h[4].data.as_ref().unwrap()["tx_hash"],
        done.payout_tx_hash.clone().unwrap()
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn partial_deposits_add_up_and_fund() {
    let w = World::new().await;
    let d = w.create("100").await;
    w.pay(&d, Token::Usdt, usdt(30));
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(
        (v.state.as_str(), v.funded_amount.as_str()),
        ("CREATED", "30000000")
    );
    assert!(
        v.recoverable.is_empty(),
        "partials of a live deal are not recoverable yet"
    );
    let e = w
        .escrow
        .admin()
        .authorize_recovery(
            &w.staff,
            &d.id,
            &RecoveryRequest {
                kind: "PARTIAL".into(),
                token: None,
                note: "customer asked".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "NOTHING_TO_RECOVER");
    w.pay(&d, Token::Usdt, usdt(45));
    w.settle().await;
    assert_eq!(w.get(&d.id).await.funded_amount, "75000000");
    w.pay(&d, Token::Usdt, usdt(25));
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "FUNDED");
    assert_eq!(v.funded_amount, "100000000");
    assert!(v.recoverable.is_empty());
    let h = w.history(&d.id).await;
    let kinds: Vec<_> = h
        .iter()
        .filter(|e| e.event == "escrow.deposit_recorded")
        .map(|e| {
            e.data.as_ref().unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["PARTIAL", "PARTIAL", "FUNDING"]);
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn excess_deposit_funds_and_excess_is_recovered_separately() {
    let w = World::new().await;
    let d = w.create("150").await;
    w.pay(&d, Token::Usdt, usdt(170));
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "FUNDED");
    assert_eq!(v.funded_amount, "150000000");
    assert_eq!(v.recoverable.len(), 1);
    assert_eq!(
        (
            v.recoverable[0].kind.as_str(),
            v.recoverable[0].amount.as_str()
        ),
        ("EXCESS", "20000000")
    );
    // A deposit to a FUNDED deal is excess too.
    w.pay(&d, Token::Usdt, usdt(5));
    w.settle().await;
    assert_eq!(w.get(&d.id).await.recoverable[0].amount, "25000000");

    let admin = w.escrow.admin();
    for bad in ["PARTIAL", "LATE"] {
        let e = admin
            .authorize_recovery(
                &w.staff,
                &d.id,
                &RecoveryRequest {
                    kind: bad.into(),
                    token: None,
                    note: "check".into(),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), "NOTHING_TO_RECOVER", "{bad}");
    }
    let p = admin
        .authorize_recovery(
            &w.staff,
            &d.id,
            &RecoveryRequest {
                kind: "EXCESS".into(),
                token: None,
                note: "buyer overpaid, ticket 42".into(),
            },
        )
        .await
        .unwrap()
        .into_payout()
        .expect("claimed");
    assert_eq!(
        (p.purpose.as_str(), p.recovery_kind.as_deref()),
        ("RECOVERY", Some("EXCESS"))
    );
    assert_eq!(p.amount, "25000000");
    assert_eq!(p.to, "BUYER");
    assert_eq!(p.to_address, v.buyer_address);
    assert_eq!(p.authority, "staff:ops@service.example");
    // The release of the amount runs alongside.
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    assert!(v.recoverable.is_empty());
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdt).await,
        25_000_000
    );
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        150_000_000
    );
    let payouts = admin.payouts(&w.staff, &d.id).await.unwrap();
    assert_eq!(payouts.len(), 2);
    assert!(payouts.iter().all(|p| p.status == "CONFIRMED"));
    assert!(
        w.history_names(&d.id)
            .await
            .contains(&"escrow.recovered".to_string())
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn expiry_makes_partials_recoverable_and_late_deposits_are_separate() {
    let w = World::new().await;
    let mut req = w.request("100");
    req.funding_window_secs = Some(3600);
    let d = w.create_with(req).await;
    assert_eq!(d.funding_expires_at, START.plus_secs(3600).to_rfc3339());
    w.pay(&d, Token::Usdt, usdt(40));
    w.settle().await;
    // Not yet due.
    w.clock.advance_ms(3_599_000);
    w.settle().await;
    assert_eq!(w.get(&d.id).await.state, "CREATED");
    w.clock.advance_ms(1_000);
    let r = w.settle().await;
    assert_eq!(r.expired, 1);
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "EXPIRED");
    assert!(v.expired_at.is_some());
    assert_eq!(v.recoverable[0].kind, "PARTIAL");
    assert_eq!(v.recoverable[0].amount, "40000000");
    // A deposit after expiry is late; it never revives the deal.
    w.pay(&d, Token::Usdt, usdt(100));
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "EXPIRED");
    let late: Vec<_> = v
        .recoverable
        .iter()
        .map(|r| (r.kind.as_str(), r.amount.as_str()))
        .collect();
    assert_eq!(late, [("PARTIAL", "40000000"), ("LATE", "100000000")]);
    let h = w.history(&d.id).await;
    let expired = h.iter().find(|e| e.event == "escrow.expired").unwrap();
    assert_eq!(expired.authority, "system:funding_expiry");

    let admin = w.escrow.admin();
    let rec = |kind: &str| RecoveryRequest {
        kind: kind.into(),
        token: None,
        note: "returned to the buyer".into(),
    };
    admin
        .authorize_recovery(&w.staff, &d.id, &rec("PARTIAL"))
        .await
        .unwrap();
    let e = admin
        .authorize_recovery(&w.staff, &d.id, &rec("PARTIAL"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "NOTHING_TO_RECOVER");
    w.settle().await;
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdt).await,
        40_000_000
    );
    admin
        .authorize_recovery(&w.staff, &d.id, &rec("LATE"))
        .await
        .unwrap();
    w.settle().await;
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdt).await,
        140_000_000
    );
    assert!(w.get(&d.id).await.recoverable.is_empty());
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn deposit_at_the_window_end_is_late_even_before_the_expiry_worker_runs() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdt, usdt(10));
    w.clock.advance_ms(24 * 3600 * 1000);
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "EXPIRED");
    assert_eq!(v.funded_amount, "0");
    assert_eq!(v.recoverable[0].kind, "LATE");
    w.assert_conserved().await;
}

#[tokio::test]
async fn cancel_only_while_created_and_late_deposit_to_a_cancelled_deal() {
    let w = World::new().await;
    let d = w.create("100").await;
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    let req = EscrowActionRequest {
        on_behalf_of: Some("BUYER".into()),
        reason: Some("buyer changed their mind".into()),
    };
    let v = w.escrow.cancel(&w.auth, &d.id, &req).await.unwrap();
    assert_eq!(v.state, "CANCELLED");
    assert!(v.cancelled_at.is_some());
    assert_eq!(v.recoverable[0].kind, "PARTIAL");
    let e = w.escrow.cancel(&w.auth, &d.id, &w.act()).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_STATE");
    let h = w.history(&d.id).await;
    let c = h.last().unwrap();
    assert_eq!(c.on_behalf_of.as_deref(), Some("BUYER"));
    assert_eq!(c.reason.as_deref(), Some("buyer changed their mind"));
    assert_eq!(c.authority, format!("api_key:{}", w.auth.key_id));
    // Late deposit to a closed deal.
    w.pay(&d, Token::Usdt, usdt(3));
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.recoverable.len(), 2);
    assert_eq!(v.recoverable[1].kind, "LATE");

    // A funded deal cannot be cancelled.
    let d2 = w.create("5").await;
    w.pay(&d2, Token::Usdt, usdt(5));
    w.settle().await;
    let e = w
        .escrow
        .cancel(&w.auth, &d2.id, &w.act())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_STATE");
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn refund_to_the_buyer() {
    let w = World::new().await;
    let d = w.create("80").await;
    w.pay(&d, Token::Usdt, usdt(80));
    w.settle().await;
    let v = w.escrow.refund(&w.auth, &d.id, &w.act()).await.unwrap();
    assert_eq!((v.state.as_str(), v.payout_pending), ("FUNDED", true));
    assert_eq!(
        w.escrow
            .release(&w.auth, &d.id, &w.act())
            .await
            .unwrap_err()
            .code(),
        "PAYOUT_IN_FLIGHT"
    );
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "REFUNDED");
    assert!(v.refunded_at.is_some() && v.payout_tx_hash.is_some());
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdt).await,
        80_000_000
    );
    assert_eq!(w.chain_balance(&v.seller_address, Token::Usdt).await, 0);
    assert_eq!(
        w.history_names(&d.id).await.last().unwrap(),
        "escrow.refunded"
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

async fn disputed(w: &World, amount: &str) -> EscrowView {
    let d = w.create(amount).await;
    w.pay(&d, Token::Usdt, Micros::parse_whole_tokens(amount).unwrap());
    w.settle().await;
    let no_reason = w
        .escrow
        .dispute(&w.auth, &d.id, &w.act())
        .await
        .unwrap_err();
    assert_eq!(no_reason.code(), "MISSING_PARAMETER");
    assert_eq!(no_reason.param(), Some("reason"));
    let blank = EscrowActionRequest {
        reason: Some("   ".into()),
        ..Default::default()
    };
    assert_eq!(
        w.escrow
            .dispute(&w.auth, &d.id, &blank)
            .await
            .unwrap_err()
            .code(),
        "MISSING_PARAMETER"
    );
    let req = EscrowActionRequest {
        on_behalf_of: Some("BUYER".into()),
        reason: Some("goods damaged".into()),
    };
    let v = w.escrow.dispute(&w.auth, &d.id, &req).await.unwrap();
    assert_eq!(v.state, "DISPUTED");
    assert_eq!(v.dispute_reason.as_deref(), Some("goods damaged"));
    assert!(v.disputed_at.is_some());
    // The tenant cannot settle a dispute itself; a second dispute is refused.
    for e in [
        w.escrow
            .release(&w.auth, &d.id, &w.act())
            .await
            .unwrap_err(),
        w.escrow.refund(&w.auth, &d.id, &w.act()).await.unwrap_err(),
        w.escrow.dispute(&w.auth, &d.id, &req).await.unwrap_err(),
        w.escrow.cancel(&w.auth, &d.id, &w.act()).await.unwrap_err(),
    ] {
        assert_eq!(e.code(), "INVALID_STATE");
    }
    v
}

#[tokio::test]
async fn dispute_resolved_by_staff_release() {
    let w = World::new().await;
    let d = disputed(&w, "60").await;
    let admin = w.escrow.admin();
    let missing = ResolveRequest {
        resolution: "RELEASE".into(),
        resolution_note: " ".into(),
    };
    let e = admin.resolve(&w.staff, &d.id, &missing).await.unwrap_err();
    assert_eq!(
        (e.code(), e.param()),
        ("MISSING_PARAMETER", Some("resolution_note"))
    );
    let bad = ResolveRequest {
        resolution: "SPLIT".into(),
        resolution_note: "half each".into(),
    };
    assert_eq!(
        admin
            .resolve(&w.staff, &d.id, &bad)
            .await
            .unwrap_err()
            .code(),
        "INVALID_PARAMETER"
    );
    let req = ResolveRequest {
        resolution: "RELEASE".into(),
        resolution_note: "carrier proof of delivery checked".into(),
    };
    let out = admin.resolve(&w.staff, &d.id, &req).await.unwrap();
    assert!(!out.awaiting_approval);
    let v = out.escrow;
    assert_eq!((v.state.as_str(), v.payout_pending), ("DISPUTED", true));
    assert_eq!(v.resolution_note, None, "recorded once the payout settles");
    assert_eq!(
        admin
            .resolve(&w.staff, &d.id, &req)
            .await
            .unwrap_err()
            .code(),
        "PAYOUT_IN_FLIGHT"
    );
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    assert_eq!(
        v.resolution_note.as_deref(),
        Some("carrier proof of delivery checked")
    );
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        60_000_000
    );
    let h = w.history(&d.id).await;
    let p = h
        .iter()
        .find(|e| e.event == "escrow.payout_pending")
        .unwrap();
    assert_eq!(p.actor, "staff");
    assert_eq!(p.authority, "staff:ops@service.example");
    assert_eq!(p.data.as_ref().unwrap()["trigger"], "RESOLVE_RELEASE");
    let dispute = h.iter().find(|e| e.event == "escrow.disputed").unwrap();
    assert_eq!(dispute.on_behalf_of.as_deref(), Some("BUYER"));
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn dispute_resolved_by_staff_refund_after_a_failed_payout() {
    let w = World::new().await;
    let d = disputed(&w, "60").await;
    let admin = w.escrow.admin();
    let req = ResolveRequest {
        resolution: "REFUND".into(),
        resolution_note: "seller did not ship".into(),
    };
    w.tron.inject(Fault::Revert);
    admin.resolve(&w.staff, &d.id, &req).await.unwrap();
    w.settle().await;
    // A failed staff payout returns the deal to DISPUTED, with the reason.
    let v = w.get(&d.id).await;
    assert_eq!((v.state.as_str(), v.payout_pending), ("DISPUTED", false));
    assert_eq!(
        v.payout_failure_reason.as_deref(),
        Some("execution reverted")
    );
    assert_eq!(v.resolution_note, None);
    admin.resolve(&w.staff, &d.id, &req).await.unwrap();
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "REFUNDED");
    assert_eq!(v.resolution_note.as_deref(), Some("seller did not ship"));
    assert_eq!(v.payout_failure_reason, None);
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdt).await,
        60_000_000
    );
    assert_eq!(w.tron.submit_count(), 2);
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn auto_release_after_the_inspection_window() {
    let w = World::new().await;
    let mut req = w.request("25");
    req.auto_release_after_secs = Some(7200);
    let d = w.create_with(req).await;
    assert_eq!(
        d.auto_release_at, None,
        "the window starts at confirmed funding"
    );
    assert_eq!(d.auto_release_after_secs, Some(7200));
    w.clock.advance_ms(600_000);
    w.pay(&d, Token::Usdt, usdt(25));
    w.settle().await;
    let v = w.get(&d.id).await;
    let funded_at = ts(&v.funded_at);
    assert_eq!(ts(&v.auto_release_at), funded_at.plus_secs(7200));
    w.clock.advance_ms(7_199_000);
    w.settle().await;
    assert_eq!(w.get(&d.id).await.state, "FUNDED");
    w.clock.advance_ms(1_000);
    let r = w.settle().await;
    assert_eq!(r.auto_released, 1);
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        25_000_000
    );
    let h = w.history(&d.id).await;
    let p = h
        .iter()
        .find(|e| e.event == "escrow.payout_pending")
        .unwrap();
    assert_eq!(p.authority, "system:auto_release");
    assert_eq!(p.data.as_ref().unwrap()["trigger"], "AUTO_RELEASE");
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn auto_release_waits_for_the_rail_and_is_claimed_once() {
    let w = World::new().await;
    let mut req = w.request("25");
    req.auto_release_after_secs = Some(3600);
    let d = w.create_with(req).await;
    w.pay(&d, Token::Usdt, usdt(25));
    w.settle().await;
    w.tron.set_sponsor_funded(false);
    w.clock.advance_ms(3_600_000);
    let r = w.escrow.tick().await;
    assert_eq!((r.waiting, r.auto_released), (1, 0));
    let v = w.get(&d.id).await;
    assert_eq!((v.state.as_str(), v.payout_pending), ("FUNDED", false));
    w.tron.set_sponsor_funded(true);
    // The deal is claimed by the first worker until its lease lapses.
    w.clock.advance_ms(w.escrow.config().claim_lease_ms);
    // The one automatic attempt reverts: the deal stays FUNDED and is not retried by itself.
    w.tron.inject(Fault::Revert);
    let r = w.settle().await;
    assert_eq!((r.auto_released, r.failed), (1, 1));
    w.clock.advance_ms(24 * 3600 * 1000);
    let r = w.settle().await;
    assert_eq!(r.auto_released, 0);
    let v = w.get(&d.id).await;
    assert_eq!((v.state.as_str(), v.payout_pending), ("FUNDED", false));
    assert_eq!(
        v.payout_failure_reason.as_deref(),
        Some("execution reverted")
    );
    assert_eq!(w.tron.submit_count(), 1);
    // The tenant decides: release.
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    assert_eq!(w.get(&d.id).await.state, "RELEASED");
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn no_auto_release_unless_set() {
    let w = World::new().await;
    let d = w.create("25").await;
    w.pay(&d, Token::Usdt, usdt(25));
    w.settle().await;
    w.clock.advance_ms(400 * 24 * 3600 * 1000);
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "FUNDED");
    assert_eq!(v.auto_release_at, None);
    assert_eq!(w.tron.submit_count(), 0);
    w.assert_conserved().await;
}

#[tokio::test]
async fn failed_payout_returns_to_funded_then_a_new_release_pays_once() {
    let w = World::new().await;
    let d = w.create("150").await;
    w.pay(&d, Token::Usdt, usdt(150));
    w.settle().await;
    w.tron.inject(Fault::Revert);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    let r = w.settle().await;
    assert_eq!(r.failed, 1);
    let v = w.get(&d.id).await;
    assert_eq!((v.state.as_str(), v.payout_pending), ("FUNDED", false));
    assert_eq!(
        v.payout_failure_reason.as_deref(),
        Some("execution reverted")
    );
    assert_eq!(v.payout_tx_hash, None);
    assert!(
        w.history_names(&d.id)
            .await
            .contains(&"escrow.payout_failed".to_string())
    );
    w.assert_conserved().await;
    // Released again under a new payout attempt (new payment id).
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        150_000_000
    );
    let payouts = w.escrow.admin().payouts(&w.staff, &d.id).await.unwrap();
    let ids: Vec<_> = payouts
        .iter()
        .map(|p| (p.id.clone(), p.status.clone()))
        .collect();
    assert_eq!(
        ids,
        [
            (format!("{}:payout:1", d.id), "FAILED".to_string()),
            (format!("{}:payout:2", d.id), "CONFIRMED".to_string())
        ]
    );
    assert_eq!(w.tron.submit_count(), 2);
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn lost_response_is_reconciled_with_exactly_one_payout() {
    let w = World::new().await;
    let d = w.create("150").await;
    w.pay(&d, Token::Usdt, usdt(150));
    w.settle().await;
    w.tron.inject(Fault::LostResponse);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    let first = w.escrow.tick().await;
    assert_eq!(first.unknown, 1);
    let p = &w.escrow.admin().payouts(&w.staff, &d.id).await.unwrap()[0];
    assert_eq!(p.status, "SUBMISSION_UNKNOWN");
    assert!(w.get(&d.id).await.payout_pending);
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    assert_eq!(w.tron.submit_count(), 1);
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        150_000_000
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_release_racing_pays_exactly_once() {
    let w = World::new().await;
    let mut ids = Vec::new();
    for _ in 0..10 {
        let d = w.create("7").await;
        w.pay(&d, Token::Usdt, usdt(7));
        ids.push(d.id);
    }
    w.settle().await;
    for id in &ids {
        let (e1, e2) = (w.escrow.clone(), w.escrow.clone());
        let (a1, a2) = (w.auth.clone(), w.auth.clone());
        let (i1, i2) = (id.clone(), id.clone());
        let t1 =
            tokio::spawn(
                async move { e1.release(&a1, &i1, &EscrowActionRequest::default()).await },
            );
        let t2 =
            tokio::spawn(
                async move { e2.release(&a2, &i2, &EscrowActionRequest::default()).await },
            );
        let (r1, r2) = (t1.await.unwrap(), t2.await.unwrap());
        let oks = [&r1, &r2].iter().filter(|r| r.is_ok()).count();
        assert_eq!(oks, 1, "{r1:?} {r2:?}");
        let err = if r1.is_err() { r1 } else { r2 }.unwrap_err();
        assert_eq!(err.code(), "PAYOUT_IN_FLIGHT");
    }
    // Two workers race too.
    let (e1, e2) = (w.escrow.clone(), w.escrow.clone());
    let (x, y) = tokio::join!(e1.tick(), e2.tick());
    assert!(x.errors.is_empty() && y.errors.is_empty(), "{x:?} {y:?}");
    w.settle().await;
    assert_eq!(w.tron.submit_count(), ids.len());
    for id in &ids {
        assert_eq!(w.get(id).await.state, "RELEASED");
    }
    let seller = w.wallet_tron_address(&w.seller).await;
    assert_eq!(w.chain_balance(&seller, Token::Usdt).await, 70_000_000);
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn unsupported_token_deposit_is_recorded_and_recoverable() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdc, usdt(4));
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "FUNDED");
    assert_eq!(v.recoverable.len(), 1);
    assert_eq!(
        (
            v.recoverable[0].kind.as_str(),
            v.recoverable[0].token.as_str()
        ),
        ("UNSUPPORTED_TOKEN", "USDC")
    );
    let p = w
        .escrow
        .admin()
        .authorize_recovery(
            &w.staff,
            &d.id,
            &RecoveryRequest {
                kind: "UNSUPPORTED_TOKEN".into(),
                token: None,
                note: "USDC sent by mistake".into(),
            },
        )
        .await
        .unwrap()
        .into_payout()
        .expect("claimed");
    assert_eq!((p.token.as_str(), p.amount.as_str()), ("USDC", "4000000"));
    w.settle().await;
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdc).await,
        4_000_000
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

#[tokio::test]
async fn recovery_that_fails_is_recoverable_again() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdt, usdt(12));
    w.settle().await;
    let admin = w.escrow.admin();
    let req = RecoveryRequest {
        kind: "EXCESS".into(),
        token: Some("USDT".into()),
        note: "overpaid".into(),
    };
    w.tron.inject(Fault::Revert);
    admin
        .authorize_recovery(&w.staff, &d.id, &req)
        .await
        .unwrap();
    assert!(w.get(&d.id).await.recoverable.is_empty());
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.recoverable[0].amount, "2000000");
    assert!(
        w.history_names(&d.id)
            .await
            .contains(&"escrow.recovery_failed".to_string())
    );
    w.assert_conserved().await;
    admin
        .authorize_recovery(&w.staff, &d.id, &req)
        .await
        .unwrap();
    w.settle().await;
    assert_eq!(
        w.chain_balance(&v.buyer_address, Token::Usdt).await,
        2_000_000
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}
