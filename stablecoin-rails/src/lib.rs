//! `stablecoin-rails`: implementations of the [`Rail`](stablecoin_core::ports::Rail)
//! port, one blockchain each.
//!
//! Features:
//!
//! - `sim` (default): [`SimRail`], a deterministic in-process chain with blocks,
//!   confirmations, balances, an inbound scanner and fault injection (reject, revert,
//!   delay, lost response, drop). It profiles EVM, TRON and Solana address and hash
//!   formats, signs every payment through the real [`Signer`](stablecoin_core::ports::Signer)
//!   port and verifies the signature, and uses no wall clock and no OS randomness.
//!
//! - `evm`: ERC-4337 v0.8 smart accounts on Polygon PoS, Base and BNB Smart Chain
//!   ([`evm::EvmRail`]), tested on Anvil.
//! - `tron`: native TRON USDT; `solana` (+ `solana-test`): SPL USDC/USDT.

mod cursor;
#[cfg(any(feature = "tron", feature = "evm", feature = "solana"))]
mod journal;
#[cfg(any(feature = "tron", feature = "evm"))]
mod revert;

#[cfg(feature = "sim")]
pub mod sim;

#[cfg(feature = "tron")]
pub mod tron;

#[cfg(feature = "evm")]
pub mod evm;

#[cfg(feature = "solana")]
pub mod solana;

#[cfg(feature = "sim")]
pub use sim::{Fault, SimConfig, SimProfile, SimRail};
