//! Builds the sanctions screening gate of `[screening]` (issue #51) and installs it on
//! the kernel, so sends, withdrawals and stray-deposit returns (wallets) are screened
//! by the engine before anything is held; the rule is the kernel's
//! (`stablecoin_core::kernel::screening`), the server only chooses the adapter.

use crate::config::{ConfigError, FailModeSetting, Mode, ScreeningKind, ScreeningSettings};
use stablecoin_core::kernel::{ScreeningFailMode, ScreeningGate};
use stablecoin_core::memory::MemoryScreening;
use stablecoin_core::ports::Screening;
use stablecoin_providers::sanctions::chainalysis::{ChainalysisConfig, ChainalysisScreen};
use stablecoin_providers::sanctions::ofac::OfacList;
use std::sync::Arc;
use std::time::Duration;

/// The gate `settings` configure in `mode`; `None` for `kind = "none"`. An OFAC file
/// that does not load yet is not a start-up error (the screen answers Unavailable, so
/// with the fail mode closed nothing is sent unscreened); the adapter logs it.
pub fn gate(
    settings: &ScreeningSettings,
    mode: Mode,
) -> Result<Option<ScreeningGate>, ConfigError> {
    let screen: Arc<dyn Screening> = match settings.kind {
        ScreeningKind::None => return Ok(None),
        ScreeningKind::Memory => Arc::new(MemoryScreening::new()),
        ScreeningKind::OfacList => {
            let Some(path) = &settings.path else {
                return Err(ConfigError::Invalid(
                    "screening.path: required with kind = \"ofac_list\"".into(),
                ));
            };
            // It logs what it loaded (the list's Publish_Date) and why a file did not load.
            let list = OfacList::open(path);
            Arc::new(list)
        }
        ScreeningKind::Chainalysis => {
            let api_key = settings
                .api_key
                .as_ref()
                .map(|k| k.expose().to_string())
                .unwrap_or_default();
            Arc::new(
                ChainalysisScreen::new(ChainalysisConfig {
                    base_url: settings.base_url.clone(),
                    api_key,
                    timeout: Duration::from_millis(settings.timeout_ms),
                })
                .map_err(|e| ConfigError::Invalid(format!("screening: {e}")))?,
            )
        }
    };
    let fail_mode = match settings.fail_mode_in(mode) {
        FailModeSetting::Closed => ScreeningFailMode::Closed,
        FailModeSetting::Open => ScreeningFailMode::Open,
    };
    Ok(Some(ScreeningGate { screen, fail_mode }))
}
