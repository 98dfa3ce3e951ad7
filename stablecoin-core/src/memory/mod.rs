//! In-memory adapters of every port.

pub mod services;
pub mod signer;

pub use services::{
    FixedRates, ManualClock, MemoryNotifier, MemoryPayouts, OsEntropy, PayoutFault, SeededEntropy,
    ShiftedClock, SystemClock,
};
pub use signer::LocalSigner;
pub mod store;
pub use store::MemoryStore;
