//! A chain profile of the EVM rail: contracts, tokens and their decimals, gas limits,
//! confirmation depth, scan window, and the sponsor thresholds of readiness.

use crate::evm::EvmAddress;
use crate::evm::fees::FeePolicy;
use stablecoin_core::domain::money::Micros;

/// ERC1967Proxy's creation code as SimpleAccountFactory v0.8 embeds it (cut out of the
/// factory's runtime code by `scripts/evm/build_artifacts.sh`).
pub const ERC1967_PROXY_V08: &str = include_str!("../erc1967_proxy_v08.hex");

/// One stablecoin contract on the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvmToken {
    /// The ERC-20 contract.
    pub address: EvmAddress,
    /// 6 for USDC/USDT on Polygon and Base, 18 for BNB Smart Chain's Binance-Peg tokens.
    pub decimals: u8,
}

impl EvmToken {
    fn scale(&self) -> u128 {
        10u128.pow(u32::from(self.decimals.saturating_sub(6)))
    }

    /// Micro-units to the token's base units (exact).
    pub fn base_units(&self, m: Micros) -> u128 {
        u128::from(m.0) * self.scale()
    }

    /// Base units to micro-units, rounding down (dust below a micro-unit is not spendable
    /// through the service and is never shown).
    pub fn micros(&self, base: u128) -> Option<Micros> {
        u64::try_from(base / self.scale()).ok().map(Micros)
    }
}

/// Gas limits of the operations the rail builds. Fixed rather than estimated: the batch
/// shapes are known and bounded, and unused gas is refunded to the paymaster (less the
/// EntryPoint's 10% penalty on unused call gas above 40k, which the paymaster pays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GasPolicy {
    /// Account validation gas of an operation from an already deployed account.
    pub verification_gas: u128,
    /// Verification when the operation also deploys the account.
    pub deploy_verification_gas: u128,
    /// Call gas of `executeBatch` itself, before its transfers.
    pub call_gas_base: u128,
    /// Call gas added per ERC-20 transfer (payment leg) in the batch.
    pub call_gas_per_transfer: u128,
    /// Call gas added for a DEX trade in the batch: the token's `approve` and one
    /// Uniswap V2 `swapExactTokensForTokens` hop. Measured on Anvil (`eth_estimateGas`
    /// less the transaction's 21k): about 25k for the approve, 80k for the swap, 100k
    /// when the wallet holds none of the token bought yet; the default leaves about twice
    /// that.
    pub call_gas_per_swap: u128,
    /// The operation's `preVerificationGas` (bundle overhead the EntryPoint does not meter).
    pub pre_verification_gas: u128,
    /// Gas for the paymaster's validation (`paymasterVerificationGasLimit`).
    pub paymaster_verification_gas: u128,
}

impl Default for GasPolicy {
    fn default() -> Self {
        GasPolicy {
            verification_gas: 120_000,
            deploy_verification_gas: 500_000,
            call_gas_base: 40_000,
            call_gas_per_transfer: 70_000,
            call_gas_per_swap: 220_000,
            pre_verification_gas: 60_000,
            paymaster_verification_gas: 80_000,
        }
    }
}

/// A chain profile. A chain is enabled only with every field set (the constructor
/// refuses anything missing) and its readiness check passing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvmConfig {
    /// EIP-155 chain id (137 Polygon PoS, 8453 Base, 56 BNB Smart Chain); the rail's
    /// [`RailId::Evm`](stablecoin_core::ports::RailId::Evm).
    pub chain_id: u64,
    /// The ERC-4337 v0.8 EntryPoint.
    pub entry_point: EvmAddress,
    /// The SimpleAccountFactory (v0.8) whose CREATE2 accounts are the wallets.
    pub factory: EvmAddress,
    /// The factory's embedded proxy creation code (default: v0.8's).
    pub proxy_creation_code: Vec<u8>,
    /// The VerifyingPaymaster: its signer is the service's `Sponsor` key, its deposit in the
    /// EntryPoint pays every operation's gas.
    pub paymaster: EvmAddress,
    /// USDC's contract; `None`: USDC is not offered on this chain.
    pub usdc: Option<EvmToken>,
    /// USDT's contract; `None`: USDT is not offered on this chain.
    pub usdt: Option<EvmToken>,
    /// Below this paymaster deposit in the EntryPoint (wei), sends stop being offered.
    pub min_paymaster_deposit_wei: u128,
    /// Below this native balance of the bundler account (wei), likewise.
    pub min_bundler_balance_wei: u128,
    /// Blocks (the transaction's own included) before a payment or deposit is confirmed.
    pub confirmations: u64,
    /// First block an empty scan cursor starts from.
    pub scan_start_block: u64,
    /// Blocks read per `scan` call at most.
    pub max_scan_blocks: u64,
    /// Gas limits of the operations the rail builds.
    pub gas: GasPolicy,
    /// The most user operations one `handleOps` bundle carries (the self-bundler packs
    /// the due payments of many accounts into one transaction up to this).
    pub max_ops_per_bundle: usize,
    /// The most gas the operations of one bundle may ask for together (their call,
    /// verification, pre-verification and paymaster limits), well under a block.
    pub max_bundle_gas: u128,
    /// How user operations' fees follow the chain (`eth_feeHistory`), their floors and
    /// ceilings, and the per-payment gas cost ceiling (see [`crate::evm::fees`]).
    pub fees: FeePolicy,
}

impl EvmConfig {
    /// A profile with the chain's defaults (confirmations: 128 on Polygon PoS, 12 on Base
    /// and BNB Smart Chain) and the v0.8 proxy code; contract addresses must be set.
    pub fn new(
        chain_id: u64,
        entry_point: EvmAddress,
        factory: EvmAddress,
        paymaster: EvmAddress,
    ) -> Self {
        EvmConfig {
            chain_id,
            entry_point,
            factory,
            proxy_creation_code: hex::decode(ERC1967_PROXY_V08.trim().trim_start_matches("0x"))
                .unwrap_or_default(),
            paymaster,
            usdc: None,
            usdt: None,
            min_paymaster_deposit_wei: 10u128.pow(17),
            min_bundler_balance_wei: 10u128.pow(17),
            confirmations: if chain_id == 137 { 128 } else { 12 },
            scan_start_block: 0,
            max_scan_blocks: 2_000,
            gas: GasPolicy::default(),
            max_ops_per_bundle: 32,
            max_bundle_gas: 12_000_000,
            fees: FeePolicy::default(),
        }
    }

    /// What is missing or inconsistent, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.usdc.is_none() && self.usdt.is_none() {
            return Err("no token contract configured (usdc, usdt)".into());
        }
        for t in self.usdc.iter().chain(self.usdt.iter()) {
            if !(6..=30).contains(&t.decimals) {
                return Err(format!(
                    "token {} has {} decimals: 6 to 30 are supported",
                    t.address, t.decimals
                ));
            }
        }
        if self.proxy_creation_code.is_empty() {
            return Err("proxy_creation_code is empty".into());
        }
        for (name, a) in [
            ("entry_point", self.entry_point),
            ("factory", self.factory),
            ("paymaster", self.paymaster),
        ] {
            if a == EvmAddress::ZERO {
                return Err(format!("{name} is not configured"));
            }
        }
        if self.confirmations == 0 {
            return Err("confirmations must be at least 1".into());
        }
        self.fees.validate()
    }
}
