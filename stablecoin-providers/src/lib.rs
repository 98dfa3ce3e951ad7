#![doc = include_str!("../README.md")]

pub mod error;
pub use error::ProviderError;

#[cfg(any(feature = "africastalking", feature = "twilio"))]
mod http;

#[cfg(feature = "africastalking")]
pub mod africastalking;

#[cfg(feature = "twilio")]
pub mod twilio;

#[cfg(feature = "rate-feed")]
pub mod rate_feed;

#[cfg(feature = "testkit")]
pub mod testkit;
