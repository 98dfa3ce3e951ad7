//! The chain reconciliation (issue #33, item 6): clean while money moves through the
//! service, in flight included; a move behind the service's back is reported with the
//! account, the address and the amount.

use super::harness::*;
use stablecoin_core::domain::money::Token;
use stablecoin_core::engine::{DriftDirection, SendRequest};
use stablecoin_core::ports::{KeyPurpose, Rail};

#[tokio::test]
async fn operations_in_flight_are_not_drift_but_money_moved_behind_the_ledger_is() {
    let h = harness();
    let t = h.tenant("Acme", "1000").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    h.engine.provision(&t, &a).await.unwrap();
    h.engine.provision(&t, &b).await.unwrap();
    let empty = h.engine.reconcile_chains().await;
    assert!(empty.is_clean(), "{empty:?}");
    // Every wallet on every rail it has an address on, per token, plus the fee sums.
    assert!(empty.accounts_checked >= 4, "{empty:?}");

    // A funding accepted and not yet submitted, then submitted and mined but not yet
    // polled: in flight both times, so no drift.
    h.fund_usdc(&t, &a, "100").await;
    assert!(h.engine.reconcile_chains().await.is_clean());
    h.engine.tick().await;
    h.sim.mine(5);
    let mid = h.engine.reconcile_chains().await;
    assert!(mid.is_clean(), "{mid:?}");
    h.settle().await;

    // A send with fees, settled: wallets and the fee sum agree with the chain.
    let q = format!("DIRECT_CRYPTO:USDC:{}", "10");
    h.engine
        .send(
            &t,
            &SendRequest {
                from_phone_number: a.clone(),
                to_phone_number: b.clone(),
                token: Token::Usdc,
                quote_id: q,
            },
            None,
        )
        .await
        .unwrap();
    h.settle().await;
    let settled = h.engine.reconcile_chains().await;
    assert!(settled.is_clean(), "{settled:?}");
    assert_eq!(h.engine.last_reconciliation(), Some(settled));

    // Behind the service's back: 2.5 USDC leave a's address (a leaked key), and 1 USDC
    // arrives unannounced at the fee address.
    let a_addr = h.engine.provision_lookup(&a).await;
    let outsider = h.sim.faucet_address();
    h.sim
        .external_transfer(&a_addr, &outsider, Token::Usdc, m("2.5"))
        .unwrap();
    let fees = h.sim.address_for(&KeyPurpose::ServiceFees).await.unwrap();
    h.sim.mint(&fees, Token::Usdc, m("1")).unwrap();
    h.sim.mine(1);
    let drifted = h.engine.reconcile_chains().await;
    assert!(drifted.has_shortfall(), "{drifted:?}");
    let wallet_id = h.wallet(&a).await.id;
    let short = drifted
        .drifts
        .iter()
        .find(|d| d.account == format!("wallet:{wallet_id}:USDC"))
        .expect("the wallet's shortfall is reported");
    assert_eq!(short.direction, DriftDirection::Shortfall);
    assert_eq!(short.drift_micros, -2_500_000);
    assert_eq!(short.rail, "polygon");
    assert_eq!(short.address.as_deref(), Some(a_addr.0.as_str()));
    assert_eq!(
        short.chain_micros as i128,
        short.ledger_posted_micros - 2_500_000
    );
    let excess = drifted
        .drifts
        .iter()
        .find(|d| d.account == "fees:service:USDC")
        .expect("the fee excess is reported");
    assert_eq!(
        (excess.direction, excess.drift_micros, excess.rail.as_str()),
        (DriftDirection::Excess, 1_000_000, "all")
    );
    assert_eq!(drifted.drifts.len(), 2, "{drifted:?}");
}

/// A rail that does not answer makes the pass incomplete (an error naming the account),
/// never clean and never a false drift.
#[tokio::test]
async fn an_unreadable_chain_is_an_incomplete_pass_not_a_clean_one() {
    let h = harness();
    let t = h.tenant("Acme", "10").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.sim.set_rpc_down(true);
    let r = h.engine.reconcile_chains().await;
    assert!(!r.is_clean() && !r.has_shortfall(), "{r:?}");
    assert!(r.drifts.is_empty());
    assert!(r.errors.iter().any(|e| e.contains("on polygon")), "{r:?}");
}
