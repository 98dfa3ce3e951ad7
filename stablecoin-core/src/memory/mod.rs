//! In-memory adapters of every port.

pub mod screening;
pub mod services;
pub mod signer;

/// The wall clock, defined beside the `Clock` port; kept here for existing imports.
pub use crate::ports::SystemClock;
pub use screening::MemoryScreening;
pub use services::{
    FixedRates, ManualClock, MemoryNotifier, MemoryPayouts, OsEntropy, PayoutFault, SeededEntropy,
    ShiftedClock,
};
pub use signer::LocalSigner;
pub mod store;
pub use store::MemoryStore;
