#![doc = include_str!("../README.md")]

pub mod api;
pub mod app;
pub mod auth;
mod banner;
pub mod chain_reconciliation;
pub mod cli;
pub mod config;
pub mod custody;
pub mod error;
pub mod extract;
pub mod file_modes;
pub mod idempotency;
pub mod listener;
pub mod metrics;
pub mod pages;
pub mod payouts;
mod periodic;
pub mod rails;
pub mod rate_limit;
pub mod retention;
pub mod route_kind;
pub mod sandbox;
pub mod sign_in;
pub mod sms;
pub mod state;
pub mod storage;
pub mod swaps;
mod workers;

pub use api::{API_VERSION, build_router, openapi};
pub use app::{App, BuildOptions, DemoTenant};
pub use config::{Config, StorageConfig};
pub use error::{ApiError, ERROR_CATALOGUE, StartupError};
pub use state::AppState;
pub use storage::{Storage, open_storage};
