//! Escrow in the simulated world: deals between the tenants' customers on TRON, paid from
//! outside (in full, in part, in excess, in the wrong token), released, refunded,
//! disputed, cancelled, and resolved by staff; the escrow worker runs beside the engine.

use super::world::World;
use stablecoin::core::domain::money::{Micros, Token};
use stablecoin::core::engine::{AuthContext, KeyKind, KeyMode};
use stablecoin::core::ports::{ChainAddress, Rail};
use stablecoin_escrow::{
    CreateEscrowRequest, EscrowActionRequest, EscrowConfig, EscrowEngine, EscrowError,
    ResolveRequest, StaffActor,
};

/// One deal the workload created.
pub struct Deal {
    pub id: String,
    pub tenant: usize,
    pub address: ChainAddress,
    pub amount: Micros,
}

pub fn engine(kernel: &stablecoin::core::kernel::Kernel, worker: String) -> EscrowEngine {
    EscrowEngine::new(
        kernel,
        EscrowConfig {
            poll_interval_ms: 0,
            send_retry_ms: 0,
            unknown_grace_ms: 0,
            worker_id: worker,
            ..EscrowConfig::default()
        },
    )
    .unwrap()
}

/// A live tenant key's authentication, as the API would give the escrow engine.
pub async fn tenant_auth(w: &World, tenant: usize) -> AuthContext {
    let issued = w
        .engine
        .issue_api_key(&w.tenants[tenant], KeyKind::Tenant, KeyMode::Live)
        .await
        .unwrap();
    w.engine.authenticate(&issued.secret).await.unwrap()
}

impl World {
    /// One escrow action, chosen by the seed. Returns its name and the refusal, if any.
    pub async fn escrow_step(
        &mut self,
        key: Option<&str>,
    ) -> (&'static str, Result<(), EscrowError>) {
        let choice = self.rng.below(100);
        if self.deals.is_empty() || choice < 25 {
            return ("escrow_create", self.escrow_create(key).await);
        }
        let deal = self.rng.below(self.deals.len() as u64) as usize;
        let (id, tenant) = (self.deals[deal].id.clone(), self.deals[deal].tenant);
        let auth = self.auths[tenant].clone();
        let act = EscrowActionRequest {
            on_behalf_of: None,
            reason: Some("the goods did not arrive".into()),
        };
        match choice {
            25..=54 => {
                self.escrow_pay(deal);
                ("escrow_pay", Ok(()))
            }
            55..=66 => (
                "escrow_release",
                self.escrow.release(&auth, &id, &act).await.map(drop),
            ),
            67..=74 => (
                "escrow_refund",
                self.escrow.refund(&auth, &id, &act).await.map(drop),
            ),
            75..=84 => (
                "escrow_dispute",
                self.escrow.dispute(&auth, &id, &act).await.map(drop),
            ),
            85..=89 => (
                "escrow_cancel",
                self.escrow.cancel(&auth, &id, &act).await.map(drop),
            ),
            _ => {
                let resolution = if self.rng.below(2) == 0 {
                    "RELEASE"
                } else {
                    "REFUND"
                };
                let req = ResolveRequest {
                    resolution: resolution.into(),
                    resolution_note: "the buyer's photos show the goods damaged".into(),
                };
                let staff = StaffActor::new("ops@service.example").unwrap();
                (
                    "escrow_resolve",
                    self.escrow
                        .admin()
                        .resolve(&staff, &id, &req)
                        .await
                        .map(drop),
                )
            }
        }
    }

    async fn escrow_create(&mut self, key: Option<&str>) -> Result<(), EscrowError> {
        let tenant = self.rng.below(self.tenants.len() as u64) as usize;
        // Mostly the tenant's own two customers (slots t and t + 3), sometimes anyone.
        let (mut buyer, mut seller) =
            (self.phones[tenant].clone(), self.phones[tenant + 3].clone());
        if self.rng.below(2) == 0 {
            std::mem::swap(&mut buyer, &mut seller);
        }
        if self.rng.below(5) == 0 {
            buyer = self.rng.pick(&self.phones).clone();
        }
        // Escrow amounts are whole tokens.
        let tokens = 1 + self.rng.below(50);
        let amount = Micros::new(tokens * 1_000_000);
        let req = CreateEscrowRequest {
            buyer_phone_number: buyer.to_string(),
            seller_phone_number: seller.to_string(),
            amount: tokens.to_string(),
            token: None,
            reference: format!("order-{}", self.rng.below(1_000)),
            funding_window_secs: None,
            auto_release_after_secs: None,
        };
        let v = self.escrow.create(&self.auths[tenant], &req, key).await?;
        if !self.deals.iter().any(|d| d.id == v.id) {
            self.deals.push(Deal {
                id: v.id,
                tenant,
                address: ChainAddress(v.escrow_address),
                amount,
            });
        }
        Ok(())
    }

    /// A payment to the deal's address from outside: the amount, part of it, more, or a
    /// token the deal is not in.
    fn escrow_pay(&mut self, deal: usize) {
        let d = &self.deals[deal];
        let amount = match self.rng.below(4) {
            0 => Micros::new(1 + self.rng.below(d.amount.get())),
            1 => Micros::new(d.amount.get() + 1 + self.rng.below(1_000_000)),
            _ => d.amount,
        };
        let token = if self.rng.below(10) == 0 {
            Token::Usdc
        } else {
            Token::Usdt
        };
        self.tron.mint(&d.address, token, amount).unwrap();
    }
}

/// Escrow refusals a client (or staff) can cause, and the injected failures.
pub fn client_caused(e: &EscrowError) -> bool {
    matches!(
        e.code(),
        "NOT_A_MEMBER"
            | "SAME_WALLET"
            | "NOT_FOUND"
            | "INVALID_STATE"
            | "PAYOUT_IN_FLIGHT"
            | "CONFLICT"
            | "IDEMPOTENCY_KEY_REUSED"
            | "IDEMPOTENCY_KEY_IN_USE"
            | "STORAGE_ERROR"
    )
}

/// After the drain: every deal's ledger balances (deposited == custody + paid out), no
/// payout is in flight, and the deal address holds on chain exactly its custody.
pub async fn after_drain(w: &World) {
    let staff = StaffActor::new("ops@service.example").unwrap();
    let admin = w.escrow.admin();
    for d in &w.deals {
        let acc = admin.accounting(&staff, &d.id).await.unwrap();
        assert!(
            acc.is_balanced(),
            "seed {}: deal {} not balanced: {acc:?}",
            w.seed,
            d.id
        );
        for token in Token::ALL {
            let t = acc.token(token);
            assert_eq!(
                t.in_flight, 0,
                "seed {}: deal {} payout in flight",
                w.seed, d.id
            );
            let on_chain = w.tron.balance(&d.address, token).await.unwrap().get();
            assert_eq!(
                on_chain,
                t.custody(),
                "seed {}: deal {} {token}: chain vs ledger",
                w.seed,
                d.id
            );
        }
    }
}
