//! Getting user operations on chain. [`Bundler`] is the seam: [`SelfBundler`] is the
//! service submitting `handleOps` itself from its own key (spec 1.3: the service sponsors
//! and bundles); [`RpcBundler`](super::rpc_bundler::RpcBundler) hands them to an external
//! ERC-4337 bundler (`eth_sendUserOperation`), which answers with the user-operation hash
//! and puts the bundle on chain later.

use super::abi::{self, selector};
use super::address::EvmAddress;
use super::replacement::{InFlight, Replacement};
use super::rpc::{Eth, JsonRpc, RpcError};
use super::tx::Eip1559Tx;
use super::userop::{UserOp, handle_ops_call};
use async_trait::async_trait;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Mutex;

/// Why [`Bundler::send`] returned no bundle hash. The variant decides what the rail may
/// do next: build the payment again, or only reconcile it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Definitely not on its way (the EntryPoint refused the operation in simulation,
    /// the node refused the transaction).
    #[error("bundle rejected: {0}")]
    Rejected(String),
    /// The EntryPoint refused the operation at `index` of the bundle in simulation
    /// (`FailedOp(opIndex, reason)`): nothing was sent, and the others may go without it.
    #[error("operation {index} of the bundle rejected: {reason}")]
    OpRejected {
        /// Its position in the bundle.
        index: usize,
        /// The EntryPoint's reason (an `AAxx` code).
        reason: String,
    },
    /// May be on its way: reconcile, never resubmit. `tx_hash` when already known.
    #[error("bundle outcome unknown: {reason}")]
    Unknown {
        /// The bundle transaction's hash, when it was signed before the outcome was lost.
        tx_hash: Option<[u8; 32]>,
        /// What went wrong (the transport error), for the operation's record and the logs.
        reason: String,
    },
}

/// What a bundler knows of one user operation (by its hash), for reconciling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BundlerView {
    /// It does not know the operation (or cannot be asked: [`SelfBundler`] keeps no
    /// mempool): the chain's logs decide.
    Unknown,
    /// Accepted and waiting in its mempool: on its way, no bundle yet.
    Pending,
    /// Carried by the bundle transaction of this hash.
    Included([u8; 32]),
}

/// Puts signed, sponsored user operations on chain: [`SelfBundler`], or an external
/// ERC-4337 bundler behind the same seam
/// ([`RpcBundler`](super::rpc_bundler::RpcBundler)).
#[async_trait]
pub trait Bundler: Send + Sync {
    /// Hands `ops` over to be put on chain. `Ok(Some(hash))`: the bundle transaction is
    /// sent and this is its hash ([`SelfBundler`]); `Ok(None)`: accepted, the bundle comes
    /// later (an external bundler's mempool) and is found by [`Bundler::view`] or the
    /// EntryPoint's `UserOperationEvent`.
    async fn send(&self, ops: &[UserOp]) -> Result<Option<[u8; 32]>, BundleError>;

    /// The account that pays the bundles' gas, when it is the service's own.
    async fn account(&self) -> Option<EvmAddress>;

    /// What the bundler knows of the operation of `user_op_hash`. Asking never sends
    /// anything. [`BundlerView::Unknown`] by default (and on any error).
    async fn view(&self, _user_op_hash: &[u8; 32]) -> BundlerView {
        BundlerView::Unknown
    }

    /// Whether an operation whose hand-over ended in [`BundleError::Unknown`] without a
    /// bundle hash may still be on its way: `true` for an external bundler (its answer,
    /// not the operation, may be what was lost; the rail then waits for the operation's
    /// `UserOperationEvent` until its `validUntil`), `false` for [`SelfBundler`] (no hash
    /// means no transaction was signed).
    fn accepts_before_bundling(&self) -> bool {
        false
    }

    /// Housekeeping the rail runs at each status poll: the [`SelfBundler`] replaces or
    /// cancels the bundles the chain leaves unmined (`replacement.rs`). Nothing by
    /// default; never fails (a problem is retried at the next poll).
    async fn maintain(&self) {}

    /// Hands `op` over again: an operation the rail handed over earlier ([`Bundler::view`]
    /// answers [`BundlerView::Unknown`]) that is in no block up to the head and still
    /// valid, so the bundler may have dropped it (an external bundler's mempool is not
    /// durable: a restart or an eviction loses it). The same signed operation (same
    /// hash, same nonce): the EntryPoint executes a nonce once, so a copy that did arrive
    /// earlier can never make it a second payment. Returns whether it was sent (a bundler
    /// rate-limits it). Nothing by default: [`SelfBundler`] re-sends its own bundles.
    async fn resend(&self, _op: &UserOp) -> bool {
        false
    }

    /// Why the bundler cannot take operations now (unreachable, does not serve the
    /// rail's EntryPoint); empty when it can. Empty by default.
    async fn problems(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The service as its own bundler: `handleOps` in an EIP-1559 transaction signed by the
/// sponsor key, which is also the beneficiary (it gets the paymaster's gas refund).
pub struct SelfBundler {
    pub(super) rpc: Arc<dyn JsonRpc>,
    pub(super) signer: Arc<dyn Signer>,
    pub(super) key: KeyPurpose,
    entry_point: EvmAddress,
    chain_id: u64,
    /// Next transaction nonce; `None` re-reads the node's pending count (at start, and
    /// after a send of unknown outcome).
    next_nonce: Mutex<Option<u64>>,
    /// When and how far unmined bundles are replaced (`replacement.rs`).
    pub(super) replacement: Replacement,
    /// The bundles sent and not yet seen mined, by nonce.
    pub(super) inflight: Mutex<BTreeMap<u64, InFlight>>,
    /// When `replace_stuck` last asked the node.
    pub(super) last_check: Mutex<Option<Instant>>,
}

impl SelfBundler {
    /// A bundler signing with `signer`'s `key` (the rail's is [`KeyPurpose::Sponsor`]) for
    /// `entry_point` on `chain_id`. The transaction nonce is read from the node at the first
    /// send.
    pub fn new(
        rpc: Arc<dyn JsonRpc>,
        signer: Arc<dyn Signer>,
        key: KeyPurpose,
        entry_point: EvmAddress,
        chain_id: u64,
    ) -> Self {
        SelfBundler {
            rpc,
            signer,
            key,
            entry_point,
            chain_id,
            next_nonce: Mutex::new(None),
            replacement: Replacement::default(),
            inflight: Mutex::new(BTreeMap::new()),
            last_check: Mutex::new(None),
        }
    }

    /// Replaces unmined bundles on `replacement`'s terms instead of the default ones.
    pub fn with_replacement(mut self, replacement: Replacement) -> Self {
        self.replacement = replacement;
        self
    }

    /// The bundler account: the EOA of its key, which pays the bundles' gas and receives the
    /// refunds. `Err` when the signer cannot give the public key.
    pub async fn address(&self) -> Result<EvmAddress, String> {
        let pk = self
            .signer
            .public_key(&self.key, Curve::Secp256k1)
            .await
            .map_err(|e| e.to_string())?;
        EvmAddress::from_public_key(&pk.bytes).map_err(|e| e.to_string())
    }
}

/// The reason in an EntryPoint revert: `FailedOp(uint256,string)` /
/// `FailedOpWithRevert(uint256,string,bytes)` carry an `AAxx` code, anything else is
/// decoded as a plain revert.
pub fn entry_point_reason(data: &[u8]) -> String {
    if data.len() > 4
        && (data[..4] == selector("FailedOp(uint256,string)")
            || data[..4] == selector("FailedOpWithRevert(uint256,string,bytes)"))
        && let Some(s) = abi::dynamic_bytes(&data[4..], 1)
    {
        return String::from_utf8_lossy(&s).into_owned();
    }
    abi::revert_reason(data)
}

/// The operation an EntryPoint revert names (`FailedOp` / `FailedOpWithRevert`'s first
/// word), if it is one.
pub fn failed_op_index(data: &[u8]) -> Option<usize> {
    if data.len() >= 36
        && (data[..4] == selector("FailedOp(uint256,string)")
            || data[..4] == selector("FailedOpWithRevert(uint256,string,bytes)"))
    {
        let word = &data[4..36];
        if word[..24].iter().all(|b| *b == 0) {
            return usize::try_from(u64::from_be_bytes(word[24..].try_into().ok()?)).ok();
        }
    }
    None
}

/// The gas a bundle of `ops` may need: every operation's limits (call, verification,
/// pre-verification, and the paymaster's validation and post-op packed in
/// `paymasterAndData`), plus the EntryPoint's own overhead.
pub fn bundle_gas_limit(ops: &[UserOp]) -> u128 {
    let word = |b: &[u8]| -> u128 { b.try_into().map(u128::from_be_bytes).unwrap_or(0) };
    ops.iter()
        .map(|op| {
            let pm = &op.paymaster_and_data;
            let paymaster = if pm.len() >= 52 {
                word(&pm[20..36]).saturating_add(word(&pm[36..52]))
            } else {
                0
            };
            op.call_gas_limit
                .saturating_add(op.verification_gas_limit)
                .saturating_add(op.pre_verification_gas)
                .saturating_add(paymaster)
                .saturating_add(10_000)
        })
        .fold(60_000u128, u128::saturating_add)
}

fn rejected_by_node(e: RpcError) -> BundleError {
    match e {
        RpcError::Node {
            data: Some(d),
            message,
            ..
        } if failed_op_index(&d).is_some() => BundleError::OpRejected {
            index: failed_op_index(&d).unwrap_or_default(),
            reason: format!("{message}: {}", entry_point_reason(&d)),
        },
        RpcError::Node {
            data: Some(d),
            message,
            ..
        } if !d.is_empty() => {
            BundleError::Rejected(format!("{message}: {}", entry_point_reason(&d)))
        }
        RpcError::Transport(t) => BundleError::Unknown {
            tx_hash: None,
            reason: t,
        },
        other => BundleError::Rejected(other.to_string()),
    }
}

#[async_trait]
impl Bundler for SelfBundler {
    async fn send(&self, ops: &[UserOp]) -> Result<Option<[u8; 32]>, BundleError> {
        // A stuck bundle would hold this one behind its nonce: unstick it first.
        let _ = self.replace_stuck().await;
        let eth = Eth(&*self.rpc);
        let me = self.address().await.map_err(BundleError::Rejected)?;
        let data = handle_ops_call(ops, &me);
        // Simulation first: an operation the EntryPoint would refuse (bad signature,
        // unfunded paymaster) never costs the bundler gas. One operation: estimated (the
        // tightest limit). Several: the operations' own limits add up to the bundle's,
        // and one `eth_call` at that limit simulates it (an estimate's search would run
        // the whole bundle a dozen times).
        let gas_limit = if ops.len() == 1 {
            let estimate = eth
                .estimate_gas(&me, &self.entry_point, &data)
                .await
                .map_err(rejected_by_node)?;
            u128::from(estimate).saturating_mul(6) / 5 + 20_000
        } else {
            let limit = bundle_gas_limit(ops);
            eth.call_from(&me, &self.entry_point, &data, limit)
                .await
                .map_err(rejected_by_node)?;
            limit
        };
        let priority = eth.max_priority_fee().await.map_err(rejected_by_node)?;
        let price = eth.gas_price().await.map_err(rejected_by_node)?;
        let mut next = self.next_nonce.lock().await;
        let nonce = match *next {
            Some(n) => n,
            None => eth.pending_nonce(&me).await.map_err(rejected_by_node)?,
        };
        let tx = Eip1559Tx {
            chain_id: self.chain_id,
            nonce,
            max_priority_fee_per_gas: priority,
            max_fee_per_gas: price.saturating_mul(2).saturating_add(priority),
            gas_limit: gas_limit.try_into().unwrap_or(u64::MAX),
            to: self.entry_point,
            value: 0,
            data,
        };
        let signature = self
            .signer
            .sign(&self.key, Curve::Secp256k1, &tx.signing_hash())
            .await
            .map_err(|e| BundleError::Rejected(e.to_string()))?;
        let (raw, hash) = tx.signed(&signature.0).ok_or_else(|| {
            BundleError::Rejected("the signer returned a malformed signature".into())
        })?;
        match eth.send_raw(&raw).await {
            Ok(_) => {
                *next = Some(nonce + 1);
                drop(next);
                let max_fee = tx.max_fee_per_gas;
                self.inflight.lock().await.insert(
                    nonce,
                    InFlight {
                        tx,
                        hashes: vec![hash],
                        first_max_fee: max_fee,
                        last_sent: Instant::now(),
                        cancelled: false,
                    },
                );
                Ok(Some(hash))
            }
            Err(RpcError::Node { message, .. }) => {
                *next = None;
                Err(BundleError::Rejected(message))
            }
            Err(e) => {
                *next = None;
                Err(BundleError::Unknown {
                    tx_hash: Some(hash),
                    reason: e.to_string(),
                })
            }
        }
    }

    async fn account(&self) -> Option<EvmAddress> {
        self.address().await.ok()
    }

    async fn maintain(&self) {
        let _ = self.replace_stuck().await;
    }
}
