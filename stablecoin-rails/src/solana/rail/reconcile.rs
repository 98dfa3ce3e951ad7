//! Where a signed transaction stands: seen by the node, possibly still landing, or dead
//! (its blockhash expired unseen); broadcasting signed bytes and waiting for finality.

use super::{read_err, rejected};
use crate::solana::rpc::{RpcError, SignatureStatus, codes};
use crate::solana::{Commitment, SignedTransaction, SolanaRail, codec};
use solana_signature::Signature;
use stablecoin_core::ports::RailError;
use std::time::Duration;

/// Outcome of looking up a journaled signature.
pub(super) enum Reconciled {
    Landed(SignatureStatus),
    /// Not seen yet, blockhash still valid: it may still land.
    InFlight,
    /// Not seen and its blockhash expired: it can never land.
    Expired,
}

impl SolanaRail {
    async fn signature_status(
        &self,
        sig: &Signature,
    ) -> Result<Option<SignatureStatus>, RailError> {
        let mut v = self
            .rpc
            .get_signature_statuses(std::slice::from_ref(sig))
            .await
            .map_err(read_err)?;
        Ok(v.pop().flatten())
    }

    /// Where a signed transaction stands: seen by the node, possibly still landing, or
    /// dead (blockhash expired at `finalized` and still not seen).
    pub(super) async fn reconcile(
        &self,
        sig: &Signature,
        last_valid: u64,
    ) -> Result<Reconciled, RailError> {
        if let Some(s) = self.signature_status(sig).await? {
            return Ok(Reconciled::Landed(s));
        }
        let height = self
            .rpc
            .get_block_height(Commitment::Finalized)
            .await
            .map_err(read_err)?;
        if height <= last_valid {
            return Ok(Reconciled::InFlight);
        }
        // It may have landed between the two calls: look once more after the expiry.
        match self.signature_status(sig).await? {
            Some(s) => Ok(Reconciled::Landed(s)),
            None => Ok(Reconciled::Expired),
        }
    }

    /// Sends signed bytes. `Ok(true)`: the node accepted it; `Err(Rejected)`: the node
    /// refused it (never broadcast); `Err(Unknown)`: the outcome is unknown.
    pub(super) async fn broadcast(
        &self,
        wire: &[u8],
        expected: &Signature,
    ) -> Result<(), RailError> {
        match self.rpc.send_transaction(wire).await {
            Ok(sig) if &sig == expected => Ok(()),
            Ok(sig) => Err(RailError::Unknown {
                reason: format!("node answered signature {sig}, expected {expected}"),
            }),
            Err(e @ RpcError::Server { code, .. })
                if code == codes::SEND_TRANSACTION_PREFLIGHT_FAILURE
                    || code == codes::TRANSACTION_SIGNATURE_VERIFICATION_FAILURE =>
            {
                let reason = match e.preflight_err() {
                    Some(err) => format!(
                        "refused by the node's preflight: {}",
                        codec::describe_transaction_error(err)
                    ),
                    None => format!("refused by the node: {e}"),
                };
                Err(rejected(reason))
            }
            Err(e) => Err(RailError::Unknown {
                reason: format!("sendTransaction: {e}"),
            }),
        }
    }

    /// Polls until the transaction is finalized (`Ok(true)`), or expired unseen
    /// (`Ok(false)`). A finalized failure is `Rejected`; the deadline is `Unknown`.
    pub(super) async fn wait_finalized(
        &self,
        signed: &SignedTransaction,
    ) -> Result<bool, RailError> {
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(self.config.finality_timeout_ms);
        loop {
            match self
                .reconcile(&signed.signature, signed.last_valid_block_height)
                .await?
            {
                Reconciled::Landed(s) => {
                    if let Some(err) = &s.err {
                        if s.is_finalized() {
                            return Err(rejected(format!(
                                "transaction {} failed: {}",
                                signed.signature,
                                codec::describe_transaction_error(err)
                            )));
                        }
                    } else if s.is_finalized() {
                        return Ok(true);
                    }
                }
                Reconciled::InFlight => {
                    // Same bytes, same signature: a rebroadcast can never pay twice.
                    let _ = self.rpc.send_transaction(&signed.wire).await;
                }
                Reconciled::Expired => return Ok(false),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(RailError::Unknown {
                    reason: format!(
                        "transaction {} not finalized within {} ms",
                        signed.signature, self.config.finality_timeout_ms
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(self.config.poll_interval_ms)).await;
        }
    }
}
