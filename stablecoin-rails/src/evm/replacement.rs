//! Stuck bundles (issue #49): the [`SelfBundler`]'s transactions that the chain does not
//! mine are replaced at the same nonce with higher fees, and cancelled past a ceiling.
//!
//! Why: a bundle is priced once, when it is sent (`max_fee_per_gas` = 2 x the node's
//! price + the tip). If the base fee then rises above that, the transaction stays in the
//! mempool, and every later bundle of the same bundler account queues behind its nonce:
//! all EVM settlement stops. rundler and Alto users know it as the "replacement
//! transaction underpriced" loop. So the bundler remembers what it sent (`InFlight`),
//! and [`SelfBundler::replace_stuck`] (run by the rail's status polls and before each send,
//! at most every [`Replacement::check_every`]):
//! - forgets the bundles the chain has mined [`Replacement::final_depth`] blocks deep
//!   (their nonce is below the account's transaction count at that block); one mined
//!   less deep is kept, so that if a reorganisation takes it out of the chain it is
//!   re-sent below, as a stuck one is;
//! - re-sends each bundle waiting longer than [`Replacement::after`] with the same nonce
//!   and call, its tip and fee cap each raised by at least 12.5% (the replacement
//!   minimum of geth, Anvil and most nodes) and to at least what the node asks now;
//! - if that fee cap would pass the ceiling ([`Ceiling`]), sends instead a cancellation:
//!   a zero-value transfer to itself at that nonce (21,000 gas), priced to replace it.
//!
//! Nothing can pay twice: every version of a bundle has one nonce, so exactly one of
//! them is mined, and the rail finds each operation by its `UserOperationEvent`, not
//! by the first bundle's hash. A cancelled bundle's operations never run; once the chain
//! is past their `validUntil` the rail reports them `NotFound` and the engine fails them
//! and returns their money. The account's nonces stay gap-free: a cancellation uses the
//! nonce it frees.

use super::bundler::SelfBundler;
use super::rpc::{Eth, RpcError};
use super::tx::Eip1559Tx;
use stablecoin_core::ports::Curve;
use std::time::{Duration, Instant};

/// When and how far the [`SelfBundler`] replaces a bundle the chain does not mine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// A bundle not mined this long after its last send is replaced.
    pub after: Duration,
    /// How often at most [`SelfBundler::replace_stuck`] asks the node (one
    /// `eth_getTransactionCount` when bundles are in flight, none otherwise).
    pub check_every: Duration,
    /// The highest fee cap a bundle may be given; past it, it is cancelled.
    pub ceiling: Ceiling,
    /// How many blocks deep a bundle must be before it is forgotten: until then a
    /// reorganisation that takes it out of the chain makes it unmined again, and it is
    /// re-sent at its nonce like a stuck one (the rail's `confirmations`; 1 forgets it
    /// once mined).
    pub final_depth: u64,
}

impl Default for Replacement {
    /// Replaced after 60 s (20-30 blocks on Polygon, Base and BNB Smart Chain), checked
    /// at most every 2 s, up to 10x the first fee cap.
    fn default() -> Self {
        Replacement {
            after: Duration::from_secs(60),
            check_every: Duration::from_secs(2),
            ceiling: Ceiling::TimesFirst(10),
            final_depth: 1,
        }
    }
}

/// The most a bundle's fee cap may be raised to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ceiling {
    /// This many times the fee cap the bundle was first sent with.
    TimesFirst(u32),
    /// This many wei per gas.
    Wei(u128),
}

/// A bundle transaction sent and not yet seen mined.
#[derive(Clone, Debug)]
pub(super) struct InFlight {
    /// The transaction last sent at its nonce (a replacement, or a cancellation).
    pub tx: Eip1559Tx,
    /// Every hash sent at this nonce, first to last.
    pub hashes: Vec<[u8; 32]>,
    /// The fee cap the bundle was first sent with (the base of `Ceiling::TimesFirst`).
    pub first_max_fee: u128,
    pub last_sent: Instant,
    /// The last version sent is a cancellation.
    pub cancelled: bool,
}

/// What one [`SelfBundler::replace_stuck`] round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Bundles now final (mined `final_depth` deep) since the last round, forgotten.
    pub mined: usize,
    /// Bundles re-sent with higher fees: (nonce, new hash).
    pub replaced: Vec<(u64, [u8; 32])>,
    /// Bundles cancelled at their nonce: (nonce, cancellation hash).
    pub cancelled: Vec<(u64, [u8; 32])>,
    /// Sends the node refused or lost (retried next round).
    pub errors: Vec<String>,
}

/// A fee raised by the replacement minimum: 12.5% and one wei more, so the rounding of
/// any node's check passes.
pub fn bumped(fee: u128) -> u128 {
    fee.saturating_add(fee / 8).saturating_add(1)
}

/// The tip and fee cap of the next version of `tx`: each raised by the replacement
/// minimum, and to at least what the node asks now (`tip_now`, and twice `price_now`,
/// the node's price, plus the tip, as a first send is priced).
pub fn replacement_fees(tx: &Eip1559Tx, tip_now: u128, price_now: u128) -> (u128, u128) {
    let tip = bumped(tx.max_priority_fee_per_gas).max(tip_now);
    let cap = bumped(tx.max_fee_per_gas)
        .max(price_now.saturating_mul(2).saturating_add(tip))
        .max(tip);
    (tip, cap)
}

impl SelfBundler {
    /// Replaces or cancels the bundles the chain has not mined (see the module doc);
    /// `None` when it is not time to look yet. Never fails: a node that cannot be asked
    /// is asked again next round.
    pub async fn replace_stuck(&self) -> Option<Maintenance> {
        {
            let mut last = self.last_check.lock().await;
            if last.is_some_and(|t| t.elapsed() < self.replacement.check_every) {
                return None;
            }
            *last = Some(Instant::now());
        }
        let mut inflight = self.inflight.lock().await;
        let mut report = Maintenance::default();
        if inflight.is_empty() {
            return Some(report);
        }
        let eth = Eth(&*self.rpc);
        let me = match self.address().await {
            Ok(me) => me,
            Err(e) => {
                report.errors.push(e);
                return Some(report);
            }
        };
        let counts = async {
            let mined = eth.latest_nonce(&me).await?;
            if self.replacement.final_depth <= 1 {
                return Ok::<_, RpcError>((mined, mined));
            }
            let head = eth.block_number().await?;
            let deep = match (head + 1).checked_sub(self.replacement.final_depth) {
                Some(block) => eth.nonce_at(&me, block).await?,
                None => 0,
            };
            Ok((mined, deep))
        };
        let (mined, final_count) = match counts.await {
            Ok(c) => c,
            Err(e) => {
                report.errors.push(format!("eth_getTransactionCount: {e}"));
                return Some(report);
            }
        };
        let before = inflight.len();
        inflight.retain(|nonce, _| *nonce >= final_count);
        report.mined = before - inflight.len();
        // Unmined (never, or no longer after a reorganisation) for `after`.
        let due: Vec<u64> = inflight
            .iter()
            .filter(|(n, b)| **n >= mined && b.last_sent.elapsed() >= self.replacement.after)
            .map(|(n, _)| *n)
            .collect();
        if due.is_empty() {
            return Some(report);
        }
        let (tip_now, price_now) = match (eth.max_priority_fee().await, eth.gas_price().await) {
            (Ok(t), Ok(p)) => (t, p),
            (Err(e), _) | (_, Err(e)) => {
                report.errors.push(format!("fee suggestion: {e}"));
                return Some(report);
            }
        };
        for nonce in due {
            let Some(bundle) = inflight.get_mut(&nonce) else {
                continue;
            };
            let (tip, cap) = replacement_fees(&bundle.tx, tip_now, price_now);
            let ceiling = match self.replacement.ceiling {
                Ceiling::TimesFirst(k) => bundle.first_max_fee.saturating_mul(u128::from(k)),
                Ceiling::Wei(w) => w,
            };
            let cancel = bundle.cancelled || cap > ceiling;
            let tx = if cancel {
                // 21,000 gas whatever it costs per gas: cheap beside a bundle, and the
                // nonce must be freed for the bundles behind it.
                Eip1559Tx {
                    max_priority_fee_per_gas: tip,
                    max_fee_per_gas: cap,
                    gas_limit: 21_000,
                    to: me,
                    value: 0,
                    data: Vec::new(),
                    ..bundle.tx.clone()
                }
            } else {
                Eip1559Tx {
                    max_priority_fee_per_gas: tip,
                    max_fee_per_gas: cap,
                    ..bundle.tx.clone()
                }
            };
            let signed = match self
                .signer
                .sign(&self.key, Curve::Secp256k1, &tx.signing_hash())
                .await
            {
                Ok(sig) => tx.signed(&sig.0),
                Err(e) => {
                    report.errors.push(format!("nonce {nonce}: signer: {e}"));
                    continue;
                }
            };
            let Some((raw, hash)) = signed else {
                report
                    .errors
                    .push(format!("nonce {nonce}: malformed signature"));
                continue;
            };
            // Whatever the node answers, the next round starts from these fees: an
            // "underpriced" refusal is then outbid by the next bump.
            bundle.tx = tx;
            bundle.last_sent = Instant::now();
            match eth.send_raw(&raw).await {
                Ok(_) => {
                    bundle.hashes.push(hash);
                    if cancel {
                        bundle.cancelled = true;
                        report.cancelled.push((nonce, hash));
                    } else {
                        report.replaced.push((nonce, hash));
                    }
                }
                Err(RpcError::Node { message, .. }) if is_nonce_used(&message) => {
                    // Mined meanwhile: forgotten at the next round's count.
                    report.errors.push(format!("nonce {nonce}: {message}"));
                }
                Err(e) => report.errors.push(format!("nonce {nonce}: {e}")),
            }
        }
        Some(report)
    }

    /// Every hash this bundler sent at `nonce` and has not seen mined yet, first to last.
    pub async fn sent_at(&self, nonce: u64) -> Vec<[u8; 32]> {
        self.inflight
            .lock()
            .await
            .get(&nonce)
            .map(|b| b.hashes.clone())
            .unwrap_or_default()
    }
}

/// A node's refusal because the nonce is already taken by a mined transaction.
fn is_nonce_used(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("nonce too low") || m.contains("already known") || m.contains("nonce is too low")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evm::EvmAddress;

    fn tx(tip: u128, cap: u128) -> Eip1559Tx {
        Eip1559Tx {
            chain_id: 137,
            nonce: 4,
            max_priority_fee_per_gas: tip,
            max_fee_per_gas: cap,
            gas_limit: 500_000,
            to: EvmAddress([7; 20]),
            value: 0,
            data: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_replacement_outbids_by_the_minimum_or_follows_the_chain() {
        // The chain has not moved: 12.5% and one wei more, each.
        assert_eq!(replacement_fees(&tx(800, 8_000), 0, 0), (901, 9_001));
        assert!(bumped(8_000) * 1_000 >= 8_000 * 1_125);
        // The base fee went up: the cap follows the node's price.
        assert_eq!(
            replacement_fees(&tx(800, 8_000), 1_000, 50_000),
            (1_000, 101_000)
        );
        // Never a cap below the tip.
        assert_eq!(replacement_fees(&tx(10, 0), 0, 0), (12, 12));
        // No overflow at the top.
        assert_eq!(bumped(u128::MAX), u128::MAX);
    }

    #[test]
    fn a_node_saying_the_nonce_is_used_is_recognised() {
        assert!(is_nonce_used("nonce too low"));
        assert!(is_nonce_used("Nonce too low: next nonce 5, tx nonce 4"));
        assert!(is_nonce_used("already known"));
        assert!(!is_nonce_used("replacement transaction underpriced"));
    }
}
