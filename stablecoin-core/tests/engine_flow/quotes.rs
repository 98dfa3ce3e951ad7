//! FX quotes: a quote drives one transfer, once, even when a send loses the race for it.

use super::harness::*;
use stablecoin_core::domain::fx::Quote;
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::{Currency, Token};
use stablecoin_core::engine::{SendRequest, accounts};
use stablecoin_core::ports::Record;
use stablecoin_core::testkit::DelegatingStore;
use std::sync::Arc;

#[tokio::test]
async fn fx_quote_drives_a_transfer_once() {
    let h = harness();
    let (t, a, b, q) = h.quote_for_a_funded_pair().await;
    assert_eq!(q.currency_pair, "XOF_USDC");
    assert_eq!(q.expected_out, "10.000000");
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: q.quote_id.clone(),
    };
    let s = h.engine.send(&t, &req, None).await.unwrap();
    assert_eq!(s.amount, "10.000000");
    assert_eq!(
        h.engine.send(&t, &req, None).await.unwrap_err().code(),
        "QUOTE_ALREADY_USED"
    );
    let q2 = h
        .engine
        .quote(
            &t,
            "600".parse().unwrap(),
            Currency::parse("XOF").unwrap(),
            Token::Usdc,
        )
        .await
        .unwrap();
    h.clock.advance_ms(60_000);
    let commits = h.store.commit_count();
    assert_eq!(
        h.engine.send(&t, &req, None).await.unwrap_err().code(),
        "QUOTE_ALREADY_USED"
    );
    let req2 = SendRequest {
        quote_id: q2.quote_id,
        ..req.clone()
    };
    assert_eq!(
        h.engine.send(&t, &req2, None).await.unwrap_err().code(),
        "QUOTE_EXPIRED"
    );
    // USDT send with a USDC quote is refused.
    let req3 = SendRequest {
        token: Token::Usdt,
        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
        ..req
    };
    assert_eq!(
        h.engine.send(&t, &req3, None).await.unwrap_err().code(),
        "QUOTE_TOKEN_MISMATCH"
    );
    assert_eq!(
        h.store.commit_count(),
        commits,
        "refused quotes write nothing"
    );
}

/// A send that loses the race for its FX quote (another change to the quote lands
/// between the read and the commit) answers QUOTE_ALREADY_USED, not a generic CONFLICT,
/// and writes nothing: no operation, no hold.
#[tokio::test]
async fn a_send_that_loses_the_race_for_its_quote_is_quote_already_used() {
    let h = harness_with(
        |sim| sim,
        |inner| Arc::new(DelegatingStore::new(inner, RaceOn::kind(Quote::KIND))),
    );
    let (t, a, b, q) = h.quote_for_a_funded_pair().await;
    let sender = accounts::wallet(&WalletId(h.wallet(&a).await.id), Token::Usdc);
    let before = h.ledger_available(&sender.id).await;
    assert!(before > 0);
    let commits = h.store.commit_count();
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: q.quote_id.clone(),
    };
    let err = h.engine.send(&t, &req, None).await.unwrap_err();
    assert_eq!(err.code(), "QUOTE_ALREADY_USED", "{err:?}");
    // The racing re-put is the only commit that landed.
    assert_eq!(h.store.commit_count(), commits + 1);
    assert_eq!(
        h.ledger_available(&sender.id).await,
        before,
        "no hold was placed"
    );
}
