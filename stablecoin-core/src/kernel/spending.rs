//! Spending policies over the products' payouts (issue #51): escrow payouts and checkout
//! refunds are governed by the tenant's policies before anything is held, as sends,
//! withdrawals and swaps are.
//!
//! Why a port: the policies, their window usage and their audit are the wallet engine's
//! (`stablecoin_core::engine`), which the products must not depend on (the layering of
//! docs/architecture.md). The wallet engine implements [`SpendingPolicies`]; a host that
//! runs a product hands it over (`EscrowEngine::with_spending_policies`), as it hands
//! the checkout the phone-wallet payments.

use crate::domain::ids::TenantId;
use crate::domain::money::{Micros, Token};
use crate::error::CoreResult;
use crate::ports::rail::RailId;
use crate::ports::store::Put;
use async_trait::async_trait;

/// One payout of a product, as the policies see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductSpend {
    /// The tenant whose policies govern it.
    pub tenant: TenantId,
    /// `escrow.payout` or `checkout.refund` (the audit's words; also the scope no
    /// wallet-scoped policy matches: only the tenant's policies without a wallet apply).
    pub operation: &'static str,
    /// The deal or session paying (audit target).
    pub subject_id: String,
    /// The rail it is paid on.
    pub rail: RailId,
    /// The token paid.
    pub token: Token,
    /// The amount paid.
    pub amount: Micros,
    /// The chain address paid; `None` when it is not known yet (a refund's claim link:
    /// then an allow-list or a cooling-off refuses it, as for an address not derived).
    pub destination: Option<String>,
}

/// The wallet side of governing a product's payout; the wallet engine implements it.
#[async_trait]
pub trait SpendingPolicies: Send + Sync {
    /// Decides `spend` under the tenant's policies. Allowed: the puts to commit with the
    /// payout's hold (the windows' usage, version-checked, the destination's first
    /// sighting and the audit entry), so a lost race is a CONFLICT the product decides
    /// again on. Refused: POLICY_DENIED (recorded and audited on its own). A payout
    /// above an approval threshold is refused too (POLICY_DENIED, rule
    /// `approval_threshold`): a product's payout cannot be held for a second approver
    /// yet, and policies fail closed.
    async fn admit_product_spend(&self, spend: &ProductSpend) -> CoreResult<Vec<Put>>;
}
