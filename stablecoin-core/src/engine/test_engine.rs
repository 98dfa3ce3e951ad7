//! The engine the unit tests of `engine/` run on: in-memory adapters, no rails, a
//! manual clock (returned, so a test can move it) and seeded entropy.

use super::{Engine, EngineConfig, Ports};
use crate::domain::time::Timestamp;
use crate::memory::*;
use std::sync::Arc;

/// A fresh engine on an empty in-memory store, and its clock.
pub(crate) fn engine() -> (Engine, Arc<ManualClock>) {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let ports = Ports {
        store: store.clone(),
        ledger: store,
        signer: Arc::new(LocalSigner::from_seed([9; 32])),
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(7)),
    };
    (
        Engine::new(ports, Vec::new(), EngineConfig::default()),
        clock,
    )
}
