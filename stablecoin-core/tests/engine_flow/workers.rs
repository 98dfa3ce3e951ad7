//! The workers' ticks: claimed operations advance side by side, and a full claim reports
//! more due.

use super::harness::*;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::SendRequest;
use stablecoin_core::ports::{KeyPurpose, Rail, RailError, RailPayment, Submission};
use stablecoin_core::testkit::{DelegatingRail, RailOverride};
use std::sync::Arc;

/// Watches submissions in front of the simulated rail: how many are on their way at
/// once, and which payment ids each sender submitted. Every other method is the rail's.
#[derive(Default)]
struct SubmitProbe {
    state: std::sync::Mutex<ProbeState>,
}

#[derive(Default)]
struct ProbeState {
    in_flight: usize,
    max_in_flight: usize,
    submitted: std::collections::HashMap<String, Vec<String>>,
}

#[async_trait::async_trait]
impl RailOverride for SubmitProbe {
    async fn submit(
        &self,
        inner: &dyn Rail,
        payment: &RailPayment,
    ) -> Result<Submission, RailError> {
        {
            let mut s = self.state.lock().unwrap();
            s.in_flight += 1;
            s.max_in_flight = s.max_in_flight.max(s.in_flight);
            s.submitted
                .entry(payment.from_address.0.clone())
                .or_default()
                .push(payment.id.clone());
        }
        // A network round trip: other submissions get their chance to start meanwhile.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let out = inner.submit(payment).await;
        self.state.lock().unwrap().in_flight -= 1;
        out
    }
}

#[tokio::test]
async fn a_tick_advances_its_claimed_operations_side_by_side() {
    let probe = Arc::new(std::sync::Mutex::new(
        None::<Arc<DelegatingRail<SubmitProbe>>>,
    ));
    let slot = probe.clone();
    let h = harness_wrapping(move |sim| {
        let p = Arc::new(DelegatingRail::new(sim, SubmitProbe::default()));
        *slot.lock().unwrap() = Some(p.clone());
        p
    });
    let probe = probe.lock().unwrap().clone().unwrap();
    let probe = probe.overrides();
    let acme = h.tenant("Acme", "1000").await;
    let senders: Vec<Phone> = (1..=3)
        .map(|i| phone(&format!("+22507000001{i:02}")))
        .collect();
    let to = phone("+2250700000199");
    h.engine.provision(&acme, &to).await.unwrap();
    for p in &senders {
        h.engine.provision(&acme, p).await.unwrap();
        h.fund_usdc(&acme, p, "100").await;
    }
    h.settle().await;
    let treasury = h.sim.address_for(&KeyPurpose::Treasury).await.unwrap();
    {
        let mut s = probe.state.lock().unwrap();
        assert_eq!(s.submitted[&treasury.0].len(), 3);
        assert_eq!(s.max_in_flight, 3, "the three fundings went out together");
        *s = ProbeState::default();
    }

    // Four transfers from each sender.
    let mut made: std::collections::HashMap<String, Vec<String>> = Default::default();
    for round in 0..4 {
        for (i, p) in senders.iter().enumerate() {
            h.clock.advance_ms(1);
            let sent = h
                .engine
                .send(
                    &acme,
                    &SendRequest {
                        from_phone_number: p.clone(),
                        to_phone_number: to.clone(),
                        token: Token::Usdc,
                        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
                    },
                    Some(&format!("send-{round}-{i}")),
                )
                .await
                .unwrap();
            let address = h.engine.provision_lookup(p).await.0;
            made.entry(address).or_default().push(sent.id);
        }
    }
    // One tick claims all twelve and has them all on their way at once.
    let r = h.engine.tick().await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.submitted, 12);
    assert!(!r.more_due, "12 < batch_limit");
    {
        let s = probe.state.lock().unwrap();
        assert_eq!(s.max_in_flight, 12);
        // Claimed (and so started) oldest first; each payment submitted once.
        assert_eq!(s.submitted, made);
    }
    h.settle().await;
    assert_eq!(h.chain_balance(&to).await, m("11.964"), "12 x 0.997");
    assert_eq!(
        h.sim.submit_count(),
        15,
        "3 fundings + 12 transfers, none twice"
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn a_full_claim_reports_more_due() {
    let h = harness();
    let acme = h.tenant("Acme", "1000").await;
    let to = phone("+2250700000199");
    h.engine.provision(&acme, &to).await.unwrap();
    let limit = h.engine.config().batch_limit;
    for _ in 0..limit + 1 {
        h.fund_usdc(&acme, &to, "1").await;
    }
    let first = h.engine.tick().await;
    assert_eq!(first.submitted, limit);
    assert!(first.more_due, "a full claim: more may be waiting");
    // The one left over, then the polls: all settle.
    h.settle().await;
    assert_eq!(h.chain_balance(&to).await, m("65"));
    h.assert_conserved().await;
}

/// Polls are claimed from their own lane: a queue of first submissions older than a
/// poll's due time (more than a whole claim of them) does not keep the poll waiting. In
/// one queue, oldest due first, this tick would claim only fundings and the submitted
/// payment would wait for the queue to drain.
#[tokio::test]
async fn a_queue_of_submissions_never_starves_the_polls() {
    use stablecoin_core::domain::state::OpStatus;
    use stablecoin_core::ports::Clock;
    let h = harness();
    let acme = h.tenant("Acme", "1000").await;
    let to = phone("+2250700000198");
    h.engine.provision(&acme, &to).await.unwrap();
    let first = h.fund_usdc(&acme, &to, "1").await;
    let r = h.engine.tick().await;
    assert_eq!(r.submitted, 1, "{r:?}");
    // A whole claim of fundings, due a second before the first one's poll.
    let t0 = h.clock.now();
    h.clock.set(t0.plus_millis(-1_000));
    let limit = h.engine.config().batch_limit;
    for _ in 0..limit + 5 {
        h.fund_usdc(&acme, &to, "1").await;
    }
    h.clock.set(t0);
    let r = h.engine.tick().await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.submitted, limit, "one claim of submissions");
    assert!(r.more_due);
    assert_eq!(
        r.polled + r.settled,
        1,
        "the submitted payment was polled beside the full claim of submissions: {r:?}"
    );
    let op = h.engine.operation(&acme, &first.id).await.unwrap();
    assert_ne!(op.status, OpStatus::Queued);
    h.settle().await;
    h.assert_conserved().await;
}

/// A lane's round touches its own lane only (a server runs each as a loop of its own):
/// the advance lane leaves queued operations alone, the submission lane submits them and
/// polls nothing, and the advance lane then settles them.
#[tokio::test]
async fn a_lane_round_advances_its_own_lane_only() {
    use stablecoin_core::engine::{LANE_ADVANCE, LANE_SUBMIT};
    let h = harness();
    let acme = h.tenant("Acme", "1000").await;
    let to = phone("+2250700000197");
    h.engine.provision(&acme, &to).await.unwrap();
    for _ in 0..3 {
        h.fund_usdc(&acme, &to, "2").await;
    }
    let r = h.engine.tick_lane(LANE_ADVANCE).await;
    assert!(
        r.is_idle(),
        "nothing submitted yet is the advance lane's: {r:?}"
    );
    let r = h.engine.tick_lane(LANE_SUBMIT).await;
    assert_eq!((r.submitted, r.polled, r.settled), (3, 0, 0), "{r:?}");
    let r = h.engine.tick_lane(LANE_SUBMIT).await;
    assert!(r.is_idle(), "submitted operations left the lane: {r:?}");
    let mut settled = 0;
    for _ in 0..10 {
        settled += h.engine.tick_lane(LANE_ADVANCE).await.settled;
    }
    assert_eq!(settled, 3);
    assert_eq!(h.chain_balance(&to).await, m("6"));
    h.assert_conserved().await;
}

/// Records, per commit, how many holds it posts (settlements); with `refuse_merged`, it
/// refuses any commit posting the holds of more than one operation, as a store would
/// refuse a merged commit one of whose decisions is faulty.
#[derive(Default)]
struct PostsPerCommit {
    refuse_merged: bool,
    posts: std::sync::Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl stablecoin_core::testkit::StoreOverride for PostsPerCommit {
    async fn commit(
        &self,
        inner: &dyn stablecoin_core::ports::Store,
        batch: stablecoin_core::ports::Batch,
    ) -> Result<stablecoin_core::ports::CommitReceipt, stablecoin_core::ports::StoreError> {
        let posts = batch
            .ledger
            .iter()
            .filter(|t| matches!(t.phase, stablecoin_core::ports::Phase::Post { .. }))
            .count();
        if self.refuse_merged && posts > 1 {
            return Err(stablecoin_core::ports::StoreError::Backend(
                "refused (injected)".into(),
            ));
        }
        let receipt = inner.commit(batch).await?;
        if posts > 0 {
            self.posts.lock().unwrap().push(posts);
        }
        Ok(receipt)
    }
}

async fn settle_five_fundings(refuse_merged: bool) -> Vec<usize> {
    let probe = Arc::new(PostsPerCommit {
        refuse_merged,
        ..Default::default()
    });
    let p = probe.clone();
    let h = harness_with(
        |sim| sim,
        move |inner| {
            Arc::new(stablecoin_core::testkit::DelegatingStore::new(
                inner,
                SharedProbe(p),
            ))
        },
    );
    let acme = h.tenant("Acme", "1000").await;
    for i in 0..5 {
        let to = phone(&format!("+22507000003{i:02}"));
        h.engine.provision(&acme, &to).await.unwrap();
        h.fund_usdc(&acme, &to, "2").await;
    }
    let r = h.engine.settle_all(50).await;
    assert_eq!((r.submitted, r.settled, r.failed), (5, 5, 0), "{r:?}");
    h.assert_conserved().await;
    for i in 0..5 {
        assert_eq!(
            h.chain_balance(&phone(&format!("+22507000003{i:02}")))
                .await,
            m("2")
        );
    }
    probe.posts.lock().unwrap().clone()
}

/// Forwards to a shared [`PostsPerCommit`].
struct SharedProbe(Arc<PostsPerCommit>);

#[async_trait::async_trait]
impl stablecoin_core::testkit::StoreOverride for SharedProbe {
    async fn commit(
        &self,
        inner: &dyn stablecoin_core::ports::Store,
        batch: stablecoin_core::ports::Batch,
    ) -> Result<stablecoin_core::ports::CommitReceipt, stablecoin_core::ports::StoreError> {
        stablecoin_core::testkit::StoreOverride::commit(&*self.0, inner, batch).await
    }
}

/// The payments a tick finds confirmed settle in one commit (their holds posted
/// together); when the store refuses that merged commit, each settles in its own and
/// nothing is lost or posted twice.
#[tokio::test]
async fn the_polls_of_a_tick_settle_in_one_commit_or_one_each_if_refused() {
    // The simulated chain mines a block per status call, so the five may reach their
    // depth across two ticks: fewer commits than settlements, each posting several.
    let merged = settle_five_fundings(false).await;
    assert_eq!(merged.iter().sum::<usize>(), 5, "{merged:?}");
    assert!(
        merged.len() < 5 && merged.iter().any(|&n| n > 1),
        "settlements share commits: {merged:?}"
    );
    let apart = settle_five_fundings(true).await;
    assert_eq!(apart, [1, 1, 1, 1, 1], "refused together: one commit each");
}
