//! The deployment's mode and its outside services: which SMS gateway, FX rate source,
//! key custody and payout provider the server uses.
//!
//! Each service is a `kind`-tagged table. The in-process kinds (`memory`, `fixed`,
//! `local`, `simulated`) are the zero-configuration defaults of `development` mode;
//! `production` mode refuses them (see `validate.rs`).

use super::Secret;
use serde::Deserialize;
use stablecoin_core::memory::FixedRates;
use stablecoin_core::ports::{Clock, RateSource};
use stablecoin_providers::ProviderError;
use stablecoin_providers::rate_feed::{HttpRateFeed, RateFeedConfig};
use std::collections::BTreeMap;
use std::sync::Arc;

/// True for an `http://` or `https://` URL: the endpoints of the outside services
/// (gateways, the signing service) are checked with it.
pub(crate) fn is_http_url(u: &str) -> bool {
    u.starts_with("https://") || u.starts_with("http://")
}

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
    /// Africa's Talking messaging. Its delivery reports are posted (unsigned) to
    /// `POST /v1/callbacks/sms/africastalking`, set as the delivery-report URL in its
    /// dashboard.
    #[serde(rename = "africastalking")]
    AfricasTalking {
        /// API base (default `https://api.africastalking.com`; the sandbox is
        /// `https://api.sandbox.africastalking.com`).
        #[serde(default = "at_base_url")]
        base_url: String,
        /// The application's username (`sandbox` on the sandbox).
        username: String,
        /// The application's API key.
        api_key: Secret,
        /// Sender id or short code; the account's default when absent.
        #[serde(default)]
        from: Option<String>,
        /// Time limit of one send, in milliseconds (default 10000).
        #[serde(default = "sms_timeout_ms")]
        timeout_ms: u64,
    },
    /// Twilio Messages. Status callbacks are verified with `X-Twilio-Signature` at
    /// `POST /v1/callbacks/sms/twilio`.
    Twilio {
        /// API base (default `https://api.twilio.com`).
        #[serde(default = "twilio_base_url")]
        base_url: String,
        /// The account SID (`AC...`).
        account_sid: String,
        /// The auth token (Basic-auth password, and the key callbacks are signed with).
        auth_token: Secret,
        /// The sender number or id; exactly one of `from` and `messaging_service_sid`.
        #[serde(default)]
        from: Option<String>,
        /// The Messaging Service (`MG...`) that picks the sender.
        #[serde(default)]
        messaging_service_sid: Option<String>,
        /// The full public URL of this server's `/v1/callbacks/sms/twilio`, as Twilio
        /// will call it (signatures cover it); no delivery reports when absent.
        #[serde(default)]
        status_callback_url: Option<String>,
        /// Time limit of one send, in milliseconds (default 10000).
        #[serde(default = "sms_timeout_ms")]
        timeout_ms: u64,
    },
}

fn at_base_url() -> String {
    "https://api.africastalking.com".into()
}

fn twilio_base_url() -> String {
    "https://api.twilio.com".into()
}

fn sms_timeout_ms() -> u64 {
    10_000
}

impl SmsSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            SmsSettings::Memory => "memory",
            SmsSettings::AfricasTalking { .. } => "africastalking",
            SmsSettings::Twilio { .. } => "twilio",
        }
    }

    /// True when messages never leave the process.
    pub fn is_in_memory(&self) -> bool {
        matches!(self, SmsSettings::Memory)
    }

    /// Checks the gateway's fields; the error names the setting.
    pub fn validate(&self) -> Result<(), String> {
        let url = |key: &str, u: &str| {
            if is_http_url(u) {
                Ok(())
            } else {
                Err(format!("sms.{key} must be an http(s) URL"))
            }
        };
        let timeout = |t: u64| {
            if (100..=120_000).contains(&t) {
                Ok(())
            } else {
                Err("sms.timeout_ms must be between 100 and 120000".to_string())
            }
        };
        match self {
            SmsSettings::Memory => Ok(()),
            SmsSettings::AfricasTalking {
                base_url,
                username,
                api_key,
                timeout_ms,
                ..
            } => {
                url("base_url", base_url)?;
                if username.trim().is_empty() {
                    return Err("sms.username must not be empty".into());
                }
                if api_key.expose().trim().is_empty() {
                    return Err("sms.api_key must not be empty".into());
                }
                timeout(*timeout_ms)
            }
            SmsSettings::Twilio {
                base_url,
                account_sid,
                auth_token,
                from,
                messaging_service_sid,
                status_callback_url,
                timeout_ms,
            } => {
                url("base_url", base_url)?;
                if account_sid.trim().is_empty() {
                    return Err("sms.account_sid must not be empty".into());
                }
                // The auth token is also the key status callbacks are verified with, so
                // it is held to the length of every other verifying secret (Twilio's
                // are 32 characters).
                if auth_token.expose().trim().len() < MIN_VERIFYING_SECRET_LEN {
                    return Err(format!(
                        "sms.auth_token must be at least {MIN_VERIFYING_SECRET_LEN} characters (it verifies Twilio's callbacks)"
                    ));
                }
                if from.is_some() == messaging_service_sid.is_some() {
                    return Err(
                        "sms: set exactly one of sms.from and sms.messaging_service_sid".into(),
                    );
                }
                if let Some(u) = status_callback_url {
                    url("status_callback_url", u)?;
                }
                timeout(*timeout_ms)
            }
        }
    }
}

/// `[rates]`: where FX rates come from (`RateSource`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RatesSettings {
    /// The built-in demo table (development only: not a market rate).
    #[default]
    Fixed,
    /// An HTTP rate feed (`stablecoin_providers::rate_feed::HttpRateFeed`): each pair's
    /// rate is GET from `url` and read at `rate_pointer`, kept at most `max_age_ms`,
    /// quoted with `spread_bps` and rounded to the currency's decimals, both in the
    /// service's favour. A stale rate is refused (RATE_STALE), a failing feed too
    /// (RATE_SOURCE_ERROR).
    Http {
        /// The URL GET for a pair's rate; `{currency}` and `{token}` are replaced by the
        /// pair's codes (`XOF`, `USDC`). May carry a key, so never printed.
        url: Secret,
        /// The header `auth_value` is sent in (`Authorization`, `X-Api-Key`), if the
        /// feed wants a credential.
        #[serde(default)]
        auth_header: Option<String>,
        /// The credential sent in `auth_header`, whole (`Bearer …`); a secret.
        #[serde(default)]
        auth_value: Option<Secret>,
        /// JSON pointer (RFC 6901) to the rate in the answer, local currency per token,
        /// a number or a string (`/data/rate`); `{currency}`/`{token}` as in `url`.
        rate_pointer: String,
        /// JSON pointer to the feed's time of the rate (Unix seconds or RFC 3339); the
        /// rate's age counts from it. Without it, the age counts from the fetch.
        #[serde(default)]
        timestamp_pointer: Option<String>,
        /// A rate older than this is never quoted (default 60 000 ms).
        #[serde(default = "default_rates_max_age_ms")]
        max_age_ms: u64,
        /// The spread, in basis points (150 = 1.5%), in the service's favour (default 0).
        #[serde(default)]
        spread_bps: u32,
        /// The sanity band, in basis points (default 1000 = 10%): a fetched rate this far
        /// or further from the last accepted one of the pair is refused (503
        /// RATE_STALE) and logged, the last accepted one staying the reference.
        #[serde(default = "default_rates_max_move_bps")]
        max_move_bps: u32,
        /// The longest one request to the feed may take (default 5 000 ms).
        #[serde(default = "default_rates_timeout_ms")]
        timeout_ms: u64,
        /// Decimals of a quoted rate per ISO 4217 code (`{ NGN = 4 }`); a currency not
        /// listed is rounded to its ISO minor unit (XOF 0, NGN 2).
        #[serde(default)]
        decimals: BTreeMap<String, u32>,
    },
}

fn default_rates_max_age_ms() -> u64 {
    60_000
}

/// The shortest secret that verifies what arrives from outside (a provider's callback
/// signature, the deposit intake's, a bearer token): 32 characters.
pub const MIN_VERIFYING_SECRET_LEN: usize = 32;

fn default_rates_max_move_bps() -> u32 {
    stablecoin_providers::rate_feed::DEFAULT_MAX_MOVE_BPS
}

fn default_rates_timeout_ms() -> u64 {
    5_000
}

impl RatesSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            RatesSettings::Fixed => "fixed",
            RatesSettings::Http { .. } => "http",
        }
    }

    /// The feed's URL (a secret: it may carry a key), for `http`.
    pub fn url(&self) -> Option<&str> {
        match self {
            RatesSettings::Fixed => None,
            RatesSettings::Http { url, .. } => Some(url.expose()),
        }
    }

    /// True for the built-in demo table.
    pub fn is_fixed(&self) -> bool {
        matches!(self, RatesSettings::Fixed)
    }

    /// The HTTP feed's settings as the adapter takes them (`None` for `fixed`).
    pub fn feed_config(&self) -> Option<RateFeedConfig> {
        match self {
            RatesSettings::Fixed => None,
            RatesSettings::Http {
                url,
                auth_header,
                auth_value,
                rate_pointer,
                timestamp_pointer,
                max_age_ms,
                spread_bps,
                max_move_bps,
                timeout_ms,
                decimals,
            } => Some(RateFeedConfig {
                url: url.expose().to_string(),
                auth_header: auth_header.clone(),
                auth_value: auth_value.as_ref().map(|v| v.expose().to_string()),
                rate_pointer: rate_pointer.clone(),
                timestamp_pointer: timestamp_pointer.clone(),
                max_age_ms: *max_age_ms,
                spread_bps: *spread_bps,
                max_move_bps: Some(*max_move_bps),
                timeout_ms: *timeout_ms,
                decimals: decimals.clone(),
            }),
        }
    }

    /// The rate source these settings name: the demo table, or the HTTP feed measuring
    /// rate ages on `clock`. `Err` names the bad setting (never a secret).
    pub fn rate_source(&self, clock: Arc<dyn Clock>) -> Result<Arc<dyn RateSource>, String> {
        match self.feed_config() {
            None => Ok(Arc::new(FixedRates::demo())),
            Some(c) => HttpRateFeed::new(c, clock)
                .map(|feed| Arc::new(feed) as Arc<dyn RateSource>)
                .map_err(|e| format!("rates (http): {e}")),
        }
    }

    /// Checks an `http` feed's settings (`rates.<field>` named, never a secret).
    pub fn validate(&self) -> Result<(), String> {
        match self.feed_config() {
            None => Ok(()),
            Some(c) => c.validate().map_err(|e| match e {
                ProviderError::Config(why) => format!("rates (http): {why}"),
                other => format!("rates (http): {other}"),
            }),
        }
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
        if !is_http_url(url) {
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
