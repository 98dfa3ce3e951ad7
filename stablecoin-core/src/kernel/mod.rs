//! The shared kernel: what the three products (wallets in [`crate::engine`], escrow and
//! checkout in their own crates) have in common, written once (KERNEL.md §2).
//!
//! - [`error`]: the classes every product error falls into, so the server maps classes,
//!   not each product's variants, to HTTP;
//! - [`runtime`]: every product's background work behind one [`Worker`] trait, run by
//!   one [`Runtime`];
//! - [`idempotency`]: the one read of a stored first result ([`idempotency::recorded`]);
//! - [`inbound`]: one scan of each rail page feeding every product, over one address
//!   namespace, with each product's position kept apart.

pub mod error;
pub mod idempotency;
pub mod inbound;
pub mod runtime;

pub use error::{ErrorClass, ProductError};
pub use inbound::{
    InboundError, InboundHandler, InboundOutcome, InboundReport, InboundRouter, address_key,
};
pub use runtime::{Product, RoundObserver, RoundReport, Runtime, Worker};
