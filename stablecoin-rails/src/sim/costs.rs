//! [`SimCosts`]: what a confirmed payment on a simulated chain reports it cost the
//! service, per profile.

use super::SimProfile;
use serde::{Deserialize, Serialize};
use stablecoin_core::ports::SponsorCost;

/// What one confirmed payment costs the service on a simulated chain, in the chain's own
/// units (the [`SponsorCost`] a real rail reads from its receipt). The simulated chain
/// has no gas market: every confirmed payment costs the same, whatever its legs, so a
/// budget test can count payments.
///
/// A payment that a block included and that failed there (`Fault::Revert`, a balance
/// short at execution) is paid for like a real reverted transaction: its `Failed` status
/// carries [`SimCosts::failed`], the figure of a payment that opened no account (the
/// same native units, Energy and Bandwidth: a revert does not open the recipient's
/// account). One that never reached a block (refused by `submit`, expired in the
/// mempool, dropped) costs nothing and carries `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimCosts {
    /// Native units (wei, sun or lamports) every confirmed payment costs.
    pub native_per_payment: u128,
    /// More native units when the payment opened its recipient's token account (Solana:
    /// the rent-exempt minimum the fee payer deposits); 0 on chains without them.
    pub native_per_account_opened: u128,
    /// TRON Energy units every confirmed payment consumes; 0 elsewhere.
    pub energy_per_payment: u64,
    /// TRON Bandwidth bytes every confirmed payment consumes; 0 elsewhere.
    pub bandwidth_per_payment: u64,
}

/// Simulated EVM gas of one sponsored ERC-4337 token transfer (user operation
/// verification, execution and the paymaster's part): the order of magnitude a real one
/// reports as `actualGasUsed`.
pub const SIM_EVM_GAS_PER_PAYMENT: u128 = 150_000;
/// Simulated EVM gas price: 1 gwei, in wei.
pub const SIM_EVM_GAS_PRICE_WEI: u128 = 1_000_000_000;
/// Simulated TRON Energy of a TRC-20 `transfer` (USDT to a holder: 64,285 on mainnet,
/// rounded).
pub const SIM_TRON_ENERGY_PER_PAYMENT: u64 = 65_000;
/// Simulated TRON Bandwidth of a TRC-20 `transfer` transaction, in bytes.
pub const SIM_TRON_BANDWIDTH_PER_PAYMENT: u64 = 345;
/// Sun burnt per Energy unit when nothing is staked (the chain parameter
/// `getEnergyFee`).
pub const SIM_TRON_SUN_PER_ENERGY: u128 = 100;
/// Sun burnt per Bandwidth byte when nothing is staked (`getTransactionFee`).
pub const SIM_TRON_SUN_PER_BANDWIDTH: u128 = 1_000;
/// Solana's base fee for one signature, in lamports.
pub const SIM_SOLANA_FEE_LAMPORTS: u128 = 5_000;
/// Rent-exempt minimum of an SPL token account (165 bytes), in lamports: what the fee
/// payer deposits when it creates the recipient's associated token account.
pub const SIM_SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS: u128 = 2_039_280;

impl SimCosts {
    /// The default figures of a profile:
    /// - EVM: [`SIM_EVM_GAS_PER_PAYMENT`] x [`SIM_EVM_GAS_PRICE_WEI`] = 150,000 gas at
    ///   1 gwei = 1.5e14 wei per payment;
    /// - TRON: 65,000 Energy and 345 Bandwidth bytes, all burnt (an unstaked sponsor):
    ///   65,000 x 100 + 345 x 1,000 = 6,845,000 sun per payment;
    /// - Solana: 5,000 lamports per payment, plus 2,039,280 lamports when it opened the
    ///   recipient's token account.
    pub fn for_profile(profile: SimProfile) -> Self {
        match profile {
            SimProfile::Evm(_) => SimCosts {
                native_per_payment: SIM_EVM_GAS_PER_PAYMENT * SIM_EVM_GAS_PRICE_WEI,
                native_per_account_opened: 0,
                energy_per_payment: 0,
                bandwidth_per_payment: 0,
            },
            SimProfile::Tron => SimCosts {
                native_per_payment: u128::from(SIM_TRON_ENERGY_PER_PAYMENT)
                    * SIM_TRON_SUN_PER_ENERGY
                    + u128::from(SIM_TRON_BANDWIDTH_PER_PAYMENT) * SIM_TRON_SUN_PER_BANDWIDTH,
                native_per_account_opened: 0,
                energy_per_payment: SIM_TRON_ENERGY_PER_PAYMENT,
                bandwidth_per_payment: SIM_TRON_BANDWIDTH_PER_PAYMENT,
            },
            SimProfile::Solana => SimCosts {
                native_per_payment: SIM_SOLANA_FEE_LAMPORTS,
                native_per_account_opened: SIM_SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS,
                energy_per_payment: 0,
                bandwidth_per_payment: 0,
            },
        }
    }

    /// The cost of one confirmed payment, which opened its recipient's token account or
    /// not.
    pub fn of(&self, opened_recipient_account: bool) -> SponsorCost {
        let rent = if opened_recipient_account {
            self.native_per_account_opened
        } else {
            0
        };
        SponsorCost {
            native: self.native_per_payment.saturating_add(rent),
            energy: self.energy_per_payment,
            bandwidth: self.bandwidth_per_payment,
        }
    }

    /// The cost of one payment that a block included and that reverted there: the
    /// per-payment figure without an account's rent (nothing was opened).
    pub fn failed(&self) -> SponsorCost {
        self.of(false)
    }
}
