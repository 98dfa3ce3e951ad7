//! `[admin]`: the service staff's API (`/admin/v1/...`) and the top-up policy staff
//! confirm against.

use super::Secret;
use serde::Deserialize;
use stablecoin_core::domain::money::Micros;

/// `[admin]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSettings {
    /// The bearer token of the staff routes (`Authorization: Bearer <token>`, compared in
    /// constant time), at least 32 characters. Absent (the default): every `/admin/v1/`
    /// route answers 404 to a request without a staff account's secret, as if it did
    /// not exist. Actions taken with the token are recorded as by `admin-token`; staff
    /// accounts (`stablecoin-server staff create`) record their own `stf_...` id.
    pub token: Option<Secret>,
    /// How long a top-up quote can be confirmed after it was asked for, in hours (1 to
    /// 720, default 24): time for the fiat to arrive and be matched.
    pub topup_ttl_hours: u64,
    /// Two-person rule for escrow staff decisions: a dispute resolution of a deal whose
    /// amount is ABOVE this, or a recovery of a balance above it (a decimal string of
    /// token units, `"1000.00"`), is carried out only when a second, different staff
    /// member approves the first one's proposal. Default `"10000"`; a host that wants
    /// one staff member to decide every amount sets a value above any deal. Env:
    /// `STABLECOIN_ADMIN_SECOND_APPROVAL_ABOVE`.
    pub second_approval_above: Option<String>,
    /// Two-person rule for money in: a top-up confirmation, or a staff treasury credit
    /// (`treasury credit`), of MORE than this many token units (a decimal string,
    /// `"10000"`, the default) is only proposed by the first staff member; a second,
    /// different staff identity must approve it before the treasury is credited. One
    /// staff credential must not be able to mint any amount. Env:
    /// `STABLECOIN_ADMIN_TOPUP_SINGLE_APPROVAL_MAX`.
    pub topup_single_approval_max: String,
}

/// The default of both two-person thresholds, in token units.
pub const DEFAULT_SINGLE_APPROVAL_MAX: &str = "10000";

impl Default for AdminSettings {
    fn default() -> Self {
        AdminSettings {
            token: None,
            topup_ttl_hours: 24,
            second_approval_above: Some(DEFAULT_SINGLE_APPROVAL_MAX.into()),
            topup_single_approval_max: DEFAULT_SINGLE_APPROVAL_MAX.into(),
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

    /// `second_approval_above` in micro-units (`None` when absent or invalid: startup
    /// refuses an invalid one through [`AdminSettings::problem`]).
    pub fn second_approval_above_micros(&self) -> Option<Micros> {
        self.second_approval_above
            .as_deref()
            .and_then(|s| Micros::parse_decimal(s.trim()).ok())
    }

    /// `topup_single_approval_max` in micro-units (the default when invalid: startup
    /// refuses an invalid one through [`AdminSettings::problem`]).
    pub fn topup_single_approval_max_micros(&self) -> Micros {
        Micros::parse_decimal(self.topup_single_approval_max.trim())
            .unwrap_or(stablecoin_core::domain::topup::SINGLE_APPROVAL_MAX)
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
        if let Some(s) = &self.second_approval_above
            && Micros::parse_decimal(s.trim()).is_err()
        {
            return Some(
                "admin.second_approval_above must be a decimal amount of token units, like \"1000.00\" (at most 6 places)"
                    .into(),
            );
        }
        if Micros::parse_decimal(self.topup_single_approval_max.trim()).is_err() {
            return Some(
                "admin.topup_single_approval_max must be a decimal amount of token units, like \"10000\" (at most 6 places)"
                    .into(),
            );
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_approval_above_is_a_decimal_amount() {
        let mut a = AdminSettings::default();
        assert_eq!(
            (a.problem(), a.second_approval_above_micros()),
            (None, Some(Micros(10_000_000_000)))
        );
        assert_eq!(a.topup_single_approval_max_micros(), Micros(10_000_000_000));
        a.second_approval_above = Some(" 1000.50 ".into());
        assert_eq!(a.problem(), None);
        assert_eq!(
            a.second_approval_above_micros(),
            Some(Micros(1_000_500_000))
        );
        for bad in ["", "abc", "-1", "1.0000001", "1e3"] {
            a.second_approval_above = Some(bad.into());
            assert!(a.problem().is_some(), "{bad}");
        }
        a.second_approval_above = None;
        a.topup_single_approval_max = "250.5".into();
        assert_eq!(a.problem(), None);
        assert_eq!(a.topup_single_approval_max_micros(), Micros(250_500_000));
        for bad in ["", "ten", "-5"] {
            a.topup_single_approval_max = bad.into();
            assert!(a.problem().is_some(), "{bad}");
        }
    }
}
