//! The chain's side: external deposits (one rail's outage stopping no other) and
//! withdrawals (complete, refund, reconcile).

use super::harness::*;
use stablecoin_core::domain::money::Token;
use stablecoin_core::engine::{DepositRecord, DepositStatus};
use stablecoin_core::ports::{ChainAddress, RailId, Record, Store};

#[tokio::test]
async fn external_deposit_is_credited_once() {
    let h = harness();
    let t = h.tenant("Acme", "1").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let addr = h.engine.provision_lookup(&a).await;
    let tx = h.sim.mint(&addr, Token::Usdt, m("7.5")).unwrap();
    let w = h.wallet(&a).await;
    let acct = format!("wallet:{}:USDT", w.id);
    // First seen below the depth (3 on Polygon): recorded DETECTED, nothing credited.
    let r = h.engine.tick().await;
    assert_eq!((r.polled, r.deposits), (1, 0), "{r:?}");
    let deposit = |id: String| {
        let store = h.store.clone();
        async move {
            let rec = store.get("deposit", &id).await.unwrap().unwrap();
            DepositRecord::from_stored(&rec).unwrap()
        }
    };
    let id = format!("polygon:{tx}:0");
    let d = deposit(id.clone()).await;
    assert_eq!(d.status, DepositStatus::Detected);
    assert_eq!(
        (d.amount, d.token, d.address.as_str()),
        (m("7.5"), Token::Usdt, addr.0.as_str())
    );
    assert_eq!(h.ledger_available(&acct).await, 0);
    h.settle().await;
    h.settle().await;
    let d = deposit(id).await;
    assert_eq!(d.status, DepositStatus::Confirmed);
    assert!(d.confirmations >= 3 && d.confirmed_at.is_some() && d.detected_at.is_some());
    assert_eq!(h.ledger_available(&acct).await, 7_500_000);
    let events = h.store.outbox_after(0, 100).await.unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|(_, e)| e.event_type == "transfer.received")
            .count(),
        1
    );
    assert_eq!(
        h.engine.balance(&t, &a).await.unwrap().balance_usdt,
        "7.500000"
    );
    let _ = RailId::Evm(137);
}

/// Each rail's scanner stands alone: with the TRON RPC down, EVM deposits are still
/// credited (and the outage is reported); once TRON is back, its deposit is too, into
/// the wallet's own TRON account.
#[tokio::test]
async fn one_rails_outage_does_not_stop_another_rails_deposits() {
    let h = harness();
    let t = h.tenant("Acme", "1").await;
    let a = phone("+2250700000001");
    let view = h.engine.provision_on(&t, &a, RailId::Tron).await.unwrap();
    let tron_addr = ChainAddress(view.address.clone());
    let evm_addr = h.engine.provision_lookup(&a).await;
    h.tron.set_rpc_down(true);
    h.sim.mint(&evm_addr, Token::Usdt, m("2")).unwrap();
    let r = h.engine.settle_all(20).await;
    assert!(
        r.errors.iter().any(|e| e.starts_with("scan tron:")),
        "{:?}",
        r.errors
    );
    let w = h.wallet(&a).await;
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:USDT", w.id)).await,
        2_000_000
    );
    h.tron.set_rpc_down(false);
    h.tron.mint(&tron_addr, Token::Usdt, m("3")).unwrap();
    h.settle().await;
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:tron:USDT", w.id))
            .await,
        3_000_000
    );
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:USDT", w.id)).await,
        2_000_000,
        "the EVM balance is untouched"
    );
}

#[tokio::test]
async fn withdrawals_complete_refund_and_reconcile() {
    use stablecoin_core::engine::WithdrawRequest;
    use stablecoin_core::memory::PayoutFault;
    let h = harness();
    let t = h.tenant("Acme", "1000").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.fund_usdc(&t, &a, "300").await;
    h.settle().await;
    let wreq = |amount: &str| WithdrawRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m(amount),
        payout_currency: "XOF".into(),
    };

    // Delivered: crypto swept, payout evidence recorded, COMPLETED.
    let w = h
        .engine
        .withdraw(&t, &wreq("100"), Some("wd-1"))
        .await
        .unwrap();
    assert_eq!(w.status, "PENDING");
    assert_eq!(w.payout_amount.as_deref(), Some("60000"));
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "PAYOUT_SUBMITTING"
    );
    h.payouts.settle_all();
    h.settle().await;
    let op = h.engine.operation(&t, &w.id).await.unwrap();
    assert_eq!(op.status.as_str(), "COMPLETED");
    assert!(
        op.view().payout_reference.is_some(),
        "COMPLETED needs evidence"
    );
    assert_eq!(h.chain_balance(&a).await, m("200"));

    // The provider refuses: the tokens go back on chain, REFUNDED.
    h.payouts.inject(PayoutFault::Reject);
    let w = h.engine.withdraw(&t, &wreq("50"), None).await.unwrap();
    h.settle().await;
    let op = h.engine.operation(&t, &w.id).await.unwrap();
    assert_eq!(op.status.as_str(), "REFUNDED");
    assert!(op.view().refund_tx_hash.is_some());
    assert!(op.error_reason.is_some());
    assert_eq!(
        h.chain_balance(&a).await,
        m("200"),
        "refunded to the wallet"
    );

    // The payout answer is lost: PAYOUT_UNKNOWN, reconciled by asking, paid once.
    let before = h.payouts.submit_count();
    h.payouts.inject(PayoutFault::LostResponse);
    let w = h.engine.withdraw(&t, &wreq("20"), None).await.unwrap();
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "PAYOUT_UNKNOWN"
    );
    h.payouts.settle_all();
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "COMPLETED"
    );
    assert_eq!(h.payouts.submit_count(), before + 1, "never paid twice");

    // Dropped before the provider: PAYOUT_UNKNOWN -> the provider has no record -> the
    // same payout id is submitted again (it deduplicates), never refunded on a timer.
    let before = h.payouts.submit_count();
    h.payouts.inject(PayoutFault::Drop);
    let w = h.engine.withdraw(&t, &wreq("10"), None).await.unwrap();
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &w.id).await.unwrap().status.as_str(),
        "PAYOUT_UNKNOWN"
    );
    assert_eq!(
        h.payouts.submit_count(),
        before + 1,
        "received once, on resubmit"
    );
    h.payouts.settle_all();
    h.settle().await;
    let op = h.engine.operation(&t, &w.id).await.unwrap();
    assert_eq!(op.status.as_str(), "COMPLETED");
    assert!(op.view().refund_tx_hash.is_none(), "never refunded");
    assert_eq!(h.chain_balance(&a).await, m("170"));

    // Wallet ledger agrees with the chain; money conserved.
    let w = h.wallet(&a).await;
    assert_eq!(
        h.ledger_available(&format!("wallet:{}:USDC", w.id)).await,
        170_000_000
    );
    h.assert_conserved().await;

    // Member only; bad currency and zero amount refused without writes.
    let beta = h.tenant("Beta", "1").await;
    let commits = h.store.commit_count();
    assert_eq!(
        h.engine
            .withdraw(&beta, &wreq("1"), None)
            .await
            .unwrap_err()
            .code(),
        "NOT_A_MEMBER"
    );
    let bad = WithdrawRequest {
        payout_currency: "ABC".into(),
        ..wreq("1")
    };
    assert_eq!(
        h.engine.withdraw(&t, &bad, None).await.unwrap_err().code(),
        "INVALID_PARAMETER"
    );
    assert_eq!(
        h.engine
            .withdraw(&t, &wreq("0"), None)
            .await
            .unwrap_err()
            .code(),
        "INVALID_AMOUNT"
    );
    assert_eq!(
        h.engine
            .withdraw(&t, &wreq("1000"), None)
            .await
            .unwrap_err()
            .code(),
        "INSUFFICIENT_FUNDS"
    );
    assert_eq!(h.store.commit_count(), commits);
}
