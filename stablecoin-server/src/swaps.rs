//! The swap venue of the server's engine, from `[swaps]` (`config::SwapSettings`).

use crate::config::{ConfigError, SwapSettings, SwapVenueKind};
use crate::error::StartupError;
use crate::rails::Rails;
use stablecoin_core::engine::Engine;
use stablecoin_core::ports::Ledger;
use stablecoin_rails::TreasuryVenue;
use std::sync::Arc;

/// `engine` with the venues `settings` name: the treasury venue on every enabled EVM
/// chain, or a Uniswap V2 router on the primary one (none when swaps are disabled or no
/// EVM chain runs: `POST /v1/swaps` then answers SWAPS_UNAVAILABLE).
pub fn with_venue(
    engine: Engine,
    settings: &SwapSettings,
    rails: &Rails,
    ledger: Arc<dyn Ledger>,
) -> Result<Engine, StartupError> {
    let invalid = |e: String| StartupError::Config(ConfigError::Invalid(e));
    let Ok(rail) = engine.evm_rail().cloned() else {
        return Ok(engine);
    };
    match settings.venue {
        SwapVenueKind::Disabled => Ok(engine),
        SwapVenueKind::Treasury => {
            let float = settings.float().map_err(invalid)?;
            let chains: Vec<_> = engine.evm_rails().into_iter().cloned().collect();
            let mut engine = engine;
            for chain in chains {
                let venue = TreasuryVenue::new(chain, ledger.clone(), settings.rate(), float);
                engine = engine.with_swap_venue(Arc::new(venue));
            }
            Ok(engine)
        }
        SwapVenueKind::UniswapV2 => {
            match rails.swap_venues.iter().find(|v| v.rail() == rail.id()) {
                Some(v) => Ok(engine.with_swap_venue(v.clone())),
                None => Err(invalid(format!(
                    "swaps.venue = \"uniswap_v2\": the primary chain {} must be a real chain ([rails.evm.<id>])",
                    rail.id()
                ))),
            }
        }
    }
}
