//! The fees of a user operation (issue #49, fee estimation): from the chain's recent
//! blocks (`eth_feeHistory`), held within the chain's configured floors and ceilings, and
//! a per-payment ceiling on what the operation's gas may cost.
//!
//! - **Priority fee**: the median, over the last `history_blocks` blocks that carried
//!   transactions, of each block's `reward_percentile`-th percentile tip. Blocks with no
//!   transactions report a zero tip and say nothing about the market, so they are left
//!   out; with none left (a quiet chain, a node without `eth_feeHistory`) the node's own
//!   `eth_maxPriorityFeePerGas` is used. Then held within
//!   `[priority_floor_wei, priority_ceiling_wei]` (Polygon PoS refuses tips below its
//!   minimum, 25-30 gwei: set the floor there).
//! - **Max fee**: twice the next block's base fee (the last entry of `baseFeePerGas`,
//!   which the node computes from the latest block) plus the priority fee: room for the
//!   base fee to double while the operation waits, as the self-bundler prices its bundle.
//!   Then held within `[max_fee_floor_wei, max_fee_ceiling_wei]`, and never below the
//!   priority fee (EIP-1559 refuses that: the tip is lowered to the cap instead). The
//!   ceiling bounds what the paymaster pays per gas (the EntryPoint charges
//!   `min(maxFee, base fee + tip)`); below the chain's base fee an external bundler
//!   holds or refuses the operation, while the self-bundler still includes it and its
//!   own account pays the difference (its bundle is priced by the node, see `bundler`).
//! - **Per payment**: an operation whose gas limits times its max fee exceed
//!   `max_gas_cost_per_payment_wei` is refused before anything is journaled or sent,
//!   with both amounts in the reason.

use super::rpc::{Eth, RpcError, quantity};
use serde_json::{Value, json};

/// How a chain's user-operation fees are chosen. Defaults: 10 blocks, the 50th
/// percentile, no floors, no ceilings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeePolicy {
    /// Recent blocks `eth_feeHistory` reads (1..=1024).
    pub history_blocks: u64,
    /// Which percentile of each block's tips (0..=100).
    pub reward_percentile: u8,
    /// The lowest priority fee, in wei per gas.
    pub priority_floor_wei: u128,
    /// The highest priority fee, in wei per gas.
    pub priority_ceiling_wei: Option<u128>,
    /// The lowest max fee, in wei per gas.
    pub max_fee_floor_wei: u128,
    /// The highest max fee, in wei per gas.
    pub max_fee_ceiling_wei: Option<u128>,
    /// The most one payment's operation may cost in gas (its gas limits times its max
    /// fee, what the paymaster's deposit must cover), in wei.
    pub max_gas_cost_per_payment_wei: Option<u128>,
}

impl Default for FeePolicy {
    fn default() -> Self {
        FeePolicy {
            history_blocks: 10,
            reward_percentile: 50,
            priority_floor_wei: 0,
            priority_ceiling_wei: None,
            max_fee_floor_wei: 0,
            max_fee_ceiling_wei: None,
            max_gas_cost_per_payment_wei: None,
        }
    }
}

impl FeePolicy {
    /// What is inconsistent, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=1024).contains(&self.history_blocks) {
            return Err("fees.history_blocks must be 1 to 1024".into());
        }
        if self.reward_percentile > 100 {
            return Err("fees.reward_percentile must be 0 to 100".into());
        }
        if self
            .priority_ceiling_wei
            .is_some_and(|c| c < self.priority_floor_wei)
        {
            return Err("fees.priority_ceiling_wei is below fees.priority_floor_wei".into());
        }
        if self
            .max_fee_ceiling_wei
            .is_some_and(|c| c < self.max_fee_floor_wei)
        {
            return Err("fees.max_fee_ceiling_wei is below fees.max_fee_floor_wei".into());
        }
        Ok(())
    }
}

/// The fees an operation is built with, in wei per gas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fees {
    /// `maxPriorityFeePerGas`.
    pub priority: u128,
    /// `maxFeePerGas`.
    pub max_fee: u128,
}

/// What `eth_feeHistory` says: the next block's base fee and the median tip of the
/// blocks that carried transactions (`None` when none did).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeeHistory {
    /// The base fee of the block after the latest.
    pub next_base_fee: u128,
    /// The median of the non-empty blocks' percentile tips.
    pub median_tip: Option<u128>,
}

/// Reads an `eth_feeHistory` result.
pub fn parse_fee_history(v: &Value) -> Result<FeeHistory, RpcError> {
    let m = "eth_feeHistory";
    let bad = |d: &str| RpcError::Decode {
        method: m.into(),
        detail: d.into(),
    };
    let bases = v["baseFeePerGas"]
        .as_array()
        .ok_or_else(|| bad("no baseFeePerGas"))?;
    let next_base_fee = quantity(m, bases.last().ok_or_else(|| bad("empty baseFeePerGas"))?)?;
    let ratios = v["gasUsedRatio"].as_array().cloned().unwrap_or_default();
    let rewards = v["reward"].as_array().cloned().unwrap_or_default();
    let mut tips = Vec::new();
    for (i, r) in rewards.iter().enumerate() {
        let used = ratios.get(i).and_then(Value::as_f64).unwrap_or(0.0);
        if used <= 0.0 {
            continue;
        }
        if let Some(t) = r.as_array().and_then(|a| a.first()) {
            tips.push(quantity(m, t)?);
        }
    }
    tips.sort_unstable();
    Ok(FeeHistory {
        next_base_fee,
        median_tip: (!tips.is_empty()).then(|| tips[tips.len() / 2]),
    })
}

/// The fees of `history` (the node's suggested tip standing in when no recent block
/// carried a transaction) within `policy`'s floors and ceilings.
pub fn fees_within(policy: &FeePolicy, history: FeeHistory, node_tip: u128) -> Fees {
    let mut priority = history
        .median_tip
        .unwrap_or(node_tip)
        .max(policy.priority_floor_wei);
    if let Some(c) = policy.priority_ceiling_wei {
        priority = priority.min(c);
    }
    let mut max_fee = history
        .next_base_fee
        .saturating_mul(2)
        .saturating_add(priority)
        .max(policy.max_fee_floor_wei);
    if let Some(c) = policy.max_fee_ceiling_wei {
        max_fee = max_fee.min(c);
    }
    Fees {
        priority: priority.min(max_fee),
        max_fee,
    }
}

/// The fees to build an operation with now, on the chain `eth` serves.
pub async fn estimate(eth: &Eth<'_>, policy: &FeePolicy) -> Result<Fees, RpcError> {
    let history = match eth
        .0
        .request(
            "eth_feeHistory",
            json!([
                format!("0x{:x}", policy.history_blocks),
                "latest",
                [policy.reward_percentile]
            ]),
        )
        .await
    {
        Ok(v) => Some(parse_fee_history(&v)?),
        // A node without the method: its own suggestions, as before fee history.
        Err(RpcError::Node { .. }) => None,
        Err(e) => return Err(e),
    };
    let history = match history {
        Some(h) => h,
        None => FeeHistory {
            next_base_fee: eth.gas_price().await?,
            median_tip: None,
        },
    };
    let node_tip = if history.median_tip.is_some() {
        0
    } else {
        eth.max_priority_fee().await?
    };
    Ok(fees_within(policy, history, node_tip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_blocks_are_left_out_and_the_median_tip_is_taken() {
        let h = parse_fee_history(&json!({
            "oldestBlock": "0x10",
            "baseFeePerGas": ["0x64", "0x6e", "0x78", "0x82"],
            "gasUsedRatio": [0.5, 0.0, 0.9],
            "reward": [["0x5"], ["0x0"], ["0x9"]]
        }))
        .unwrap();
        assert_eq!(h.next_base_fee, 0x82);
        assert_eq!(h.median_tip, Some(9));
        let quiet = parse_fee_history(&json!({
            "baseFeePerGas": ["0x1", "0x2"], "gasUsedRatio": [0.0], "reward": [["0x0"]]
        }))
        .unwrap();
        assert_eq!(quiet.median_tip, None);
    }

    #[test]
    fn floors_and_ceilings_hold_and_the_tip_never_exceeds_the_cap() {
        let h = FeeHistory {
            next_base_fee: 100,
            median_tip: Some(5),
        };
        let p = FeePolicy::default();
        assert_eq!(
            fees_within(&p, h, 0),
            Fees {
                priority: 5,
                max_fee: 205
            }
        );
        let floor = FeePolicy {
            priority_floor_wei: 30,
            max_fee_floor_wei: 500,
            ..p
        };
        assert_eq!(
            fees_within(&floor, h, 0),
            Fees {
                priority: 30,
                max_fee: 500
            }
        );
        let ceiling = FeePolicy {
            priority_ceiling_wei: Some(3),
            max_fee_ceiling_wei: Some(2),
            ..p
        };
        assert_eq!(
            fees_within(&ceiling, h, 0),
            Fees {
                priority: 2,
                max_fee: 2
            }
        );
        let quiet = FeeHistory {
            next_base_fee: 100,
            median_tip: None,
        };
        assert_eq!(
            fees_within(&p, quiet, 7),
            Fees {
                priority: 7,
                max_fee: 207
            }
        );
        assert!(
            FeePolicy {
                reward_percentile: 101,
                ..p
            }
            .validate()
            .is_err()
        );
        assert!(
            FeePolicy {
                priority_ceiling_wei: Some(1),
                priority_floor_wei: 2,
                ..p
            }
            .validate()
            .is_err()
        );
    }
}
