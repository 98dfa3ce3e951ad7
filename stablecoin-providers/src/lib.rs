#![doc = include_str!("../README.md")]

#[cfg(feature = "rate-feed")]
pub mod error;
#[cfg(feature = "rate-feed")]
pub mod rate_feed;

#[cfg(feature = "rate-feed")]
pub use error::ProviderError;
