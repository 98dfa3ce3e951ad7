//! `[swaps]`: the venue that trades a wallet's USDC for USDT (or back) on the primary
//! EVM chain.

use serde::Deserialize;
use stablecoin_core::domain::money::Micros;
use stablecoin_rails::TreasuryRate;

/// Which venue serves swaps.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SwapVenueKind {
    /// The service treasury converts at `usdt_per_usdc_ppm` less `spread_bps`, within
    /// `float` (for chains without a DEX; the default).
    #[default]
    Treasury,
    /// A Uniswap V2 router on the primary EVM chain (`uniswap_v2_router`); needs a real
    /// `[rails.evm.<id>]` chain.
    UniswapV2,
    /// No swaps: `POST /v1/swaps` answers 503 SWAPS_UNAVAILABLE.
    Disabled,
}

/// `[swaps]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SwapSettings {
    /// The venue (see [`SwapVenueKind`]).
    pub venue: SwapVenueKind,
    /// Treasury venue: USDT per USDC in parts per million (1000000 = par).
    pub usdt_per_usdc_ppm: u64,
    /// Treasury venue: the service's margin, in basis points (0-1000).
    pub spread_bps: u32,
    /// Treasury venue: how much of each token, in whole or decimal tokens, it may give
    /// out net of what it took in. The treasury's tokens also back the tenants'
    /// balances, so this is the share the operator dedicates to conversions. Default
    /// 10000 in development; production requires it to be set.
    pub float: Option<String>,
    /// `uniswap_v2`: the router's address on the primary EVM chain.
    pub uniswap_v2_router: Option<String>,
}

impl Default for SwapSettings {
    fn default() -> Self {
        let r = TreasuryRate::default();
        SwapSettings {
            venue: SwapVenueKind::Treasury,
            usdt_per_usdc_ppm: r.usdt_per_usdc_ppm,
            spread_bps: r.spread_bps,
            float: None,
            uniswap_v2_router: None,
        }
    }
}

/// The treasury venue's float when the configuration names none (development only).
pub const DEVELOPMENT_FLOAT: &str = "10000";

impl SwapSettings {
    /// The treasury venue's rate.
    pub fn rate(&self) -> TreasuryRate {
        TreasuryRate {
            usdt_per_usdc_ppm: self.usdt_per_usdc_ppm,
            spread_bps: self.spread_bps,
        }
    }

    /// The treasury venue's float, in micro-units.
    pub fn float(&self) -> Result<Micros, String> {
        let s = self.float.as_deref().unwrap_or(DEVELOPMENT_FLOAT);
        Micros::parse_decimal(s).map_err(|e| format!("swaps.float: {e}"))
    }

    /// What is wrong with these settings, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.usdt_per_usdc_ppm == 0 {
            return Err("swaps.usdt_per_usdc_ppm: must be above zero".into());
        }
        if self.spread_bps > 1_000 {
            return Err("swaps.spread_bps: must be 0 to 1000".into());
        }
        self.float()?;
        if self.venue == SwapVenueKind::UniswapV2 && self.uniswap_v2_router.is_none() {
            return Err("swaps.uniswap_v2_router: required with venue = \"uniswap_v2\"".into());
        }
        Ok(())
    }
}
