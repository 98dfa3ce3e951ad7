//! `mode = "production"`: the server refuses to start with any part that only pretends,
//! and names every one at once, so an operator fixes the whole list in one pass.
//!
//! What is refused, and why:
//! - a simulated chain (an enabled EVM chain without its `[rails.evm.<id>]` table, TRON
//!   without `[rails.tron_node]`, Solana without `[rails.solana_node]`): its balances are
//!   made up, so real and simulated money would mix;
//! - the demo tenant: its treasury credit is backed by no fiat;
//! - memory storage: everything is lost at exit;
//! - the in-memory SMS gateway, the demo FX table and the simulated payout provider:
//!   codes would never reach a phone, quotes would not be market rates, withdrawals
//!   would "pay" nobody (`payouts.kind = "disabled"` turns withdrawals off instead);
//! - the treasury swap venue without a `swaps.float`: the treasury's tokens back the
//!   tenants' balances, so how much of them may be converted must be said;
//! - a local signer or a `master_seed` in the configuration: in production the API
//!   process holds no key material; keys live in the signing service.

use super::{Config, ConfigError, Mode, StorageConfig};

/// An enabled chain, as the configuration names it.
pub(super) enum Chain {
    Evm(u64),
    Tron,
    Solana,
}

impl Chain {
    /// The rail name (`polygon`, `evm-<id>`, `tron`, `solana`).
    pub(super) fn name(&self) -> String {
        match self {
            Chain::Evm(id) => stablecoin_core::ports::RailId::Evm(*id).name(),
            Chain::Tron => "tron".into(),
            Chain::Solana => "solana".into(),
        }
    }
}

/// True for an `https://` URL, or a plain `http://` one to a loopback IP literal
/// (`127.0.0.0/8`, `[::1]`: a sidecar on the same machine, where nothing sits on the
/// way). A name such as `localhost` is not trusted to stay loopback.
pub(crate) fn is_https_or_loopback(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return true;
    }
    let Some(rest) = lower.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

impl Config {
    /// Every enabled chain and whether it is real (its table is configured) or would be
    /// simulated: what both the production refusals and `check-config` report.
    pub(super) fn enabled_chains(&self) -> Vec<(Chain, bool)> {
        let live_evm: Vec<u64> = self
            .rails
            .live_evm()
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        let mut out: Vec<(Chain, bool)> = self
            .rails
            .evm_chains
            .iter()
            .map(|id| (Chain::Evm(*id), live_evm.contains(id)))
            .collect();
        if self.rails.tron {
            out.push((Chain::Tron, self.rails.tron_node.is_some()));
        }
        if self.rails.solana {
            out.push((Chain::Solana, self.rails.solana_node.is_some()));
        }
        out
    }

    /// Every setting `production` mode refuses, each as `"<setting>: <why>"`; empty in
    /// development mode and for a configuration fit for production.
    pub fn production_refusals(&self) -> Vec<String> {
        if self.mode != Mode::Production {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (chain, real) in self.enabled_chains() {
            if real {
                continue;
            }
            out.push(match chain {
                Chain::Evm(id) => format!(
                    "rails.evm_chains: chain {id} has no [rails.evm.{id}] table, so it would be simulated"
                ),
                Chain::Tron => "rails.tron: no [rails.tron_node] table, so TRON would be simulated (configure it or set rails.tron = false)".into(),
                Chain::Solana => "rails.solana: no [rails.solana_node] table, so Solana would be simulated (configure it or set rails.solana = false)".into(),
            });
        }
        if self.demo.enabled {
            out.push(
                "demo.enabled: the demo tenant's treasury credit is backed by no fiat (set demo.enabled = false)".into(),
            );
        }
        if matches!(self.storage, StorageConfig::Memory) {
            out.push(
                "storage.kind: memory loses everything at exit (use sqlite or postgres)".into(),
            );
        }
        if self.sms.is_in_memory() {
            out.push(format!(
                "sms.kind: {} sends nothing to a phone (configure an SMS gateway)",
                self.sms.kind()
            ));
        }
        if self.rates.is_fixed() {
            out.push(format!(
                "rates.kind: {} is the demo table, not a market rate (configure a rate feed)",
                self.rates.kind()
            ));
        }
        if let Some(url) = self.rates.url()
            && !is_https_or_loopback(url)
        {
            out.push(
                "rates.url: the rate feed must be https in production (a plain-http rate can be changed on the way; only a loopback IP may be plain http)".into(),
            );
        }
        out.extend(self.screening.production_refusals());
        if self.payouts.is_simulated() {
            out.push(format!(
                "payouts.kind: {} pays nobody (configure a provider, or \"disabled\" to turn withdrawals off)",
                self.payouts.kind()
            ));
        }
        if self.swaps.venue == super::SwapVenueKind::Treasury && self.swaps.float.is_none() {
            out.push(
                "swaps.float: the treasury venue converts from tokens that also back the tenants' balances; set how much it may give out (or swaps.venue = \"disabled\")".into(),
            );
        }
        if self.signer.is_local() {
            out.push(format!(
                "signer.kind: {} keeps keys in the API process (run the signing service and use \"remote\")",
                self.signer.kind()
            ));
        }
        if self.master_seed.is_some() {
            out.push(
                "master_seed: the API process holds no key material in production (the seed belongs to the signing service)".into(),
            );
        }
        if !self.webhooks.allow_networks.trim().is_empty() || self.webhooks_allow_loopback_http {
            out.push(
                "webhooks.allow_networks: lets tenants' webhooks reach internal networks; production delivers to public addresses only (leave it empty, and webhooks_allow_loopback_http false)".into(),
            );
        }
        out
    }

    /// The in-process stand-ins this configuration runs with (`"sms: memory"`, ...), for
    /// the banner: development mode says what is pretend.
    pub fn stand_ins(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.sms.is_in_memory() {
            out.push(format!(
                "sms: {} (no SMS leaves the process)",
                self.sms.kind()
            ));
        }
        if self.rates.is_fixed() {
            out.push(format!("rates: {} (demo table)", self.rates.kind()));
        }
        if let Some(url) = self.rates.url()
            && !is_https_or_loopback(url)
        {
            out.push(
                "rates.url: the rate feed must be https in production (a plain-http rate can be changed on the way; only a loopback IP may be plain http)".into(),
            );
        }
        if self.payouts.is_simulated() {
            out.push(format!("payouts: {}", self.payouts.kind()));
        }
        if self.signer.is_local() {
            out.push(format!(
                "signer: {} (keys in this process)",
                self.signer.kind()
            ));
        }
        if self.demo.enabled {
            out.push("demo tenant (credit backed by no fiat)".into());
        }
        out
    }

    /// What `check-config` prints for a valid configuration: the mode, the storage, the
    /// rails (real or simulated) and the services, one per line. No secret appears.
    pub fn summary(&self) -> String {
        let rails: Vec<String> = self
            .enabled_chains()
            .into_iter()
            .map(|(chain, real)| {
                let how = match (real, &self.sim.chain_url) {
                    (true, _) => "real",
                    (false, None) => "simulated",
                    (false, Some(_)) => "simulated, shared chain",
                };
                match chain {
                    Chain::Evm(id) => format!("evm {id} ({how})"),
                    Chain::Tron => format!("tron ({how})"),
                    Chain::Solana => format!("solana ({how})"),
                }
            })
            .collect();
        let storage = match &self.storage {
            StorageConfig::Memory => "memory",
            StorageConfig::Sqlite { .. } => "sqlite",
            StorageConfig::Postgres { .. } => "postgres",
        };
        format!(
            "configuration is valid
  mode: {}
  storage: {storage}
  rails: {}
  sms: {}
  rates: {}
  signer: {}
  payouts: {}
  demo tenant: {}",
            self.mode.as_str(),
            rails.join(", "),
            self.sms.kind(),
            self.rates.kind(),
            self.signer.kind(),
            self.payouts.kind(),
            if self.demo.enabled { "on" } else { "off" },
        )
    }

    /// `Invalid` listing every production refusal (see [`Config::production_refusals`]).
    pub fn validate_production(&self) -> Result<(), ConfigError> {
        let refusals = self.production_refusals();
        if refusals.is_empty() {
            return Ok(());
        }
        Err(ConfigError::Invalid(format!(
            "mode = \"production\" refuses {} setting(s):\n  - {}",
            refusals.len(),
            refusals.join("\n  - ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, Mode, PayoutSettings, StorageConfig};

    const SMS_GATEWAY: &str = "kind = \"africastalking\"\nusername = \"u\"\napi_key = \"k\"";
    const RATE_FEED: &str = "kind = \"http\"\nurl = \"https://fx.example/{currency}/{token}\"\nrate_pointer = \"/rate\"";
    const REMOTE_SIGNER: &str = "kind = \"remote\"\nurl = \"http://10.0.0.5:7300\"\ntoken = \"0123456789abcdef0123456789abcdef\"";

    /// Production mode with every default, memory storage and a seed in the
    /// configuration: every refusal applies.
    fn production() -> Config {
        Config {
            mode: Mode::Production,
            storage: StorageConfig::Memory,
            master_seed: Some(super::super::Secret::new("07".repeat(32))),
            ..Config::default()
        }
    }

    fn refused(c: &Config, setting: &str) -> bool {
        c.production_refusals()
            .iter()
            .any(|r| r.starts_with(&format!("{setting}:")))
    }

    /// One test per refusal: production refuses the unsafe default and names the
    /// setting; fixing that setting (where the fix exists in this build) lifts exactly
    /// that refusal.
    macro_rules! refusal {
        ($name:ident, $setting:literal, $fix:expr) => {
            #[test]
            fn $name() {
                let c = production();
                assert!(refused(&c, $setting), "{:?}", c.production_refusals());
                let e = c.validate().unwrap_err().to_string();
                assert!(e.contains($setting), "{e}");
                let fix: Option<fn(&mut Config)> = $fix;
                if let Some(fix) = fix {
                    let mut fixed = production();
                    fix(&mut fixed);
                    assert!(
                        !refused(&fixed, $setting),
                        "{:?}",
                        fixed.production_refusals()
                    );
                    assert_eq!(
                        fixed.production_refusals().len(),
                        c.production_refusals().len() - 1,
                        "only this refusal is lifted"
                    );
                }
            }
        };
    }

    refusal!(a_simulated_evm_chain_is_refused, "rails.evm_chains", None);
    refusal!(
        a_simulated_tron_is_refused,
        "rails.tron",
        Some(|c| c.rails.tron = false)
    );
    refusal!(
        a_simulated_solana_is_refused,
        "rails.solana",
        Some(|c| {
            c.rails.solana_node = Some(super::super::SolanaNodeSettings::new(
                super::super::Secret::new("https://solana.example.invalid"),
                1,
            ))
        })
    );
    refusal!(
        a_simulated_solana_is_refused_unless_solana_is_off,
        "rails.solana",
        Some(|c| c.rails.solana = false)
    );
    refusal!(
        the_demo_tenant_is_refused,
        "demo.enabled",
        Some(|c| c.demo.enabled = false)
    );
    refusal!(
        memory_storage_is_refused,
        "storage.kind",
        Some(|c| c.storage = StorageConfig::default())
    );
    refusal!(
        the_in_memory_sms_gateway_is_refused,
        "sms.kind",
        Some(|c| c.sms = toml::from_str(SMS_GATEWAY).unwrap())
    );
    refusal!(
        the_demo_rate_table_is_refused,
        "rates.kind",
        Some(|c| c.rates = toml::from_str(RATE_FEED).unwrap())
    );
    #[test]
    fn a_plain_http_rate_feed_is_refused_unless_on_a_loopback_ip() {
        let with_url = |url: &str| {
            let mut c = production();
            c.rates =
                toml::from_str(&RATE_FEED.replace("https://fx.example/{currency}/{token}", url))
                    .unwrap();
            refused(&c, "rates.url")
        };
        for bad in [
            "http://fx.example/{currency}",
            "HTTP://fx.example/x",
            "http://localhost:9000/x",
            "http://127.0.0.1.evil.example/x",
            "http://127.0.0.1@fx.example/x",
            "http://10.0.0.5/x",
            "ftp://fx.example/x",
        ] {
            assert!(with_url(bad), "{bad}");
        }
        for good in [
            "https://fx.example/{currency}",
            "HTTPS://fx.example/x",
            "http://127.0.0.1:9000/rates",
            "http://127.8.9.10/x",
            "http://[::1]:9000/x",
        ] {
            assert!(!with_url(good), "{good}");
        }
    }
    refusal!(
        the_simulated_payout_provider_is_refused,
        "payouts.kind",
        Some(|c| c.payouts = PayoutSettings::Disabled)
    );
    refusal!(
        a_local_signer_is_refused,
        "signer.kind",
        Some(|c| c.signer = toml::from_str(REMOTE_SIGNER).unwrap())
    );
    refusal!(
        a_treasury_venue_without_a_float_is_refused,
        "swaps.float",
        Some(|c| c.swaps.float = Some("1000".into()))
    );
    refusal!(
        no_screen_is_refused_unless_acknowledged,
        "screening.kind",
        Some(|c| c.screening.acknowledge_unscreened = true)
    );
    refusal!(
        a_master_seed_in_the_configuration_is_refused,
        "master_seed",
        Some(|c| c.master_seed = None)
    );

    /// Webhooks reach public addresses only in production: an allow-list of internal
    /// networks (or the deprecated loopback switch) is refused, by name.
    #[test]
    fn an_internal_webhook_allow_list_is_refused() {
        let c = production();
        assert!(!refused(&c, "webhooks.allow_networks"));
        let mut listed = production();
        listed.webhooks.allow_networks = "10.0.0.0/8".into();
        assert!(refused(&listed, "webhooks.allow_networks"));
        let mut loopback = production();
        loopback.webhooks_allow_loopback_http = true;
        assert!(refused(&loopback, "webhooks.allow_networks"));
    }

    #[test]
    fn development_mode_refuses_nothing_and_the_default_is_development() {
        let c = Config::default();
        assert_eq!(c.mode, Mode::Development);
        assert!(c.production_refusals().is_empty());
        assert!(c.validate().is_ok());
    }

    /// The example every operator starts from is a valid production configuration, and
    /// `check-config` would summarise it with nothing simulated.
    #[test]
    fn the_production_example_is_valid_and_refuses_nothing() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/config/production.toml");
        let c = Config::load(Some(&path), |_| None).expect("examples/config/production.toml");
        assert_eq!(c.mode, Mode::Production);
        assert!(c.production_refusals().is_empty());
        let summary = c.summary();
        assert!(!summary.contains("simulated"), "{summary}");
        for part in [
            "evm 137 (real)",
            "tron (real)",
            "solana (real)",
            "sms: africastalking",
            "rates: http",
            "signer: remote",
            "payouts: disabled",
        ] {
            assert!(summary.contains(part), "{part}: {summary}");
        }
        // Secrets of the example never print.
        assert!(!format!("{c:?}").contains("replace-me-with-the-signing-service-token"));
    }

    #[test]
    fn every_refusal_is_listed_at_once() {
        let e = production().validate().unwrap_err().to_string();
        for setting in [
            "rails.evm_chains",
            "rails.tron",
            "rails.solana",
            "demo.enabled",
            "storage.kind",
            "master_seed",
            "sms.kind",
            "rates.kind",
            "payouts.kind",
            "signer.kind",
        ] {
            assert!(e.contains(setting), "{setting} missing from: {e}");
        }
    }
}
