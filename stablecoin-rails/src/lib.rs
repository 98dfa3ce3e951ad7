#![doc = include_str!("../README.md")]

mod cursor;
#[cfg(any(feature = "tron", feature = "evm", feature = "solana"))]
mod journal;
#[cfg(any(feature = "tron", feature = "evm"))]
mod revert;
#[cfg(any(feature = "tron", feature = "evm", feature = "solana"))]
pub mod rpc_pool;

#[cfg(any(feature = "evm-test", feature = "solana-test", feature = "tron-test"))]
pub mod fault_proxy;

#[cfg(feature = "sim")]
pub mod sim;

#[cfg(feature = "tron")]
pub mod tron;

#[cfg(feature = "evm")]
pub mod evm;

#[cfg(feature = "solana")]
pub mod solana;

pub mod venues;

pub use venues::{TreasuryRate, TreasuryVenue};

#[cfg(feature = "sim")]
pub use sim::{Fault, SimConfig, SimCosts, SimProfile, SimRail};
