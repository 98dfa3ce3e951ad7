//! The two payout providers the server makes itself, with no outside service: the
//! simulation of sim mode and `disabled`. Their own module, beside the HTTP of
//! `payouts`, because the server's state holds the simulation and every handler takes
//! the state: in `payouts` they tied the state into its import cycle (issue #45).

use async_trait::async_trait;
use stablecoin_core::memory::MemoryPayouts;
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};

/// The mobile-money payout simulation of sim mode: `MemoryPayouts` (idempotent by payout
/// id, as the port requires) whose payouts are delivered as soon as their status is asked
/// (no provider callback exists in-process; a real one would only be a hint to ask). The
/// engine settles or refunds a withdrawal on this status query alone.
#[derive(Default)]
pub struct SimPayouts(pub MemoryPayouts);

#[async_trait]
impl PayoutProvider for SimPayouts {
    fn identity(&self) -> String {
        "simulated".into()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        true
    }
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        self.0.submit(payout).await
    }
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        self.0.settle_all();
        self.0.status(payout_id).await
    }
}

/// `payouts.kind = "disabled"`: no provider. It takes no payout (a withdrawal whose
/// tokens were swept before the switch is refused here and refunded, as nothing holds
/// it) and never answers `Delivered` or `Failed`: a payout another provider took stays
/// in flight until that provider is configured again or staff resolve it (its identity,
/// `disabled`, is never that of the provider holding it).
#[derive(Debug, Default)]
pub struct DisabledPayouts;

#[async_trait]
impl PayoutProvider for DisabledPayouts {
    fn identity(&self) -> String {
        "disabled".into()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        false
    }
    async fn submit(&self, _payout: &Payout) -> Result<(), PayoutError> {
        Err(PayoutError::Rejected(
            "payouts are disabled (payouts.kind = \"disabled\")".into(),
        ))
    }
    async fn status(&self, _payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        Err(PayoutError::Unknown(
            "payouts are disabled: no provider to ask".into(),
        ))
    }
}
