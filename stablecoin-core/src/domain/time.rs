//! Timestamps as Unix milliseconds. The domain never reads a clock: time is an argument.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Whole seconds, rounded up (a wait of 1 ms is "1 s", never "0 s"): how a wait in
/// milliseconds is shown to people (error texts, `Retry-After`).
pub fn retry_after_secs(ms: i64) -> i64 {
    (ms.max(0) + 999) / 1000
}

/// Milliseconds since the Unix epoch, UTC.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The instant `ms` milliseconds after the Unix epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }
    /// The instant `s` seconds after the Unix epoch.
    pub const fn from_secs(s: i64) -> Self {
        Timestamp(s * 1000)
    }
    /// Milliseconds since the Unix epoch.
    pub const fn millis(self) -> i64 {
        self.0
    }
    /// Whole seconds since the Unix epoch, rounded toward the past.
    pub const fn unix_secs(self) -> i64 {
        self.0.div_euclid(1000)
    }
    /// `ms` milliseconds later (earlier if negative), saturating at the ends of `i64`.
    pub const fn plus_millis(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }
    /// `s` seconds later (earlier if negative), saturating.
    pub const fn plus_secs(self, s: i64) -> Self {
        self.plus_millis(s.saturating_mul(1000))
    }

    /// RFC 3339 UTC with second precision (`2026-11-22T10:00:00Z`), as the API and
    /// webhooks use. Sub-second parts are truncated so a value reads the same everywhere.
    pub fn to_rfc3339(self) -> String {
        let secs = self.unix_secs();
        match time::OffsetDateTime::from_unix_timestamp(secs) {
            Ok(t) => {
                let fmt = time::macros::format_description!(
                    "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
                );
                t.format(&fmt).unwrap_or_else(|_| secs.to_string())
            }
            Err(_) => secs.to_string(),
        }
    }

    /// Parses an RFC 3339 timestamp (any offset), for request fields.
    pub fn parse_rfc3339(s: &str) -> Option<Self> {
        let t =
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
        let ms = t.unix_timestamp_nanos() / 1_000_000;
        i64::try_from(ms).ok().map(Timestamp)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_utc() {
        let t = Timestamp::from_secs(1_795_341_600);
        assert_eq!(t.to_rfc3339(), "2026-11-22T10:00:00Z");
        assert_eq!(Timestamp::parse_rfc3339("2026-11-22T10:00:00Z"), Some(t));
        assert_eq!(
            Timestamp::parse_rfc3339("2026-11-22T11:00:00+01:00"),
            Some(t)
        );
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }
}
