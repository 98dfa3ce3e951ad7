//! Deal lifecycles on MemoryStore + the simulated TRON rail (the same suite runs on the
//! real rail in `lifecycle_tron.rs`). After each, money is conserved on the ledger and on
//! chain, and the outbox matches the history.

#[path = "common/mod.rs"]
mod common;

const BACKEND: common::Backend = common::Backend::Sim;

include!("cases/lifecycle.rs");

// The simulator's `Drop`: the rail answers NotFound for a payout it sent. The real TRON
// rail journals every transaction before its broadcast and so never answers NotFound
// for it; `lifecycle_tron.rs` has its counterpart (failure at the transaction's expiry).
#[tokio::test]
async fn dropped_payout_fails_only_after_its_deadline_and_the_grace_period() {
    let w = World::new().await;
    let d = w.create("10").await;
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    w.tron.inject(Fault::Drop);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    let v = w.get(&d.id).await;
    assert!(
        v.payout_pending,
        "NotFound is not trusted before the grace period"
    );
    // Nor at the old grace period alone: only after the payout's deadline plus it.
    w.clock.advance_ms(w.escrow.config().unknown_grace_ms);
    w.settle().await;
    assert!(w.get(&d.id).await.payout_pending, "before the deadline");
    w.clock
        .advance_ms(stablecoin_escrow::PAYOUT_VALIDITY_MS + 1);
    w.settle().await;
    let v = w.get(&d.id).await;
    assert_eq!((v.state.as_str(), v.payout_pending), ("FUNDED", false));
    assert_eq!(
        v.payout_failure_reason.as_deref(),
        Some("the payout never reached the network")
    );
    assert_eq!(w.tron.submit_count(), 0);
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    assert_eq!(w.get(&d.id).await.state, "RELEASED");
    assert_eq!(w.tron.submit_count(), 1);
    w.assert_conserved().await;
}

/// A seller who never used TRON: creating the deal records the wallet's TRON address,
/// so the payout there is credited to the seller's wallet by the engine's scan. Before,
/// the payout went to an address only derived, which no scan watched: the chain then
/// held more than the ledger for good (the whole-service simulator's seed 241).
#[tokio::test]
async fn a_payout_to_a_wallet_new_to_tron_is_credited_to_that_wallet() {
    use stablecoin_core::domain::consent::Wallet;
    use stablecoin_core::domain::phone::Phone;
    use stablecoin_core::ports::{Ledger, RailId, get_record_by_unique};
    let w = World::new().await;
    let wallet = |phone: Phone| {
        let store = w.store.clone();
        async move {
            get_record_by_unique::<Wallet>(&*store, &Wallet::phone_key(&phone))
                .await
                .unwrap()
                .unwrap()
                .record
        }
    };
    assert!(wallet(w.seller.clone()).await.address("tron").is_none());
    let d = w.create("10").await;
    let seller = wallet(w.seller.clone()).await;
    assert_eq!(
        seller.address("tron").map(|a| a.0.clone()),
        Some(w.wallet_tron_address(&w.seller).await),
        "the deal recorded the seller's TRON address"
    );
    w.pay(&d, Token::Usdt, usdt(10));
    w.settle().await;
    w.escrow.release(&w.auth, &d.id, &w.act()).await.unwrap();
    w.settle().await;
    assert_eq!(w.get(&d.id).await.state, "RELEASED");
    w.tron.mine(20);
    w.core.settle_all(50).await;
    let account = w
        .core
        .wallet_account(&seller.id, RailId::Tron, Token::Usdt)
        .id;
    let credited = w.store.balance(&account).await.unwrap().posted();
    assert_eq!(credited, 10_000_000, "the payout is credited to the seller");
    w.assert_conserved().await;
}
