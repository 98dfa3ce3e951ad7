//! The traits adapters implement. Every port is dyn-compatible and used as `Arc<dyn _>`.

pub mod accounts;
pub mod claim;
pub mod compact;
pub mod journal;
pub mod kinds;
pub mod ledger;
pub mod rail;
pub mod record;
pub mod screening;
pub mod services;
pub mod signer;
pub mod store;
pub mod swap;

pub use claim::*;
pub use journal::*;
pub use ledger::*;
pub use rail::*;
pub use record::*;
pub use screening::*;
pub use services::*;
pub use signer::*;
pub use store::*;
pub use swap::*;

use std::sync::Arc;

/// Compile-time check that every port stays dyn-compatible.
#[allow(dead_code)]
struct _ObjectSafe(
    Arc<dyn Store>,
    Arc<dyn Ledger>,
    Arc<dyn Rail>,
    Arc<dyn Signer>,
    Arc<dyn Notifier>,
    Arc<dyn RateSource>,
    Arc<dyn PayoutProvider>,
    Arc<dyn Clock>,
    Arc<dyn Entropy>,
    Arc<dyn RailJournal>,
    Arc<dyn SwapVenue>,
    Arc<dyn Screening>,
);
