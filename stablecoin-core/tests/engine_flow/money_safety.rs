//! Money safety of the background work with several workers (processes on one
//! database): the claim is held across `rail.submit`, and an operation is voided only
//! when its payment provably can no longer land (the rail's `NotFound` after the
//! payment's deadline), never on a timer.

use super::harness::*;
use async_trait::async_trait;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{Engine, EngineConfig, SendRequest, accounts};
use stablecoin_core::ports::{
    Clock, Ledger, PayoutProvider, Rail, RailError, RailPayment, Submission,
};
use stablecoin_core::testkit::{DelegatingRail, RailOverride};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// A gate in front of one rail or provider call: when armed, the next call matching it
/// signals `entered` and then waits for `release` (a stalled network call), either before
/// the call reaches the chain or provider (`after: false`) or after (`after: true`).
#[derive(Default)]
pub(crate) struct Gate {
    /// The id (or id suffix) whose call stalls; empty: disarmed.
    target: std::sync::Mutex<String>,
    after: AtomicBool,
    pub(crate) entered: Notify,
    pub(crate) release: Notify,
}

impl Gate {
    /// The next call for an id ending in `suffix` stalls (`after`: once it went through).
    pub(crate) fn arm(&self, suffix: &str, after: bool) {
        *self.target.lock().unwrap() = suffix.to_string();
        self.after.store(after, Ordering::SeqCst);
    }

    /// Whether this call (for `id`) is the armed one; disarms it.
    fn take(&self, id: &str) -> Option<bool> {
        let mut t = self.target.lock().unwrap();
        if t.is_empty() || !id.ends_with(t.as_str()) {
            return None;
        }
        t.clear();
        Some(self.after.load(Ordering::SeqCst))
    }

    /// Runs `call` through the gate.
    pub(crate) async fn pass<T>(&self, id: &str, call: impl Future<Output = T>) -> T {
        match self.take(id) {
            None => call.await,
            Some(false) => {
                self.entered.notify_one();
                self.release.notified().await;
                call.await
            }
            Some(true) => {
                let out = call.await;
                self.entered.notify_one();
                self.release.notified().await;
                out
            }
        }
    }

    /// Waits (bounded) until the armed call has stalled.
    pub(crate) async fn wait_entered(&self) {
        tokio::time::timeout(Duration::from_secs(20), self.entered.notified())
            .await
            .expect("the armed call was never made");
    }
}

/// The rail's `submit` through a [`Gate`].
#[derive(Clone, Default)]
pub(crate) struct GatedSubmit(pub(crate) Arc<Gate>);

#[async_trait]
impl RailOverride for GatedSubmit {
    async fn submit(&self, inner: &dyn Rail, p: &RailPayment) -> Result<Submission, RailError> {
        self.0.pass(&p.id, inner.submit(p)).await
    }
}

/// The harness with its EVM rail's `submit` behind a gate.
pub(crate) fn gated_harness() -> (H, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let g = GatedSubmit(gate.clone());
    let h = harness_wrapping(move |sim| Arc::new(DelegatingRail::new(sim, g)));
    (h, gate)
}

/// Another engine (another process, worker `worker`) over the harness's store, rails
/// and ports, with `config`; its payout provider is `payouts` when given.
pub(crate) fn engine_over(
    h: &H,
    worker: &str,
    config: EngineConfig,
    payouts: Option<Arc<dyn PayoutProvider>>,
) -> Engine {
    let mut ports = h.engine.ports().clone();
    if let Some(p) = payouts {
        ports.payouts = p;
    }
    let rails: Vec<Arc<dyn Rail>> = h.engine.rails().cloned().collect();
    Engine::new(
        ports,
        rails,
        EngineConfig {
            worker_id: worker.into(),
            ..config
        },
    )
}

/// The production timings: a 30 s claim lease, a 60 s margin after a deadline, a 10 min
/// payment window (polls at once, so the test drives every step).
fn production_timings() -> EngineConfig {
    EngineConfig {
        claim_lease_ms: 30_000,
        unknown_grace_ms: 60_000,
        payment_validity_ms: 600_000,
        poll_interval_ms: 0,
        ..EngineConfig::default()
    }
}

/// Tenant, two provisioned phones, the first funded with 100 USDC (settled).
async fn funded_pair(h: &H) -> (stablecoin_core::domain::ids::TenantId, Phone, Phone) {
    let t = h.tenant("Acme", "1000").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    h.engine.provision(&t, &a).await.unwrap();
    h.engine.provision(&t, &b).await.unwrap();
    h.fund_usdc(&t, &a, "100").await;
    h.settle().await;
    (t, a, b)
}

async fn status(h: &H, t: &stablecoin_core::domain::ids::TenantId, id: &str) -> String {
    h.engine
        .operation(t, id)
        .await
        .unwrap()
        .status
        .as_str()
        .to_string()
}

/// Whether any ledger transfer of the operation was voided (its holds returned).
async fn voided(h: &H, account: &str, op: &str) -> bool {
    h.store
        .history(account, 0, 1_000)
        .await
        .unwrap()
        .iter()
        .any(|e| e.transfer_id.starts_with(op) && e.transfer_id.ends_with(":void"))
}

/// A transfer of 20 USDC from `a` to `b` that worker 1 has claimed and is stalled on
/// inside `rail.submit`, before the chain; worker 2 runs beside it over the same store.
struct Stalled {
    t: stablecoin_core::domain::ids::TenantId,
    a: Phone,
    b: Phone,
    w2: Engine,
    id: String,
    first: tokio::task::JoinHandle<stablecoin_core::engine::TickReport>,
}

/// Two workers over one store (production timings) and a [`Stalled`] transfer.
async fn stalled_transfer(h: &H, gate: &Gate) -> Stalled {
    let (t, a, b) = funded_pair(h).await;
    let w1 = engine_over(h, "worker-1", production_timings(), None);
    let w2 = engine_over(h, "worker-2", production_timings(), None);
    let op = h
        .engine
        .send(
            &t,
            &SendRequest {
                from_phone_number: a.clone(),
                to_phone_number: b.clone(),
                token: Token::Usdc,
                quote_id: "DIRECT_CRYPTO:USDC:20".into(),
            },
            None,
        )
        .await
        .unwrap();
    gate.arm(&op.id, false);
    let first = tokio::spawn(async move { w1.tick().await });
    gate.wait_entered().await;
    assert_eq!(status(h, &t, &op.id).await, "SUBMITTING");
    Stalled {
        t,
        a,
        b,
        w2,
        id: op.id,
        first,
    }
}

#[tokio::test]
async fn two_workers_and_a_stalled_submit_never_void_a_payment_that_lands() {
    let (h, gate) = gated_harness();
    // Worker 1 claims the transfer and stalls inside `rail.submit`, before the chain.
    let s = stalled_transfer(&h, &gate).await;
    let (t, a, b, w2, id) = (s.t, s.a, s.b, s.w2, s.id);

    // The claim is held across the submit: within the lease worker 2 takes nothing.
    h.clock.advance_ms(10_000);
    let r = w2.tick().await;
    assert_eq!((r.unknown, r.failed), (0, 0), "{r:?}");
    assert_eq!(status(&h, &t, &id).await, "SUBMITTING");

    // Long past the lease and the old 60 s grace, worker 2 finds it SUBMITTING (the
    // outcome is unknown) and the rail has never heard of it: still not voided.
    for _ in 0..5 {
        h.clock.advance_ms(90_000);
        w2.settle_all(10).await;
        assert_eq!(status(&h, &t, &id).await, "SUBMISSION_UNKNOWN");
    }
    let sender = h.wallet(&a).await.id;
    let sender_account = accounts::wallet(
        &stablecoin_core::domain::ids::WalletId(sender.clone()),
        Token::Usdc,
    )
    .id;
    let held = h.store.balance(&sender_account).await.unwrap();
    assert_eq!(
        held.debits_pending, 20_000_000,
        "the holds are still pending"
    );
    assert!(!voided(&h, &sender_account, &id).await);

    // Worker 1's submit goes through, before the deadline: the payment lands.
    gate.release.notify_one();
    s.first.await.unwrap();
    let r = w2.settle_all(50).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(status(&h, &t, &id).await, "SETTLED");
    assert_eq!(h.chain_balance(&b).await, m("19.94"));
    assert_eq!(h.chain_balance(&a).await, m("80"));
    let after = h.store.balance(&sender_account).await.unwrap();
    assert_eq!(after.debits_pending, 0);
    assert_eq!(after.posted(), 80_000_000, "the holds were posted");
    assert!(!voided(&h, &sender_account, &id).await, "never voided");
    h.assert_conserved().await;
}

#[tokio::test]
async fn a_payment_voided_after_its_deadline_can_no_longer_land() {
    let (h, gate) = gated_harness();
    let s = stalled_transfer(&h, &gate).await;
    let (t, a, b, w2, id) = (s.t, s.a, s.b, s.w2, s.id);
    let deadline = h
        .engine
        .operation(&t, &id)
        .await
        .unwrap()
        .payment
        .valid_until
        .expect("the deadline is stored before the submit");
    assert_eq!(
        deadline,
        h.clock.now().plus_millis(600_000),
        "deadline = first submit + the payment window"
    );

    // At the deadline plus the margin, still nothing on chain: the rail's NotFound is
    // now a proof, and worker 2 fails the transfer and returns the money.
    h.clock.set(deadline.plus_millis(60_000));
    w2.settle_all(10).await;
    assert_eq!(status(&h, &t, &id).await, "SUBMISSION_UNKNOWN", "margin");
    h.clock.advance_ms(1);
    w2.settle_all(10).await;
    assert_eq!(status(&h, &t, &id).await, "FAILED");

    // Worker 1's stalled submit goes on: the chain refuses a payment past its deadline.
    gate.release.notify_one();
    let r = s.first.await.unwrap();
    assert_eq!(r.submitted, 0, "{r:?}");
    h.sim.mine(3);
    assert_eq!(h.chain_balance(&b).await, m("0"));
    assert_eq!(h.chain_balance(&a).await, m("100"));
    let sender = stablecoin_core::domain::ids::WalletId(h.wallet(&a).await.id);
    assert_eq!(
        h.ledger_available(&accounts::wallet(&sender, Token::Usdc).id)
            .await,
        100_000_000,
        "ledger and chain agree"
    );
    h.assert_conserved().await;
}
