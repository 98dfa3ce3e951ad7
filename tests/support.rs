//! What several of the facade's tests build the same way.

use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::Ports;
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, SeededEntropy,
};
use stablecoin::core::ports::{Ledger, Store};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

/// 2026-11-22T10:00:00Z, the fixed start of the tests' clocks.
pub const START: Timestamp = Timestamp::from_secs(1_795_341_600);

/// The in-memory ports around `store` and `ledger` (the same database), with a manual
/// clock at `at` and entropy seeded with `seed`.
pub fn ports(
    store: Arc<dyn Store>,
    ledger: Arc<dyn Ledger>,
    signer: Arc<LocalSigner>,
    at: Timestamp,
    seed: u64,
) -> Ports {
    Ports {
        store,
        ledger,
        signer,
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(ManualClock::new(at)),
        entropy: Arc::new(SeededEntropy::new(seed)),
    }
}

/// A simulated chain that mines only when told, one confirmation deep.
pub fn chain(profile: SimProfile, signer: &Arc<LocalSigner>) -> Arc<SimRail> {
    let config = SimConfig {
        confirmations: 1,
        auto_mine: false,
    };
    Arc::new(SimRail::new(profile, signer.clone(), config))
}
