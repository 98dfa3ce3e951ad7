#![doc = include_str!("../README.md")]

pub mod domain;
pub mod engine;
pub mod error;
pub mod kernel;
#[cfg(feature = "memory")]
pub mod memory;
pub mod ports;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use error::{CoreError, CoreResult};
