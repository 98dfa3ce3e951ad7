//! `[admin]`: the service staff's API (`/admin/v1/...`) and the top-up policy staff
//! confirm against.

use super::Secret;
use serde::Deserialize;

/// `[admin]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSettings {
    /// The bearer token of the staff routes (`Authorization: Bearer <token>`, compared in
    /// constant time), at least 32 characters. Absent (the default): every `/admin/v1/`
    /// route answers 404, as if it did not exist. There are no staff accounts yet: the
    /// confirmations it makes are recorded as confirmed by `admin-token`.
    pub token: Option<Secret>,
    /// How long a top-up quote can be confirmed after it was asked for, in hours (1 to
    /// 720, default 24): time for the fiat to arrive and be matched.
    pub topup_ttl_hours: u64,
}

impl Default for AdminSettings {
    fn default() -> Self {
        AdminSettings {
            token: None,
            topup_ttl_hours: 24,
        }
    }
}

impl AdminSettings {
    /// The shortest admin token accepted.
    pub const MIN_TOKEN_LEN: usize = 32;
    /// The longest top-up lifetime, in hours (30 days).
    pub const MAX_TOPUP_TTL_HOURS: u64 = 720;

    /// `topup_ttl_hours` in milliseconds.
    pub fn topup_ttl_ms(&self) -> i64 {
        (self.topup_ttl_hours.min(Self::MAX_TOPUP_TTL_HOURS) as i64) * 3_600_000
    }

    /// Why the section is refused, if it is.
    pub fn problem(&self) -> Option<String> {
        if self
            .token
            .as_ref()
            .is_some_and(|t| t.expose().trim().len() < Self::MIN_TOKEN_LEN)
        {
            return Some(format!(
                "admin.token must be at least {} characters",
                Self::MIN_TOKEN_LEN
            ));
        }
        if !(1..=Self::MAX_TOPUP_TTL_HOURS).contains(&self.topup_ttl_hours) {
            return Some(format!(
                "admin.topup_ttl_hours must be from 1 to {}",
                Self::MAX_TOPUP_TTL_HOURS
            ));
        }
        None
    }
}
