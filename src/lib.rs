#![doc = include_str!("../README.md")]
//! Facade crate: re-exports the workspace crates behind features.

pub use stablecoin_core as core;
#[cfg(feature = "sim")]
pub use stablecoin_rails as rails;
