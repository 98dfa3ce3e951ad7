//! Many user operations per bundle. Every payment goes through the same two steps:
//! [`EvmRail::prepare`] (already journaled or on chain? else build, sponsor, sign and
//! journal it write-ahead) and [`EvmRail::dispatch`] (one `handleOps` for every prepared
//! operation). A single payment is a batch of one ([`EvmRail::submit_calls`]); the
//! worker's batch of due payments ([`Rail::submit_batch`]) packs the operations of many
//! accounts into bundles, up to [`EvmConfig::max_ops_per_bundle`] operations and
//! [`EvmConfig::max_bundle_gas`] gas each.
//!
//! A bundle is all or nothing at the EntryPoint: one operation that fails validation
//! makes `handleOps` revert, so the bundler's simulation refuses the whole bundle. The
//! rail then sends each of its operations alone, so a failing operation is isolated and
//! refused on its own and never fails its neighbours. Every operation keeps its own
//! journal entry and user-operation hash, and reports the real bundle `tx_hash`.

use super::super::bundler::BundleError;
use super::super::rpc::{RpcError, hex0x};
use super::super::userop::{Call, Nonce, UserOp};
use super::{EvmRail, SALT, Submitted, operations, parse_address, rejected, unavailable};
use crate::evm::abi::{self, Abi};
use crate::evm::address::EvmAddress;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, RailError, RailPayment, Submission};

/// One operation to send: what [`EvmRail::submit_calls`] takes.
pub(super) struct Order<'a> {
    pub id: &'a str,
    pub from: &'a KeyPurpose,
    pub from_address: &'a ChainAddress,
    pub calls: &'a [Call],
    pub call_gas: u128,
    pub valid_until: Option<Timestamp>,
}

/// An operation built, signed and journaled, waiting for its bundle.
pub(super) struct Ready {
    id: String,
    op: UserOp,
    record: Submitted,
    deploys: bool,
    /// The gas its limits add up to (for packing).
    gas: u128,
}

/// What [`EvmRail::prepare`] found.
pub(super) enum Prepared {
    /// Already on its way or on chain (journaled, or its nonce key used in an earlier
    /// life of the process): its submission, nothing to send.
    Done(Submission),
    /// To be sent.
    Ready(Box<Ready>),
}

impl EvmRail {
    /// The submission of a payment id already journaled (not refused): what a second
    /// submit of it answers.
    pub(super) async fn journaled(&self, id: &str) -> Result<Option<Submission>, RailError> {
        Ok(self
            .lookup(id)
            .await?
            .filter(|s| !s.rejected)
            .map(|s| Submission {
                payment_id: id.to_string(),
                tx_hash: s.tx_hash.map(|h| hex0x(&h)),
            }))
    }

    /// Step one of a send (the caller holds `send_lock`): the order's submission if it is
    /// already out, else its operation built, sponsored, signed and journaled.
    pub(super) async fn prepare(&self, o: &Order<'_>) -> Result<Prepared, RailError> {
        if o.calls.is_empty() {
            return Err(rejected("an operation needs at least one call"));
        }
        if let Some(done) = self.journaled(o.id).await? {
            return Ok(Prepared::Done(done));
        }
        let owner = self.owner_of(o.from).await?;
        let sender = self.factory.account_address(&owner, SALT);
        if parse_address(o.from_address)? != sender {
            return Err(rejected(format!(
                "from_address {} is not the account of {} ({sender})",
                o.from_address, o.from
            )));
        }
        // The payment's nonce key already used: it went out in an earlier life of this
        // process. Find it rather than send anything.
        let key = Nonce::key_for(o.id);
        if self.nonce_used(&sender, key).await? {
            let nonce = Nonce { key, seq: 0 }.word();
            let found = self
                .find_event_by_nonce(&sender, &nonce)
                .await?
                .ok_or_else(|| RailError::Unknown {
                    reason:
                        "the payment's nonce key is used but its UserOperationEvent was not found"
                            .into(),
                })?;
            self.remember(
                o.id,
                Submitted {
                    sender,
                    user_op_hash: found.topics[1],
                    tx_hash: Some(found.tx_hash),
                    from_block: found.block,
                    rejected: false,
                    sent: true,
                    valid_until: None,
                    op: None,
                },
            )
            .await?;
            return Ok(Prepared::Done(Submission {
                payment_id: o.id.to_string(),
                tx_hash: Some(hex0x(&found.tx_hash)),
            }));
        }
        let mut op = self.build(o.id, o.calls, o.call_gas, sender, owner).await?;
        let valid_until = operations::valid_until_secs(o.valid_until);
        let user_op_hash = self.sponsor_and_sign(&mut op, o.from, valid_until).await?;
        let from_block = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        let record = Submitted {
            sender,
            user_op_hash,
            tx_hash: None,
            from_block,
            rejected: false,
            sent: false,
            valid_until: (valid_until > 0).then_some(valid_until),
            op: self.bundler.accepts_before_bundling().then(|| op.clone()),
        };
        // Write-ahead: if the journal cannot take it, nothing is sent.
        self.remember(o.id, record.clone()).await?;
        let deploys = !op.init_code.is_empty();
        if deploys && let Ok(mut d) = self.deploying.lock() {
            // The account's next operations (in this batch too) go without `initCode`:
            // this one deploys it. Forgotten again if its bundle is refused.
            d.insert(sender);
        }
        Ok(Prepared::Ready(Box::new(Ready {
            id: o.id.to_string(),
            deploys,
            gas: op.call_gas_limit
                + op.verification_gas_limit
                + op.pre_verification_gas
                + self.config.gas.paymaster_verification_gas,
            op,
            record,
        })))
    }

    /// Whether `sender`'s nonce key `key` has been used (`getNonce` answers
    /// `key << 64 | sequence`).
    async fn nonce_used(&self, sender: &EvmAddress, key: [u8; 24]) -> Result<bool, RailError> {
        let mut key_word = [0u8; 32];
        key_word[8..].copy_from_slice(&key);
        let nonce_word = self
            .eth()
            .call(
                &self.config.entry_point,
                &abi::call(
                    "getNonce(address,uint192)",
                    &[Abi::address(&sender.0), Abi::Word(key_word)],
                ),
            )
            .await
            .map_err(|e| unavailable("getNonce", e))?;
        let seq = abi::word(&nonce_word, 0)
            .map(|w| u64::from_be_bytes(w[24..].try_into().unwrap_or([0; 8])))
            .ok_or_else(|| {
                unavailable(
                    "getNonce",
                    RpcError::Decode {
                        method: "eth_call".into(),
                        detail: "getNonce answered no word".into(),
                    },
                )
            })?;
        Ok(seq > 0)
    }

    /// Step two: the prepared operations on chain, as few bundles as the limits allow;
    /// one answer per operation, in order. A refused bundle of several is sent again one
    /// operation per bundle, so only the failing one is refused.
    pub(super) async fn dispatch(&self, ready: Vec<Ready>) -> Vec<Result<Submission, RailError>> {
        let ids: Vec<String> = ready.iter().map(|r| r.id.clone()).collect();
        let mut answers: std::collections::HashMap<String, Result<Submission, RailError>> =
            std::collections::HashMap::new();
        for chunk in self.pack(ready) {
            let mut chunk = chunk;
            while !chunk.is_empty() {
                if chunk.len() == 1 {
                    for (id, a) in self.send_bundle(chunk).await {
                        answers.insert(id, a);
                    }
                    break;
                }
                let ops: Vec<UserOp> = chunk.iter().map(|r| r.op.clone()).collect();
                match self.bundler.send(&ops).await {
                    // One operation fails validation: it is sent alone (its own
                    // definitive answer), the others again without it.
                    Err(BundleError::OpRejected { index, .. }) if index < chunk.len() => {
                        let bad = chunk.remove(index);
                        for (id, a) in self.send_bundle(vec![bad]).await {
                            answers.insert(id, a);
                        }
                    }
                    // Refused without naming an operation: each alone.
                    Err(BundleError::Rejected(_)) | Err(BundleError::OpRejected { .. }) => {
                        for r in chunk.drain(..) {
                            for (id, a) in self.send_bundle(vec![r]).await {
                                answers.insert(id, a);
                            }
                        }
                    }
                    result => {
                        for (id, a) in self.settle_sent(std::mem::take(&mut chunk), result).await {
                            answers.insert(id, a);
                        }
                    }
                }
            }
        }
        ids.into_iter()
            .map(|id| {
                answers
                    .remove(&id)
                    .unwrap_or_else(|| Err(rejected("not dispatched")))
            })
            .collect()
    }

    /// One bundle of `chunk`, and each operation's answer.
    async fn send_bundle(&self, chunk: Vec<Ready>) -> Vec<(String, Result<Submission, RailError>)> {
        let ops: Vec<UserOp> = chunk.iter().map(|r| r.op.clone()).collect();
        let result = self.bundler.send(&ops).await;
        self.settle_sent(chunk, result).await
    }

    /// Records a bundle's outcome in every operation's journal entry and answers for each.
    async fn settle_sent(
        &self,
        chunk: Vec<Ready>,
        result: Result<Option<[u8; 32]>, BundleError>,
    ) -> Vec<(String, Result<Submission, RailError>)> {
        let mut out = Vec::with_capacity(chunk.len());
        for r in chunk {
            let Ready {
                id,
                mut record,
                deploys,
                ..
            } = r;
            let answer = match &result {
                Ok(tx) => {
                    // `None` from an external bundler: accepted, its bundle comes later.
                    record.tx_hash = *tx;
                    record.sent = true;
                    Ok(Submission {
                        payment_id: id.clone(),
                        tx_hash: tx.map(|t| hex0x(&t)),
                    })
                }
                Err(BundleError::Rejected(reason))
                | Err(BundleError::OpRejected { reason, .. }) => {
                    // Definitely not sent: a later submit of this id may build it again.
                    record.rejected = true;
                    Err(rejected(reason.clone()))
                }
                Err(BundleError::Unknown { tx_hash, reason }) => {
                    // An external bundler may hold it though its answer was lost: it is
                    // reconciled by its hash (the bundler's receipt, the EntryPoint's log).
                    record.sent = tx_hash.is_none() && self.bundler.accepts_before_bundling();
                    record.tx_hash = *tx_hash;
                    Err(RailError::Unknown {
                        reason: reason.clone(),
                    })
                }
            };
            // Best effort: the entry already written finds the operation by its hash
            // even without the bundle's.
            let _ = self.remember(&id, record.clone()).await;
            if record.rejected
                && deploys
                && let Ok(mut d) = self.deploying.lock()
            {
                // Never sent: the account is still to be deployed by a later operation.
                d.remove(&record.sender);
            }
            out.push((id, answer));
        }
        out
    }

    /// Splits prepared operations into bundles within the chain's limits, in order. One
    /// account's operations may share a bundle: each has its own nonce key, so the
    /// EntryPoint takes them in any order. An account deployed by one of them is
    /// deployed by that one only (the others were built against its `initCode` already
    /// being sent), so it goes in the first bundle with its deploying operation.
    fn pack(&self, ready: Vec<Ready>) -> Vec<Vec<Ready>> {
        let max_ops = self.config.max_ops_per_bundle.max(1);
        let max_gas = self.config.max_bundle_gas;
        let mut out: Vec<Vec<Ready>> = Vec::new();
        let mut gas = 0u128;
        for r in ready {
            let g = r.gas;
            let fits = out
                .last()
                .is_some_and(|b| b.len() < max_ops && gas.saturating_add(g) <= max_gas);
            if fits {
                gas += g;
                if let Some(b) = out.last_mut() {
                    b.push(r);
                }
            } else {
                gas = g;
                out.push(vec![r]);
            }
        }
        out
    }

    /// [`Rail::submit_batch`](stablecoin_core::ports::Rail::submit_batch) of this rail:
    /// every payment prepared (in order, under the send lock), then bundled together.
    pub(super) async fn submit_payments(
        &self,
        payments: &[RailPayment],
    ) -> Vec<Result<Submission, RailError>> {
        let mut answers: Vec<Option<Result<Submission, RailError>>> =
            (0..payments.len()).map(|_| None).collect();
        let _serial = self.send_lock.lock().await;
        // Prepared side by side (each is a few node round trips), except that one
        // account's payments go in order: its first one carries the deploying `initCode`,
        // which the next ones must then leave out.
        let mut by_sender: Vec<(&KeyPurpose, Vec<usize>)> = Vec::new();
        for (i, p) in payments.iter().enumerate() {
            match by_sender.iter_mut().find(|(k, _)| *k == &p.from) {
                Some((_, v)) => v.push(i),
                None => by_sender.push((&p.from, vec![i])),
            }
        }
        let prepared =
            futures_util::future::join_all(by_sender.into_iter().map(|(_, indexes)| async move {
                let mut out = Vec::with_capacity(indexes.len());
                for i in indexes {
                    let p = &payments[i];
                    let r = match self.transfer_calls(p) {
                        Ok((calls, call_gas)) => {
                            self.prepare(&Order {
                                id: &p.id,
                                from: &p.from,
                                from_address: &p.from_address,
                                calls: &calls,
                                call_gas,
                                valid_until: p.valid_until,
                            })
                            .await
                        }
                        Err(e) => Err(e),
                    };
                    out.push((i, r));
                }
                out
            }))
            .await;
        let mut prepared: Vec<(usize, Result<Prepared, RailError>)> =
            prepared.into_iter().flatten().collect();
        prepared.sort_by_key(|(i, _)| *i);
        let mut ready = Vec::new();
        let mut slots = Vec::new();
        for (i, r) in prepared {
            match r {
                Ok(Prepared::Done(s)) => answers[i] = Some(Ok(s)),
                Ok(Prepared::Ready(r)) => {
                    slots.push(i);
                    ready.push(*r);
                }
                Err(e) => answers[i] = Some(Err(e)),
            }
        }
        for (i, a) in slots.into_iter().zip(self.dispatch(ready).await) {
            answers[i] = Some(a);
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(rejected("not dispatched"))))
            .collect()
    }
}
