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
