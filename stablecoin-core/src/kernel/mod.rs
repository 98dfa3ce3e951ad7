//! The shared kernel: what the three products (wallets in [`crate::engine`], escrow and
//! checkout in their own crates) have in common, written once (KERNEL.md §2).
//!
//! It starts with [`error`]: the classes every product error falls into, so the server
//! maps classes, not each product's variants, to HTTP. The kernel's runtime, inbound
//! routing and idempotency join it in later steps of issue #45.

pub mod error;

pub use error::{ErrorClass, ProductError};
