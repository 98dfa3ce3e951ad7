//! `[payouts]`: the mobile-money provider withdrawals pay out through
//! (`PayoutProvider`), built by [`crate::payouts`].

use super::Secret;
use super::services::is_http_url;
use serde::Deserialize;

/// `[payouts]`: the mobile-money provider withdrawals pay out through
/// (`PayoutProvider`). Whatever the provider, a withdrawal completes or is refunded only
/// on the answer of the provider's status query; its callbacks are hints
/// ([`crate::payouts`]).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PayoutSettings {
    /// A simulated provider that pays every payout (development only).
    #[default]
    Simulated,
    /// No provider: new withdrawals are refused (503 WITHDRAWALS_UNAVAILABLE) before
    /// anything is held. A production deployment without a payout contract uses it.
    /// Switching to it never completes or refunds a payout another provider took: it
    /// stays in flight until that provider is configured again or staff resolve it
    /// (`POST /admin/v1/withdrawals/{id}/payout/resolve`); a withdrawal swept but not
    /// yet submitted is refunded.
    Disabled,
    /// M-Pesa Daraja B2C (Kenya, KES in whole shillings). Daraja POSTs each payout's
    /// results to `{callback_base_url}/v1/callbacks/payouts/mpesa/result/{id}/{token}`
    /// (the status query's answers arrive there too) and its queue timeouts to
    /// `.../mpesa/timeout/{id}/{token}`, the token an HMAC of the payout id under
    /// `callback_secret`. Results are kept in the database (any node reads them),
    /// purged after `retention.payout_results_hours`.
    Mpesa {
        /// API base (default `https://api.safaricom.co.ke`; the sandbox is
        /// `https://sandbox.safaricom.co.ke`).
        #[serde(default = "mpesa_base_url")]
        base_url: String,
        /// The Daraja app's consumer key.
        consumer_key: String,
        /// The Daraja app's consumer secret.
        consumer_secret: Secret,
        /// The B2C initiator's user name.
        initiator_name: String,
        /// The initiator's password already RSA-encrypted with M-Pesa's certificate,
        /// base64 (Daraja's portal generates it); sent as given.
        security_credential: Secret,
        /// The B2C shortcode paying (`PartyA`).
        shortcode: String,
        /// `BusinessPayment` (default), `SalaryPayment` or `PromotionPayment`.
        #[serde(default = "mpesa_command_id")]
        command_id: String,
        /// This server's public base URL as Daraja reaches it (`https://pay.example`);
        /// the callback routes are appended.
        callback_base_url: String,
        /// The secret each payout's callback token is derived under (at least 32
        /// characters; the same on every node). Rotating it invalidates the URLs of
        /// payouts in flight: their status then comes from the status query alone.
        callback_secret: Secret,
        /// Time limit of one request, in milliseconds (default 10000).
        #[serde(default = "payout_timeout_ms")]
        timeout_ms: u64,
        /// How long a status check waits for its query's result, in milliseconds
        /// (default 2000); no result in time is "pending", asked again later.
        #[serde(default = "mpesa_result_wait_ms")]
        result_wait_ms: u64,
    },
    /// MTN MoMo Disbursement. With `callback_base_url`, MTN calls back
    /// `{callback_base_url}/v1/callbacks/payouts/mtn_momo/{id}/{token}` (a hint only,
    /// checked against the payout and logged; the status GET decides).
    MtnMomo {
        /// API base: `https://sandbox.momodeveloper.mtn.com`, or the production base
        /// MTN gives.
        base_url: String,
        /// The API user (a UUID).
        api_user: String,
        /// The API user's key.
        api_key: Secret,
        /// The Disbursement product's subscription key (`Ocp-Apim-Subscription-Key`).
        subscription_key: Secret,
        /// `X-Target-Environment`: `sandbox`, `mtnuganda`, `mtnghana`, ...
        target_environment: String,
        /// The one currency this environment pays (`EUR` on the sandbox, `UGX`, ...): a
        /// withdrawal in another is refused before anything is held.
        currency: String,
        /// This server's public base URL as MTN reaches it; no callbacks when absent.
        #[serde(default)]
        callback_base_url: Option<String>,
        /// The secret of the per-payout callback tokens (at least 32 characters);
        /// required with `callback_base_url`.
        #[serde(default)]
        callback_secret: Option<Secret>,
        /// Time limit of one request, in milliseconds (default 10000).
        #[serde(default = "payout_timeout_ms")]
        timeout_ms: u64,
    },
}

fn mpesa_base_url() -> String {
    "https://api.safaricom.co.ke".into()
}

fn mpesa_command_id() -> String {
    "BusinessPayment".into()
}

fn payout_timeout_ms() -> u64 {
    10_000
}

fn mpesa_result_wait_ms() -> u64 {
    2_000
}

/// Daraja's B2C command ids.
const MPESA_COMMANDS: &[&str] = &["BusinessPayment", "SalaryPayment", "PromotionPayment"];

impl PayoutSettings {
    /// The `kind` as written in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            PayoutSettings::Simulated => "simulated",
            PayoutSettings::Disabled => "disabled",
            PayoutSettings::Mpesa { .. } => "mpesa",
            PayoutSettings::MtnMomo { .. } => "mtn_momo",
        }
    }

    /// True for the simulated provider.
    pub fn is_simulated(&self) -> bool {
        matches!(self, PayoutSettings::Simulated)
    }

    /// The only payout currency the provider pays, when it pays only one (M-Pesa: KES;
    /// MTN: its `currency`); `None` for the simulated provider and `disabled`.
    pub fn currency(&self) -> Option<&str> {
        match self {
            PayoutSettings::Mpesa { .. } => Some("KES"),
            PayoutSettings::MtnMomo { currency, .. } => Some(currency),
            _ => None,
        }
    }

    /// Checks the provider's fields; the error names the setting (never a secret).
    pub fn validate(&self) -> Result<(), String> {
        let url = |key: &str, u: &str| {
            if is_http_url(u) {
                Ok(())
            } else {
                Err(format!("payouts.{key} must be an http(s) URL"))
            }
        };
        let filled = |key: &str, v: &str| {
            if v.trim().is_empty() {
                Err(format!("payouts.{key} must not be empty"))
            } else {
                Ok(())
            }
        };
        let long_secret = |s: &str| {
            if s.len() >= stablecoin_providers::callback::MIN_SECRET_LEN {
                Ok(())
            } else {
                Err(format!(
                    "payouts.callback_secret must be at least {} characters",
                    stablecoin_providers::callback::MIN_SECRET_LEN
                ))
            }
        };
        let timeout = |key: &str, t: u64| {
            if (100..=120_000).contains(&t) {
                Ok(())
            } else {
                Err(format!("payouts.{key} must be between 100 and 120000"))
            }
        };
        match self {
            PayoutSettings::Simulated | PayoutSettings::Disabled => Ok(()),
            PayoutSettings::Mpesa {
                base_url,
                consumer_key,
                consumer_secret,
                initiator_name,
                security_credential,
                shortcode,
                command_id,
                callback_base_url,
                callback_secret,
                timeout_ms,
                result_wait_ms,
            } => {
                url("base_url", base_url)?;
                url("callback_base_url", callback_base_url)?;
                long_secret(callback_secret.expose())?;
                filled("consumer_key", consumer_key)?;
                filled("consumer_secret", consumer_secret.expose())?;
                filled("initiator_name", initiator_name)?;
                filled("security_credential", security_credential.expose())?;
                filled("shortcode", shortcode)?;
                if !MPESA_COMMANDS.contains(&command_id.as_str()) {
                    return Err(format!(
                        "payouts.command_id must be one of {}",
                        MPESA_COMMANDS.join(", ")
                    ));
                }
                timeout("timeout_ms", *timeout_ms)?;
                timeout("result_wait_ms", *result_wait_ms)
            }
            PayoutSettings::MtnMomo {
                base_url,
                api_user,
                api_key,
                subscription_key,
                target_environment,
                currency,
                callback_base_url,
                callback_secret,
                timeout_ms,
            } => {
                url("base_url", base_url)?;
                if let Some(u) = callback_base_url {
                    url("callback_base_url", u)?;
                    match callback_secret {
                        Some(s) => long_secret(s.expose())?,
                        None => {
                            return Err(
                                "payouts.callback_secret is required with payouts.callback_base_url"
                                    .into(),
                            );
                        }
                    }
                }
                filled("api_user", api_user)?;
                filled("api_key", api_key.expose())?;
                filled("subscription_key", subscription_key.expose())?;
                filled("target_environment", target_environment)?;
                stablecoin_core::domain::money::Currency::parse(currency).map_err(|_| {
                    format!("payouts.currency: {currency:?} is not a supported currency")
                })?;
                timeout("timeout_ms", *timeout_ms)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PayoutSettings;

    const MPESA: &str = r#"kind = "mpesa"
consumer_key = "ck"
consumer_secret = "cs"
initiator_name = "testapi"
security_credential = "ENC=="
shortcode = "600000"
callback_base_url = "https://pay.example"
callback_secret = "callback-secret-0123456789abcdef-0123"
"#;

    const MTN: &str = r#"kind = "mtn_momo"
base_url = "https://sandbox.momodeveloper.mtn.com"
api_user = "c72025f5-5cd1-4630-99e4-8ba4722fad56"
api_key = "key"
subscription_key = "sub"
target_environment = "sandbox"
currency = "EUR"
"#;

    #[test]
    fn the_providers_parse_with_their_defaults_and_hide_their_secrets() {
        let m: PayoutSettings = toml::from_str(MPESA).unwrap();
        assert_eq!(m.kind(), "mpesa");
        assert_eq!(m.validate(), Ok(()));
        assert_eq!(m.currency(), Some("KES"));
        let dbg = format!("{m:?}");
        assert!(dbg.contains("BusinessPayment") && dbg.contains("api.safaricom.co.ke"));
        assert!(!dbg.contains("\"cs\"") && !dbg.contains("ENC=="), "{dbg}");
        let t: PayoutSettings = toml::from_str(MTN).unwrap();
        assert_eq!(t.kind(), "mtn_momo");
        assert_eq!(t.validate(), Ok(()));
        assert_eq!(t.currency(), Some("EUR"));
        assert!(!format!("{t:?}").contains("\"sub\""));
    }

    #[test]
    fn bad_provider_settings_are_named() {
        let bad = |text: String, setting: &str| {
            let s: PayoutSettings = toml::from_str(&text).unwrap();
            let e = s.validate().unwrap_err();
            assert!(e.contains(setting), "{e}");
        };
        bad(
            MPESA.replace("https://pay.example", "pay.example"),
            "payouts.callback_base_url",
        );
        bad(format!("{MPESA}command_id = \"Pay\""), "payouts.command_id");
        bad(
            MPESA.replace("shortcode = \"600000\"", "shortcode = \" \""),
            "payouts.shortcode",
        );
        bad(format!("{MPESA}timeout_ms = 5"), "payouts.timeout_ms");
        bad(
            MPESA.replace("callback-secret-0123456789abcdef-0123", "short"),
            "payouts.callback_secret",
        );
        bad(
            format!("{MTN}callback_base_url = \"https://pay.example\""),
            "payouts.callback_secret",
        );
        bad(MTN.replace("\"EUR\"", "\"ABC\""), "payouts.currency");
        bad(
            MTN.replace("https://sandbox", "ftp://sandbox"),
            "payouts.base_url",
        );
        bad(
            MTN.replace("api_key = \"key\"", "api_key = \"\""),
            "payouts.api_key",
        );
        // A missing credential is a parse error, not a default.
        assert!(toml::from_str::<PayoutSettings>(&MTN.replace("api_user", "#")).is_err());
    }

    #[test]
    fn production_accepts_the_providers_and_the_examples_are_valid() {
        for text in [MPESA, MTN] {
            let c = super::super::Config {
                mode: super::super::Mode::Production,
                payouts: toml::from_str(text).unwrap(),
                ..Default::default()
            };
            assert!(
                !c.production_refusals()
                    .iter()
                    .any(|r| r.starts_with("payouts")),
                "{:?}",
                c.production_refusals()
            );
        }
        // The commented blocks of examples/config/production.toml, uncommented.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/config/production.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let blocks: Vec<String> = text
            .split("# [payouts]\n")
            .skip(1)
            .map(|b| {
                b.lines()
                    .take_while(|l| l.starts_with("# "))
                    .map(|l| &l[2..])
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect();
        assert_eq!(blocks.len(), 2);
        for b in blocks {
            let s: PayoutSettings = toml::from_str(&b).unwrap_or_else(|e| panic!("{e}: {b}"));
            assert_eq!(s.validate(), Ok(()), "{b}");
        }
    }
}
