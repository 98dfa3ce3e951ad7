#![doc = include_str!("../README.md")]

pub mod files;
pub mod protocol;
#[cfg(feature = "client")]
pub mod remote;
#[cfg(feature = "service")]
pub mod service;

#[cfg(feature = "client")]
pub use remote::RemoteSigner;
#[cfg(feature = "service")]
pub use service::{SignerService, bind};

/// Everything that can go wrong in this crate, with the stable code the HTTP protocol
/// answers (`{"error": {"code": ..., "message": ...}}`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request carries no valid signature, or its timestamp is outside the allowed
    /// skew (`UNAUTHORIZED`, 401).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// The request is malformed: not JSON, unknown field, bad hex, unknown purpose or
    /// curve (`INVALID_REQUEST`, 400).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The signer refused the input, e.g. a secp256k1 payload that is not a 32-byte
    /// digest (`INVALID_INPUT`, 400).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// `derive-key` was asked for a label outside the allow-list (`UNKNOWN_LABEL`, 400).
    #[error("unknown label: {0}")]
    UnknownLabel(String),
    /// The request body is larger than the service reads (`BODY_TOO_LARGE`, 413).
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// No such endpoint, or not with this method (`NOT_FOUND`, 404).
    #[error("no such endpoint")]
    NotFound,
    /// The custody backend could not answer (`UNAVAILABLE`, 503).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Set-up: a listen address, seed file or token file is refused (never an HTTP
    /// answer; the binary prints it and exits non-zero).
    #[error("configuration: {0}")]
    Config(String),
}

impl Error {
    /// The stable machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Unauthorized(_) => "UNAUTHORIZED",
            Error::InvalidRequest(_) => "INVALID_REQUEST",
            Error::InvalidInput(_) => "INVALID_INPUT",
            Error::UnknownLabel(_) => "UNKNOWN_LABEL",
            Error::TooLarge(_) => "BODY_TOO_LARGE",
            Error::NotFound => "NOT_FOUND",
            Error::Unavailable(_) => "UNAVAILABLE",
            Error::Config(_) => "CONFIG",
        }
    }

    /// The HTTP status the service answers this error with.
    pub fn status(&self) -> u16 {
        match self {
            Error::Unauthorized(_) => 401,
            Error::InvalidRequest(_) | Error::InvalidInput(_) | Error::UnknownLabel(_) => 400,
            Error::TooLarge(_) => 413,
            Error::NotFound => 404,
            Error::Unavailable(_) | Error::Config(_) => 503,
        }
    }
}
