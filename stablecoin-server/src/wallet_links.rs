//! The checkout's wallet-request directory (issue #50), from the configuration of the
//! real chains: each real EVM chain's id and token contracts, the Solana mints. The
//! payment page writes EIP-681 and Solana Pay requests from it
//! (`stablecoin_checkout::wallet_links`). A simulated chain has no entry: there is no
//! contract a real wallet could call, so its QR keeps the bare address.

use crate::config::Config;
use stablecoin_checkout::wallet_links::WalletNetwork;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::RailId;
use std::collections::BTreeMap;

/// The directory of `config`'s real chains, by network name.
pub fn wallet_networks(config: &Config) -> BTreeMap<String, WalletNetwork> {
    let mut out = BTreeMap::new();
    // An invalid table name is refused at start by the rails; nothing to add here.
    for (chain_id, settings) in config.rails.live_evm().unwrap_or_default() {
        let tokens = [(Token::Usdc, &settings.usdc), (Token::Usdt, &settings.usdt)]
            .into_iter()
            .filter_map(|(t, s)| s.as_ref().map(|s| (t, (s.address.clone(), s.decimals))))
            .collect();
        out.insert(
            RailId::Evm(chain_id).name(),
            WalletNetwork::Evm { chain_id, tokens },
        );
    }
    if let Some(s) = &config.rails.solana_node {
        let tokens = [
            (Token::Usdc, (s.usdc_mint.clone(), s.decimals)),
            (Token::Usdt, (s.usdt_mint.clone(), s.decimals)),
        ]
        .into();
        out.insert(RailId::Solana.name(), WalletNetwork::Solana { tokens });
    }
    if config.rails.tron_node.is_some() {
        out.insert(RailId::Tron.name(), WalletNetwork::Tron);
    }
    out
}
