//! Test support (feature `solana-test`, never for production): [`LiteSvmRpc`], a
//! [`SolanaRpc`] running the real SPL Token and Associated Token Account programs in
//! process on litesvm, and [`server`], a JSON-RPC server over it with the validator's
//! JSON shapes, for tests of [`JsonRpcClient`](super::JsonRpcClient) end to end.
//!
//! What litesvm runs is real: signature verification, the fee payer's fee, the ATA
//! program's rent-exempt account creation, SPL `TransferChecked` with its balance, owner
//! and decimals checks. What this module adds around it is bookkeeping a validator does
//! and litesvm does not: slots (one per transaction), a finality lag, signature
//! statuses, the per-address signature index and the pre/post balances of each
//! transaction, the preflight simulation of `sendTransaction`, blockhash validity
//! (litesvm accepts only its latest blockhash: it is rotated when the emulated
//! `lastValidBlockHeight` passes) and injected transport faults.

pub mod server;

use super::codec;
use super::rpc::{
    AccountInfo, Commitment, LatestBlockhash, RpcError, SignatureInfo, SignatureStatus,
    SignaturesQuery, SolanaRpc, TokenBalance, TransactionDetails, codes,
};
use async_trait::async_trait;
use litesvm::LiteSVM;
use serde_json::{Value, json};
use solana_account::Account;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_program_pack::Pack;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer as _;
use solana_transaction::Transaction;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// Blocks a blockhash stays valid for (the validator's `MAX_PROCESSING_AGE`).
pub const BLOCKHASH_VALIDITY_BLOCKS: u64 = 150;

/// A fault injected into the next `sendTransaction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendFault {
    /// The connection fails before the node sees the transaction: nothing lands, the
    /// caller gets a transport error.
    Drop,
    /// The transaction is processed, but the response is lost: a transport error.
    LostResponse,
    /// A node behind the cluster: preflight answers `BlockhashNotFound`, nothing lands.
    BlockhashNotFound,
}

#[derive(Clone, Debug)]
struct TxRecord {
    slot: u64,
    err: Option<Value>,
    fee: u64,
    wire_signatures: Vec<Signature>,
    num_required_signatures: u8,
    num_readonly_signed: u8,
    num_readonly_unsigned: u8,
    recent_blockhash: Hash,
    account_keys: Vec<Pubkey>,
    pre_balances: Vec<u64>,
    post_balances: Vec<u64>,
    pre_token_balances: Vec<TokenBalance>,
    post_token_balances: Vec<TokenBalance>,
    logs: Vec<String>,
}

struct State {
    svm: LiteSVM,
    /// The slot the next transaction lands in (also the block height: no skipped slots).
    slot: u64,
    finality_lag: u64,
    auto_advance: bool,
    blockhash_issued_at: u64,
    txs: HashMap<Signature, TxRecord>,
    by_address: HashMap<Pubkey, Vec<Signature>>,
    faults: VecDeque<SendFault>,
    down: bool,
    mint_authority: Keypair,
    calls: BTreeMap<String, u64>,
}

/// An in-process validator stand-in over litesvm (see the module docs).
pub struct LiteSvmRpc {
    state: Mutex<State>,
}

impl std::fmt::Debug for LiteSvmRpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("LiteSvmRpc")
            .field("slot", &s.slot)
            .field("finality_lag", &s.finality_lag)
            .field("transactions", &s.txs.len())
            .finish_non_exhaustive()
    }
}

impl Default for LiteSvmRpc {
    fn default() -> Self {
        Self::new()
    }
}

fn tx_error_json(err: &solana_transaction_error::TransactionError) -> Value {
    serde_json::to_value(err).unwrap_or_else(|_| json!(format!("{err:?}")))
}

impl State {
    fn finalized_slot(&self) -> u64 {
        self.slot.saturating_sub(self.finality_lag)
    }

    fn slot_at(&self, c: Commitment) -> u64 {
        match c {
            Commitment::Finalized => self.finalized_slot(),
            _ => self.slot,
        }
    }

    fn advance(&mut self, n: u64) {
        self.slot = self.slot.saturating_add(n);
        self.svm.warp_to_slot(self.slot);
        if self.slot > self.blockhash_issued_at + BLOCKHASH_VALIDITY_BLOCKS {
            self.svm.expire_blockhash();
            self.blockhash_issued_at = self.slot;
        }
    }

    fn count(&mut self, method: &str) {
        *self.calls.entry(method.to_string()).or_default() += 1;
    }

    fn decimals_of(&self, mint: &Pubkey) -> u8 {
        self.svm
            .get_account(mint)
            .and_then(|a| codec::parse_mint(&a.data).ok())
            .map(|m| m.decimals)
            .unwrap_or(0)
    }

    fn token_balance_of(&self, index: usize, key: &Pubkey) -> Option<TokenBalance> {
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

    fn snapshot(&self, keys: &[Pubkey]) -> (Vec<u64>, Vec<TokenBalance>) {
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

    fn send(&mut self, wire: &[u8]) -> Result<Signature, RpcError> {
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
        if let Err(f) = self.svm.simulate_transaction(tx.clone()) {
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

    fn status_of(&self, sig: &Signature) -> Option<SignatureStatus> {
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

    fn visible(&self, r: &TxRecord, c: Commitment) -> bool {
        c != Commitment::Finalized || r.slot <= self.finalized_slot()
    }

    fn signatures_for(
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

    fn transaction(
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

    fn token_account_balance(&self, address: &Pubkey) -> Result<Option<(u64, u8)>, RpcError> {
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

    fn account(&self, address: &Pubkey) -> Option<Account> {
        self.svm.get_account(address).filter(|a| a.lamports > 0)
    }
}

impl LiteSvmRpc {
    /// A fresh litesvm (SPL Token, ATA, System preloaded) at slot 1, with a finality lag
    /// of 2 slots and one slot of progress per `getSignatureStatuses` call (so pollers
    /// see `processed` -> `confirmed` -> `finalized`).
    pub fn new() -> Self {
        let mut svm = LiteSVM::new();
        let mint_authority = Keypair::new();
        let _ = svm.airdrop(&mint_authority.pubkey(), 1_000_000_000_000);
        svm.warp_to_slot(1);
        LiteSvmRpc {
            state: Mutex::new(State {
                svm,
                slot: 1,
                finality_lag: 2,
                auto_advance: true,
                blockhash_issued_at: 1,
                txs: HashMap::new(),
                by_address: HashMap::new(),
                faults: VecDeque::new(),
                down: false,
                mint_authority,
                calls: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Slots between a transaction's slot and its finalization.
    pub fn set_finality_lag(&self, slots: u64) {
        self.lock().finality_lag = slots;
    }

    /// Whether each `getSignatureStatuses` call advances one slot.
    pub fn set_auto_advance(&self, on: bool) {
        self.lock().auto_advance = on;
    }

    /// Advances `n` slots (rotating the blockhash when its validity runs out).
    pub fn advance_slots(&self, n: u64) {
        self.lock().advance(n);
    }

    /// Expires the current blockhash: the block height moves past its
    /// `lastValidBlockHeight`, and litesvm refuses it from now on.
    pub fn expire_blockhash(&self) {
        let mut s = self.lock();
        let n = BLOCKHASH_VALIDITY_BLOCKS + 1;
        s.advance(n);
        if s.blockhash_issued_at != s.slot {
            s.svm.expire_blockhash();
            s.blockhash_issued_at = s.slot;
        }
    }

    /// Sets the blockhash transactions must use (for instance a fixture's), valid for
    /// [`BLOCKHASH_VALIDITY_BLOCKS`] from now.
    pub fn set_latest_blockhash(&self, hash: Hash) {
        let mut s = self.lock();
        s.svm.set_latest_blockhash(hash);
        s.blockhash_issued_at = s.slot;
    }

    /// Queues a fault for the next `sendTransaction`.
    pub fn inject(&self, fault: SendFault) {
        self.lock().faults.push_back(fault);
    }

    /// While down, every call fails with a transport error.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    /// How many times `method` (JSON-RPC name) was called.
    pub fn calls(&self, method: &str) -> u64 {
        self.lock().calls.get(method).copied().unwrap_or(0)
    }

    /// How many transactions were processed (landed, successful or failed).
    pub fn transaction_count(&self) -> usize {
        self.lock().txs.len()
    }

    /// Credits lamports (litesvm airdrop; not indexed as a transaction).
    pub fn airdrop(&self, to: &Pubkey, lamports: u64) {
        let _ = self.lock().svm.airdrop(to, lamports);
    }

    /// Sets the lamports of an account (a system account when missing), as a test's
    /// genesis would: drains a fee payer below a threshold, or refills it.
    pub fn set_lamports(&self, address: &Pubkey, lamports: u64) {
        let mut s = self.lock();
        let mut account = s.svm.get_account(address).unwrap_or(Account {
            lamports: 0,
            data: vec![],
            owner: codec::SYSTEM_PROGRAM_ID,
            executable: false,
            rent_epoch: 0,
        });
        account.lamports = lamports;
        s.svm
            .set_account(*address, account)
            .expect("set account lamports");
    }

    /// Lamports of an account (0 when missing).
    pub fn lamports(&self, address: &Pubkey) -> u64 {
        self.lock().svm.get_balance(address).unwrap_or(0)
    }

    /// A raw account.
    pub fn account(&self, address: &Pubkey) -> Option<Account> {
        self.lock().account(address)
    }

    /// A token account's amount (None when missing).
    pub fn token_amount(&self, address: &Pubkey) -> Option<u64> {
        self.lock()
            .token_account_balance(address)
            .ok()
            .flatten()
            .map(|(a, _)| a)
    }

    /// The authority of mints created by [`create_mint`](Self::create_mint).
    pub fn mint_authority(&self) -> Pubkey {
        self.lock().mint_authority.pubkey()
    }

    /// Places an initialized SPL mint at `address` (for instance the real USDC mint
    /// address) with this kit's mint authority.
    pub fn create_mint(&self, address: &Pubkey, decimals: u8) {
        let mut s = self.lock();
        let mint = spl_token_interface::state::Mint {
            mint_authority: Some(s.mint_authority.pubkey()).into(),
            supply: 0,
            decimals,
            is_initialized: true,
            freeze_authority: None.into(),
        };
        let mut data = vec![0u8; codec::MINT_LEN];
        mint.pack_into_slice(&mut data);
        let lamports = s.svm.minimum_balance_for_rent_exemption(codec::MINT_LEN);
        s.svm
            .set_account(
                *address,
                Account {
                    lamports,
                    data,
                    owner: codec::TOKEN_PROGRAM_ID,
                    executable: false,
                    rent_epoch: 0,
                },
            )
            .expect("set mint account");
    }

    /// Mints `amount` base units to the ATA of `owner` (creating it, the mint authority
    /// paying) in a real transaction, indexed like any other: scanners see it as a
    /// deposit from the mint.
    pub fn mint_to(
        &self,
        owner: &Pubkey,
        mint: &Pubkey,
        amount: u64,
    ) -> Result<Signature, RpcError> {
        let mut s = self.lock();
        let authority = s.mint_authority.insecure_clone();
        let decimals = s.decimals_of(mint);
        let tp = codec::TOKEN_PROGRAM_ID;
        let ata = codec::associated_token_address(owner, mint, &tp);
        let ixs = vec![
            codec::create_ata_idempotent(&authority.pubkey(), owner, mint, &tp),
            spl_token_interface::instruction::mint_to_checked(
                &tp,
                mint,
                &ata,
                &authority.pubkey(),
                &[],
                amount,
                decimals,
            )
            .map_err(|e| RpcError::decode(e.to_string()))?,
        ];
        let message = codec::compile_message(&ixs, &authority.pubkey(), s.svm.latest_blockhash());
        let bytes = codec::message_bytes(&message);
        let sig: [u8; 64] = authority.sign_message(&bytes).into();
        let wire = codec::encode_transaction(&[sig], &bytes)
            .map_err(|e| RpcError::decode(e.to_string()))?;
        s.send(&wire)
    }

    /// Answers one JSON-RPC call with the validator's JSON shapes (used by [`server`]).
    pub fn handle_json(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let mut s = self.lock();
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        let p = |i: usize| params.get(i);
        let cfg_commitment = |i: usize| {
            params
                .get(i)
                .and_then(|c| c.get("commitment"))
                .and_then(Value::as_str)
                .and_then(Commitment::parse)
                .unwrap_or(Commitment::Finalized)
        };
        let invalid = |m: &str| RpcError::Server {
            code: codes::INVALID_PARAMS,
            message: format!("Invalid params: {m}"),
            data: None,
        };
        let pubkey_param = |i: usize| -> Result<Pubkey, RpcError> {
            let t = p(i)
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("missing address"))?;
            t.parse::<Pubkey>().map_err(|_| RpcError::Server {
                code: codes::INVALID_PARAMS,
                message: "Invalid param: Invalid".into(),
                data: None,
            })
        };
        let sig_of = |v: &Value| -> Result<Signature, RpcError> {
            v.as_str()
                .and_then(|t| t.parse::<Signature>().ok())
                .ok_or_else(|| invalid("bad signature"))
        };
        let context = |slot: u64, value: Value| json!({"context": {"apiVersion": "2.2.0", "slot": slot}, "value": value});
        s.count(method);
        match method {
            "getHealth" => Ok(json!("ok")),
            "getVersion" => Ok(json!({"solana-core": "2.2.0-litesvm", "feature-set": 0})),
            "getLatestBlockhash" => {
                let c = cfg_commitment(0);
                let slot = s.slot_at(c);
                let value = json!({
                    "blockhash": s.svm.latest_blockhash().to_string(),
                    "lastValidBlockHeight": s.blockhash_issued_at + BLOCKHASH_VALIDITY_BLOCKS,
                });
                Ok(context(slot, value))
            }
            "getBlockHeight" | "getSlot" => Ok(json!(s.slot_at(cfg_commitment(0)))),
            "getMinimumBalanceForRentExemption" => {
                let len = p(0)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| invalid("data length"))?;
                Ok(json!(
                    s.svm.minimum_balance_for_rent_exemption(len as usize)
                ))
            }
            "sendTransaction" => {
                let encoding = p(1)
                    .and_then(|c| c.get("encoding"))
                    .and_then(Value::as_str)
                    .unwrap_or("base58");
                let text = p(0)
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("transaction"))?;
                use base64::Engine as _;
                let wire = match encoding {
                    "base64" => base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .map_err(|_| invalid("invalid base64 encoding"))?,
                    other => return Err(invalid(&format!("unsupported encoding {other}"))),
                };
                s.send(&wire).map(|sig| json!(sig.to_string()))
            }
            "getSignatureStatuses" => {
                if s.auto_advance {
                    s.advance(1);
                }
                let list = p(0)
                    .and_then(Value::as_array)
                    .ok_or_else(|| invalid("signatures"))?;
                let mut out = Vec::new();
                for v in list {
                    let sig = sig_of(v)?;
                    out.push(match s.status_of(&sig) {
                        None => Value::Null,
                        Some(st) => {
                            let confirmations = match st.confirmation_status {
                                Some(Commitment::Finalized) => Value::Null,
                                _ => json!(s.slot.saturating_sub(st.slot + 1)),
                            };
                            let status = match &st.err {
                                None => json!({"Ok": null}),
                                Some(e) => json!({"Err": e}),
                            };
                            json!({
                                "slot": st.slot,
                                "confirmations": confirmations,
                                "err": st.err,
                                "status": status,
                                "confirmationStatus": st.confirmation_status.map(Commitment::as_str),
                            })
                        }
                    });
                }
                Ok(context(s.slot, Value::Array(out)))
            }
            "getAccountInfo" => {
                let key = pubkey_param(0)?;
                let slot = s.slot_at(cfg_commitment(1));
                let value = match s.account(&key) {
                    None => Value::Null,
                    Some(a) => {
                        use base64::Engine as _;
                        json!({
                            "data": [base64::engine::general_purpose::STANDARD.encode(&a.data), "base64"],
                            "executable": a.executable,
                            "lamports": a.lamports,
                            "owner": a.owner.to_string(),
                            "rentEpoch": u64::MAX,
                            "space": a.data.len(),
                        })
                    }
                };
                Ok(context(slot, value))
            }
            "getBalance" => {
                let key = pubkey_param(0)?;
                let slot = s.slot_at(cfg_commitment(1));
                Ok(context(slot, json!(s.svm.get_balance(&key).unwrap_or(0))))
            }
            "getTokenAccountBalance" => {
                let key = pubkey_param(0)?;
                let slot = s.slot_at(cfg_commitment(1));
                match s.token_account_balance(&key)? {
                    None => Err(RpcError::Server {
                        code: codes::INVALID_PARAMS,
                        message: "Invalid param: could not find account".into(),
                        data: None,
                    }),
                    Some((amount, decimals)) => {
                        Ok(context(slot, ui_token_amount(amount, decimals)))
                    }
                }
            }
            "getSignaturesForAddress" => {
                let key = pubkey_param(0)?;
                let cfg = p(1).cloned().unwrap_or(Value::Null);
                let q = SignaturesQuery {
                    before: cfg.get("before").map(sig_of).transpose()?,
                    until: cfg.get("until").map(sig_of).transpose()?,
                    limit: cfg.get("limit").and_then(Value::as_u64).unwrap_or(1000) as usize,
                };
                let list = s.signatures_for(&key, &q, cfg_commitment(1));
                let fin = s.finalized_slot();
                Ok(Value::Array(
                    list.into_iter()
                        .map(|i| {
                            json!({
                                "signature": i.signature.to_string(),
                                "slot": i.slot,
                                "err": i.err,
                                "memo": i.memo,
                                "blockTime": i.block_time,
                                "confirmationStatus": if i.slot <= fin { "finalized" } else { "confirmed" },
                            })
                        })
                        .collect(),
                ))
            }
            "getTransaction" => {
                let sig = sig_of(p(0).ok_or_else(|| invalid("signature"))?)?;
                let encoding = p(1)
                    .and_then(|c| c.get("encoding"))
                    .and_then(Value::as_str)
                    .unwrap_or("json");
                if encoding != "json" {
                    return Err(invalid(&format!("unsupported encoding {encoding}")));
                }
                let Some((r, _)) = s.transaction(&sig, cfg_commitment(1)) else {
                    return Ok(Value::Null);
                };
                Ok(render_transaction(r))
            }
            other => Err(RpcError::Server {
                code: -32601,
                message: format!("Method not found: {other}"),
                data: None,
            }),
        }
    }
}

fn ui_token_amount(amount: u64, decimals: u8) -> Value {
    let scale = 10u128.pow(u32::from(decimals));
    let whole = u128::from(amount) / scale;
    let frac = u128::from(amount) % scale;
    let text = if decimals == 0 {
        whole.to_string()
    } else {
        let f = format!("{frac:0width$}", width = usize::from(decimals));
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{f}")
        }
    };
    json!({
        "amount": amount.to_string(),
        "decimals": decimals,
        "uiAmount": text.parse::<f64>().ok(),
        "uiAmountString": text,
    })
}

fn render_token_balances(list: &[TokenBalance]) -> Value {
    Value::Array(
        list.iter()
            .map(|b| {
                json!({
                    "accountIndex": b.account_index,
                    "mint": b.mint.to_string(),
                    "owner": b.owner.map(|o| o.to_string()),
                    "programId": codec::TOKEN_PROGRAM_ID.to_string(),
                    "uiTokenAmount": ui_token_amount(b.amount, b.decimals),
                })
            })
            .collect(),
    )
}

fn render_transaction(r: &TxRecord) -> Value {
    let status = match &r.err {
        None => json!({"Ok": null}),
        Some(e) => json!({"Err": e}),
    };
    json!({
        "slot": r.slot,
        "blockTime": null,
        "version": "legacy",
        "meta": {
            "err": r.err,
            "status": status,
            "fee": r.fee,
            "preBalances": r.pre_balances,
            "postBalances": r.post_balances,
            "preTokenBalances": render_token_balances(&r.pre_token_balances),
            "postTokenBalances": render_token_balances(&r.post_token_balances),
            "innerInstructions": [],
            "logMessages": r.logs,
            "rewards": [],
            "loadedAddresses": {"readonly": [], "writable": []},
        },
        "transaction": {
            "signatures": r.wire_signatures.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "message": {
                "accountKeys": r.account_keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
                "header": {
                    "numRequiredSignatures": r.num_required_signatures,
                    "numReadonlySignedAccounts": r.num_readonly_signed,
                    "numReadonlyUnsignedAccounts": r.num_readonly_unsigned,
                },
                "recentBlockhash": r.recent_blockhash.to_string(),
                "instructions": [],
            }
        }
    })
}

#[async_trait]
impl SolanaRpc for LiteSvmRpc {
    async fn get_latest_blockhash(&self, _c: Commitment) -> Result<LatestBlockhash, RpcError> {
        let mut s = self.lock();
        s.count("getLatestBlockhash");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(LatestBlockhash {
            blockhash: s.svm.latest_blockhash(),
            last_valid_block_height: s.blockhash_issued_at + BLOCKHASH_VALIDITY_BLOCKS,
        })
    }

    async fn get_block_height(&self, c: Commitment) -> Result<u64, RpcError> {
        let mut s = self.lock();
        s.count("getBlockHeight");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.slot_at(c))
    }

    async fn get_slot(&self, c: Commitment) -> Result<u64, RpcError> {
        let mut s = self.lock();
        s.count("getSlot");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.slot_at(c))
    }

    async fn send_transaction(&self, wire: &[u8]) -> Result<Signature, RpcError> {
        self.lock().send(wire)
    }

    async fn get_signature_statuses(
        &self,
        sigs: &[Signature],
    ) -> Result<Vec<Option<SignatureStatus>>, RpcError> {
        let mut s = self.lock();
        s.count("getSignatureStatuses");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        if s.auto_advance {
            s.advance(1);
        }
        Ok(sigs.iter().map(|sig| s.status_of(sig)).collect())
    }

    async fn get_account_info(
        &self,
        address: &Pubkey,
        _c: Commitment,
    ) -> Result<Option<AccountInfo>, RpcError> {
        let mut s = self.lock();
        s.count("getAccountInfo");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.account(address).map(|a| AccountInfo {
            lamports: a.lamports,
            owner: a.owner,
            data: a.data,
            executable: a.executable,
        }))
    }

    async fn get_balance(&self, address: &Pubkey, _c: Commitment) -> Result<u64, RpcError> {
        let mut s = self.lock();
        s.count("getBalance");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.svm.get_balance(address).unwrap_or(0))
    }

    async fn get_token_account_balance(
        &self,
        address: &Pubkey,
        _c: Commitment,
    ) -> Result<Option<u64>, RpcError> {
        let mut s = self.lock();
        s.count("getTokenAccountBalance");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.token_account_balance(address)?.map(|(a, _)| a))
    }

    async fn get_minimum_balance_for_rent_exemption(&self, len: usize) -> Result<u64, RpcError> {
        let mut s = self.lock();
        s.count("getMinimumBalanceForRentExemption");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.svm.minimum_balance_for_rent_exemption(len))
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        q: &SignaturesQuery,
        c: Commitment,
    ) -> Result<Vec<SignatureInfo>, RpcError> {
        let mut s = self.lock();
        s.count("getSignaturesForAddress");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.signatures_for(address, q, c))
    }

    async fn get_transaction(
        &self,
        sig: &Signature,
        c: Commitment,
    ) -> Result<Option<TransactionDetails>, RpcError> {
        let mut s = self.lock();
        s.count("getTransaction");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.transaction(sig, c).map(|(_, d)| d))
    }
}
