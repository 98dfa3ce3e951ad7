//! Checkout in the simulated world: each tenant's business opens payment sessions; payers
//! pay from outside (in full, in part, too much, late); the checkout worker credits them
//! and sweeps the session addresses to the treasury. A third of the sessions are opened
//! by payers from the business's payment links (issue #50), at an amount of their own;
//! each link's counts are checked against the sessions opened from it.

use super::world::World;
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::engine::{AuthContext, Engine};
use stablecoin::core::ports::{ChainAddress, Rail};
use stablecoin_checkout::links::CreatePaymentLinkRequest;
use stablecoin_checkout::model::accounts;
use stablecoin_checkout::{CheckoutConfig, CheckoutEngine, CheckoutError, CreateSessionRequest};
use std::collections::BTreeMap;

/// One session the workload opened, and what was paid to it.
pub struct Session {
    pub id: String,
    pub tenant: usize,
    /// The business (kept for a failure's message).
    pub business: String,
    pub address: ChainAddress,
    pub amount: Micros,
    pub minted: u64,
    /// The payment link a payer opened it from, if any.
    pub link: Option<String>,
}

pub fn engine(core: &Engine, worker: String) -> CheckoutEngine {
    CheckoutEngine::new(
        core.kernel(),
        CheckoutConfig {
            worker_id: worker,
            // Claim links expire within a run (and within the drain).
            refund_claim_secs: 600,
            ..CheckoutConfig::default()
        },
    )
    .unwrap()
}

impl World {
    /// Every tenant's business, and its live key's authentication.
    pub async fn create_businesses(&mut self) {
        for t in self.tenants.clone() {
            let b = self
                .checkout
                .create_business(&t, "Corner Shop")
                .await
                .unwrap();
            let auth: AuthContext = self
                .engine
                .authenticate(b.live_key.as_deref().unwrap())
                .await
                .unwrap();
            self.businesses.push((b.business.id, auth));
        }
    }

    /// One checkout action, chosen by the seed.
    pub async fn checkout_step(
        &mut self,
        key: Option<&str>,
    ) -> (&'static str, Result<(), CheckoutError>) {
        if self.sessions.is_empty() || self.rng.below(3) == 0 {
            return self.checkout_open(key).await;
        }
        let i = self.rng.below(self.sessions.len() as u64) as usize;
        if self.rng.below(8) == 0 {
            let s = &self.sessions[i];
            let auth = self.businesses[s.tenant].1.clone();
            let id = s.id.clone();
            return (
                "checkout_cancel",
                self.checkout.cancel_session(&auth, &id).await.map(drop),
            );
        }
        let s = &self.sessions[i];
        let amount = match self.rng.below(4) {
            0 => 1 + self.rng.below(s.amount.get()),
            1 => s.amount.get() + 1 + self.rng.below(1_000_000),
            _ => s.amount.get(),
        };
        self.evm
            .mint(&s.address, Token::Usdc, Micros::new(amount))
            .unwrap();
        self.sessions[i].minted += amount;
        ("checkout_pay", Ok(()))
    }

    /// Opens a session: the business's own (`checkout_open`) or a payer's from a
    /// payment link (`checkout_link_open`).
    async fn checkout_open(
        &mut self,
        key: Option<&str>,
    ) -> (&'static str, Result<(), CheckoutError>) {
        let via_link = self.rng.below(3) == 0;
        let name = if via_link {
            "checkout_link_open"
        } else {
            "checkout_open"
        };
        (name, self.checkout_open_as(key, via_link).await)
    }

    async fn checkout_open_as(
        &mut self,
        key: Option<&str>,
        via_link: bool,
    ) -> Result<(), CheckoutError> {
        let tenant = self.rng.below(self.tenants.len() as u64) as usize;
        let amount = Micros::new(1_000_000 + self.rng.below(100_000_000));
        let req = CreateSessionRequest {
            amount: amount.to_decimal_string(),
            currency: "USDC".into(),
            reference: Some(format!("order-{}", self.rng.below(1_000))),
            expires_in_secs: Some(600 + self.rng.below(1_200)),
            ..Default::default()
        };
        let (business, auth) = self.businesses[tenant].clone();
        let mut link = None;
        let v = if via_link {
            // A payer at one of the business's links (a new one now and then).
            let known = self
                .sessions
                .iter()
                .filter(|s| s.tenant == tenant)
                .find_map(|s| s.link.clone());
            let id = match known {
                Some(id) if self.rng.below(4) != 0 => id,
                _ => {
                    let new = CreatePaymentLinkRequest {
                        min_amount: Some("1".into()),
                        max_amount: Some("101".into()),
                        currency: "USDC".into(),
                        description: Some("Tips".into()),
                        ..Default::default()
                    };
                    self.checkout
                        .create_payment_link(&auth, &new, key)
                        .await?
                        .link_id
                }
            };
            let v = self
                .checkout
                .open_link_session(&id, Some(&amount.to_decimal_string()))
                .await?;
            assert_eq!(v.payment_link_id.as_deref(), Some(id.as_str()));
            link = Some(id);
            v
        } else {
            self.checkout.create_session(&auth, &req, key).await?
        };
        if self.sessions.iter().any(|s| s.id == v.session_id) {
            return Ok(()); // a replayed key
        }
        let network = super::world::EVM.rail_id().name();
        let option = v
            .payment_options
            .iter()
            .find(|o| o.network == network && o.token == "USDC")
            .expect("a USDC option on the simulated chain");
        self.sessions.push(Session {
            id: v.session_id.clone(),
            tenant,
            business,
            address: ChainAddress(option.address.clone()),
            amount: Micros::parse_decimal(&v.amount).unwrap(),
            minted: 0,
            link,
        });
        Ok(())
    }
}

/// Checkout refusals a client can cause, and the injected failures.
pub fn client_caused(e: &CheckoutError) -> bool {
    matches!(
        e.code(),
        "INVALID_STATE"
            | "CONFLICT"
            | "IDEMPOTENCY_KEY_REUSED"
            | "IDEMPOTENCY_KEY_IN_USE"
            | "STORAGE_ERROR"
    )
}

/// After the drain: every session address is swept empty, and every micro-unit paid to
/// a session is in exactly one place: still held for it, owed back by its business
/// (refundable), credited to the tenant's treasury with the session PAID, or refunded
/// from the refundable account (`refunds::after_drain` checks the refunds themselves).
pub async fn after_drain(w: &World) {
    let seed = w.seed;
    let mut minted = 0u64;
    let mut paid_sessions = 0u64;
    let mut held = 0i128;
    for s in &w.sessions {
        let on_chain = w.evm.balance(&s.address, Token::Usdc).await.unwrap().get();
        assert_eq!(
            on_chain, 0,
            "seed {seed}: session {} of {} not swept",
            s.id, s.business
        );
        minted += s.minted;
        let auth = &w.businesses[s.tenant].1;
        let v = w.checkout.get_session(auth, &s.id).await.unwrap();
        if v.status == stablecoin_checkout::SessionStatus::Paid.as_str() {
            paid_sessions += s.amount.get();
        }
        held += w
            .ledger
            .balance(&accounts::held(&s.id, Token::Usdc).id)
            .await
            .map(|b| b.posted())
            .unwrap_or(0);
    }
    // Every link counts exactly the sessions opened from it, and the paid ones.
    let mut links: BTreeMap<&str, (usize, u64, u64)> = BTreeMap::new();
    for s in &w.sessions {
        let Some(link) = s.link.as_deref() else {
            continue;
        };
        let auth = &w.businesses[s.tenant].1;
        let v = w.checkout.get_session(auth, &s.id).await.unwrap();
        let e = links.entry(link).or_insert((s.tenant, 0, 0));
        e.1 += 1;
        if v.status == stablecoin_checkout::SessionStatus::Paid.as_str() {
            e.2 += 1;
        }
    }
    for (link, (tenant, opened, paid)) in links {
        let v = w
            .checkout
            .get_payment_link(&w.businesses[tenant].1, link)
            .await
            .unwrap();
        assert_eq!(
            (v.sessions_count, v.payments_count),
            (opened, paid),
            "seed {seed}: payment link {link}: sessions and payments counted"
        );
    }
    let mut refundable = 0i128;
    for (t, (business, _)) in w.tenants.iter().zip(&w.businesses) {
        refundable += w
            .ledger
            .balance(&accounts::refundable(t, business, Token::Usdc).id)
            .await
            .map(|b| b.posted())
            .unwrap_or(0);
    }
    // What completed refunds took from the refundable accounts went back out on chain
    // (their part from a paid session's settled money left the treasury instead).
    let mut refunded_owed = 0i128;
    for (_, r) in w.all_refunds().await {
        if r.status == "completed" {
            refunded_owed += Micros::parse_decimal(&r.from_refundable).unwrap().get() as i128;
        }
    }
    assert_eq!(
        minted as i128,
        held + refundable + paid_sessions as i128 + refunded_owed,
        "seed {seed}: checkout payments: minted {minted} != held {held} + refundable \
         {refundable} + paid sessions {paid_sessions} + refunded from refundable \
         {refunded_owed}"
    );
}
