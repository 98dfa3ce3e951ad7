#![doc = include_str!("../README.md")]
//! Facade crate: re-exports the workspace crates behind features (the `stablecoin` row
//! of the workspace table above).

#[cfg(feature = "checkout")]
pub use stablecoin_checkout as checkout;
pub use stablecoin_core as core;
#[cfg(feature = "escrow")]
pub use stablecoin_escrow as escrow;
#[cfg(any(feature = "sim", feature = "evm", feature = "tron", feature = "solana"))]
pub use stablecoin_rails as rails;
#[cfg(feature = "server")]
pub use stablecoin_server as server;
#[cfg(feature = "signer")]
pub use stablecoin_signer as signer;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use stablecoin_store as store;
#[cfg(feature = "webhooks")]
pub use stablecoin_webhooks as webhooks;
