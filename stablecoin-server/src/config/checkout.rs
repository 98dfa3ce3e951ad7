//! `[checkout]`: the checkout gateway's session bounds and the deposit-intake secret.

use serde::Deserialize;
use stablecoin_checkout::CheckoutConfig;
use std::fmt;

/// `[checkout]`.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CheckoutSettings {
    /// Expiry of a session created without `expires_in_secs`.
    pub default_expiry_secs: u64,
    /// The shortest `expires_in_secs` a session may ask for (default 60).
    pub min_expiry_secs: u64,
    /// How long after expiry deposits seen in time may still confirm and pay the session.
    pub confirm_grace_ms: i64,
    /// The shared secret a separately deployed deposit scanner signs its reports to
    /// `POST /v1/scanner/deposit-events` with (`X-Webhook-Signature`, the payments
    /// family's scheme). Absent: the intake route answers 404 `INTAKE_DISABLED`.
    pub intake_secret: Option<String>,
    /// How long a refund's claim link (`/pay/refunds/{refund_id}`) may be used before
    /// its money goes back to where it came from (default 2592000, 30 days).
    pub refund_claim_secs: u64,
}

impl Default for CheckoutSettings {
    fn default() -> Self {
        let d = CheckoutConfig::default();
        CheckoutSettings {
            default_expiry_secs: d.default_expiry_secs,
            min_expiry_secs: d.min_expiry_secs,
            confirm_grace_ms: d.confirm_grace_ms,
            intake_secret: None,
            refund_claim_secs: d.refund_claim_secs,
        }
    }
}

impl fmt::Debug for CheckoutSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckoutSettings")
            .field("default_expiry_secs", &self.default_expiry_secs)
            .field("min_expiry_secs", &self.min_expiry_secs)
            .field("confirm_grace_ms", &self.confirm_grace_ms)
            .field("refund_claim_secs", &self.refund_claim_secs)
            .field(
                "intake_secret",
                &self.intake_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl CheckoutSettings {
    /// The shortest intake secret accepted: whoever holds it credits tenants' treasuries
    /// by reporting deposits, so it is a key, not a password (an empty one would let
    /// anyone sign a report).
    pub const MIN_INTAKE_SECRET_LEN: usize = 32;

    /// Why these settings cannot be used, if they cannot.
    pub fn problem(&self) -> Option<String> {
        if self
            .intake_secret
            .as_ref()
            .is_some_and(|s| s.trim().len() < Self::MIN_INTAKE_SECRET_LEN)
        {
            return Some(format!(
                "checkout.intake_secret must be at least {} characters (whoever can sign \
                 a deposit report credits a tenant's treasury)",
                Self::MIN_INTAKE_SECRET_LEN
            ));
        }
        if self.refund_claim_secs == 0 || self.refund_claim_secs > 365 * 24 * 3600 {
            return Some(
                "checkout.refund_claim_secs must be between 1 and 31536000 (a year)".into(),
            );
        }
        None
    }

    /// The engine's settings (the host fills in the worker's batch, lease and name).
    pub fn engine_config(&self) -> CheckoutConfig {
        CheckoutConfig {
            default_expiry_secs: self.default_expiry_secs,
            min_expiry_secs: self.min_expiry_secs,
            confirm_grace_ms: self.confirm_grace_ms,
            refund_claim_secs: self.refund_claim_secs,
            ..CheckoutConfig::default()
        }
    }
}
