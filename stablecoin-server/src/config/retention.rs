//! `[retention]`: how long short-lived records are kept, and how often the purge job
//! runs ([`crate::retention`]). The minimums are the engines' rules
//! ([`stablecoin_core::engine::Retention`], [`stablecoin_webhooks::delivery::WebhookRetention`]):
//! a configuration below one is refused at start with the reason.

use super::{Config, ConfigError};
use serde::Deserialize;
use stablecoin_core::engine::Retention;
use stablecoin_webhooks::delivery::WebhookRetention;

/// One hour, in ms.
const HOUR_MS: i64 = 3_600_000;

/// `[retention]`: windows in whole hours, the job's pause in ms.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionSettings {
    /// Run the purge job (with the workers: `run_workers`). Off keeps every record.
    pub enabled: bool,
    /// Pause between two purge runs (the first runs at start).
    pub interval_ms: u64,
    /// Idempotency records (the server's HTTP ones and the engine's) are kept this long;
    /// at least 24: a retry within a day always replays.
    pub idempotency_hours: u32,
    /// FX quotes are kept this long (they are dead after 60 s); at least 1.
    pub quotes_hours: u32,
    /// One-time-code challenges are kept this long (dead after 10 minutes); at least 1.
    pub challenges_hours: u32,
    /// Webhook event records and delivered or dead deliveries are kept this long; at
    /// least 168 (7 days, the longest a delivery is retried). Pending deliveries are kept
    /// until they are final, whatever their age.
    pub webhook_events_hours: u32,
    /// A payout provider's results (M-Pesa's, per payout) are kept this long after
    /// their last change; at least 24. Once purged, the adapter simply queries again.
    pub payout_results_hours: u32,
}

impl Default for RetentionSettings {
    /// The engines' defaults: 72 h, 24 h, 7 days, 30 days; a run every hour.
    fn default() -> Self {
        let core = Retention::default();
        let webhooks = WebhookRetention::default();
        let hours = |ms: i64| u32::try_from(ms / HOUR_MS).unwrap_or(u32::MAX);
        RetentionSettings {
            enabled: true,
            interval_ms: 3_600_000,
            idempotency_hours: hours(core.idempotency_ms()),
            quotes_hours: hours(core.quotes_ms()),
            challenges_hours: hours(core.challenges_ms()),
            webhook_events_hours: hours(webhooks.window_ms()),
            payout_results_hours: hours(core.payout_results_ms()),
        }
    }
}

impl RetentionSettings {
    /// The engine's windows; `Err` names the setting below its minimum.
    pub fn engine(&self) -> Result<Retention, ConfigError> {
        let ms = |h: u32| i64::from(h) * HOUR_MS;
        Retention::new(
            ms(self.idempotency_hours),
            ms(self.quotes_hours),
            ms(self.challenges_hours),
        )
        .and_then(|r| r.with_payout_results_ms(ms(self.payout_results_hours)))
        .map_err(|e| {
            let setting = match e.param() {
                Some("idempotency_ms") => "idempotency_hours",
                Some("quotes_ms") => "quotes_hours",
                Some("payout_results_ms") => "payout_results_hours",
                _ => "challenges_hours",
            };
            ConfigError::Invalid(format!("retention.{setting}: {e}"))
        })
    }

    /// The webhook deliverer's window; `Err` when it is below the retry span.
    pub fn webhooks(&self) -> Result<WebhookRetention, ConfigError> {
        WebhookRetention::new(i64::from(self.webhook_events_hours) * HOUR_MS)
            .map_err(|e| ConfigError::Invalid(format!("retention.webhook_events_hours: {e}")))
    }
}

impl Config {
    pub(super) fn validate_retention(&self) -> Result<(), ConfigError> {
        let r = &self.retention;
        if !(100..=86_400_000).contains(&r.interval_ms) {
            return Err(ConfigError::Invalid(
                "retention.interval_ms must be between 100 and 86400000".into(),
            ));
        }
        r.engine()?;
        r.webhooks()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load(None, move |k| {
            pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_are_the_engines_and_valid() {
        let c = load(&[]).unwrap();
        let r = &c.retention;
        assert!(r.enabled);
        assert_eq!(
            (
                r.idempotency_hours,
                r.quotes_hours,
                r.challenges_hours,
                r.webhook_events_hours
            ),
            (72, 24, 168, 720)
        );
        assert_eq!(r.engine().unwrap(), Retention::default());
        assert_eq!(r.webhooks().unwrap(), WebhookRetention::default());
    }

    #[test]
    fn an_idempotency_window_under_24_hours_is_refused() {
        let e = load(&[("STABLECOIN_RETENTION_IDEMPOTENCY_HOURS", "23")]).unwrap_err();
        assert!(e.to_string().contains("retention.idempotency_hours"), "{e}");
        let c = load(&[("STABLECOIN_RETENTION_IDEMPOTENCY_HOURS", "24")]).unwrap();
        assert_eq!(c.retention.engine().unwrap().idempotency_ms(), 24 * HOUR_MS);
    }

    #[test]
    fn windows_below_the_other_minimums_and_bad_intervals_are_refused() {
        for (var, value, setting) in [
            ("STABLECOIN_RETENTION_QUOTES_HOURS", "0", "quotes_hours"),
            (
                "STABLECOIN_RETENTION_CHALLENGES_HOURS",
                "0",
                "challenges_hours",
            ),
            (
                "STABLECOIN_RETENTION_WEBHOOK_EVENTS_HOURS",
                "167",
                "webhook_events_hours",
            ),
            (
                "STABLECOIN_RETENTION_PAYOUT_RESULTS_HOURS",
                "23",
                "payout_results_hours",
            ),
            ("STABLECOIN_RETENTION_INTERVAL_MS", "99", "interval_ms"),
            (
                "STABLECOIN_RETENTION_INTERVAL_MS",
                "86400001",
                "interval_ms",
            ),
        ] {
            let e = load(&[(var, value)]).unwrap_err();
            assert!(e.to_string().contains(setting), "{var}={value}: {e}");
        }
        let c = load(&[
            ("STABLECOIN_RETENTION", "false"),
            ("STABLECOIN_RETENTION_QUOTES_HOURS", "1"),
            ("STABLECOIN_RETENTION_CHALLENGES_HOURS", "1"),
            ("STABLECOIN_RETENTION_WEBHOOK_EVENTS_HOURS", "168"),
        ])
        .unwrap();
        assert!(!c.retention.enabled);
    }
}
