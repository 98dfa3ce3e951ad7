//! The shared kernel: what the three products (wallets in [`crate::engine`], escrow and
//! checkout in their own crates) have in common, written once (KERNEL.md §2).
//!
//! - [`error`]: the classes every product error falls into, so the server maps classes,
//!   not each product's variants, to HTTP;
//! - [`runtime`]: every product's background work behind one [`Worker`] trait, run by
//!   one [`Runtime`];
//! - [`idempotency`]: the one read of a stored first result ([`idempotency::recorded`]).
//!
//! Inbound routing and the rest of idempotency join it in later steps of issue #45.

pub mod error;
pub mod idempotency;
pub mod runtime;

pub use error::{ErrorClass, ProductError};
pub use runtime::{RoundObserver, RoundReport, Runtime, Worker};
