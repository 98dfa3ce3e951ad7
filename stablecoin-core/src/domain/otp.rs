//! Guards on one-time codes: how many codes may be requested, how many wrong codes may
//! be tried, and for how long a subject is locked out after that.
//!
//! Why a guard separate from the challenge: a challenge lives ten minutes and a new
//! request replaces it. If wrong codes were counted on the challenge, each new request
//! would give an attacker a fresh budget, and a six-digit code falls to about a million
//! requests. So wrong codes are counted per *subject* (purpose, tenant, wallet) across
//! every challenge of that subject, and a subject that reaches the limit is locked out
//! for a while, whatever code it tries next, right or wrong.
//!
//! Requests are bounded three ways, each by its own [`OtpGuard`]:
//! - per subject (one tenant asking one wallet again and again);
//! - per destination phone (every tenant together: the SMS a phone receives);
//! - per tenant (the tenant's SMS quota across all its customers).
//!
//! Everything here is pure: the engine reads the guards, asks these functions, and
//! commits the updated guards in the same batch as the challenge, with version checks,
//! so concurrent requests and guesses are each counted exactly once.

use crate::domain::RuleError;
use crate::domain::ids::{ChallengeId, TenantId, WalletId};
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// Limits of one-time codes. Every field has a default (see [`OtpPolicy::default`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtpPolicy {
    /// Wrong codes a subject may try, across all its challenges, before it is locked out.
    pub max_failed_attempts: u32,
    /// Wrong codes older than this no longer count.
    pub failure_window_ms: i64,
    /// How long a subject stays locked out once it reached `max_failed_attempts`.
    pub lockout_ms: i64,
    /// The window of the request limits below.
    pub request_window_ms: i64,
    /// Codes one subject (purpose, tenant, wallet) may request per window.
    pub max_requests_per_subject: u32,
    /// Codes one destination phone may be sent per window, by all tenants together.
    pub max_requests_per_phone: u32,
    /// Codes one tenant may have sent per window (its SMS quota).
    pub max_requests_per_tenant: u32,
}

impl Default for OtpPolicy {
    /// Five wrong codes a day, then an hour's lockout: an attacker gets at most ~120
    /// guesses a day against a space of a million. Five requests per subject and ten per
    /// phone an hour cover a customer who did not receive a code and asks again; a
    /// tenant may send 1,000 codes an hour.
    fn default() -> Self {
        OtpPolicy {
            max_failed_attempts: 5,
            failure_window_ms: 24 * 3_600_000,
            lockout_ms: 3_600_000,
            request_window_ms: 3_600_000,
            max_requests_per_subject: 5,
            max_requests_per_phone: 10,
            max_requests_per_tenant: 1_000,
        }
    }
}

impl OtpPolicy {
    /// Refuses a policy that would lock nothing or allow nothing.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("max_failed_attempts", self.max_failed_attempts as i64),
            ("failure_window_ms", self.failure_window_ms),
            ("lockout_ms", self.lockout_ms),
            ("request_window_ms", self.request_window_ms),
            (
                "max_requests_per_subject",
                self.max_requests_per_subject as i64,
            ),
            ("max_requests_per_phone", self.max_requests_per_phone as i64),
            (
                "max_requests_per_tenant",
                self.max_requests_per_tenant as i64,
            ),
        ];
        match positive.iter().find(|(_, v)| *v <= 0) {
            Some((name, _)) => Err(format!("otp.{name} must be positive")),
            None => Ok(()),
        }
    }
}

/// A fixed-window counter: `count` events since `started_at`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Start of the current window.
    pub started_at: Timestamp,
    /// Events counted since `started_at`.
    pub count: u32,
}

impl Window {
    /// The count as of `now` (0 once the window has passed).
    pub fn current(&self, now: Timestamp, window_ms: i64) -> u32 {
        if now.millis() >= self.started_at.millis().saturating_add(window_ms) {
            0
        } else {
            self.count
        }
    }

    /// Counts one event at `now`, starting a new window if the last one has passed.
    pub fn add(&mut self, now: Timestamp, window_ms: i64) {
        if self.current(now, window_ms) == 0 {
            *self = Window {
                started_at: now,
                count: 0,
            };
        }
        self.count = self.count.saturating_add(1);
    }

    /// Milliseconds until the window ends (at least 1).
    pub fn retry_after_ms(&self, now: Timestamp, window_ms: i64) -> i64 {
        (self.started_at.millis().saturating_add(window_ms) - now.millis()).max(1)
    }
}

/// What one guard protects. Its id is derived from it, so a guard is found without an
/// index and two requests for the same scope always meet on the same record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GuardScope {
    /// One tenant's codes for one wallet and one purpose (`link`, `phone_change`): the
    /// requests and the wrong codes of this subject.
    Subject {
        /// [`ChallengePurpose::kind`](crate::domain::consent::ChallengePurpose::kind).
        purpose: String,
        /// The tenant asking for codes.
        tenant: TenantId,
        /// The wallet the codes act on.
        wallet: WalletId,
    },
    /// Codes sent to one phone number, by every tenant.
    Phone {
        /// The number codes are sent to.
        phone: Phone,
    },
    /// Codes one tenant has sent.
    Tenant {
        /// The tenant sending codes.
        tenant: TenantId,
    },
}

impl GuardScope {
    /// The guard's record id.
    pub fn guard_id(&self) -> String {
        match self {
            GuardScope::Subject {
                purpose,
                tenant,
                wallet,
            } => format!("otpg_subject:{purpose}:{tenant}:{wallet}"),
            GuardScope::Phone { phone } => format!("otpg_phone:{phone}"),
            GuardScope::Tenant { tenant } => format!("otpg_tenant:{tenant}"),
        }
    }
}

/// Counters of one scope, stored as a record and updated with a version check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtpGuard {
    /// [`GuardScope::guard_id`] of `scope`.
    pub id: String,
    /// What the counters limit.
    pub scope: GuardScope,
    /// When the scope's first event was counted.
    pub created_at: Timestamp,
    /// Last change of a counter or of the lockout.
    pub updated_at: Timestamp,
    /// Codes requested in the current request window.
    pub requests: Window,
    /// Wrong codes in the current failure window (subjects only).
    pub failures: Window,
    /// Set when the subject reached the failure limit: every confirm and every request
    /// is refused until then.
    pub locked_until: Option<Timestamp>,
}

impl OtpGuard {
    /// A guard with nothing counted yet.
    pub fn new(scope: GuardScope, now: Timestamp) -> Self {
        OtpGuard {
            id: scope.guard_id(),
            scope,
            created_at: now,
            updated_at: now,
            requests: Window::default(),
            failures: Window::default(),
            locked_until: None,
        }
    }

    /// `Err(TooManyAttempts)` while the subject is locked out.
    pub fn check_not_locked(&self, now: Timestamp) -> Result<(), RuleError> {
        match self.locked_until {
            Some(until) if now < until => Err(RuleError::TooManyAttempts {
                retry_after_ms: until.millis() - now.millis(),
            }),
            _ => Ok(()),
        }
    }

    /// Counts a code request against `max` per window, or refuses it with
    /// `RateLimited` (nothing counted) when the window is full.
    pub fn count_request(
        &mut self,
        now: Timestamp,
        policy: &OtpPolicy,
        max: u32,
    ) -> Result<(), RuleError> {
        let window_ms = policy.request_window_ms;
        if self.requests.current(now, window_ms) >= max {
            return Err(RuleError::RateLimited {
                what: self.limit_name().into(),
                retry_after_ms: self.requests.retry_after_ms(now, window_ms),
            });
        }
        self.requests.add(now, window_ms);
        self.updated_at = now;
        Ok(())
    }

    /// Counts a wrong code. Returns the error the caller answers: `CodeInvalid` with the
    /// attempts left, or `TooManyAttempts` when this one reached the limit (the subject
    /// is then locked out and its failure count starts again after the lockout).
    pub fn count_failure(&mut self, now: Timestamp, policy: &OtpPolicy) -> RuleError {
        self.failures.add(now, policy.failure_window_ms);
        self.updated_at = now;
        if self.failures.count >= policy.max_failed_attempts {
            self.failures = Window::default();
            self.locked_until = Some(now.plus_millis(policy.lockout_ms));
            RuleError::TooManyAttempts {
                retry_after_ms: policy.lockout_ms,
            }
        } else {
            RuleError::CodeInvalid {
                attempts_left: policy.max_failed_attempts - self.failures.count,
            }
        }
    }

    /// A confirmed code clears the subject's wrong codes.
    pub fn clear_failures(&mut self, now: Timestamp) {
        self.failures = Window::default();
        self.locked_until = None;
        self.updated_at = now;
    }

    fn limit_name(&self) -> &'static str {
        match self.scope {
            GuardScope::Subject { .. } => "one-time codes for this wallet",
            GuardScope::Phone { .. } => "one-time codes to this phone number",
            GuardScope::Tenant { .. } => "one-time codes of this tenant",
        }
    }
}

/// The server-side key one-time codes are hashed with (HMAC-SHA256), so that a copy of
/// the database alone cannot recover a code by trying all million of them.
#[derive(Clone, PartialEq, Eq)]
pub struct CodeKey([u8; 32]);

impl CodeKey {
    /// A key of 32 secret bytes (keep it out of logs: `Debug` does not print it).
    pub fn new(bytes: [u8; 32]) -> Self {
        CodeKey(bytes)
    }

    /// The key of a master seed: `HMAC-SHA256(seed, "stablecoin/otp-code-key/v1")`, so
    /// every process of one deployment agrees on it without another secret to manage,
    /// and it reveals nothing about the seed.
    pub fn from_master_seed(seed: &[u8; 32]) -> Self {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(seed).expect("HMAC accepts a key of any length");
        mac.update(b"stablecoin/otp-code-key/v1");
        CodeKey(mac.finalize().into_bytes().into())
    }

    /// `HMAC-SHA256(key, "<challenge id>:<code>")`, hex.
    pub fn hash_code(&self, id: &ChallengeId, code: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .expect("HMAC accepts a key of any length");
        mac.update(id.0.as_bytes());
        mac.update(b":");
        mac.update(code.as_bytes());
        crate::domain::consent::hex(&mac.finalize().into_bytes())
    }
}

/// Redacted: the key never appears in logs.
impl std::fmt::Debug for CodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(now: Timestamp) -> OtpGuard {
        OtpGuard::new(
            GuardScope::Subject {
                purpose: "link".into(),
                tenant: TenantId("ten_a".into()),
                wallet: WalletId("wal_x".into()),
            },
            now,
        )
    }

    #[test]
    fn a_window_counts_until_it_passes() {
        let mut w = Window::default();
        w.add(Timestamp(1_000), 100);
        w.add(Timestamp(1_050), 100);
        assert_eq!(w.current(Timestamp(1_099), 100), 2);
        assert_eq!(w.retry_after_ms(Timestamp(1_099), 100), 1);
        assert_eq!(w.current(Timestamp(1_100), 100), 0);
        w.add(Timestamp(1_100), 100);
        assert_eq!((w.started_at, w.count), (Timestamp(1_100), 1));
    }

    #[test]
    fn wrong_codes_lock_the_subject_out_then_count_again() {
        let p = OtpPolicy::default();
        let mut g = subject(Timestamp(0));
        for left in (1..p.max_failed_attempts).rev() {
            assert_eq!(
                g.count_failure(Timestamp(10), &p),
                RuleError::CodeInvalid {
                    attempts_left: left
                }
            );
            assert!(g.check_not_locked(Timestamp(10)).is_ok());
        }
        assert_eq!(
            g.count_failure(Timestamp(10), &p),
            RuleError::TooManyAttempts {
                retry_after_ms: p.lockout_ms
            }
        );
        assert_eq!(
            g.check_not_locked(Timestamp(10 + p.lockout_ms - 1)),
            Err(RuleError::TooManyAttempts { retry_after_ms: 1 })
        );
        assert!(g.check_not_locked(Timestamp(10 + p.lockout_ms)).is_ok());
        assert_eq!(
            g.count_failure(Timestamp(10 + p.lockout_ms), &p),
            RuleError::CodeInvalid {
                attempts_left: p.max_failed_attempts - 1
            },
            "a new budget after the lockout, not an immediate second lockout"
        );
    }

    #[test]
    fn old_wrong_codes_are_forgotten_and_a_success_clears_them() {
        let p = OtpPolicy::default();
        let mut g = subject(Timestamp(0));
        g.count_failure(Timestamp(0), &p);
        g.count_failure(Timestamp(0), &p);
        assert_eq!(
            g.count_failure(Timestamp(p.failure_window_ms), &p),
            RuleError::CodeInvalid {
                attempts_left: p.max_failed_attempts - 1
            }
        );
        g.clear_failures(Timestamp(p.failure_window_ms));
        assert_eq!(g.failures.count, 0);
    }

    #[test]
    fn requests_are_limited_per_window_and_a_refusal_counts_nothing() {
        let p = OtpPolicy::default();
        let mut g = subject(Timestamp(0));
        for _ in 0..3 {
            g.count_request(Timestamp(5), &p, 3).unwrap();
        }
        let e = g.count_request(Timestamp(6), &p, 3).unwrap_err();
        assert_eq!(e.code(), "RATE_LIMITED");
        assert_eq!(e.retry_after_ms(), Some(p.request_window_ms - 1));
        assert_eq!(g.requests.count, 3);
        g.count_request(Timestamp(5 + p.request_window_ms), &p, 3)
            .unwrap();
        assert_eq!(g.requests.count, 1);
    }

    #[test]
    fn scopes_have_distinct_ids() {
        let t = TenantId("ten_a".into());
        let ids = [
            GuardScope::Subject {
                purpose: "link".into(),
                tenant: t.clone(),
                wallet: WalletId("wal_x".into()),
            },
            GuardScope::Subject {
                purpose: "phone_change".into(),
                tenant: t.clone(),
                wallet: WalletId("wal_x".into()),
            },
            GuardScope::Phone {
                phone: Phone::parse("+2250700000001").unwrap(),
            },
            GuardScope::Tenant { tenant: t },
        ]
        .map(|s| s.guard_id());
        let unique: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
    }

    #[test]
    fn codes_are_keyed_hashes() {
        let id = ChallengeId("otp_1".into());
        let a = CodeKey::new([1; 32]);
        let b = CodeKey::new([2; 32]);
        assert_eq!(a.hash_code(&id, "123456"), a.hash_code(&id, "123456"));
        assert_ne!(a.hash_code(&id, "123456"), b.hash_code(&id, "123456"));
        assert_ne!(a.hash_code(&id, "123456"), a.hash_code(&id, "123457"));
        assert_eq!(format!("{a:?}"), "CodeKey(<redacted>)");
    }

    #[test]
    fn a_policy_must_allow_and_limit_something() {
        assert!(OtpPolicy::default().validate().is_ok());
        let p = OtpPolicy {
            max_requests_per_phone: 0,
            ..OtpPolicy::default()
        };
        assert!(p.validate().unwrap_err().contains("max_requests_per_phone"));
    }
}
