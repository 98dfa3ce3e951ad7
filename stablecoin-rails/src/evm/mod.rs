//! `evm`: ERC-4337 v0.8 smart-account wallets on Polygon PoS, Base and BNB Smart Chain
//! (spec 1.1, 1.3, 1.8, 2.6, 4.5), sponsored by the service's verifying paymaster and
//! bundled by the service itself or by an external ERC-4337 bundler.
//!
//! Pure encoding in [`abi`], [`address`], [`tx`] (EIP-1559) and [`userop`] (packed
//! operations, the EIP-712 user-operation hash, the paymaster hash, counterfactual
//! accounts), checked against the contracts themselves on Anvil
//! (`tests/evm_anvil.rs`); transport in [`rpc`] behind the [`JsonRpc`] trait; bundling
//! behind [`Bundler`] (the service itself, [`SelfBundler`], or an external ERC-4337
//! bundler over its JSON-RPC, [`RpcBundler`]); [`EvmRail`], the [`Rail`](stablecoin_core::ports::Rail); and
//! [`UniswapV2Venue`], the [`SwapVenue`](stablecoin_core::ports::SwapVenue) of a Uniswap
//! V2 router, whose approve and swap run in one sponsored `executeBatch`.
//!
//! Built on k256 + sha3 (already in the tree for TRON) and a small ABI/RLP codec rather
//! than alloy: the rail needs a dozen calls, and alloy's proc-macro stack would double
//! the rails' build on the 2-core CI machines.

pub mod abi;
pub mod address;
pub mod bundler;
pub mod fees;
pub mod rail;
pub mod replacement;
pub mod rpc;
pub mod rpc_bundler;
pub mod swap;
#[cfg(feature = "evm-test")]
pub mod testkit;
pub mod tx;
pub mod userop;

pub use address::{AddressError, EvmAddress};
pub use bundler::{BundleError, Bundler, BundlerView, SelfBundler};
pub use fees::{FeePolicy, Fees};
pub use rail::{ERC1967_PROXY_V08, EvmConfig, EvmRail, EvmToken, GasPolicy, Submitted};
pub use replacement::{Ceiling, Maintenance, Replacement};
pub use rpc::{HttpJsonRpc, JsonRpc, RpcError};
pub use rpc_bundler::RpcBundler;
pub use swap::UniswapV2Venue;
