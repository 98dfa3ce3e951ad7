//! Coalesced chain reads for [`EvmRail::status`]. A worker polls hundreds of payments at
//! once, and with multi-op bundles many of them share one bundle transaction: asking the
//! node for the head and for that receipt once per payment is most of a poll's cost.
//! - The head is read single-flight: a poll that arrives while a read is in flight waits
//!   for it and takes its answer (older than the question by less than one round trip);
//!   a poll that arrives when none is in flight reads anew. Concurrent polls share one
//!   read; a later poll never gets an earlier poll's head.
//! - A bundle's receipt is read single-flight too, per transaction: the polls of a
//!   32-operation bundle share one `eth_getTransactionReceipt` (a large answer, one log
//!   set per operation) instead of racing 32 of them. A mined receipt is then reused for
//!   [`RECEIPT_TTL`]: a receipt changes only with a reorg, which the confirmation depth
//!   is there to outlast (the head it is judged against is never reused). A receipt not
//!   yet mined is reused only by polls that asked before it answered.

use super::super::rpc::Receipt;
use super::{EvmRail, unavailable};
use stablecoin_core::ports::RailError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a mined receipt is reused.
const RECEIPT_TTL: Duration = Duration::from_secs(1);
/// Receipts kept at most; the cache starts over beyond it.
const RECEIPTS_MAX: usize = 4_096;

/// The reads [`EvmRail::status`] shares between concurrent polls.
#[derive(Default)]
pub(super) struct ReadCache {
    /// The last head read and when its answer arrived.
    head: tokio::sync::Mutex<Option<(Instant, u64)>>,
    receipts: Mutex<HashMap<[u8; 32], Arc<ReceiptSlot>>>,
}

/// One bundle transaction's last receipt read: when it answered, and what.
type ReceiptSlot = tokio::sync::Mutex<Option<(Instant, Option<Receipt>)>>;

impl EvmRail {
    /// The head block number, from a read that answered after this call began.
    pub(super) async fn head_block(&self) -> Result<u64, RailError> {
        let asked = Instant::now();
        let mut h = self.reads.head.lock().await;
        if let Some((answered_at, n)) = *h
            && answered_at >= asked
        {
            return Ok(n);
        }
        let n = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        *h = Some((Instant::now(), n));
        Ok(n)
    }

    /// The receipt of a bundle transaction: from a read that answered after this call
    /// began, or a mined one read less than [`RECEIPT_TTL`] ago.
    pub(super) async fn bundle_receipt(&self, tx: &[u8; 32]) -> Result<Option<Receipt>, RailError> {
        let asked = Instant::now();
        let slot = {
            let Ok(mut m) = self.reads.receipts.lock() else {
                return self.read_receipt(tx).await;
            };
            if m.len() >= RECEIPTS_MAX {
                m.retain(|_, s| Arc::strong_count(s) > 1);
            }
            m.entry(*tx).or_default().clone()
        };
        let mut last = slot.lock().await;
        if let Some((answered_at, receipt)) = &*last {
            let fresh = match receipt {
                Some(_) => answered_at.elapsed() < RECEIPT_TTL,
                None => *answered_at >= asked,
            };
            if fresh {
                return Ok(receipt.clone());
            }
        }
        let receipt = self.read_receipt(tx).await?;
        *last = Some((Instant::now(), receipt.clone()));
        Ok(receipt)
    }

    async fn read_receipt(&self, tx: &[u8; 32]) -> Result<Option<Receipt>, RailError> {
        self.eth()
            .receipt(tx)
            .await
            .map_err(|e| unavailable("eth_getTransactionReceipt", e))
    }
}
