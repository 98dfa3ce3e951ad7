//! `tron`: native TRON USDT (TRC-20) rail (spec 1.4, 4.5 `/v1/tron/*`, 8.4).
//!
//! Split as the architecture asks (section 11.3): pure encoding in [`address`] (T-addresses)
//! and [`tx`] (protobuf `raw_data`, txID, recoverable signatures, builders for TRC-20
//! transfer, TRX transfer, account creation, Stake 2.0 delegate / undelegate), checked
//! byte for byte against golden vectors from tronweb and tronpy
//! (`tests/fixtures/tron/`); a thin async transport in [`client`] (java-tron's HTTP API
//! behind the [`TronApi`] trait); and [`TronRail`], the [`Rail`](stablecoin_core::ports::Rail)
//! implementation with sponsored activation and Energy/Bandwidth.

pub mod address;
pub mod client;
pub mod network;
pub mod proto;
pub mod rail;
pub mod tx;

pub use address::{AddressError, TronAddress};
pub use tx::{Resource, SignedTx, TxError, TxHeader, UnsignedTx};

pub use client::{HttpTronApi, TronApi};
pub use network::TronNetwork;
pub use rail::{MAINNET_USDT, TronConfig, TronRail};
