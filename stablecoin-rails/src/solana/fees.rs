//! The compute budget of a Solana send (issue #49): its compute-unit limit and its
//! compute-unit price (the priority fee), so a send competes under congestion instead of
//! being dropped by the leader for paying nothing above the base fee.
//!
//! - **Limit**: sized from the transaction, not the runtime's default of 200 000 units
//!   per instruction: `compute_units_base` plus `compute_units_per_transfer` per
//!   `TransferChecked` plus `compute_units_per_account_created` per recipient token
//!   account the send creates, plus `compute_units_per_memo` and
//!   `compute_units_per_memo_byte` per byte for its payment-id memo, at most [`MAX_COMPUTE_UNIT_LIMIT`]. The priority fee is
//!   paid on the limit, not on what the transaction uses, so a tight limit keeps it
//!   small; a limit too tight makes the transaction fail (the node's preflight refuses
//!   it, nothing moves).
//! - **Price**: the `fee_percentile`-th percentile of what `getRecentPrioritizationFees`
//!   reports for the accounts the send writes (the fee payer, the sender's and the
//!   recipients' token accounts: the node answers, per recent slot, the lowest fee that
//!   landed a transaction locking them), held within `[price_floor, price_ceiling]`
//!   micro-lamports per unit. A node that cannot answer leaves the price at the floor:
//!   the send still goes, and the rebroadcast and retry below carry it.
//! - **Retry**: a send signed again because its previous transaction expired unseen (it
//!   can never land) is priced at least `retry_price_increase_percent` above that one,
//!   within the ceiling: what was dropped at a price is not sent at the same price again.

use super::codec::{self, MAX_COMPUTE_UNIT_LIMIT};
use super::rpc::RpcError;
use serde_json::{Value, json};
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;

/// How a send's compute budget is chosen. Defaults: see [`SolanaFeePolicy::default`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SolanaFeePolicy {
    /// Lowest compute-unit price, micro-lamports per unit.
    pub price_floor_micro_lamports: u64,
    /// Highest compute-unit price, micro-lamports per unit: with the limit, it bounds
    /// the priority fee one send pays.
    pub price_ceiling_micro_lamports: u64,
    /// Which percentile of the recent slots' fees (0..=100).
    pub fee_percentile: u8,
    /// How much higher, in percent, a send signed again after its previous transaction
    /// expired unseen is priced at least.
    pub retry_price_increase_percent: u32,
    /// Units of every send, whatever it holds (the compute-budget instructions, margin).
    pub compute_units_base: u32,
    /// Units per `TransferChecked` (SPL Token uses about 6 200).
    pub compute_units_per_transfer: u32,
    /// Units per token account the send creates (`CreateIdempotent` with its calls into
    /// the System and Token programs uses about 25 000).
    pub compute_units_per_account_created: u32,
    /// Units of the payment-id memo every payment send carries, whatever its text.
    pub compute_units_per_memo: u32,
    /// Units per byte of that memo. The Memo program checks the text is UTF-8 and logs
    /// it; older builds log it `Debug`-escaped, costliest for control and multi-byte
    /// characters.
    pub compute_units_per_memo_byte: u32,
}

impl Default for SolanaFeePolicy {
    /// 1 000 to 5 000 000 micro-lamports per unit, the 75th percentile, +50% on a retry;
    /// 5 000 base units, 10 000 per transfer, 40 000 per account created, 5 000 per memo
    /// plus 100 per memo byte. A transfer creating its recipient's account with a
    /// 30-byte payment id asks 63 000 units: at the ceiling its priority fee is 315 000
    /// lamports (0.000315 SOL).
    ///
    /// The memo allowance: the Memo v2 build litesvm runs (spl-memo 4.0.0) uses about
    /// 300 units for any memo up to [`codec::MAX_MEMO_BYTES`] (`tests/solana_memo.rs`
    /// measures it); it is far above that because the binary deployed at the address
    /// may be an older, costlier build, and a limit too tight makes every send fail
    /// preflight while a loose one costs only `units x price` (17 800 units for the
    /// longest memo).
    fn default() -> Self {
        SolanaFeePolicy {
            price_floor_micro_lamports: 1_000,
            price_ceiling_micro_lamports: 5_000_000,
            fee_percentile: 75,
            retry_price_increase_percent: 50,
            compute_units_base: 5_000,
            compute_units_per_transfer: 10_000,
            compute_units_per_account_created: 40_000,
            compute_units_per_memo: 5_000,
            compute_units_per_memo_byte: 100,
        }
    }
}

impl SolanaFeePolicy {
    /// What is inconsistent, if anything (named by the server's setting).
    pub fn validate(&self) -> Result<(), String> {
        if self.price_ceiling_micro_lamports < self.price_floor_micro_lamports {
            return Err(
                "fees.price_ceiling_micro_lamports is below fees.price_floor_micro_lamports".into(),
            );
        }
        if self.fee_percentile > 100 {
            return Err("fees.fee_percentile must be 0 to 100".into());
        }
        if self.compute_units_per_transfer == 0 {
            return Err("fees.compute_units_per_transfer must be positive".into());
        }
        if self.compute_units_base > MAX_COMPUTE_UNIT_LIMIT {
            return Err(format!(
                "fees.compute_units_base must be at most {MAX_COMPUTE_UNIT_LIMIT}"
            ));
        }
        Ok(())
    }

    /// The limit of a send of `transfers` transfers creating `accounts_created` token
    /// accounts and carrying a memo of `memo_bytes` bytes (0: none).
    pub fn compute_unit_limit(
        &self,
        transfers: usize,
        accounts_created: usize,
        memo_bytes: usize,
    ) -> u32 {
        let units = u64::from(self.compute_units_base)
            + u64::from(self.compute_units_per_transfer) * transfers as u64
            + u64::from(self.compute_units_per_account_created) * accounts_created as u64
            + u64::from(self.memo_compute_units(memo_bytes));
        u32::try_from(units.min(u64::from(MAX_COMPUTE_UNIT_LIMIT)))
            .unwrap_or(MAX_COMPUTE_UNIT_LIMIT)
    }

    /// Units of a memo of `bytes` bytes (0: no memo, no units).
    pub fn memo_compute_units(&self, bytes: usize) -> u32 {
        if bytes == 0 {
            return 0;
        }
        let units = u64::from(self.compute_units_per_memo)
            + u64::from(self.compute_units_per_memo_byte) * bytes as u64;
        u32::try_from(units).unwrap_or(u32::MAX)
    }

    /// The price from the recent fees (`None`: the node could not say), at least
    /// `retry_price_increase_percent` above `previous` (the price of an attempt that
    /// expired unseen), within the floor and ceiling.
    pub fn price(&self, recent: Option<&[u64]>, previous: Option<u64>) -> u64 {
        let market = recent.and_then(|r| percentile(r, self.fee_percentile));
        let raised = previous.map(|p| {
            let up = u128::from(p) * (100 + u128::from(self.retry_price_increase_percent));
            u64::try_from(up.div_ceil(100)).unwrap_or(u64::MAX)
        });
        let want = market.unwrap_or(0).max(raised.unwrap_or(0));
        // Not `clamp`: it panics on a floor above the ceiling, which only `validate`
        // refuses; the ceiling wins then.
        want.max(self.price_floor_micro_lamports)
            .min(self.price_ceiling_micro_lamports)
    }
}

/// The `p`-th percentile (nearest rank) of `values`; `None` for none.
pub fn percentile(values: &[u64], p: u8) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let p = usize::from(p.min(100));
    // Nearest rank: the smallest value with at least p% of the values at or below it.
    let rank = (p * v.len()).div_ceil(100).max(1);
    v.get(rank - 1).copied()
}

/// The two compute-budget instructions a send starts with.
pub fn compute_budget_instructions(limit: u32, price: u64) -> [Instruction; 2] {
    [
        codec::set_compute_unit_limit(limit),
        codec::set_compute_unit_price(price),
    ]
}

/// The most addresses `getRecentPrioritizationFees` takes.
pub const MAX_FEE_ACCOUNTS: usize = 128;

/// `getRecentPrioritizationFees` params: the writable accounts of the transaction (at
/// most [`MAX_FEE_ACCOUNTS`], base58).
pub fn request_recent_prioritization_fees(accounts: &[Pubkey]) -> Value {
    let list: Vec<String> = accounts
        .iter()
        .take(MAX_FEE_ACCOUNTS)
        .map(|a| a.to_string())
        .collect();
    json!([list])
}

/// Reads a `getRecentPrioritizationFees` result: `[{"slot", "prioritizationFee"}]`, the
/// fees in micro-lamports per unit, in the node's order.
pub fn parse_recent_prioritization_fees(result: Value) -> Result<Vec<u64>, RpcError> {
    let list = result
        .as_array()
        .ok_or_else(|| RpcError::decode("prioritization fees result is not an array"))?;
    list.iter()
        .map(|e| {
            e.get("prioritizationFee")
                .and_then(Value::as_u64)
                .ok_or_else(|| RpcError::decode("prioritizationFee is not an unsigned integer"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[7], 0), Some(7));
        assert_eq!(percentile(&[7], 100), Some(7));
        let v = [0, 0, 0, 100, 200, 300, 400, 500];
        assert_eq!(percentile(&v, 50), Some(100));
        assert_eq!(percentile(&v, 75), Some(300));
        assert_eq!(percentile(&v, 100), Some(500));
        assert_eq!(percentile(&v, 0), Some(0));
    }

    #[test]
    fn the_price_follows_the_market_within_floor_and_ceiling() {
        let p = SolanaFeePolicy {
            price_floor_micro_lamports: 1_000,
            price_ceiling_micro_lamports: 50_000,
            ..SolanaFeePolicy::default()
        };
        assert_eq!(p.price(Some(&[0, 0, 0, 0]), None), 1_000, "floor");
        assert_eq!(
            p.price(Some(&[10_000, 20_000, 30_000, 40_000]), None),
            30_000
        );
        assert_eq!(p.price(Some(&[900_000; 3]), None), 50_000, "ceiling");
        assert_eq!(p.price(None, None), 1_000, "no answer: the floor");
        assert_eq!(p.price(Some(&[]), None), 1_000);
        // A retry: at least 50% above the expired attempt, even on a quiet market.
        assert_eq!(p.price(Some(&[0]), Some(10_000)), 15_000);
        assert_eq!(p.price(Some(&[40_000]), Some(10_000)), 40_000);
        assert_eq!(p.price(None, Some(45_000)), 50_000, "capped");
        assert_eq!(p.price(None, Some(u64::MAX)), 50_000);
        // An unvalidated policy with its floor above its ceiling: the ceiling, no panic.
        let upside_down = SolanaFeePolicy {
            price_floor_micro_lamports: 9,
            price_ceiling_micro_lamports: 3,
            ..SolanaFeePolicy::default()
        };
        assert_eq!(upside_down.price(Some(&[5]), None), 3);
    }

    #[test]
    fn the_limit_counts_transfers_and_created_accounts() {
        let p = SolanaFeePolicy::default();
        assert_eq!(p.compute_unit_limit(1, 0, 0), 15_000);
        assert_eq!(p.compute_unit_limit(1, 1, 0), 55_000);
        assert_eq!(p.compute_unit_limit(2, 2, 0), 105_000);
        assert_eq!(p.compute_unit_limit(1000, 1000, 0), MAX_COMPUTE_UNIT_LIMIT);
        // The payment-id memo adds its own units, by length.
        assert_eq!(p.compute_unit_limit(1, 0, 4), 15_000 + 5_000 + 400);
        assert_eq!(p.memo_compute_units(0), 0);
        assert_eq!(p.memo_compute_units(codec::MAX_MEMO_BYTES), 17_800);
        let huge = SolanaFeePolicy {
            compute_units_per_memo_byte: u32::MAX,
            ..SolanaFeePolicy::default()
        };
        assert_eq!(huge.memo_compute_units(2), u32::MAX);
        assert_eq!(huge.compute_unit_limit(1, 0, 2), MAX_COMPUTE_UNIT_LIMIT);
    }

    #[test]
    fn inconsistent_policies_are_named() {
        let mut p = SolanaFeePolicy::default();
        p.validate().unwrap();
        p.price_ceiling_micro_lamports = 10;
        assert!(p.validate().unwrap_err().contains("price_ceiling"));
        let p = SolanaFeePolicy {
            fee_percentile: 101,
            ..SolanaFeePolicy::default()
        };
        assert!(p.validate().unwrap_err().contains("fee_percentile"));
    }

    #[test]
    fn recent_fees_in_the_documented_shape() {
        // The solana.com RPC reference's example answer.
        let r = json!([
            {"slot": 348125, "prioritizationFee": 0},
            {"slot": 348126, "prioritizationFee": 1000},
            {"slot": 348127, "prioritizationFee": 500},
            {"slot": 348128, "prioritizationFee": 0},
            {"slot": 348129, "prioritizationFee": 1234}
        ]);
        assert_eq!(
            parse_recent_prioritization_fees(r).unwrap(),
            vec![0, 1000, 500, 0, 1234]
        );
        assert!(parse_recent_prioritization_fees(json!({})).is_err());
        assert!(parse_recent_prioritization_fees(json!([{"slot": 1}])).is_err());
        let a = Pubkey::new_from_array([1; 32]);
        let many = vec![a; 200];
        let params = request_recent_prioritization_fees(&many);
        assert_eq!(params[0].as_array().unwrap().len(), MAX_FEE_ACCOUNTS);
        assert_eq!(params[0][0], a.to_string());
    }
}
