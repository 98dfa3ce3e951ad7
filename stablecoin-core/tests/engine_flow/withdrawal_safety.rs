//! Withdrawals resume after a crash at any step, a payout is refunded only on the
//! provider's own word that it failed (never on a timer), and a failed refund is retried.
//!
//! A crash is an engine dropped mid-step: its tick runs in a task until a gated rail or
//! provider call stalls, and the task is aborted there. A new engine (another worker id,
//! as a restarted process would be) over the same store, chain and provider takes over
//! once the dead worker's hold has lapsed.

use super::harness::*;
use super::money_safety::{Gate, engine_over, gated_harness};
use async_trait::async_trait;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{Engine, Operation, WithdrawRequest, accounts};
use stablecoin_core::memory::{MemoryPayouts, PayoutFault};
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};
use stablecoin_rails::sim::Fault;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The provider's `submit` through a [`Gate`]; `status` is the provider's own.
struct GatedPayouts {
    inner: Arc<MemoryPayouts>,
    gate: Arc<Gate>,
}

#[async_trait]
impl PayoutProvider for GatedPayouts {
    fn identity(&self) -> String {
        self.inner.identity()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        self.inner.resubmit_is_idempotent()
    }
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        self.gate.pass(&payout.id, self.inner.submit(payout)).await
    }
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        self.inner.status(payout_id).await
    }
}

/// Tenant "Acme", a provisioned phone holding 300 USDC (settled), and a withdrawal of
/// 100 of it accepted (PENDING).
async fn withdrawal(h: &H) -> (TenantId, Phone, String) {
    let t = h.tenant("Acme", "1000").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.fund_usdc(&t, &a, "300").await;
    h.settle().await;
    let w = h
        .engine
        .withdraw(
            &t,
            &WithdrawRequest {
                phone_number: a.clone(),
                token: Token::Usdc,
                amount: m("100"),
                payout_currency: "XOF".into(),
            },
            None,
        )
        .await
        .unwrap();
    (t, a, w.id)
}

async fn op(h: &H, t: &TenantId, id: &str) -> Operation {
    h.engine.operation(t, id).await.unwrap()
}

/// Runs `w1` until its gated call stalls, then kills it there.
async fn crash(w1: &Engine, gate: &Gate) {
    let task = tokio::spawn({
        let w1 = w1.clone();
        async move { w1.settle_all(100).await }
    });
    gate.wait_entered().await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
}

/// The process that takes over: worker 2, once the dead worker's hold has lapsed.
fn successor(h: &H) -> Engine {
    h.clock.advance_ms(h.engine.config().claim_lease_ms + 1);
    engine_over(h, "worker-2", h.engine.config().clone(), None)
}

/// The wallet's ledger balance and its chain balance, which must agree.
async fn wallet_balances(h: &H, p: &Phone) -> (i128, i128) {
    let id = stablecoin_core::domain::ids::WalletId(h.wallet(p).await.id);
    let ledger = h
        .ledger_available(&accounts::wallet(&id, Token::Usdc).id)
        .await;
    (ledger, h.chain_balance(p).await.get() as i128)
}

/// Drives `w` to the end, the provider paying what it holds; the withdrawal COMPLETED,
/// paid out once, the wallet down by the 100 withdrawn on chain and in the ledger.
async fn completes(h: &H, w: &Engine, t: &TenantId, a: &Phone, id: &str) {
    let r = w.settle_all(100).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    h.payouts.settle_all();
    let r = w.settle_all(100).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let o = op(h, t, id).await;
    assert_eq!(o.status.as_str(), "COMPLETED");
    assert!(o.view().refund_tx_hash.is_none());
    assert_eq!(h.payouts.submit_count(), 1, "paid out exactly once");
    assert_eq!(wallet_balances(h, a).await, (200_000_000, 200_000_000));
    h.assert_conserved().await;
}

/// Drives `w` to the end: REFUNDED, the 100 back in the wallet exactly once.
async fn refunds(h: &H, w: &Engine, t: &TenantId, a: &Phone, id: &str) {
    let r = w.settle_all(100).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let o = op(h, t, id).await;
    assert_eq!(o.status.as_str(), "REFUNDED");
    assert!(o.view().refund_tx_hash.is_some());
    assert_eq!(wallet_balances(h, a).await, (300_000_000, 300_000_000));
    h.assert_conserved().await;
}

#[tokio::test]
async fn a_crash_before_the_sweep_reaches_the_chain_fails_it_only_after_its_deadline() {
    let (h, gate) = gated_harness();
    let (t, a, id) = withdrawal(&h).await;
    gate.arm(&id, false);
    crash(&h.engine, &gate).await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "SUBMITTING");
    let w2 = successor(&h);
    w2.settle_all(100).await;
    let o = op(&h, &t, &id).await;
    assert_eq!(o.status.as_str(), "SUBMISSION_UNKNOWN");
    h.clock.set(o.payment.valid_until.unwrap().plus_millis(1));
    w2.settle_all(100).await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "FAILED");
    assert_eq!(h.payouts.submit_count(), 0);
    assert_eq!(wallet_balances(&h, &a).await, (300_000_000, 300_000_000));
    h.assert_conserved().await;
}

#[tokio::test]
async fn a_crash_after_the_sweep_was_sent_completes_the_withdrawal() {
    let (h, gate) = gated_harness();
    let (t, a, id) = withdrawal(&h).await;
    gate.arm(&id, true);
    crash(&h.engine, &gate).await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "SUBMITTING");
    let w2 = successor(&h);
    completes(&h, &w2, &t, &a, &id).await;
}

/// Worker 1 dies at its payout submit (`after`: once the provider received it), leaving
/// the provider with `at_provider`; worker 2 completes the withdrawal, paid out once.
async fn payout_crash(after: bool, at_provider: PayoutStatus) {
    let h = harness();
    let (t, a, id) = withdrawal(&h).await;
    let gate = Arc::new(Gate::default());
    let gated = Arc::new(GatedPayouts {
        inner: h.payouts.clone(),
        gate: gate.clone(),
    });
    let w1 = engine_over(&h, "worker-1", h.engine.config().clone(), Some(gated));
    gate.arm(&id, after);
    crash(&w1, &gate).await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "PAYOUT_SUBMITTING");
    assert_eq!(h.payouts.status_of(&id), at_provider);
    let w2 = successor(&h);
    completes(&h, &w2, &t, &a, &id).await;
}

#[tokio::test]
async fn a_crash_before_the_payout_reaches_the_provider_submits_it_again_and_completes() {
    payout_crash(false, PayoutStatus::NotFound).await;
}

#[tokio::test]
async fn a_crash_after_the_provider_received_the_payout_completes_it_once() {
    payout_crash(true, PayoutStatus::Pending).await;
}

#[tokio::test]
async fn a_crash_before_the_refund_reaches_the_chain_refunds_once() {
    let (h, gate) = gated_harness();
    let (t, a, id) = withdrawal(&h).await;
    h.payouts.inject(PayoutFault::Reject);
    gate.arm("-refund", false);
    crash(&h.engine, &gate).await;
    let o = op(&h, &t, &id).await;
    assert!(
        o.payout.as_ref().unwrap().refund.is_some(),
        "recorded first"
    );
    assert_eq!(wallet_balances(&h, &a).await.1, 200_000_000, "not sent yet");
    let w2 = successor(&h);
    refunds(&h, &w2, &t, &a, &id).await;
}

#[tokio::test]
async fn a_crash_after_the_refund_was_sent_refunds_once() {
    let (h, gate) = gated_harness();
    let (t, a, id) = withdrawal(&h).await;
    h.payouts.inject(PayoutFault::Reject);
    gate.arm("-refund", true);
    crash(&h.engine, &gate).await;
    let w2 = successor(&h);
    refunds(&h, &w2, &t, &a, &id).await;
    assert_eq!(
        op(&h, &t, &id).await.payout.unwrap().refund_attempts,
        1,
        "the attempt in flight was found, not replaced"
    );
}

/// A provider that is slow to show what it received: its status answers `NotFound`
/// until `visible`, and every submit's answer is lost.
struct LaggingProvider {
    inner: Arc<MemoryPayouts>,
    visible: AtomicBool,
}

#[async_trait]
impl PayoutProvider for LaggingProvider {
    fn identity(&self) -> String {
        self.inner.identity()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        self.inner.resubmit_is_idempotent()
    }
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        self.inner.submit(payout).await?;
        Err(PayoutError::Unknown(
            "timeout waiting for the provider".into(),
        ))
    }
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        if self.visible.load(Ordering::SeqCst) {
            self.inner.status(payout_id).await
        } else {
            Ok(PayoutStatus::NotFound)
        }
    }
}

#[tokio::test]
async fn a_payout_unknown_for_hours_is_never_refunded_while_the_provider_says_pending() {
    let h = harness();
    let (t, a, id) = withdrawal(&h).await;
    let provider = Arc::new(LaggingProvider {
        inner: h.payouts.clone(),
        visible: AtomicBool::new(false),
    });
    let w = engine_over(
        &h,
        "worker-1",
        h.engine.config().clone(),
        Some(provider.clone()),
    );
    w.settle_all(100).await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "PAYOUT_UNKNOWN");
    let still_out = |o: &Operation| {
        assert_eq!(o.status.as_str(), "PAYOUT_UNKNOWN");
        assert!(
            o.payout.as_ref().unwrap().refund.is_none(),
            "no refund started"
        );
    };
    // An hour in which the provider has not even shown it yet, then five in which it
    // says pending: never refunded, never paid twice.
    for minute in 0..6 * 60 {
        if minute == 60 {
            provider.visible.store(true, Ordering::SeqCst);
        }
        h.clock.advance_ms(60_000);
        w.tick().await;
        still_out(&op(&h, &t, &id).await);
    }
    assert_eq!(wallet_balances(&h, &a).await, (200_000_000, 200_000_000));
    assert_eq!(h.payouts.submit_count(), 1, "the provider holds it once");
    assert_eq!(h.payouts.status_of(&id), PayoutStatus::Pending);

    // The provider pays it: COMPLETED, with its evidence.
    h.payouts.settle_all();
    w.settle_all(100).await;
    let o = op(&h, &t, &id).await;
    assert_eq!(o.status.as_str(), "COMPLETED");
    assert!(o.view().payout_reference.is_some());
    assert_eq!(wallet_balances(&h, &a).await, (200_000_000, 200_000_000));
    h.assert_conserved().await;
}

#[tokio::test]
async fn only_the_providers_word_that_the_payout_failed_starts_the_refund() {
    let h = harness();
    let (t, a, id) = withdrawal(&h).await;
    h.payouts.inject(PayoutFault::LostResponse);
    h.settle().await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "PAYOUT_UNKNOWN");
    h.clock.advance_ms(24 * 3_600_000);
    h.settle().await;
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "PAYOUT_UNKNOWN");
    h.payouts.fail(&id, "recipient account closed");
    refunds(&h, &h.engine, &t, &a, &id).await;
    assert_eq!(
        op(&h, &t, &id).await.error_reason.as_deref(),
        Some("recipient account closed")
    );
}

#[tokio::test]
async fn a_failed_refund_is_retried_with_backoff_until_it_lands() {
    let h = harness();
    let (t, a, id) = withdrawal(&h).await;
    // Sweep the crypto first (CRYPTO_RECEIVED), so the faults below hit the refund.
    for _ in 0..20 {
        h.engine.tick().await;
        if op(&h, &t, &id).await.status.as_str() == "CRYPTO_RECEIVED" {
            break;
        }
    }
    assert_eq!(op(&h, &t, &id).await.status.as_str(), "CRYPTO_RECEIVED");
    h.payouts.inject(PayoutFault::Reject);
    let leg = |o: Operation| o.payout.unwrap();

    // Attempt 1 is refused by the node: retried under the same id after 30 s.
    h.sim.inject(Fault::Reject);
    let r = h.engine.settle_all(100).await;
    assert!(
        r.errors
            .iter()
            .any(|e| e.contains("refund attempt 1 failed")),
        "{r:?}"
    );
    let l = leg(op(&h, &t, &id).await);
    assert_eq!((l.refund_attempts, l.refund_failures), (1, 1));
    assert!(l.refund_error.is_some());
    h.clock.advance_ms(29_000);
    assert_eq!(h.engine.tick().await.submitted, 0, "not before its backoff");

    // Sent, then it reverts on chain: nothing moved; the next attempt waits until this
    // one is past its deadline (nothing of it can land any more), backing off meanwhile.
    h.sim.inject(Fault::Revert);
    h.clock.advance_ms(1_000);
    h.engine.settle_all(100).await;
    let l = leg(op(&h, &t, &id).await);
    assert_eq!((l.refund_attempts, l.refund_failures), (1, 2));
    let attempt_1 = l.refund.unwrap();
    assert_eq!(attempt_1.id, format!("{id}-refund"));
    h.clock.set(attempt_1.valid_until.unwrap());
    h.engine.settle_all(100).await;
    assert_eq!(
        leg(op(&h, &t, &id).await).refund_attempts,
        1,
        "not yet dead"
    );
    assert_eq!(wallet_balances(&h, &a).await, (200_000_000, 200_000_000));

    // Past it: attempt 2, under its own id, lands: REFUNDED once.
    h.clock.advance_ms(1);
    refunds(&h, &h.engine, &t, &a, &id).await;
    let l = leg(op(&h, &t, &id).await);
    assert_eq!(l.refund_attempts, 2);
    assert_eq!(l.refund.unwrap().id, format!("{id}-refund-2"));
}
