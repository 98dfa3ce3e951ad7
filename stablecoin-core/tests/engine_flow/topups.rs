//! Top-ups (money in): a quote at a locked rate, then one staff confirmation that credits
//! the tenant's treasury exactly once, with its ledger entry and its event.

use super::harness::*;
use stablecoin_core::domain::money::{Currency, Token};
use stablecoin_core::domain::topup::TopUpConfirmation;
use stablecoin_core::engine::{StaffIdentity, accounts, topup_transfer_id};
use stablecoin_core::ports::Store;

fn conf(reference: &str) -> TopUpConfirmation {
    TopUpConfirmation {
        fiat_reference: reference.into(),
        note: Some("wire matched".into()),
    }
}

/// The staff identity these tests confirm as.
fn staff() -> StaffIdentity {
    StaffIdentity::admin_token()
}

async fn outbox(h: &H) -> Vec<stablecoin_core::ports::OutboxEvent> {
    h.store
        .outbox_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

#[tokio::test]
async fn a_topup_quote_confirmed_credits_the_treasury_once() {
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let xof = Currency::parse("XOF").unwrap();
    let q = h
        .engine
        .create_topup(&t, "600000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    assert!(q.id.starts_with("tu_"), "{}", q.id);
    assert_eq!(q.status, "AWAITING_FUNDS");
    assert_eq!(q.fiat_amount, "600000.00");
    assert_eq!(q.rate, "600", "the FX quotes' rate source");
    assert_eq!(q.token_amount, "1000.000000");
    assert_eq!(q.currency_pair, "XOF_USDC");
    // Nothing is credited by a quote.
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap().0,
        0
    );
    let events_before = outbox(&h).await.len();

    let v = h
        .engine
        .confirm_topup(&q.id, &staff(), conf("BANK-1"))
        .await
        .unwrap();
    assert_eq!(v.status, "CREDITED");
    assert_eq!(v.fiat_reference.as_deref(), Some("BANK-1"));
    assert_eq!(v.confirmed_by.as_deref(), Some("admin-token"), "staff view");
    let treasury = accounts::treasury(&t, Token::Usdc).id;
    assert_eq!(h.ledger_available(&treasury).await, 1_000_000_000);
    assert_eq!(h.ledger_available("fiat_in:USDC").await, -1_000_000_000);
    h.assert_conserved().await;
    let events = outbox(&h).await;
    assert_eq!(events.len(), events_before + 1);
    let e = events.last().unwrap();
    assert_eq!(e.event_type, "treasury.topup.credited");
    assert_eq!(e.tenant, t.0);
    assert_eq!(e.payload["topup_id"], q.id.as_str());
    assert_eq!(e.payload["fiat_reference"], "BANK-1");
    // The tenant reads it credited, without the staff's name.
    let read = h.engine.topup(&t, &q.id).await.unwrap();
    assert_eq!(read.status, "CREDITED");
    assert_eq!(read.confirmed_by, None);
    assert!(topup_transfer_id(&q.id).ends_with(&q.id));
}

#[tokio::test]
async fn a_replayed_confirmation_is_refused_and_changes_nothing() {
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let q = h
        .engine
        .create_topup(
            &t,
            "6000".parse().unwrap(),
            Currency::parse("XOF").unwrap(),
            Token::Usdt,
        )
        .await
        .unwrap();
    h.engine
        .confirm_topup(&q.id, &staff(), conf("BANK-1"))
        .await
        .unwrap();
    let treasury = accounts::treasury(&t, Token::Usdt).id;
    let balance = h.ledger_available(&treasury).await;
    assert_eq!(balance, 10_000_000);
    let (events, commits) = (outbox(&h).await.len(), h.store.commit_count());
    for reference in ["BANK-1", "BANK-2"] {
        let e = h
            .engine
            .confirm_topup(&q.id, &staff(), conf(reference))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "ALREADY_CONFIRMED", "{reference}");
    }
    // Even after the quote's lifetime, a replay learns the credit happened.
    h.clock.advance_ms(h.engine.config().topup_ttl_ms + 1);
    let e = h
        .engine
        .confirm_topup(&q.id, &staff(), conf("BANK-1"))
        .await;
    assert_eq!(e.unwrap_err().code(), "ALREADY_CONFIRMED");
    assert_eq!(h.engine.topup(&t, &q.id).await.unwrap().status, "CREDITED");
    assert_eq!(h.ledger_available(&treasury).await, balance);
    assert_eq!(outbox(&h).await.len(), events);
    assert_eq!(h.store.commit_count(), commits, "refusals write nothing");
}

#[tokio::test]
async fn an_expired_topup_quote_is_refused() {
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let xof = Currency::parse("XOF").unwrap();
    let q = h
        .engine
        .create_topup(&t, "6000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    let ttl = h.engine.config().topup_ttl_ms;
    assert_eq!(ttl, 24 * 3_600_000, "the documented default");
    h.clock.advance_ms(ttl - 1);
    assert_eq!(
        h.engine.topup(&t, &q.id).await.unwrap().status,
        "AWAITING_FUNDS"
    );
    h.clock.advance_ms(1);
    assert_eq!(h.engine.topup(&t, &q.id).await.unwrap().status, "EXPIRED");
    let commits = h.store.commit_count();
    let e = h
        .engine
        .confirm_topup(&q.id, &staff(), conf("BANK-1"))
        .await;
    assert_eq!(e.unwrap_err().code(), "QUOTE_EXPIRED");
    assert_eq!(h.store.commit_count(), commits);
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap().0,
        0
    );
    // The reference stays free for a top-up that is still alive.
    let q2 = h
        .engine
        .create_topup(&t, "6000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    h.engine
        .confirm_topup(&q2.id, &staff(), conf("BANK-1"))
        .await
        .unwrap();
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap().0,
        10_000_000
    );
}

#[tokio::test]
async fn one_fiat_reference_confirms_one_topup() {
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let xof = Currency::parse("XOF").unwrap();
    let a = h
        .engine
        .create_topup(&t, "6000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    let b = h
        .engine
        .create_topup(&t, "6000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    h.engine
        .confirm_topup(&a.id, &staff(), conf("BANK-1"))
        .await
        .unwrap();
    let e = h
        .engine
        .confirm_topup(&b.id, &staff(), conf("BANK-1"))
        .await;
    let e = e.unwrap_err();
    assert_eq!(e.code(), "FIAT_REFERENCE_USED");
    assert_eq!(e.param(), Some("fiat_reference"));
    assert_eq!(
        h.engine.topup(&t, &b.id).await.unwrap().status,
        "AWAITING_FUNDS"
    );
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap().0,
        10_000_000
    );
}

#[tokio::test]
async fn a_tenant_reads_and_lists_only_its_own_topups() {
    let h = harness();
    let a = h.engine.create_tenant("A").await.unwrap().id;
    let b = h.engine.create_tenant("B").await.unwrap().id;
    let xof = Currency::parse("XOF").unwrap();
    let mut ids = Vec::new();
    for amount in ["6000", "12000", "18000"] {
        let q = h
            .engine
            .create_topup(&a, amount.parse().unwrap(), xof, Token::Usdc)
            .await
            .unwrap();
        ids.push(q.id);
        h.clock.advance_ms(1);
    }
    let e = h.engine.topup(&b, &ids[0]).await.unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
    assert_eq!(h.engine.list_topups(&b, 20, 0).await.unwrap().1, 0);
    let (page, total) = h.engine.list_topups(&a, 2, 0).await.unwrap();
    assert_eq!(total, 3);
    let got: Vec<&str> = page.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(got, vec![ids[2].as_str(), ids[1].as_str()], "newest first");
    assert_eq!(h.engine.list_topups(&a, 2, 2).await.unwrap().0.len(), 1);
    // Ids that are not top-up ids are never looked up.
    for bad in ["fx_01M83CMTGWWC1YF2WCE6WEYC11", "tu_short", ""] {
        assert_eq!(
            h.engine.topup(&a, bad).await.unwrap_err().code(),
            "NOT_FOUND"
        );
        let e = h
            .engine
            .confirm_topup(bad, &staff(), conf("R"))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "NOT_FOUND");
    }
    // Bad confirmation fields are refused before anything is read.
    let e = h
        .engine
        .confirm_topup(&ids[0], &staff(), conf("  "))
        .await
        .unwrap_err();
    assert_eq!(e.param(), Some("fiat_reference"));
    // Bad amounts are refused as FX quotes refuse them.
    let e = h
        .engine
        .create_topup(&a, "0".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_PARAMETER");
}

#[tokio::test]
async fn above_the_cap_two_identities_credit_and_a_proposer_may_correct_the_reference() {
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let ada = h
        .engine
        .create_staff("Ada")
        .await
        .unwrap()
        .account
        .identity();
    let xof = Currency::parse("XOF").unwrap();
    // 11,000 USDC: above the default 10,000 cap.
    let big = h
        .engine
        .create_topup(&t, "6600000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    let v = h
        .engine
        .confirm_topup(&big.id, &ada, conf("BANK-TYPO"))
        .await
        .unwrap();
    assert_eq!(v.status, "AWAITING_SECOND_APPROVAL");
    // The proposer corrects the reference: the old one is free again, the new one taken.
    h.engine
        .confirm_topup(&big.id, &ada, conf("BANK-RIGHT"))
        .await
        .unwrap();
    let small = h
        .engine
        .create_topup(&t, "6000".parse().unwrap(), xof, Token::Usdc)
        .await
        .unwrap();
    let e = h
        .engine
        .confirm_topup(&small.id, &ada, conf("BANK-RIGHT"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "FIAT_REFERENCE_USED");
    h.engine
        .confirm_topup(&small.id, &ada, conf("BANK-TYPO"))
        .await
        .unwrap();
    // The second identity credits the proposal.
    let v = h
        .engine
        .confirm_topup(&big.id, &staff(), conf("BANK-RIGHT"))
        .await
        .unwrap();
    assert_eq!(v.status, "CREDITED");
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap().0,
        11_010_000_000
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn staff_treasury_credits_follow_the_two_person_rule_and_audit_in_their_commit() {
    use stablecoin_core::domain::money::Micros;
    let h = harness();
    let t = h.engine.create_tenant("Acme").await.unwrap().id;
    let ada = h
        .engine
        .create_staff("Ada")
        .await
        .unwrap()
        .account
        .identity();
    let usdc = |n: u64| Micros(n * 1_000_000);
    let before = h.store.commit_count();
    let v = h
        .engine
        .credit_treasury_as_staff(&ada, &t, Token::Usdc, usdc(100), "W-1")
        .await
        .unwrap();
    assert_eq!(
        (v.status.as_str(), v.treasury_balance.as_str()),
        ("CREDITED", "100.000000")
    );
    assert_eq!(
        h.store.commit_count(),
        before + 1,
        "credit and audit: one commit"
    );
    // A repeat changes nothing; another amount for the reference is refused.
    h.engine
        .credit_treasury_as_staff(&ada, &t, Token::Usdc, usdc(100), "W-1")
        .await
        .unwrap();
    let e = h
        .engine
        .credit_treasury_as_staff(&ada, &t, Token::Usdc, usdc(101), "W-1")
        .await
        .unwrap_err();
    assert_eq!(e.param(), Some("reference"));
    // Above the cap: a proposal, the proposer cannot approve, an approver must repeat it.
    let v = h
        .engine
        .credit_treasury_as_staff(&ada, &t, Token::Usdc, usdc(20_000), "W-2")
        .await
        .unwrap();
    assert_eq!(v.status, "AWAITING_SECOND_APPROVAL");
    assert_eq!(v.treasury_balance, "100.000000");
    let e = h
        .engine
        .credit_treasury_as_staff(&ada, &t, Token::Usdc, usdc(20_000), "W-2")
        .await
        .unwrap_err();
    assert_eq!(e.code(), "SECOND_APPROVER_REQUIRED");
    let e = h
        .engine
        .credit_treasury_as_staff(&staff(), &t, Token::Usdt, usdc(20_000), "W-2")
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.param()), ("APPROVAL_MISMATCH", Some("token")));
    let v = h
        .engine
        .credit_treasury_as_staff(&staff(), &t, Token::Usdc, usdc(20_000), "W-2")
        .await
        .unwrap();
    assert_eq!(v.status, "CREDITED");
    assert_eq!(v.proposed_by.as_deref(), Some(ada.id()));
    assert_eq!(v.credited_by.as_deref(), Some("admin-token"));
    assert_eq!(v.treasury_balance, "20100.000000");
    h.assert_conserved().await;
    let (entries, _) = h.engine.staff_audit(100, 1).await.unwrap();
    let mut got: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| e.action.starts_with("treasury."))
        .map(|e| (e.staff_id.as_str(), e.action.as_str()))
        .collect();
    got.sort();
    let mut want = vec![
        (ada.id(), "treasury.credit"),
        (ada.id(), "treasury.credit.proposed"),
        ("admin-token", "treasury.credit"),
    ];
    want.sort();
    assert_eq!(got, want);
}
