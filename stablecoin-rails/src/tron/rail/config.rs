//! Settings of the TRON rail: the token contracts, the confirmation depth, what one
//! sponsored send delegates, waits and the scan window.

use crate::tron::{TronAddress, tx};
use stablecoin_core::domain::money::Token;
use std::time::Duration;

/// The mainnet USDT (TRC-20) contract.
pub const MAINNET_USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

/// Settings of a [`TronRail`](super::TronRail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TronConfig {
    /// The USDT TRC-20 contract (6 decimals: one base unit is one micro-unit).
    pub usdt_contract: TronAddress,
    /// A USDC TRC-20 contract, if the deployment reads and moves it. TRON wallets are USDT
    /// (spec 1.1); with it, USDC sent to a watched address by mistake is detected by the
    /// scanner and can be sent back (escrow's UNSUPPORTED_TOKEN recovery). `None`: USDC
    /// is `Unsupported` and invisible to the scanner.
    pub usdc_contract: Option<TronAddress>,
    /// Blocks (including the transaction's own) before a payment or deposit counts as
    /// confirmed. TRON finalizes after 19 (2/3 of the 27 super representatives + 1).
    pub confirmations: u64,
    /// `fee_limit` of the customer's TRC-20 transfer, in sun.
    pub fee_limit_sun: i64,
    /// Energy delegated for one transfer; 0 delegates none (the transfer then relies on
    /// the sender's own Energy, which a sponsored customer does not have).
    pub energy_per_transfer: u64,
    /// Bandwidth (bytes) delegated for one transfer; 0 delegates none.
    pub bandwidth_per_transfer: u64,
    /// TRX (sun) the sponsor must hold to activate a new account (creation fee and the
    /// burn for its bandwidth).
    pub activation_reserve_sun: u64,
    /// Validity of a built transaction after the head block's timestamp.
    pub expiration_ms: i64,
    /// How long `submit` waits for a sponsor transaction to be in a block.
    pub inclusion_timeout: Duration,
    /// Poll interval while waiting.
    pub poll_interval: Duration,
    /// First block an empty scan cursor starts from.
    pub scan_start_block: u64,
    /// Blocks read per `scan` call at most.
    pub max_scan_blocks: u64,
    /// How many times a transfer that ran out of Energy (`OUT_OF_ENERGY`: the Energy lent
    /// for it was consumed by another transaction first, or the transfer cost more than
    /// [`TronConfig::energy_per_transfer`]) is re-sponsored and sent again under the same
    /// payment id, once the failed transfer is at the confirmation depth (irreversible:
    /// it can never pay too). 0 fails the payment at the first `OUT_OF_ENERGY`.
    pub out_of_energy_retries: u32,
}

impl TronConfig {
    /// The TRC-20 contract of `token`, if this rail moves it.
    pub fn contract_of(&self, token: Token) -> Option<TronAddress> {
        match token {
            Token::Usdt => Some(self.usdt_contract),
            Token::Usdc => self.usdc_contract,
        }
    }

    /// Defaults for a USDT contract: 19 confirmations, 100 TRX fee limit, 65 000 Energy
    /// and 500 bytes of Bandwidth per transfer, 2 TRX activation reserve, 60 s expiry, one
    /// re-sponsored retry of a transfer that ran out of Energy.
    pub fn new(usdt_contract: TronAddress) -> Self {
        TronConfig {
            usdt_contract,
            usdc_contract: None,
            confirmations: 19,
            fee_limit_sun: tx::DEFAULT_FEE_LIMIT_SUN,
            energy_per_transfer: 65_000,
            bandwidth_per_transfer: 500,
            activation_reserve_sun: 2_000_000,
            expiration_ms: tx::DEFAULT_EXPIRATION_MS,
            inclusion_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            scan_start_block: 0,
            max_scan_blocks: 100,
            out_of_energy_retries: 1,
        }
    }

    /// [`TronConfig::new`] with the mainnet USDT contract.
    pub fn mainnet() -> Self {
        Self::new(TronAddress::parse(MAINNET_USDT).unwrap_or_else(|_| unreachable!()))
    }
}
