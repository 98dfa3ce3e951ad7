//! Limits an operator can tune: the HTTP listener's (`[http]`), the per-key rate limits
//! (`[rate_limits]`) and the one-time codes' (`[otp]`). Every default is what the types
//! they configure default to, so an empty configuration is the documented behaviour.

use crate::listener::ServeLimits;
use crate::rate_limit::{Budget, RateLimits};
use serde::Deserialize;
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
