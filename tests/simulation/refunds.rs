//! Checkout refunds in the simulated world (issue #50): businesses refund sessions to a
//! payer's address or by claim link, all that is refundable, a part, or more than it
//! (refused); payers claim some links, the others expire and their money goes back; the
//! first tenant's business refunds excess and late payments automatically, to the
//! paying address (the chain's faucet here).
//!
//! After the drain, `after_drain` checks: every refund is terminal and nothing stays
//! reserved for one; each destination holds exactly the completed refunds to it on
//! chain (nothing refunded twice); no session had more refunded than it was paid
//! (nothing refunded that was not received); and a refused refund moved nothing.

use super::screening::Flag;
use super::world::{EVM, World};
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::ports::{ChainAddress, Rail};
use stablecoin_checkout::CheckoutError;
use stablecoin_checkout::model::accounts;
use stablecoin_checkout::refund_model::refund_account;
use stablecoin_checkout::refund_views::{CreateRefundRequest, RefundView};
use std::collections::BTreeMap;

/// Statuses after which a refund never changes.
const TERMINAL: [&str; 3] = ["completed", "failed", "expired"];

impl World {
    /// One refund action: a payer claims a refund link now and then, otherwise a
    /// business refunds one of its sessions.
    pub async fn refund_step(
        &mut self,
        key: Option<&str>,
    ) -> (&'static str, Result<(), CheckoutError>) {
        let (name, r) = if !self.refunds.is_empty() && self.rng.below(2) == 0 {
            ("checkout_refund_claim", self.refund_claim().await)
        } else {
            ("checkout_refund", self.refund_create(key).await)
        };
        if let Err(e) = &r
            && e.code().starts_with("SCREENING_")
        {
            *self
                .stats
                .entry(format!("screening refused {}", e.code()))
                .or_default() += 1;
        }
        (name, r)
    }

    /// A fresh outside address for a payer (one per refund, so a destination's balance
    /// is the sum of its refunds); one in eight is sanctioned, one in eight is one the
    /// screen cannot answer for.
    fn new_payer(&mut self) -> (String, Flag) {
        self.payers += 1;
        let address = format!("0x{:040x}", 0xfeed_0000_0000u64 + self.payers);
        let flag = match self.rng.below(16) {
            0 | 1 => Flag::Listed,
            2 | 3 => Flag::Outage,
            _ => Flag::Clear,
        };
        self.screening.mark(&address, flag);
        (address, flag)
    }

    async fn refund_create(&mut self, key: Option<&str>) -> Result<(), CheckoutError> {
        if self.sessions.is_empty() {
            return Ok(());
        }
        // A session with something to refund, as a business picks from its dashboard
        // (a few looks; else the last one looked at, which will be refused).
        let (mut i, mut refundable_now) = (0, 0);
        for _ in 0..4 {
            i = self.rng.below(self.sessions.len() as u64) as usize;
            refundable_now = self.refundable_now(i).await;
            if refundable_now > 0 {
                break;
            }
        }
        let (tenant, id) = (self.sessions[i].tenant, self.sessions[i].id.clone());
        let amount = match self.rng.below(4) {
            0 => None,
            // Now and then more than it can be: refused, nothing moves.
            1 => Some(refundable_now + 1 + self.rng.below(1_000_000)),
            _ => Some(1 + self.rng.below(refundable_now.max(1))),
        };
        let payer = (self.rng.below(2) == 0).then(|| self.new_payer());
        let flag = payer.as_ref().map_or(Flag::Clear, |p| p.1);
        let address = payer.map(|p| p.0);
        let req = CreateRefundRequest {
            amount: amount.map(|a| Micros::new(a).to_decimal_string()),
            token: Some("USDC".into()),
            network: Some(EVM.rail_id().name().to_string()),
            address,
            reason: Some("simulated".into()),
        };
        let (business, auth) = self.businesses[tenant].clone();
        let refundable = accounts::refundable(&self.tenants[tenant], &business, Token::Usdc).id;
        let before = self.posted(&refundable).await;
        let r = self.checkout.create_refund(&auth, &id, &req, key).await;
        match &r {
            Ok(v) if !self.refunds.contains(&v.refund_id) => {
                self.refunds.push(v.refund_id.clone());
            }
            Err(e) if e.code() != "STORAGE_ERROR" => {
                assert_eq!(
                    self.posted(&refundable).await,
                    before,
                    "seed {}: a refused refund of {id} ({}) moved money",
                    self.seed,
                    e.code()
                );
            }
            _ => {}
        }
        // A flagged destination is always refused, whatever else is wrong or right.
        let code = r.as_ref().err().map(|e| e.code());
        match (flag, code) {
            (Flag::Listed, c) => assert!(
                matches!(
                    c,
                    Some(
                        "SCREENING_HIT"
                            | "STORAGE_ERROR"
                            | "IDEMPOTENCY_KEY_REUSED"
                            | "IDEMPOTENCY_KEY_IN_USE"
                            | "INVALID_AMOUNT"
                            | "REFUND_EXCEEDS_REFUNDABLE"
                    )
                ),
                "seed {}: a refund of {id} to a listed payer answered {c:?}",
                self.seed
            ),
            (Flag::Outage, c) => assert!(
                matches!(
                    c,
                    Some(
                        "SCREENING_UNAVAILABLE"
                            | "STORAGE_ERROR"
                            | "IDEMPOTENCY_KEY_REUSED"
                            | "IDEMPOTENCY_KEY_IN_USE"
                            | "INVALID_AMOUNT"
                            | "REFUND_EXCEEDS_REFUNDABLE"
                    )
                ),
                "seed {}: a refund of {id} to a payer the screen cannot answer for answered {c:?}",
                self.seed
            ),
            (Flag::Clear, _) => {}
        }
        r.map(drop)
    }

    /// A payer claims one refund link with an address (refused unless it still awaits
    /// its claim).
    async fn refund_claim(&mut self) -> Result<(), CheckoutError> {
        // Mostly a link still waiting (a payer with the link in hand), sometimes any.
        let mut id = self.rng.pick(&self.refunds).clone();
        if self.rng.below(4) != 0 {
            for r in &self.refunds {
                let view = self.checkout.public_refund(r).await;
                if matches!(view, Ok(Some(v)) if v.status == "awaiting_claim") {
                    id = r.clone();
                    break;
                }
            }
        }
        let (address, flag) = self.new_payer();
        let r = self
            .checkout
            .claim_refund(&id, &EVM.rail_id().name(), &address)
            .await;
        if flag != Flag::Clear {
            assert!(
                r.is_err(),
                "seed {}: refund {id} claimed by a {flag:?} address",
                self.seed
            );
        }
        r.map(drop)
    }

    /// What session `i` can refund in USDC now, as its business reads it.
    async fn refundable_now(&self, i: usize) -> u64 {
        let s = &self.sessions[i];
        match self
            .checkout
            .list_refunds(&self.businesses[s.tenant].1, &s.id)
            .await
        {
            Ok(list) => list
                .refundable
                .iter()
                .find(|r| r.token == "USDC")
                .map_or(0, |r| micros(&r.amount)),
            Err(_) => 0,
        }
    }

    async fn posted(&self, account: &str) -> i128 {
        self.ledger
            .balance(account)
            .await
            .map(|b| b.posted())
            .unwrap_or(0)
    }

    /// Every refund of every session (the workload's and the automatic ones).
    pub async fn all_refunds(&self) -> Vec<(usize, RefundView)> {
        let mut out = Vec::new();
        for (i, s) in self.sessions.iter().enumerate() {
            let auth = &self.businesses[s.tenant].1;
            let list = self.checkout.list_refunds(auth, &s.id).await.unwrap();
            out.extend(list.refunds.into_iter().map(|r| (i, r)));
        }
        out
    }

    /// No refund left to move.
    pub async fn refunds_settled(&self) -> bool {
        self.all_refunds()
            .await
            .iter()
            .all(|(_, r)| TERMINAL.contains(&r.status.as_str()))
    }

    /// The first tenant's business refunds excess and late payments by itself.
    pub async fn opt_in_auto_refunds(&mut self) {
        let (business, _) = &self.businesses[0];
        self.checkout
            .set_auto_refunds(&self.tenants[0], business, true)
            .await
            .unwrap();
    }
}

/// Refund refusals a client can cause, beyond the checkout's own.
pub fn client_caused(e: &CheckoutError) -> bool {
    super::checkout::client_caused(e)
        || matches!(
            e.code(),
            "REFUND_EXCEEDS_REFUNDABLE"
                | "INVALID_AMOUNT"
                | "SCREENING_HIT"
                | "SCREENING_UNAVAILABLE"
                | "INSUFFICIENT_FUNDS"
                | "UNSUPPORTED_NETWORK"
        )
}

/// The micro-units of a decimal string in a view.
fn micros(s: &str) -> u64 {
    Micros::parse_decimal(s).unwrap().get()
}

/// Returns the refunds' final statuses, for the run's stats.
pub async fn after_drain(w: &World) -> BTreeMap<String, u64> {
    let seed = w.seed;
    let mut to_address: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_session: BTreeMap<usize, u64> = BTreeMap::new();
    let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
    for (i, r) in w.all_refunds().await {
        *by_status
            .entry(format!("refund final {}", r.status))
            .or_default() += 1;
        assert!(
            TERMINAL.contains(&r.status.as_str()),
            "seed {seed}: refund {} still {}",
            r.refund_id,
            r.status
        );
        let hold = refund_account(&r.refund_id, Token::Usdc).id;
        assert_eq!(
            w.posted(&hold).await,
            0,
            "seed {seed}: refund {} ({}) left money reserved",
            r.refund_id,
            r.status
        );
        if r.status == "completed" {
            let amount = micros(&r.amount);
            let address = r.address.clone().expect("a completed refund's address");
            *to_address.entry(address.to_ascii_lowercase()).or_default() += amount;
            *per_session.entry(i).or_default() += amount;
        }
    }
    for (address, sum) in &to_address {
        let on_chain = w
            .evm
            .balance(&ChainAddress(address.clone()), Token::Usdc)
            .await
            .unwrap()
            .get();
        assert_eq!(
            on_chain, *sum,
            "seed {seed}: {address} holds {on_chain} on chain, its completed refunds {sum}"
        );
    }
    for (i, refunded) in per_session {
        let s = &w.sessions[i];
        assert!(
            refunded <= s.minted,
            "seed {seed}: session {} refunded {refunded}, paid {}",
            s.id,
            s.minted
        );
    }
    assert_eq!(
        w.evm
            .balance(&w.evm.faucet_address(), Token::Usdc)
            .await
            .unwrap()
            .get(),
        to_address
            .get(&w.evm.faucet_address().0.to_ascii_lowercase())
            .copied()
            .unwrap_or(0),
        "seed {seed}: the faucet (the paying address) got other than its refunds"
    );
    by_status
}
