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
            if u.starts_with("https://") || u.starts_with("http://") {
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
                if auth_token.expose().trim().is_empty() {
                    return Err("sms.auth_token must not be empty".into());
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

/// `[notices]`: the text of the "you received money" SMS, sent to a recipient no tenant
/// serves (`stablecoin_core::engine::SmsPolicy`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct NoticeSettings {
    /// USSD access instructions per country, keyed by E.164 calling code without `+`
    /// (`"225" = "Composez le *144# ..."`); the longest code prefixing the number wins.
    pub ussd_instructions: std::collections::BTreeMap<String, String>,
    /// The instructions for every other number; the engine's English default when
    /// absent.
    pub ussd_instructions_default: Option<String>,
}

/// The longest instructions text: the notice must stay one SMS (160 GSM characters)
/// after "You received <amount> <token>. ".
const USSD_TEXT_MAX: usize = 110;

impl NoticeSettings {
    /// The engine's SMS policy with these texts.
    pub fn sms_policy(&self) -> stablecoin_core::engine::SmsPolicy {
        let mut p = stablecoin_core::engine::SmsPolicy {
            ussd_instructions: self.ussd_instructions.clone(),
            ..Default::default()
        };
        if let Some(d) = &self.ussd_instructions_default {
            p.ussd_instructions_default = d.clone();
        }
        p
    }

    /// Checks the calling codes (1 to 4 digits) and texts (1 to 110 characters).
    pub fn validate(&self) -> Result<(), String> {
        let text_ok = |t: &str| !t.trim().is_empty() && t.chars().count() <= USSD_TEXT_MAX;
        for (code, text) in &self.ussd_instructions {
            if code.is_empty() || code.len() > 4 || !code.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "notices.ussd_instructions: {code:?} is not a calling code (1 to 4 digits, no +)"
                ));
            }
            if !text_ok(text) {
                return Err(format!(
                    "notices.ussd_instructions.{code} must be 1 to {USSD_TEXT_MAX} characters"
                ));
            }
        }
        match &self.ussd_instructions_default {
            Some(t) if !text_ok(t) => Err(format!(
                "notices.ussd_instructions_default must be 1 to {USSD_TEXT_MAX} characters"
            )),
            _ => Ok(()),
        }
    }
}
