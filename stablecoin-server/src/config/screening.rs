//! `[screening]`: the sanctions screen every outbound payment passes before anything is
//! held (issue #51), built by [`crate::screening`].

use super::Secret;
use super::services::{Mode, is_http_url};
use serde::Deserialize;
use std::path::PathBuf;

/// Which screen.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ScreeningKind {
    /// No screening (the default): nothing is screened, nothing is audited.
    #[default]
    None,
    /// The in-memory screen's documented test answers: an address ending in `9999` is a
    /// hit, one ending in `8888` an outage. Development only.
    Memory,
    /// The OFAC SDN list from its published file at `path` (`SDN.XML` or `SDN.CSV`),
    /// read again whenever the file changes.
    OfacList,
    /// Chainalysis's free sanctions API at `base_url` with `api_key`.
    Chainalysis,
}

/// What a screen that cannot answer does.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailModeSetting {
    /// Refuse the payment (503 SCREENING_UNAVAILABLE). Production's only mode.
    Closed,
    /// Let it through, audited `screening.skipped`. Development only.
    Open,
}

/// `[screening]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ScreeningSettings {
    /// The screen (see [`ScreeningKind`]).
    pub kind: ScreeningKind,
    /// `ofac_list`: the SDN file (required).
    pub path: Option<PathBuf>,
    /// `chainalysis`: the API base (default `https://public.chainalysis.com`).
    pub base_url: String,
    /// `chainalysis`: the API key (required; a secret: never printed).
    pub api_key: Option<Secret>,
    /// `chainalysis`: the bound on one lookup, in milliseconds (default 3000); a
    /// lookup that takes longer is Unavailable.
    pub timeout_ms: u64,
    /// What an Unavailable answer does: `closed` (refuse) or `open` (let through,
    /// audited). Default `closed` in production, which refuses `open`; `open` in
    /// development.
    pub fail_mode: Option<FailModeSetting>,
    /// `kind = "none"` in production: refused unless this is `true`, the operator's
    /// explicit statement that payments go out and deposits come in unscreened (a
    /// deployment screening elsewhere, upstream of the service). Why not silent: a
    /// missing `[screening]` table must not turn a regulated control off unnoticed.
    /// Ignored with any other kind and in development.
    pub acknowledge_unscreened: bool,
}

impl Default for ScreeningSettings {
    fn default() -> Self {
        ScreeningSettings {
            kind: ScreeningKind::None,
            path: None,
            base_url: "https://public.chainalysis.com".into(),
            api_key: None,
            timeout_ms: 3_000,
            fail_mode: None,
            acknowledge_unscreened: false,
        }
    }
}

impl ScreeningSettings {
    /// The fail mode in force in `mode`.
    pub fn fail_mode_in(&self, mode: Mode) -> FailModeSetting {
        match (self.fail_mode, mode) {
            (Some(f), _) => f,
            (None, Mode::Production) => FailModeSetting::Closed,
            (None, Mode::Development) => FailModeSetting::Open,
        }
    }

    /// What is wrong with these settings, if anything.
    pub fn validate(&self) -> Result<(), String> {
        match self.kind {
            ScreeningKind::OfacList if self.path.is_none() => {
                Err("screening.path: required with kind = \"ofac_list\"".into())
            }
            ScreeningKind::Chainalysis => {
                if self
                    .api_key
                    .as_ref()
                    .is_none_or(|k| k.expose().trim().is_empty())
                {
                    return Err("screening.api_key: required with kind = \"chainalysis\"".into());
                }
                if !is_http_url(&self.base_url) {
                    return Err("screening.base_url: must be an http(s) URL".into());
                }
                if self.timeout_ms == 0 {
                    return Err("screening.timeout_ms: must be above zero".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// What production mode refuses here, each as `"<setting>: <why>"`.
    pub fn production_refusals(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.kind == ScreeningKind::None && !self.acknowledge_unscreened {
            out.push(
                "screening.kind: none screens no payment and no deposit (configure ofac_list or chainalysis, or set screening.acknowledge_unscreened = true to run unscreened on purpose)"
                    .into(),
            );
        }
        if self.kind == ScreeningKind::Memory {
            out.push(
                "screening.kind: memory answers test hits only (configure ofac_list or chainalysis)"
                    .into(),
            );
        }
        if self.fail_mode == Some(FailModeSetting::Open) {
            out.push(
                "screening.fail_mode: open would send unscreened payments while the screen is down"
                    .into(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_fails_closed_and_refuses_the_test_screen_and_failing_open() {
        let mut s = ScreeningSettings::default();
        assert_eq!(s.fail_mode_in(Mode::Production), FailModeSetting::Closed);
        assert_eq!(s.fail_mode_in(Mode::Development), FailModeSetting::Open);
        // No screen at all is refused unless acknowledged in so many words.
        let refused = s.production_refusals();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("screening.kind: none"));
        s.acknowledge_unscreened = true;
        assert!(s.production_refusals().is_empty());
        s.kind = ScreeningKind::Memory;
        s.fail_mode = Some(FailModeSetting::Open);
        let refused = s.production_refusals();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(
            refused[0].starts_with("screening.kind")
                && refused[1].starts_with("screening.fail_mode")
        );
        let mut c = crate::Config {
            mode: Mode::Production,
            ..Default::default()
        };
        c.screening = s;
        let all = c.production_refusals();
        assert!(
            all.iter().any(|r| r.starts_with("screening.kind")),
            "{all:?}"
        );
        assert!(
            all.iter().any(|r| r.starts_with("screening.fail_mode")),
            "{all:?}"
        );
    }

    #[test]
    fn each_adapter_needs_its_settings() {
        let list = ScreeningSettings {
            kind: ScreeningKind::OfacList,
            ..Default::default()
        };
        assert!(list.validate().unwrap_err().starts_with("screening.path"));
        let mut ca = ScreeningSettings {
            kind: ScreeningKind::Chainalysis,
            ..Default::default()
        };
        assert!(ca.validate().unwrap_err().starts_with("screening.api_key"));
        ca.api_key = Some(Secret::new("k"));
        assert_eq!(ca.validate(), Ok(()));
        ca.base_url = "ftp://x".into();
        assert!(ca.validate().unwrap_err().starts_with("screening.base_url"));
    }

    #[test]
    fn the_environment_sets_every_key() {
        let pairs = [
            ("STABLECOIN_SCREENING", "chainalysis"),
            ("STABLECOIN_SCREENING_PATH", "/var/lib/sdn.xml"),
            ("STABLECOIN_SCREENING_BASE_URL", "http://127.0.0.1:9/"),
            ("STABLECOIN_SCREENING_API_KEY", "k-123"),
            ("STABLECOIN_SCREENING_TIMEOUT_MS", "1500"),
            ("STABLECOIN_SCREENING_FAIL_MODE", "closed"),
        ];
        let c = crate::Config::load(None, |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
        .unwrap();
        let s = &c.screening;
        assert_eq!(s.kind, ScreeningKind::Chainalysis);
        assert_eq!(
            s.path.as_deref(),
            Some(std::path::Path::new("/var/lib/sdn.xml"))
        );
        assert_eq!(s.base_url, "http://127.0.0.1:9/");
        assert_eq!(s.api_key.as_ref().map(|k| k.expose()), Some("k-123"));
        assert_eq!(s.timeout_ms, 1500);
        assert_eq!(s.fail_mode, Some(FailModeSetting::Closed));
        assert!(
            !format!("{c:?}").contains("k-123"),
            "the key is never printed"
        );
    }

    #[test]
    fn the_production_example_screens_against_the_ofac_list_failing_closed() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/config/production.toml");
        let c = crate::Config::load(Some(&path), |_| None).unwrap();
        assert_eq!(c.screening.kind, ScreeningKind::OfacList);
        assert!(c.screening.path.is_some());
        assert_eq!(c.screening.fail_mode_in(c.mode), FailModeSetting::Closed);
    }
}
