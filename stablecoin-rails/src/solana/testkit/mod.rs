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

//!
//! Split: `state` is that bookkeeping over litesvm, `json` the validator's JSON-RPC
//! shapes of it (for [`server`]); this file holds [`LiteSvmRpc`], its test controls and
//! its [`SolanaRpc`] implementation.

mod json;
pub mod server;
mod state;

use super::SolanaConfig;
use super::codec;
use super::rpc::{
    AccountInfo, Commitment, LatestBlockhash, RpcError, SignatureInfo, SignatureStatus,
    SignaturesQuery, SolanaRpc, TransactionDetails,
};
use async_trait::async_trait;
use litesvm::LiteSVM;
use solana_account::Account;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_program_pack::Pack;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_signer::Signer as _;
use state::State;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// Blocks a blockhash stays valid for (the validator's `MAX_PROCESSING_AGE`).
pub const BLOCKHASH_VALIDITY_BLOCKS: u64 = 150;

/// The rail settings the tests run with: mainnet mints, monitoring and sends on, a
/// 0.05 SOL send threshold, no wait between polls (each status poll advances a slot).
pub fn test_config() -> SolanaConfig {
    SolanaConfig {
        scan_enabled: true,
        sends_enabled: true,
        min_fee_payer_lamports_for_sends: 50_000_000,
        poll_interval_ms: 0,
        finality_timeout_ms: 10_000,
        ..SolanaConfig::mainnet()
    }
}

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
    /// The node accepts the transaction and answers its signature, but it never reaches
    /// a leader (dropped under congestion): nothing lands unless it is sent again.
    Dropped,
    /// The node forwards the transaction without simulating it (`skipPreflight`, or a
    /// copy that reaches the leader after the state its simulation saw has moved on): a
    /// transaction that fails executes on chain anyway, pays its fee, and its status
    /// carries the error.
    SkipPreflight,
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
                priority_fees: Some(Vec::new()),
                fee_accounts_asked: Vec::new(),
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

    /// What `getRecentPrioritizationFees` answers from now on: one fee (micro-lamports
    /// per compute unit) per recent slot, oldest first; `None` makes the method fail as
    /// on a node without it. A fresh kit answers an empty list (a quiet cluster).
    pub fn set_recent_prioritization_fees(&self, fees: Option<Vec<u64>>) {
        self.lock().priority_fees = fees;
    }

    /// The accounts of each `getRecentPrioritizationFees` call so far, in order.
    pub fn prioritization_fee_accounts(&self) -> Vec<Vec<Pubkey>> {
        self.lock().fee_accounts_asked.clone()
    }

    /// While down, every call fails with a transport error.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    /// How many times `method` (JSON-RPC name) was called.
    pub fn calls(&self, method: &str) -> u64 {
        self.lock().calls.get(method).copied().unwrap_or(0)
    }

    /// The program log of a processed transaction (the runtime's `Program ... invoke`,
    /// `Program log: ...` and `... consumed N of M compute units` lines), as
    /// `getTransaction` reports it in `logMessages`.
    pub fn logs(&self, signature: &Signature) -> Option<Vec<String>> {
        self.lock().txs.get(signature).map(|t| t.logs.clone())
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

    async fn get_recent_prioritization_fees(
        &self,
        accounts: &[Pubkey],
    ) -> Result<Vec<u64>, RpcError> {
        let mut s = self.lock();
        s.count("getRecentPrioritizationFees");
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        Ok(s.recent_prioritization_fees(accounts)?
            .into_iter()
            .map(|(_, f)| f)
            .collect())
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
