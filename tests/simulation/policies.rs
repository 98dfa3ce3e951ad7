//! Spending policies in the simulated world (issue #51): the last tenant's sends and
//! withdrawals are governed by a policy with a per-transaction cap and a 24 h window on
//! amount and count (the whole run is well inside one day of the simulated clock). The
//! policy is checked before anything is held and the window counts operations in flight,
//! so after every step the sum and the count of that tenant's governed operations, in
//! whatever state (a failed one keeps counting: the windows fail closed), stay within the
//! window; and no governed operation is above the cap.

use super::world::World;
use stablecoin::core::domain::money::Micros;
use stablecoin::core::domain::policy::{WindowLimit, WindowSpan};
use stablecoin::core::domain::state::OpKind;
use stablecoin::core::engine::PolicyInput;

/// The cap of one governed request.
pub const MAX_PER_TRANSACTION: u64 = 200_000_000;
/// The 24 h window's limits.
pub const WINDOW_AMOUNT: u64 = 2_000_000_000;
pub const WINDOW_COUNT: u32 = 12;

impl World {
    /// The governed tenant: the last one.
    pub fn governed(&self) -> usize {
        self.tenants.len() - 1
    }

    pub async fn create_policy(&mut self) {
        let input = PolicyInput {
            max_per_transaction: Some(Micros::new(MAX_PER_TRANSACTION)),
            windows: vec![WindowLimit {
                window: WindowSpan::Day,
                max_amount: Some(Micros::new(WINDOW_AMOUNT)),
                max_count: Some(WINDOW_COUNT),
            }],
            ..Default::default()
        };
        let t = self.tenants[self.governed()].clone();
        self.engine.create_policy(&t, &input).await.unwrap();
    }
}

/// After a step: the governed tenant's sends and withdrawals stay within the policy.
pub async fn after_step(w: &World, step: usize) {
    let t = &w.tenants[w.governed()];
    let (mut sum, mut count) = (0u64, 0u32);
    for kind in [OpKind::Transfer, OpKind::Withdrawal] {
        let (ops, _) = w
            .engine
            .list_operations(t, kind, None, 100_000, 0)
            .await
            .unwrap();
        for op in ops {
            assert!(
                op.amount.get() <= MAX_PER_TRANSACTION,
                "seed {} step {step}: {} of {} is above the policy's cap",
                w.seed,
                op.id.0,
                op.amount.get()
            );
            sum += op.amount.get();
            count += 1;
        }
    }
    assert!(
        sum <= WINDOW_AMOUNT && count <= WINDOW_COUNT,
        "seed {} step {step}: the governed tenant's 24 h window holds {sum} in {count} \
         operations, past its {WINDOW_AMOUNT} in {WINDOW_COUNT}",
        w.seed
    );
}
