//! Swaps through the treasury venue on the simulated chain: both legs checked on chain
//! and in the ledger, refusals that write nothing, a reverted wallet leg, a refused
//! treasury leg that is sent again, and idempotent acceptance.

use super::harness::*;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{Engine, OperationView, SwapRequest, accounts, venue_account};
use stablecoin_core::ports::{KeyPurpose, Rail, Store};
use stablecoin_rails::sim::Fault;
use stablecoin_rails::{TreasuryRate, TreasuryVenue};
use std::sync::Arc;

/// Tenant "Acme", a wallet holding 100 USDC (settled), and a treasury holding a float of
/// `float` USDT for conversions; the engine trades through the treasury venue.
async fn setup(h: &H, float: &str) -> (Engine, TenantId, Phone) {
    let t = h.tenant("Acme", "1000").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.fund_usdc(&t, &a, "100").await;
    h.settle().await;
    let treasury = h.sim.address_for(&KeyPurpose::Treasury).await.unwrap();
    if float != "0" {
        h.sim.mint(&treasury, Token::Usdt, m(float)).unwrap();
        h.sim.mine(1);
    }
    let venue = TreasuryVenue::new(
        h.sim.clone(),
        h.store.clone(),
        TreasuryRate::default(),
        m("50"),
    );
    let engine = h.engine.clone().with_swap_venue(Arc::new(venue));
    (engine, t, a)
}

fn usdc_to_usdt(a: &Phone, amount: &str) -> SwapRequest {
    SwapRequest {
        phone_number: a.clone(),
        token_in: Token::Usdc,
        token_out: Token::Usdt,
        amount_in: m(amount),
        max_slippage_bps: 50,
    }
}

async fn on_chain(h: &H, a: &Phone, token: Token) -> Micros {
    let w = h.engine.provision_lookup(a).await;
    h.sim.balance(&w, token).await.unwrap()
}

async fn treasury_on_chain(h: &H, token: Token) -> Micros {
    let t = h.sim.address_for(&KeyPurpose::Treasury).await.unwrap();
    h.sim.balance(&t, token).await.unwrap()
}

async fn wallet_ledger(h: &H, a: &Phone, token: Token) -> i128 {
    let w = h.wallet(a).await;
    let id = stablecoin_core::domain::ids::WalletId(w.id);
    h.ledger_available(&accounts::wallet(&id, token).id).await
}

async fn read(e: &Engine, t: &TenantId, id: &str) -> OperationView {
    e.operation(t, id).await.unwrap().view()
}

async fn settle(e: &Engine) {
    let r = e.settle_all(100).await;
    assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
}

#[tokio::test]
async fn a_treasury_swap_settles_with_both_legs_on_chain_and_in_the_ledger() {
    let h = harness();
    let (e, t, a) = setup(&h, "1000").await;
    let v = e.swap(&t, &usdc_to_usdt(&a, "40"), None).await.unwrap();
    assert_eq!(v.status, "QUEUED");
    assert_eq!(v.object, "swap");
    // Par less the 0.10% spread, then 0.5% slippage allowed (rounded down).
    assert_eq!(v.quoted_amount_out.as_deref(), Some("39.960000"));
    assert_eq!(v.min_amount_out.as_deref(), Some("39.760200"));
    assert_eq!(v.amount_out, None);
    // Held at once.
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 60_000_000);
    settle(&e).await;
    let s = read(&e, &t, &v.id).await;
    assert_eq!(s.status, "SETTLED", "{s:?}");
    assert_eq!(s.amount_out.as_deref(), Some("39.960000"));
    assert_eq!(s.venue.as_deref(), Some("treasury"));
    assert_eq!(on_chain(&h, &a, Token::Usdc).await, m("60"));
    assert_eq!(on_chain(&h, &a, Token::Usdt).await, m("39.96"));
    assert_eq!(treasury_on_chain(&h, Token::Usdt).await, m("960.04"));
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 60_000_000);
    assert_eq!(wallet_ledger(&h, &a, Token::Usdt).await, 39_960_000);
    assert_eq!(
        h.ledger_available(&venue_account("treasury", Token::Usdc).id)
            .await,
        40_000_000
    );
    assert_eq!(
        h.ledger_available(&venue_account("treasury", Token::Usdt).id)
            .await,
        -39_960_000
    );
    h.assert_conserved().await;
    // swap.settled carries the read's status fields, and no amount_out (spec 6.1).
    let events = h.store.outbox_after(0, 100).await.unwrap();
    let settled: Vec<_> = events
        .iter()
        .filter(|(_, ev)| ev.event_type == "swap.settled")
        .collect();
    assert_eq!(settled.len(), 1);
    let p = &settled[0].1.payload;
    assert_eq!(p["swap_id"], s.id.as_str());
    assert_eq!(p["tx_hash"].as_str(), s.tx_hash.as_deref());
    assert!(p.get("amount_out").is_none(), "{p}");
    // More ticks change nothing.
    settle(&e).await;
    assert_eq!(read(&e, &t, &v.id).await, s);
    assert_eq!(on_chain(&h, &a, Token::Usdt).await, m("39.96"));
}

#[tokio::test]
async fn a_swap_the_treasury_cannot_fill_is_refused_and_holds_nothing() {
    let h = harness();
    let (e, t, a) = setup(&h, "10").await;
    let err = e.swap(&t, &usdc_to_usdt(&a, "40"), None).await.unwrap_err();
    assert_eq!(err.code(), "INSUFFICIENT_LIQUIDITY", "{err}");
    assert!(err.to_string().contains("liquidity"), "{err}");
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 100_000_000);
    let (swaps, total) = e
        .list_operations(
            &t,
            stablecoin_core::domain::state::OpKind::Swap,
            None,
            10,
            0,
        )
        .await
        .unwrap();
    assert!(swaps.is_empty());
    assert_eq!(total, 0);
}

#[tokio::test]
async fn the_venue_gives_out_no_more_than_its_float_net_of_what_it_took() {
    let h = harness();
    let (e, t, a) = setup(&h, "1000").await;
    // A float of 50 USDT: 39.96 out, 10.04 left.
    e.swap(&t, &usdc_to_usdt(&a, "40"), None).await.unwrap();
    settle(&e).await;
    let err = e.swap(&t, &usdc_to_usdt(&a, "20"), None).await.unwrap_err();
    assert_eq!(err.code(), "INSUFFICIENT_LIQUIDITY", "{err}");
    assert!(err.to_string().contains("float"), "{err}");
    e.swap(&t, &usdc_to_usdt(&a, "10"), None).await.unwrap();
    settle(&e).await;
    // USDT back to USDC refills the USDT side.
    let back = SwapRequest {
        token_in: Token::Usdt,
        token_out: Token::Usdc,
        ..usdc_to_usdt(&a, "30")
    };
    e.swap(&t, &back, None).await.unwrap();
    settle(&e).await;
    e.swap(&t, &usdc_to_usdt(&a, "20"), None).await.unwrap();
    settle(&e).await;
    h.assert_conserved().await;
}

#[tokio::test]
async fn a_non_member_swap_is_forbidden_and_writes_nothing() {
    let h = harness();
    let (e, _t, a) = setup(&h, "1000").await;
    let other = e.create_tenant("Other").await.unwrap().id;
    let before = h.store.outbox_len();
    let err = e
        .swap(&other, &usdc_to_usdt(&a, "40"), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_A_MEMBER", "{err}");
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 100_000_000);
    assert_eq!(h.store.outbox_len(), before);
}

#[tokio::test]
async fn bad_requests_are_refused_with_their_field() {
    let h = harness();
    let (e, t, a) = setup(&h, "1000").await;
    let same = SwapRequest {
        token_out: Token::Usdc,
        ..usdc_to_usdt(&a, "1")
    };
    let greedy = SwapRequest {
        max_slippage_bps: 1_001,
        ..usdc_to_usdt(&a, "1")
    };
    let zero = usdc_to_usdt(&a, "0");
    for (req, code) in [
        (same, "INVALID_PARAMETER"),
        (greedy, "INVALID_PARAMETER"),
        (zero, "INVALID_AMOUNT"),
    ] {
        assert_eq!(e.swap(&t, &req, None).await.unwrap_err().code(), code);
    }
    // More than the wallet holds: refused by the hold, nothing written.
    let err = e
        .swap(&t, &usdc_to_usdt(&a, "100.000001"), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INSUFFICIENT_FUNDS");
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 100_000_000);
}

#[tokio::test]
async fn a_reverted_wallet_leg_fails_the_swap_and_returns_the_hold() {
    let h = harness();
    let (e, t, a) = setup(&h, "1000").await;
    h.sim.inject(Fault::Revert);
    let v = e.swap(&t, &usdc_to_usdt(&a, "40"), None).await.unwrap();
    settle(&e).await;
    let s = read(&e, &t, &v.id).await;
    assert_eq!(s.status, "FAILED", "{s:?}");
    assert!(s.error_reason.is_some());
    assert_eq!(s.amount_out, None);
    assert_eq!(on_chain(&h, &a, Token::Usdc).await, m("100"));
    assert_eq!(on_chain(&h, &a, Token::Usdt).await, Micros::ZERO);
    assert_eq!(treasury_on_chain(&h, Token::Usdt).await, m("1000"));
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 100_000_000);
    assert_eq!(wallet_ledger(&h, &a, Token::Usdt).await, 0);
    h.assert_conserved().await;
    let events = h.store.outbox_after(0, 100).await.unwrap();
    let failed: Vec<_> = events
        .iter()
        .filter(|(_, ev)| ev.event_type == "swap.failed")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].1.payload["reason"].as_str(),
        s.error_reason.as_deref()
    );
}

#[tokio::test]
async fn a_refused_treasury_leg_is_sent_again_and_delivers_once() {
    let h = harness();
    let (e, t, a) = setup(&h, "1000").await;
    let v = e.swap(&t, &usdc_to_usdt(&a, "40"), None).await.unwrap();
    // The wallet's leg goes out; then the node refuses the treasury's first send.
    e.tick().await;
    h.sim.inject(Fault::Reject);
    settle(&e).await;
    let s = read(&e, &t, &v.id).await;
    assert_eq!(s.status, "SETTLED", "{s:?}");
    assert_eq!(on_chain(&h, &a, Token::Usdt).await, m("39.96"));
    assert_eq!(treasury_on_chain(&h, Token::Usdt).await, m("960.04"));
    assert_eq!(wallet_ledger(&h, &a, Token::Usdt).await, 39_960_000);
    h.assert_conserved().await;
}

#[tokio::test]
async fn the_same_idempotency_key_accepts_one_swap() {
    let h = harness();
    let (e, t, a) = setup(&h, "1000").await;
    let first = e
        .swap(&t, &usdc_to_usdt(&a, "40"), Some("swap-key-1"))
        .await
        .unwrap();
    let again = e
        .swap(&t, &usdc_to_usdt(&a, "40"), Some("swap-key-1"))
        .await
        .unwrap();
    assert_eq!(first.id, again.id);
    let other = e
        .swap(&t, &usdc_to_usdt(&a, "41"), Some("swap-key-1"))
        .await
        .unwrap_err();
    assert_eq!(other.code(), "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(wallet_ledger(&h, &a, Token::Usdc).await, 60_000_000);
    settle(&e).await;
    assert_eq!(on_chain(&h, &a, Token::Usdt).await, m("39.96"));
}
