//! The bookkeeping a validator does and litesvm does not: slots and finality, the
//! signature statuses, the per-address signature index, each transaction's balances
//! before and after, the preflight of `sendTransaction` and the injected faults.

use super::{BLOCKHASH_VALIDITY_BLOCKS, SendFault};
use crate::solana::rpc::{
    RpcError, SignatureInfo, SignatureStatus, SignaturesQuery, TokenBalance, TransactionDetails,
    codes,
};
use crate::solana::{Commitment, codec};
use litesvm::LiteSVM;
use serde_json::{Value, json};
use solana_account::Account;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::Transaction;
use std::collections::{BTreeMap, HashMap, VecDeque};

#[derive(Clone, Debug)]
pub(super) struct TxRecord {
    pub(super) slot: u64,
    pub(super) err: Option<Value>,
    pub(super) fee: u64,
    pub(super) wire_signatures: Vec<Signature>,
    pub(super) num_required_signatures: u8,
    pub(super) num_readonly_signed: u8,
    pub(super) num_readonly_unsigned: u8,
    pub(super) recent_blockhash: Hash,
    pub(super) account_keys: Vec<Pubkey>,
    pub(super) pre_balances: Vec<u64>,
    pub(super) post_balances: Vec<u64>,
    pub(super) pre_token_balances: Vec<TokenBalance>,
    pub(super) post_token_balances: Vec<TokenBalance>,
    pub(super) logs: Vec<String>,
}

pub(super) struct State {
    pub(super) svm: LiteSVM,
    /// The slot the next transaction lands in (also the block height: no skipped slots).
    pub(super) slot: u64,
    pub(super) finality_lag: u64,
    pub(super) auto_advance: bool,
    pub(super) blockhash_issued_at: u64,
    pub(super) txs: HashMap<Signature, TxRecord>,
    pub(super) by_address: HashMap<Pubkey, Vec<Signature>>,
    pub(super) faults: VecDeque<SendFault>,
    pub(super) down: bool,
    pub(super) mint_authority: Keypair,
    pub(super) calls: BTreeMap<String, u64>,
    /// What `getRecentPrioritizationFees` answers, one fee per recent slot; `None`: the
    /// method fails (a node or provider without it).
    pub(super) priority_fees: Option<Vec<u64>>,
    /// The accounts of each `getRecentPrioritizationFees` call, in order.
    pub(super) fee_accounts_asked: Vec<Vec<Pubkey>>,
}

pub(super) fn tx_error_json(err: &solana_transaction_error::TransactionError) -> Value {
    serde_json::to_value(err).unwrap_or_else(|_| json!(format!("{err:?}")))
}

impl State {
    pub(super) fn finalized_slot(&self) -> u64 {
        self.slot.saturating_sub(self.finality_lag)
    }

    pub(super) fn slot_at(&self, c: Commitment) -> u64 {
        match c {
            Commitment::Finalized => self.finalized_slot(),
            _ => self.slot,
        }
    }

    pub(super) fn advance(&mut self, n: u64) {
        self.slot = self.slot.saturating_add(n);
        self.svm.warp_to_slot(self.slot);
        if self.slot > self.blockhash_issued_at + BLOCKHASH_VALIDITY_BLOCKS {
            self.svm.expire_blockhash();
            self.blockhash_issued_at = self.slot;
        }
    }

    pub(super) fn count(&mut self, method: &str) {
        *self.calls.entry(method.to_string()).or_default() += 1;
    }

    pub(super) fn decimals_of(&self, mint: &Pubkey) -> u8 {
        self.svm
            .get_account(mint)
            .and_then(|a| codec::parse_mint(&a.data).ok())
            .map(|m| m.decimals)
            .unwrap_or(0)
    }

    pub(super) fn token_balance_of(&self, index: usize, key: &Pubkey) -> Option<TokenBalance> {
        let acc = self.svm.get_account(key)?;
        if acc.owner != codec::TOKEN_PROGRAM_ID {
            return None;
        }
        let st = codec::parse_token_account(&acc.data).ok()?;
        Some(TokenBalance {
            account_index: index as u32,
            mint: st.mint,
            owner: Some(st.owner),
            amount: st.amount,
            decimals: self.decimals_of(&st.mint),
        })
    }

    pub(super) fn snapshot(&self, keys: &[Pubkey]) -> (Vec<u64>, Vec<TokenBalance>) {
        let lamports = keys
            .iter()
            .map(|k| self.svm.get_balance(k).unwrap_or(0))
            .collect();
        let tokens = keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| self.token_balance_of(i, k))
            .collect();
        (lamports, tokens)
    }

    pub(super) fn send(&mut self, wire: &[u8]) -> Result<Signature, RpcError> {
        self.count("sendTransaction");
        if self.down {
            return Err(RpcError::transport("connection refused (node down)"));
        }
        let tx: Transaction = wincode::deserialize(wire).map_err(|e| RpcError::Server {
            code: codes::INVALID_PARAMS,
            message: format!("failed to deserialize Transaction: {e}"),
            data: None,
        })?;
        let fault = self.faults.pop_front();
        if fault == Some(SendFault::Drop) {
            return Err(RpcError::transport(
                "connection reset before the node answered (injected drop)",
            ));
        }
        if fault == Some(SendFault::BlockhashNotFound) {
            return Err(RpcError::Server {
                code: codes::SEND_TRANSACTION_PREFLIGHT_FAILURE,
                message: "Transaction simulation failed: Blockhash not found".into(),
                data: Some(json!({"accounts": null, "err": "BlockhashNotFound", "logs": []})),
            });
        }
        let sig = *tx.signatures.first().ok_or_else(|| RpcError::Server {
            code: codes::INVALID_PARAMS,
            message: "transaction has no signature".into(),
            data: None,
        })?;
        if self.txs.contains_key(&sig) {
            return Err(RpcError::Server {
                code: codes::SEND_TRANSACTION_PREFLIGHT_FAILURE,
                message: "Transaction simulation failed: This transaction has already been \
                          processed"
                    .into(),
                data: Some(json!({"err": "AlreadyProcessed", "logs": [], "accounts": null})),
            });
        }
        // Preflight, as the validator does with skipPreflight=false.
        if fault != Some(SendFault::SkipPreflight)
            && let Err(f) = self.svm.simulate_transaction(tx.clone())
        {
            return Err(RpcError::Server {
                code: codes::SEND_TRANSACTION_PREFLIGHT_FAILURE,
                message: format!("Transaction simulation failed: {}", f.err),
                data: Some(json!({
                    "accounts": null,
                    "err": tx_error_json(&f.err),
                    "innerInstructions": null,
                    "logs": f.meta.logs,
                    "replacementBlockhash": null,
                    "returnData": null,
                    "unitsConsumed": f.meta.compute_units_consumed,
                })),
            });
        }
        if fault == Some(SendFault::Dropped) {
            // Accepted and answered, then lost on the way to the leader: it never lands.
            return Ok(sig);
        }
        let keys = tx.message.account_keys.clone();
        let (pre_balances, pre_token_balances) = self.snapshot(&keys);
        let result = self.svm.send_transaction(tx.clone());
        let (err, fee, logs) = match &result {
            Ok(meta) => (None, meta.fee, meta.logs.clone()),
            Err(f) => (Some(tx_error_json(&f.err)), f.meta.fee, f.meta.logs.clone()),
        };
        let (post_balances, post_token_balances) = self.snapshot(&keys);
        let record = TxRecord {
            slot: self.slot,
            err,
            fee,
            wire_signatures: tx.signatures.clone(),
            num_required_signatures: tx.message.header.num_required_signatures,
            num_readonly_signed: tx.message.header.num_readonly_signed_accounts,
            num_readonly_unsigned: tx.message.header.num_readonly_unsigned_accounts,
            recent_blockhash: tx.message.recent_blockhash,
            account_keys: keys.clone(),
            pre_balances,
            post_balances,
            pre_token_balances,
            post_token_balances,
            logs,
        };
        self.txs.insert(sig, record);
        for k in keys {
            self.by_address.entry(k).or_default().push(sig);
        }
        self.advance(1);
        if fault == Some(SendFault::LostResponse) {
            return Err(RpcError::transport(
                "response lost after the node accepted the transaction (injected)",
            ));
        }
        Ok(sig)
    }

    /// `getRecentPrioritizationFees`: one entry per configured fee, the newest at the
    /// current slot.
    pub(super) fn recent_prioritization_fees(
        &mut self,
        accounts: &[Pubkey],
    ) -> Result<Vec<(u64, u64)>, RpcError> {
        self.fee_accounts_asked.push(accounts.to_vec());
        let Some(fees) = &self.priority_fees else {
            return Err(RpcError::Server {
                code: -32601,
                message: "Method not found".into(),
                data: None,
            });
        };
        let n = fees.len() as u64;
        Ok(fees
            .iter()
            .enumerate()
            .map(|(i, f)| ((self.slot + 1 + i as u64).saturating_sub(n), *f))
            .collect())
    }

    pub(super) fn status_of(&self, sig: &Signature) -> Option<SignatureStatus> {
        let r = self.txs.get(sig)?;
        let confirmation_status = if r.slot <= self.finalized_slot() {
            Commitment::Finalized
        } else if r.slot < self.slot {
            Commitment::Confirmed
        } else {
            Commitment::Processed
        };
        Some(SignatureStatus {
            slot: r.slot,
            err: r.err.clone(),
            confirmation_status: Some(confirmation_status),
        })
    }

    pub(super) fn visible(&self, r: &TxRecord, c: Commitment) -> bool {
        c != Commitment::Finalized || r.slot <= self.finalized_slot()
    }

    pub(super) fn signatures_for(
        &self,
        address: &Pubkey,
        q: &SignaturesQuery,
        c: Commitment,
    ) -> Vec<SignatureInfo> {
        let Some(list) = self.by_address.get(address) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut started = q.before.is_none();
        for sig in list.iter().rev() {
            if !started {
                started = Some(*sig) == q.before;
                continue;
            }
            if Some(*sig) == q.until {
                break;
            }
            let Some(r) = self.txs.get(sig) else { continue };
            if !self.visible(r, c) {
                continue;
            }
            out.push(SignatureInfo {
                signature: *sig,
                slot: r.slot,
                err: r.err.clone(),
                memo: None,
                block_time: None,
            });
            if out.len() >= q.limit.clamp(1, 1000) {
                break;
            }
        }
        out
    }

    pub(super) fn transaction(
        &self,
        sig: &Signature,
        c: Commitment,
    ) -> Option<(&TxRecord, TransactionDetails)> {
        let r = self.txs.get(sig)?;
        if !self.visible(r, c) {
            return None;
        }
        Some((
            r,
            TransactionDetails {
                slot: r.slot,
                block_time: None,
                err: r.err.clone(),
                fee: r.fee,
                account_keys: r.account_keys.clone(),
                pre_balances: r.pre_balances.clone(),
                post_balances: r.post_balances.clone(),
                pre_token_balances: r.pre_token_balances.clone(),
                post_token_balances: r.post_token_balances.clone(),
            },
        ))
    }

    pub(super) fn token_account_balance(
        &self,
        address: &Pubkey,
    ) -> Result<Option<(u64, u8)>, RpcError> {
        let Some(acc) = self.svm.get_account(address) else {
            return Ok(None);
        };
        if acc.lamports == 0 {
            return Ok(None);
        }
        let st = codec::parse_token_account(&acc.data).map_err(|_| RpcError::Server {
            code: codes::INVALID_PARAMS,
            message: "Invalid param: not a Token account".into(),
            data: None,
        })?;
        Ok(Some((st.amount, self.decimals_of(&st.mint))))
    }

    pub(super) fn account(&self, address: &Pubkey) -> Option<Account> {
        self.svm.get_account(address).filter(|a| a.lamports > 0)
    }
}
