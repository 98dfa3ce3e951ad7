//! The deployment's mode and its outside services: which SMS gateway, FX rate source,
//! key custody and payout provider the server uses.
//!
//! Each service is a `kind`-tagged table. The in-process kinds (`memory`, `fixed`,
//! `local`, `simulated`) are the zero-configuration defaults of `development` mode;
//! `production` mode refuses them (see `validate.rs`).

use serde::Deserialize;

/// `mode`: what the deployment is for.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The zero-configuration default: simulated rails, a demo tenant, in-memory
    /// services, everything labelled simulated.
    #[default]
    Development,
    /// Real money: refuses to start with any simulated or in-memory part, naming each.
    Production,
}

impl Mode {
    /// The word used in the banner and in readiness details.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Development => "development",
            Mode::Production => "production",
        }
    }
}

/// `[sms]`: the SMS gateway one-time codes and notices go through (`Notifier`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SmsSettings {
    /// Messages stay in the process (development only: nothing reaches a phone).
    #[default]
    Memory,
}

impl SmsSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            SmsSettings::Memory => "memory",
        }
    }

    /// True when messages never leave the process.
    pub fn is_in_memory(&self) -> bool {
        matches!(self, SmsSettings::Memory)
    }
}

/// `[rates]`: where FX rates come from (`RateSource`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RatesSettings {
    /// The built-in demo table (development only: not a market rate).
    #[default]
    Fixed,
}

impl RatesSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            RatesSettings::Fixed => "fixed",
        }
    }

    /// True for the built-in demo table.
    pub fn is_fixed(&self) -> bool {
        matches!(self, RatesSettings::Fixed)
    }
}

/// `[signer]`: where keys live (`Signer`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SignerSettings {
    /// Keys derived in this process from the master seed (development only).
    #[default]
    Local,
}

impl SignerSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            SignerSettings::Local => "local",
        }
    }

    /// True when this process holds the master seed.
    pub fn is_local(&self) -> bool {
        matches!(self, SignerSettings::Local)
    }
}

/// `[payouts]`: the mobile-money provider withdrawals pay out through
/// (`PayoutProvider`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PayoutSettings {
    /// A simulated provider that pays every payout (development only).
    #[default]
    Simulated,
    /// No provider: withdrawals are refused (503 WITHDRAWALS_UNAVAILABLE) before
    /// anything is held. A production deployment without a payout contract uses it.
    Disabled,
}

impl PayoutSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            PayoutSettings::Simulated => "simulated",
            PayoutSettings::Disabled => "disabled",
        }
    }

    /// True for the simulated provider.
    pub fn is_simulated(&self) -> bool {
        matches!(self, PayoutSettings::Simulated)
    }
}
