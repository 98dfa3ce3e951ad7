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
