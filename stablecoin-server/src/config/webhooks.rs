//! Webhook delivery settings (`[webhooks]`): where deliveries may go and how much of the
//! process one receiver may hold.

use super::{Config, ConfigError};
use serde::Deserialize;
use stablecoin_webhooks::ssrf::AllowList;

/// `[webhooks]`: the delivery dispatcher's budget and the SSRF allow-list.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    /// Networks webhooks may reach although they are not public, comma-separated
    /// (`127.0.0.1/32, ::1/128`, `10.1.0.0/16`). Empty (the default): public addresses
    /// only, over https. Plain `http://` is accepted only to an allowed loopback address.
    pub allow_networks: String,
    /// One attempt's timeout (connection, request and response), ms.
    pub timeout_ms: u64,
    /// Requests in flight at once, all endpoints together.
    pub concurrency: usize,
    /// Requests in flight to one endpoint: what a hanging receiver can hold.
    pub endpoint_concurrency: usize,
    /// Requests in flight for one tenant: one tenant's backlog leaves the rest to others.
    pub tenant_concurrency: usize,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            allow_networks: String::new(),
            timeout_ms: 10_000,
            concurrency: 16,
            endpoint_concurrency: 4,
            tenant_concurrency: 8,
        }
    }
}

impl Config {
    /// The networks webhooks may reach besides public addresses: `webhooks.allow_networks`
    /// and, for the deprecated `webhooks_allow_loopback_http = true`, `127.0.0.1/32` and
    /// `::1/128`.
    pub fn webhooks_allow_list(&self) -> Result<AllowList, ConfigError> {
        let list = AllowList::parse(&self.webhooks.allow_networks)
            .map_err(|e| ConfigError::Invalid(format!("webhooks.allow_networks: {e}")))?;
        Ok(if self.webhooks_allow_loopback_http {
            list.union(&AllowList::loopback())
        } else {
            list
        })
    }

    pub(super) fn validate_webhooks(&self) -> Result<(), ConfigError> {
        self.webhooks_allow_list()?;
        let w = &self.webhooks;
        if !(100..=600_000).contains(&w.timeout_ms) {
            return Err(ConfigError::Invalid(
                "webhooks.timeout_ms must be between 100 and 600000".into(),
            ));
        }
        for (name, v) in [
            ("concurrency", w.concurrency),
            ("endpoint_concurrency", w.endpoint_concurrency),
            ("tenant_concurrency", w.tenant_concurrency),
        ] {
            if !(1..=4096).contains(&v) {
                return Err(ConfigError::Invalid(format!(
                    "webhooks.{name} must be between 1 and 4096"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablecoin_webhooks::ssrf::Network;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let m: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load(None, move |k| m.get(k).cloned())
    }

    #[test]
    fn nothing_internal_is_allowed_unless_configured() {
        let c = load(&[]).unwrap();
        assert_eq!(c.webhooks, WebhookSettings::default());
        assert_eq!(c.webhooks_allow_list().unwrap(), AllowList::default());
        let c = load(&[(
            "STABLECOIN_WEBHOOKS_ALLOW_NETWORKS",
            "10.1.0.0/16, 127.0.0.1",
        )])
        .unwrap();
        let list = c.webhooks_allow_list().unwrap();
        assert!(list.permits("10.1.2.3".parse().unwrap()));
        assert!(list.permits("127.0.0.1".parse().unwrap()));
        assert!(!list.permits("::1".parse().unwrap()));
        assert!(!list.permits("10.2.0.1".parse().unwrap()));
    }

    #[test]
    fn the_deprecated_boolean_means_the_loopback_hosts() {
        let c = load(&[("STABLECOIN_WEBHOOKS_ALLOW_LOOPBACK_HTTP", "true")]).unwrap();
        assert_eq!(c.webhooks_allow_list().unwrap(), AllowList::loopback());
        let c = load(&[
            ("STABLECOIN_WEBHOOKS_ALLOW_LOOPBACK_HTTP", "1"),
            ("STABLECOIN_WEBHOOKS_ALLOW_NETWORKS", "10.0.0.0/8,::1/128"),
        ])
        .unwrap();
        let list = c.webhooks_allow_list().unwrap();
        assert_eq!(list.0.len(), 3, "{list:?}");
        assert!(list.0.contains(&Network::parse("127.0.0.1/32").unwrap()));
    }

    #[test]
    fn bad_webhook_settings_stop_the_start() {
        for (var, value) in [
            ("STABLECOIN_WEBHOOKS_ALLOW_NETWORKS", "10.0.0.0/33"),
            ("STABLECOIN_WEBHOOKS_ALLOW_NETWORKS", "intranet"),
            ("STABLECOIN_WEBHOOKS_TIMEOUT_MS", "0"),
            ("STABLECOIN_WEBHOOKS_CONCURRENCY", "0"),
            ("STABLECOIN_WEBHOOKS_ENDPOINT_CONCURRENCY", "0"),
            ("STABLECOIN_WEBHOOKS_TENANT_CONCURRENCY", "5000"),
        ] {
            let e = load(&[(var, value)]).unwrap_err().to_string();
            assert!(e.contains("webhooks."), "{var}={value}: {e}");
        }
        let c = load(&[
            ("STABLECOIN_WEBHOOKS_TIMEOUT_MS", "2500"),
            ("STABLECOIN_WEBHOOKS_ENDPOINT_CONCURRENCY", "2"),
        ])
        .unwrap();
        assert_eq!(
            (c.webhooks.timeout_ms, c.webhooks.endpoint_concurrency),
            (2500, 2)
        );
    }
}
