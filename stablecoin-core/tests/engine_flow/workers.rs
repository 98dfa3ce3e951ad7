//! The workers' ticks: claimed operations advance side by side, and a full claim reports
//! more due.

use super::harness::*;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{FundRequest, SendRequest};
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, RailId};
use stablecoin_rails::sim::SimRail;
use std::sync::Arc;

/// A rail in front of the simulated one that watches submissions: how many are on
/// their way at once, and which payment ids each sender submitted.
struct SubmitProbe {
    inner: Arc<SimRail>,
    state: std::sync::Mutex<ProbeState>,
}

#[derive(Default)]
struct ProbeState {
    in_flight: usize,
    max_in_flight: usize,
    submitted: std::collections::HashMap<String, Vec<String>>,
}

#[async_trait::async_trait]
impl Rail for SubmitProbe {
    fn id(&self) -> RailId {
        self.inner.id()
    }
    fn tokens(&self) -> Vec<stablecoin_core::domain::money::Token> {
        self.inner.tokens()
    }
    async fn readiness(&self) -> stablecoin_core::ports::Readiness {
        self.inner.readiness().await
    }
    async fn address_for(
        &self,
        purpose: &KeyPurpose,
    ) -> Result<ChainAddress, stablecoin_core::ports::RailError> {
        self.inner.address_for(purpose).await
    }
    async fn prepare_wallet(
        &self,
        purpose: &KeyPurpose,
    ) -> Result<(), stablecoin_core::ports::RailError> {
        self.inner.prepare_wallet(purpose).await
    }
    async fn balance(
        &self,
        address: &ChainAddress,
        token: Token,
    ) -> Result<Micros, stablecoin_core::ports::RailError> {
        self.inner.balance(address, token).await
    }
    async fn submit(
        &self,
        payment: &stablecoin_core::ports::RailPayment,
    ) -> Result<stablecoin_core::ports::Submission, stablecoin_core::ports::RailError> {
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
        let out = self.inner.submit(payment).await;
        self.state.lock().unwrap().in_flight -= 1;
        out
    }
    async fn status(
        &self,
        payment_id: &str,
    ) -> Result<stablecoin_core::ports::SubmissionStatus, stablecoin_core::ports::RailError> {
        self.inner.status(payment_id).await
    }
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<stablecoin_core::ports::ScanBatch, stablecoin_core::ports::RailError> {
        self.inner.scan(cursor, watched, limit).await
    }
}

#[tokio::test]
async fn a_tick_advances_its_claimed_operations_side_by_side() {
    let probe = Arc::new(std::sync::Mutex::new(None::<Arc<SubmitProbe>>));
    let slot = probe.clone();
    let h = harness_wrapping(move |sim| {
        let p = Arc::new(SubmitProbe {
            inner: sim,
            state: Default::default(),
        });
        *slot.lock().unwrap() = Some(p.clone());
        p
    });
    let probe = probe.lock().unwrap().clone().unwrap();
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
    for i in 0..limit + 1 {
        h.engine
            .fund(
                &acme,
                &FundRequest {
                    phone_number: to.clone(),
                    token: Token::Usdc,
                    amount: m("1"),
                },
                Some(&format!("f-{i}")),
            )
            .await
            .unwrap();
    }
    let first = h.engine.tick().await;
    assert_eq!(first.submitted, limit);
    assert!(first.more_due, "a full claim: more may be waiting");
    // The one left over, then the polls: all settle.
    h.settle().await;
    assert_eq!(h.chain_balance(&to).await, m("65"));
    h.assert_conserved().await;
}
