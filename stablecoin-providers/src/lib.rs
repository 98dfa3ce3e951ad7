#![doc = include_str!("../README.md")]

pub mod error;
pub use error::ProviderError;

#[cfg(any(
    feature = "africastalking",
    feature = "twilio",
    feature = "mpesa",
    feature = "mtn-momo",
    feature = "chainalysis"
))]
mod http;

#[cfg(any(feature = "mpesa", feature = "mtn-momo"))]
mod token;

#[cfg(any(feature = "mpesa", feature = "mtn-momo"))]
pub mod callback;

#[cfg(any(feature = "mpesa", feature = "mtn-momo"))]
pub mod settlement_reports;

#[cfg(feature = "mpesa")]
pub mod mpesa;

#[cfg(feature = "mtn-momo")]
pub mod mtn_momo;

#[cfg(feature = "africastalking")]
pub mod africastalking;

#[cfg(feature = "twilio")]
pub mod twilio;

#[cfg(feature = "rate-feed")]
pub mod rate_feed;

#[cfg(any(feature = "sanctions-list", feature = "chainalysis"))]
pub mod sanctions;

#[cfg(feature = "testkit")]
pub mod testkit;
