#![doc = include_str!("../README.md")]

mod codec;
mod error;

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use error::Error;
#[cfg(feature = "postgres")]
pub use postgres::{PgConfig, PgStore, RateLimitStep};
#[cfg(feature = "sqlite")]
pub use sqlite::{DEFAULT_MAX_BACKGROUND, Durability, SqliteConfig, SqliteStore, WriterStats};
/// The largest amount or account sum the store holds (2^63 - 1 micro-units): core's
/// limit, which every store applies through the shared ledger rules.
pub use stablecoin_core::domain::ledger::MAX_AMOUNT_MICROS;

/// Applies the shipped migrations to the database a URL names, for a `migrate` command:
/// `sqlite://PATH`, `sqlite:PATH` or `sqlite::memory:` (feature `sqlite`), and
/// `postgres://...` / `postgresql://...` (feature `postgres`).
/// Opening a store migrates too; this is for running it on its own.
pub async fn migrate(url: &str) -> Result<(), Error> {
    #[cfg(feature = "sqlite")]
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        return sqlite::migrate(&SqliteConfig::file(path)).await;
    }
    #[cfg(feature = "postgres")]
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return postgres::migrate(&PgConfig::new(url)).await;
    }
    Err(Error::Config {
        reason: format!(
            "unsupported database URL {:?} (enabled backends: {})",
            redact_url(url),
            enabled_backends()
        ),
    })
}

fn enabled_backends() -> &'static str {
    match (cfg!(feature = "sqlite"), cfg!(feature = "postgres")) {
        (true, true) => "sqlite, postgres",
        (true, false) => "sqlite",
        (false, true) => "postgres",
        (false, false) => "none",
    }
}

/// A URL with any password replaced, for error messages.
pub(crate) fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &creds[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_passwords_in_urls() {
        assert_eq!(
            super::redact_url("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(super::redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(super::redact_url("sqlite::memory:"), "sqlite::memory:");
    }
}
