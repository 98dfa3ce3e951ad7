//! `stablecoin-core`: the sans-IO domain, the ports adapters implement, the engine that
//! drives them, and in-memory adapters for tests and embedding.
//!
//! - [`domain`]: pure, synchronous, deterministic logic (money, phones, ids, fees, FX,
//!   consent, state machines). Time and randomness come in as arguments.
//! - [`ports`]: the traits (`Store`, `Ledger`, `Rail`, `Signer`, `Notifier`,
//!   `RateSource`, `PayoutProvider`, `Clock`, `Entropy`).
//! - [`engine`]: the use cases as async methods on [`engine::Engine`].
//! - [`memory`] (feature `memory`, default): in-memory adapters of every port.
//! - [`testkit`] (feature `testkit`): conformance suites any adapter can run.

pub mod domain;
pub mod engine;
pub mod error;
#[cfg(feature = "memory")]
pub mod memory;
pub mod ports;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use error::{CoreError, CoreResult};
