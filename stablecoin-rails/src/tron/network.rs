//! Which TRON network a node serves, read from the node itself: the chain id is the last
//! four bytes of the genesis block's id (what TRON's JSON-RPC `eth_chainId` answers),
//! so a host labels what it is connected to, never what it assumes.

use super::client::{ApiError, HttpTronApi, parse_now_block};
use serde_json::json;

/// TRON mainnet's chain id (`0x2b6653dc`).
pub const MAINNET_CHAIN_ID: u64 = 728_126_428;
/// The Nile testnet's chain id (`0xcd8690dc`).
pub const NILE_CHAIN_ID: u64 = 3_448_148_188;
/// The Shasta testnet's chain id (`0x94a9059e`).
pub const SHASTA_CHAIN_ID: u64 = 2_494_104_990;

/// A TRON network: its chain id and its name (`mainnet`, `nile`, `shasta`, or
/// `private` for any other chain, such as a local node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TronNetwork {
    /// The last four bytes of the genesis block id, big-endian.
    pub chain_id: u64,
    /// `mainnet`, `nile`, `shasta` or `private`.
    pub name: &'static str,
}

impl TronNetwork {
    /// The network whose genesis block has this id.
    pub fn from_genesis_id(id: &[u8; 32]) -> Self {
        let chain_id = u64::from(u32::from_be_bytes([id[28], id[29], id[30], id[31]]));
        let name = match chain_id {
            MAINNET_CHAIN_ID => "mainnet",
            NILE_CHAIN_ID => "nile",
            SHASTA_CHAIN_ID => "shasta",
            _ => "private",
        };
        TronNetwork { chain_id, name }
    }
}

impl HttpTronApi {
    /// The network the node serves, from its genesis block (`/wallet/getblockbynum`
    /// with `num` 0).
    pub async fn network(&self) -> Result<TronNetwork, ApiError> {
        let v = self
            .post("/wallet/getblockbynum", json!({"num": 0}))
            .await?;
        let genesis = parse_now_block(&v)?;
        if genesis.number != 0 {
            return Err(ApiError::Decode {
                reason: format!("getblockbynum 0 answered block {}", genesis.number),
            });
        }
        Ok(TronNetwork::from_genesis_id(&genesis.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(hex_id: &str) -> [u8; 32] {
        hex::decode(hex_id).unwrap().try_into().unwrap()
    }

    #[test]
    fn the_genesis_block_names_the_network() {
        // Mainnet's genesis block.
        let mainnet = id("00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc");
        assert_eq!(
            TronNetwork::from_genesis_id(&mainnet),
            TronNetwork {
                chain_id: MAINNET_CHAIN_ID,
                name: "mainnet"
            }
        );
        let mut nile = [0u8; 32];
        nile[28..].copy_from_slice(&0xcd86_90dc_u32.to_be_bytes());
        assert_eq!(TronNetwork::from_genesis_id(&nile).name, "nile");
        assert_eq!(TronNetwork::from_genesis_id(&nile).chain_id, NILE_CHAIN_ID);
        let mut shasta = [0u8; 32];
        shasta[28..].copy_from_slice(&0x94a9_059e_u32.to_be_bytes());
        assert_eq!(TronNetwork::from_genesis_id(&shasta).name, "shasta");
        assert_eq!(TronNetwork::from_genesis_id(&[7; 32]).name, "private");
    }
}
