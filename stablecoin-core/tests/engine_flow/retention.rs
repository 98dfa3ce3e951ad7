//! Retention: `Engine::purge_expired` deletes idempotency records, quotes and challenges
//! older than their windows, and nothing that could still be used.

use super::harness::*;
use stablecoin_core::domain::consent::Challenge;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Currency, Token};
use stablecoin_core::engine::{FundRequest, PurgeReport, Retention, SendRequest};
use stablecoin_core::ports::Store;
use stablecoin_core::ports::kinds::kind;

const HOUR_MS: i64 = 3_600_000;

/// The open-challenge key of a link request by `tenant` for `p`'s wallet.
async fn open_link_key(
    h: &H,
    tenant: &TenantId,
    p: &stablecoin_core::domain::phone::Phone,
) -> String {
    let wallet = h.wallet(p).await.id;
    Challenge::open_key(
        "link",
        tenant,
        &stablecoin_core::domain::ids::WalletId(wallet),
    )
}

#[tokio::test]
async fn old_keys_quotes_and_challenges_are_purged_and_recent_ones_kept() {
    let h = harness();
    let (acme, a, b, old_quote) = h.quote_for_a_funded_pair().await;
    let beta = h.engine.create_tenant("Beta").await.unwrap().id;
    let fund = FundRequest {
        phone_number: b.clone(),
        token: Token::Usdc,
        amount: m("1"),
    };
    // Day 0: a keyed funding, the quote above, and Beta's link request for A (left open).
    let first = h.engine.fund(&acme, &fund, Some("k-old")).await.unwrap();
    h.engine.link_request(&beta, &a).await.unwrap();
    let old_challenge = open_link_key(&h, &beta, &a).await;
    assert!(
        h.store
            .get_by_unique(&old_challenge)
            .await
            .unwrap()
            .is_some()
    );

    // 24 h later: another keyed funding; 1 h after that, a fresh quote and a link
    // request for B, whose code is still valid when the purge runs.
    h.clock.advance_ms(24 * HOUR_MS);
    let recent = h.engine.fund(&acme, &fund, Some("k-recent")).await.unwrap();
    h.clock.advance_ms(HOUR_MS);
    let new_quote = h
        .engine
        .quote(
            &acme,
            "600".parse().unwrap(),
            Currency::parse("XOF").unwrap(),
            Token::Usdc,
        )
        .await
        .unwrap();
    h.engine.link_request(&beta, &b).await.unwrap();
    let open_code = h.notifier.last_code_to(&b).expect("a code for B");
    let open_challenge = open_link_key(&h, &beta, &b).await;

    // Before the purge the day-old key still replays and the old quote is "expired".
    assert_eq!(
        h.engine.fund(&acme, &fund, Some("k-old")).await.unwrap().id,
        first.id,
        "a stored key replays until it is purged"
    );
    let send = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: old_quote.quote_id.clone(),
    };
    let e = h.engine.send(&acme, &send, None).await.unwrap_err();
    assert_eq!(e.code(), "QUOTE_EXPIRED");

    let day = Retention::MIN_IDEMPOTENCY_MS;
    let retention = Retention::new(day, day, day).unwrap().with_batch_limit(1);
    let report = h.engine.purge_expired(&retention).await.unwrap();
    assert_eq!(
        report,
        PurgeReport {
            idempotency: 1,
            quotes: 1,
            challenges: 1,
            console_sessions: 0,
            payout_results: 0
        }
    );

    // The 25-hour-old key runs its request again; the 1-hour-old one still replays.
    let again = h.engine.fund(&acme, &fund, Some("k-old")).await.unwrap();
    assert_ne!(again.id, first.id, "a purged key no longer replays");
    assert_eq!(
        h.engine
            .fund(&acme, &fund, Some("k-recent"))
            .await
            .unwrap()
            .id,
        recent.id,
        "a key inside its window still replays"
    );
    // The operations themselves are history, never purged.
    h.engine.operation(&acme, &first.id).await.unwrap();

    // The old quote is gone (not found), the new one is usable.
    assert!(
        h.store
            .get(kind::QUOTE, &old_quote.quote_id)
            .await
            .unwrap()
            .is_none()
    );
    let e = h.engine.send(&acme, &send, None).await.unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
    let send_new = SendRequest {
        quote_id: new_quote.quote_id.clone(),
        ..send
    };
    h.engine.send(&acme, &send_new, None).await.unwrap();

    // The expired challenge is gone with its open key; the open one inside its code's
    // lifetime is kept, and its code still works.
    assert!(
        h.store
            .get_by_unique(&old_challenge)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.store
            .get_by_unique(&open_challenge)
            .await
            .unwrap()
            .is_some()
    );
    h.engine.link_confirm(&beta, &b, &open_code).await.unwrap();

    assert_eq!(
        h.engine.purge_expired(&retention).await.unwrap(),
        PurgeReport::default(),
        "nothing is left to purge"
    );
    h.assert_conserved().await;
}

/// A payout provider's results for one payout (`kind::PAYOUT_RESULT`, as
/// `stablecoin_providers::mpesa::MpesaResults` stores them): dated by their last change.
#[derive(serde::Serialize, serde::Deserialize)]
struct PayoutResults {
    payout_id: String,
    updated_at: stablecoin_core::domain::time::Timestamp,
}

impl stablecoin_core::ports::Record for PayoutResults {
    const KIND: &'static str = kind::PAYOUT_RESULT;
    fn id(&self) -> String {
        self.payout_id.clone()
    }
    fn created_at(&self) -> stablecoin_core::domain::time::Timestamp {
        self.updated_at
    }
}

#[tokio::test]
async fn payout_results_are_purged_after_their_window_and_recent_ones_kept() {
    use stablecoin_core::ports::{Clock, Record};
    let h = harness();
    let put = |id: &str| {
        let r = PayoutResults {
            payout_id: id.into(),
            updated_at: h.clock.now(),
        };
        stablecoin_core::ports::Batch {
            puts: vec![r.insert().unwrap()],
            ..Default::default()
        }
    };
    h.store.commit(put("wd_old")).await.unwrap();
    h.clock.advance_ms(25 * HOUR_MS);
    h.store.commit(put("wd_new")).await.unwrap();
    let day = Retention::MIN_IDEMPOTENCY_MS;
    let retention = Retention::new(day, day, day)
        .unwrap()
        .with_payout_results_ms(Retention::MIN_PAYOUT_RESULTS_MS)
        .unwrap();
    let report = h.engine.purge_expired(&retention).await.unwrap();
    assert_eq!(report.payout_results, 1);
    assert!(
        h.store
            .get(kind::PAYOUT_RESULT, "wd_old")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.store
            .get(kind::PAYOUT_RESULT, "wd_new")
            .await
            .unwrap()
            .is_some()
    );
    // A window under a day is refused.
    let e = Retention::default()
        .with_payout_results_ms(Retention::MIN_PAYOUT_RESULTS_MS - 1)
        .unwrap_err();
    assert_eq!(e.param(), Some("payout_results_ms"));
}
