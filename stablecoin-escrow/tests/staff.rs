//! The staff side of escrow: the cross-tenant attention queue and the optional
//! two-person rule of dispute resolutions (MemoryStore + the simulated TRON rail).

#[path = "common/mod.rs"]
mod common;

const BACKEND: common::Backend = common::Backend::Sim;

use common::*;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{Record, Store};
use stablecoin_escrow::queue::{ATTENTION, CLEAR, STAFF_QUEUE_OWNER, StaffQueueEntry};
use stablecoin_escrow::*;

async fn funded(w: &World, amount: u64) -> EscrowView {
    let d = w.create(&amount.to_string()).await;
    w.pay(&d, Token::Usdt, usdt(amount));
    w.settle().await;
    d
}

async fn disputed(w: &World, amount: u64) -> EscrowView {
    let d = funded(w, amount).await;
    let req = EscrowActionRequest {
        on_behalf_of: Some("BUYER".into()),
        reason: Some("goods damaged".into()),
    };
    w.escrow.dispute(&w.auth, &d.id, &req).await.unwrap()
}

fn resolve(resolution: &str, note: &str) -> ResolveRequest {
    ResolveRequest {
        resolution: resolution.into(),
        resolution_note: note.into(),
    }
}

async fn attention_ids(w: &World) -> Vec<String> {
    let l = w
        .escrow
        .admin()
        .attention(&w.staff, Some(100), Some(1))
        .await
        .unwrap();
    assert_eq!(l.total as usize, l.escrows.len());
    l.escrows.into_iter().map(|e| e.escrow.id).collect()
}

#[tokio::test]
async fn attention_lists_disputed_and_recoverable_deals_until_staff_clear_them() {
    let w = World::new().await;
    let quiet = funded(&w, 10).await;
    w.clock.advance_ms(1000);
    let d = disputed(&w, 20).await;
    // An excess deposit makes a recoverable balance (a newer deal: listed first).
    w.clock.advance_ms(1000);
    let excess = w.create("5").await;
    w.pay(&excess, Token::Usdt, usdt(7));
    w.settle().await;
    assert_eq!(attention_ids(&w).await, [excess.id.clone(), d.id.clone()]);
    let admin = w.escrow.admin();
    let page = admin.attention(&w.staff, Some(1), Some(2)).await.unwrap();
    assert_eq!((page.total, page.escrows.len()), (2, 1));
    assert_eq!(page.escrows[0].escrow.id, d.id);
    assert_eq!(page.escrows[0].tenant_id, w.tenant.0);
    assert!(page.escrows[0].needs_attention);
    assert_eq!(
        admin
            .attention(&w.staff, Some(0), None)
            .await
            .unwrap_err()
            .code(),
        "INVALID_PARAMETER"
    );
    // The quiet deal has a CLEAR entry, written with the deal.
    let q = stablecoin_core::ports::get_record::<StaffQueueEntry>(&*w.store, &quiet.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(q.record.status, CLEAR);
    assert_eq!(q.record.tenant(), Some(STAFF_QUEUE_OWNER.to_string()));

    // Resolving and recovering clear them.
    let out = admin
        .resolve(&w.staff, &d.id, &resolve("REFUND", "seller did not ship"))
        .await
        .unwrap();
    assert!(!out.awaiting_approval && out.proposed_by.is_none());
    admin
        .authorize_recovery(
            &w.staff,
            &excess.id,
            &RecoveryRequest {
                kind: "EXCESS".into(),
                token: None,
                note: "buyer overpaid".into(),
            },
        )
        .await
        .unwrap();
    // The dispute is DISPUTED until its payout settles.
    assert_eq!(attention_ids(&w).await, vec![d.id.clone()]);
    w.settle().await;
    assert!(attention_ids(&w).await.is_empty());
    assert_eq!(w.get(&d.id).await.state, "REFUNDED");
    let e = stablecoin_core::ports::get_record::<StaffQueueEntry>(&*w.store, &d.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (e.record.status.as_str(), e.record.state),
        (CLEAR, EscrowState::Refunded)
    );
    w.assert_conserved().await;
}

#[tokio::test]
async fn a_deal_without_a_queue_entry_gets_one_on_its_next_write() {
    let w = World::new().await;
    let d = funded(&w, 10).await;
    // As if the deal predated the queue.
    w.store
        .purge(&stablecoin_core::ports::Purge {
            target: stablecoin_core::ports::PurgeTarget::Records {
                kind: StaffQueueEntry::KIND.into(),
                statuses: None,
            },
            before: stablecoin_core::domain::time::Timestamp::from_millis(i64::MAX),
            limit: 100,
        })
        .await
        .unwrap();
    assert!(attention_ids(&w).await.is_empty());
    w.escrow
        .dispute(
            &w.auth,
            &d.id,
            &EscrowActionRequest {
                on_behalf_of: None,
                reason: Some("late".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(attention_ids(&w).await, vec![d.id.clone()]);
    let status = stablecoin_core::ports::get_record::<StaffQueueEntry>(&*w.store, &d.id)
        .await
        .unwrap()
        .unwrap()
        .record
        .status;
    assert_eq!(status, ATTENTION);
}

#[tokio::test]
async fn two_person_rule_above_the_threshold() {
    let w = World::with_config(EscrowConfig {
        second_approval_above: Some(usdt(50)),
        ..test_config()
    })
    .await;
    let admin = w.escrow.admin();
    let second = StaffActor::new("second@service.example").unwrap();
    let third = StaffActor::new("third@service.example").unwrap();

    // At or below the threshold one staff member is enough.
    let small = disputed(&w, 50).await;
    let out = admin
        .resolve(&w.staff, &small.id, &resolve("RELEASE", "delivered"))
        .await
        .unwrap();
    assert!(!out.awaiting_approval);
    assert!(out.escrow.payout_pending);

    let big = disputed(&w, 60).await;
    let out = admin
        .resolve(&w.staff, &big.id, &resolve("REFUND", "seller did not ship"))
        .await
        .unwrap();
    assert!(out.awaiting_approval);
    assert_eq!(out.proposed_by.as_deref(), Some("ops@service.example"));
    assert_eq!(
        (out.escrow.state.as_str(), out.escrow.payout_pending),
        ("DISPUTED", false)
    );
    let view = admin.get_staff_view(&w.staff, &big.id).await.unwrap();
    let p = view.pending_resolution.unwrap();
    assert_eq!(
        (p.resolution.as_str(), p.proposed_by.as_str()),
        ("REFUND", "ops@service.example")
    );
    // The proposer cannot approve it.
    let e = admin
        .resolve(&w.staff, &big.id, &resolve("REFUND", "again"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "SECOND_APPROVER_REQUIRED");
    // Another staff member asking for the other resolution is refused.
    let e = admin
        .resolve(&second, &big.id, &resolve("RELEASE", "looks delivered"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.param()),
        ("RESOLUTION_MISMATCH", Some("resolution"))
    );
    // The proposer may change their own proposal.
    let out = admin
        .resolve(
            &w.staff,
            &big.id,
            &resolve("RELEASE", "tracking shows delivery"),
        )
        .await
        .unwrap();
    assert!(out.awaiting_approval);
    // A different staff member approves: carried out, both named in the history.
    let out = admin
        .resolve(
            &second,
            &big.id,
            &resolve("RELEASE", "agree, tracking checked"),
        )
        .await
        .unwrap();
    assert!(!out.awaiting_approval);
    assert_eq!(out.proposed_by.as_deref(), Some("ops@service.example"));
    assert!(out.escrow.payout_pending);
    let e = admin
        .resolve(&third, &big.id, &resolve("RELEASE", "me too"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "PAYOUT_IN_FLIGHT");
    w.settle().await;
    let v = w.get(&big.id).await;
    assert_eq!(v.state, "RELEASED");
    assert_eq!(
        v.resolution_note.as_deref(),
        Some("tracking shows delivery")
    );
    let h = w.history(&big.id).await;
    let p = h
        .iter()
        .find(|e| e.event == "escrow.payout_pending")
        .unwrap();
    assert_eq!(p.authority, "staff:second@service.example");
    assert_eq!(p.reason.as_deref(), Some("agree, tracking checked"));
    let data = p.data.as_ref().unwrap();
    assert_eq!(data["proposed_by"], "ops@service.example");
    assert_eq!(data["approved_by"], "second@service.example");
    assert!(
        admin
            .get_staff_view(&w.staff, &big.id)
            .await
            .unwrap()
            .pending_resolution
            .is_none()
    );
    // A proposal on a deal that is not DISPUTED is refused like a resolution.
    let f = funded(&w, 70).await;
    let e = admin
        .resolve(&w.staff, &f.id, &resolve("RELEASE", "x"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_STATE");
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

/// The staff audit log, oldest first: (staff id, action, target).
async fn audit(w: &World) -> Vec<(String, String, String)> {
    let (rows, _) = w
        .store
        .list(&stablecoin_core::ports::ListQuery {
            kind: stablecoin_core::engine::StaffAuditEntry::KIND.into(),
            tenant: stablecoin_core::engine::STAFF_LIST_OWNER.into(),
            subkind: None,
            status: None,
            limit: 100,
            offset: 0,
        })
        .await
        .unwrap();
    let mut out: Vec<_> = rows
        .iter()
        .map(|r| stablecoin_core::engine::StaffAuditEntry::from_stored(r).unwrap())
        .map(|e| (e.staff_id, e.action, e.target))
        .collect();
    out.reverse();
    out
}

#[tokio::test]
async fn recoveries_above_the_threshold_need_two_staff_members_and_every_decision_audits_in_its_commit()
 {
    let w = World::with_config(EscrowConfig {
        second_approval_above: Some(usdt(50)),
        ..test_config()
    })
    .await;
    let admin = w.escrow.admin();
    let second = StaffActor::new("second@service.example").unwrap();
    let excess = |note: &str| RecoveryRequest {
        kind: "EXCESS".into(),
        token: None,
        note: note.into(),
    };
    // 100 USDT paid for a 20 USDT deal: 80 USDT of excess, above the threshold.
    let d = w.create("20").await;
    w.pay(&d, Token::Usdt, usdt(100));
    w.settle().await;

    let commits = w.store.commit_count();
    let out = admin
        .authorize_recovery(&w.staff, &d.id, &excess("buyer overpaid"))
        .await
        .unwrap();
    let RecoveryOutcome::Proposed(view) = out else {
        panic!("a proposal: {out:?}")
    };
    assert_eq!(
        w.store.commit_count(),
        commits + 1,
        "one commit: the proposal and its audit"
    );
    let p = view.pending_recovery.unwrap();
    assert_eq!(
        (p.kind.as_str(), p.amount.as_str(), p.proposed_by.as_str()),
        ("EXCESS", "80000000", "ops@service.example")
    );
    assert!(
        !w.get(&d.id).await.recoverable.is_empty(),
        "nothing paid yet"
    );
    // The proposer cannot approve; nothing is written.
    let e = admin
        .authorize_recovery(&w.staff, &d.id, &excess("approve"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "SECOND_APPROVER_REQUIRED");
    // Another staff member asking for another kind is refused.
    let e = admin
        .authorize_recovery(
            &second,
            &d.id,
            &RecoveryRequest {
                kind: "LATE".into(),
                token: None,
                note: "x".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "NOTHING_TO_RECOVER", "no late balance at all");
    assert_eq!(
        w.store.commit_count(),
        commits + 1,
        "refusals write nothing"
    );
    // A different staff member approves: the payout and its audit entry in one commit.
    w.clock.advance_ms(1000);
    let out = admin
        .authorize_recovery(&second, &d.id, &excess("agreed"))
        .await
        .unwrap();
    let payout = out.into_payout().expect("claimed");
    assert_eq!(payout.amount, "80000000");
    assert_eq!(
        w.store.commit_count(),
        commits + 2,
        "one commit: the payout and its audit"
    );
    assert!(
        admin
            .get_staff_view(&w.staff, &d.id)
            .await
            .unwrap()
            .pending_recovery
            .is_none()
    );
    let h = w.history(&d.id).await;
    let e = h
        .iter()
        .find(|e| e.event == "escrow.recovery_pending")
        .unwrap();
    assert_eq!(e.authority, "staff:second@service.example");
    let data = e.data.as_ref().unwrap();
    assert_eq!(data["proposed_by"], "ops@service.example");
    assert_eq!(data["approved_by"], "second@service.example");
    let id = d.id.clone();
    assert_eq!(
        audit(&w).await,
        [
            (
                "ops@service.example".to_string(),
                "escrow.recovery.proposed".to_string(),
                id.clone()
            ),
            (
                "second@service.example".to_string(),
                "escrow.recovery".to_string(),
                id.clone()
            ),
        ]
    );
    // A resolution (one staff member, under the threshold) audits in its own commit too.
    let small = disputed(&w, 30).await;
    w.clock.advance_ms(1000);
    let before = w.store.commit_count();
    admin
        .resolve(&w.staff, &small.id, &resolve("REFUND", "not shipped"))
        .await
        .unwrap();
    assert_eq!(w.store.commit_count(), before + 1);
    assert_eq!(
        audit(&w).await.last().unwrap(),
        &(
            "ops@service.example".to_string(),
            "escrow.resolve".to_string(),
            small.id.clone()
        )
    );
    w.settle().await;
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}
