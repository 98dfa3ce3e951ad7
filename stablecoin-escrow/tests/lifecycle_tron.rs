//! The deal lifecycle suite of `lifecycle.rs`, unchanged, on the real TRON rail: every
//! deposit is a TRC-20 `Transfer` found by `TronRail::scan` on the local TRON node
//! (the `stablecoin-tron-node` crate, the token on Anvil in CI), every payout a signed
//! TriggerSmartContract from the deal's own address with the sponsor's activation and
//! Energy/Bandwidth delegation, confirmed at depth 19, and every balance the conservation
//! checks read is the token's `balanceOf`.

#[path = "common/mod.rs"]
mod common;

const BACKEND: common::Backend = common::Backend::Tron;

include!("cases/lifecycle.rs");

/// The counterpart of the simulator's dropped payout: the broadcast never reaches the
/// node. The rail journaled the transaction before sending it, so it knows the txID and
/// the expiry: the payout stays pending while the transaction could still land, fails
/// with the reason once it expired (no grace period is needed: an expired TRON
/// transaction can never be included), and a new release pays exactly once.
#[tokio::test]
async fn dropped_payout_fails_at_its_expiry_then_a_new_release_pays_once() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    w.tron.inject(Fault::Drop);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    let first = w.escrow.tick().await;
    assert_eq!(first.unknown, 1, "{first:?}");
    assert!(w.get(&d.id).await.payout_pending);
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!((v.state.as_str(), v.payout_pending), ("FUNDED", false));
    assert_eq!(
        v.payout_failure_reason.as_deref(),
        Some("TRANSACTION_EXPIRED: expired before it was included in a block")
    );
    assert_eq!(w.tron.submit_count(), 0);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    assert_eq!(w.tron.submit_count(), 1);
    assert_eq!(
        w.chain_balance(&v.seller_address, Token::Usdt).await,
        10_000_000
    );
    w.assert_conserved().await;
    w.assert_outbox_matches_history().await;
}

/// What the sponsorship costs the customer side: nothing. After a deal paid out on the
/// real rail, the deal address holds no TRX and the sponsor got its delegations back.
#[tokio::test]
async fn payouts_are_sponsored_and_the_delegations_are_reclaimed() {
    let w = World::new().await;
    let d = w.create("40").await;
    w.pay(&d, Token::Usdt, usdt(40));
    w.settle().await;
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!(v.state, "RELEASED");
    let node = w.tron.node().expect("the TRON backend");
    let deal = stablecoin_rails::tron::TronAddress::parse(&v.escrow_address).unwrap();
    let account = node.account(deal.as_bytes()).await.expect("activated");
    assert_eq!(account.balance, 0, "the deal address holds no TRX");
    assert_eq!(
        (account.acquired_energy, account.acquired_bandwidth),
        (0, 0),
        "every delegation was reclaimed"
    );
    w.assert_conserved().await;
}
