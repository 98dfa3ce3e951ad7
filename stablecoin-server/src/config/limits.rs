//! Limits an operator can tune: the HTTP listener's (`[http]`), the per-key rate limits
//! (`[rate_limits]`) and the one-time codes' (`[otp]`). Every default is what the types
//! they configure default to, so an empty configuration is the documented behaviour.

use crate::listener::ServeLimits;
use crate::rate_limit::{Budget, RateLimits};
use serde::Deserialize;
use stablecoin_core::domain::limits::{MinSend, RentQuota};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::otp::OtpPolicy;

/// `[http]`: what one connection may cost ([`crate::listener`]).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSettings {
    /// Time a client has to send a complete request head.
    pub header_read_timeout_ms: u64,
    /// Time a request's handler has to answer (then 408 REQUEST_TIMEOUT).
    pub request_timeout_ms: u64,
    /// Connections served at once; more wait in the kernel's backlog.
    pub max_connections: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        let d = ServeLimits::default();
        HttpSettings {
            header_read_timeout_ms: d.header_read_timeout_ms,
            request_timeout_ms: d.request_timeout_ms,
            max_connections: d.max_connections,
        }
    }
}

impl HttpSettings {
    /// The listener's limits.
    pub fn serve_limits(&self) -> ServeLimits {
        ServeLimits {
            header_read_timeout_ms: self.header_read_timeout_ms,
            request_timeout_ms: self.request_timeout_ms,
            max_connections: self.max_connections,
            ..ServeLimits::default()
        }
    }
}

/// `[rate_limits]`: each API key's budgets per `window_s` seconds ([`crate::rate_limit`]).
/// Per process: N server processes give a key up to N times these.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitSettings {
    /// False turns every budget off (no `429 RATE_LIMITED`).
    pub enabled: bool,
    /// Length of the budget window, in seconds; the three budgets share it.
    pub window_s: u32,
    /// Money-moving POSTs (sends, fundings, withdrawals, escrow payouts) per window.
    pub money: u32,
    /// Other POSTs and DELETEs per window.
    pub write: u32,
    /// GETs per window.
    pub read: u32,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        let d = RateLimits::default();
        RateLimitSettings {
            enabled: d.enabled,
            window_s: d.read.window_s,
            money: d.money.quota,
            write: d.write.quota,
            read: d.read.quota,
        }
    }
}

impl RateLimitSettings {
    /// The limiter's budgets.
    pub fn limits(&self) -> RateLimits {
        let budget = |quota| Budget {
            quota,
            window_s: self.window_s,
        };
        RateLimits {
            enabled: self.enabled,
            money: budget(self.money),
            write: budget(self.write),
            read: budget(self.read),
        }
    }
}

/// `[otp]`: one-time codes ([`stablecoin_core::domain::otp`]).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct OtpSettings {
    /// Wrong codes a (tenant, wallet, purpose) may try before a lockout.
    pub max_failed_attempts: u32,
    /// Wrong codes older than this no longer count.
    pub failure_window_ms: i64,
    /// How long a lockout lasts.
    pub lockout_ms: i64,
    /// The window of the three request limits.
    pub request_window_ms: i64,
    /// Codes one tenant may request for one wallet per window.
    pub max_requests_per_subject: u32,
    /// Codes one phone number may be sent per window, by every tenant together.
    pub max_requests_per_phone: u32,
    /// Codes one tenant may have sent per window (its SMS quota).
    pub max_requests_per_tenant: u32,
}

impl Default for OtpSettings {
    fn default() -> Self {
        let d = OtpPolicy::default();
        OtpSettings {
            max_failed_attempts: d.max_failed_attempts,
            failure_window_ms: d.failure_window_ms,
            lockout_ms: d.lockout_ms,
            request_window_ms: d.request_window_ms,
            max_requests_per_subject: d.max_requests_per_subject,
            max_requests_per_phone: d.max_requests_per_phone,
            max_requests_per_tenant: d.max_requests_per_tenant,
        }
    }
}

impl OtpSettings {
    /// The engine's policy.
    pub fn policy(&self) -> OtpPolicy {
        OtpPolicy {
            max_failed_attempts: self.max_failed_attempts,
            failure_window_ms: self.failure_window_ms,
            lockout_ms: self.lockout_ms,
            request_window_ms: self.request_window_ms,
            max_requests_per_subject: self.max_requests_per_subject,
            max_requests_per_phone: self.max_requests_per_phone,
            max_requests_per_tenant: self.max_requests_per_tenant,
        }
    }
}

/// `[limits]`: what the service pays for ([`stablecoin_core::domain::limits`]). Every
/// send is sponsored, so a send below its rail's floor is refused (400
/// AMOUNT_TOO_SMALL); a Solana provisioning pays rent that never comes back, so each
/// tenant gets a quota of them per window (429 RATE_LIMITED).
///
/// The default floors sit well above a send's typical sponsored cost at 2026 prices:
/// EVM L2s and Polygon cost a fraction of a cent, BNB Smart Chain a few cents, a TRON
/// USDT transfer's Energy up to a few dollars when burned (less when staked), a Solana
/// send a fraction of a cent plus, for a new recipient, about 0.002 SOL of rent.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SponsorshipSettings {
    /// Smallest send on an EVM chain, in tokens (a decimal string, `"0"`: no floor).
    pub min_send_evm: String,
    /// Smallest send on TRON, in tokens.
    pub min_send_tron: String,
    /// Smallest send on Solana, in tokens.
    pub min_send_solana: String,
    /// Rent-paying provisionings (Solana) one tenant may ask for per window.
    pub rent_quota_per_tenant: u32,
    /// The quota's window, in milliseconds.
    pub rent_quota_window_ms: i64,
}

impl Default for SponsorshipSettings {
    fn default() -> Self {
        let quota = RentQuota::default();
        SponsorshipSettings {
            min_send_evm: "0.10".into(),
            min_send_tron: "1.00".into(),
            min_send_solana: "0.10".into(),
            rent_quota_per_tenant: quota.max_per_tenant,
            rent_quota_window_ms: quota.window_ms,
        }
    }
}

impl SponsorshipSettings {
    /// The engine's floors; an amount that is not a decimal of at most 6 places is an
    /// error naming the key.
    pub fn min_send(&self) -> Result<MinSend, String> {
        let floor = |key: &str, v: &str| {
            if v.trim() == "0" {
                return Ok(0);
            }
            Micros::parse_decimal(v.trim())
                .map(|m| m.0)
                .map_err(|e| format!("limits.{key}: {e}"))
        };
        Ok(MinSend {
            evm_micros: floor("min_send_evm", &self.min_send_evm)?,
            tron_micros: floor("min_send_tron", &self.min_send_tron)?,
            solana_micros: floor("min_send_solana", &self.min_send_solana)?,
        })
    }

    /// The engine's rent quota.
    pub fn rent_quota(&self) -> RentQuota {
        RentQuota {
            max_per_tenant: self.rent_quota_per_tenant,
            window_ms: self.rent_quota_window_ms,
        }
    }
}
