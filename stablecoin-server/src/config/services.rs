//! The deployment's mode and its outside services: which SMS gateway, FX rate source,
//! key custody and payout provider the server uses.
//!
//! Each service is a `kind`-tagged table. The in-process kinds (`memory`, `fixed`,
//! `local`, `simulated`) are the zero-configuration defaults of `development` mode;
//! `production` mode refuses them (see `validate.rs`).

use super::Secret;
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
    /// Keys held by the signing service (`stablecoin-signer serve`): this process holds
    /// no key material and never reads or writes a seed file. See
    /// `docs/signer-protocol.md`.
    Remote {
        /// The service's base URL on a loopback or private address
        /// (`http://10.0.0.5:7300`).
        url: String,
        /// The shared token (at least 32 characters) requests are authenticated with.
        token: Secret,
        /// How long one call may take before the signer counts as unavailable.
        #[serde(default = "default_signer_timeout_ms")]
        timeout_ms: u64,
    },
}

fn default_signer_timeout_ms() -> u64 {
    5_000
}

impl SignerSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            SignerSettings::Local => "local",
            SignerSettings::Remote { .. } => "remote",
        }
    }

    /// Checks the fields of the `remote` kind: an http(s) URL, a token of at least 32
    /// characters, a timeout between 1 ms and 60 s.
    pub fn validate(&self) -> Result<(), String> {
        let SignerSettings::Remote {
            url,
            token,
            timeout_ms,
        } = self
        else {
            return Ok(());
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err("signer.url must start with http:// or https://".into());
        }
        if token.expose().len() < 32 {
            return Err("signer.token must be at least 32 characters".into());
        }
        if !(1..=60_000).contains(timeout_ms) {
            return Err("signer.timeout_ms must be between 1 and 60000".into());
        }
        Ok(())
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
}

impl PayoutSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            PayoutSettings::Simulated => "simulated",
        }
    }

    /// True for the simulated provider.
    pub fn is_simulated(&self) -> bool {
        matches!(self, PayoutSettings::Simulated)
    }
}
