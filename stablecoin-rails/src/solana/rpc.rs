//! [`SolanaRpc`]: the node-facing half of the rail, one method per JSON-RPC method the
//! rail calls, with typed results.
//!
//! Two implementations: [`JsonRpcClient`](super::JsonRpcClient) talks to a validator over
//! HTTP (production), and `testkit::LiteSvmRpc` (feature `solana-test`) runs the real
//! SPL programs in process. The rail's transaction logic ([`SolanaRail`](super::SolanaRail))
//! is the same over both: it hands this trait fully signed wire bytes and reads back
//! statuses, accounts and balances.

use async_trait::async_trait;
use serde_json::Value;
use solana_hash::Hash;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use std::fmt;

/// A validator commitment level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Commitment {
    /// Processed by the node; the cluster may still skip the block.
    Processed,
    /// Voted on by a supermajority of stake (optimistic confirmation).
    Confirmed,
    /// Rooted: can no longer be rolled back.
    Finalized,
}

impl Commitment {
    /// The JSON-RPC spelling (`"processed"`, `"confirmed"`, `"finalized"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Commitment::Processed => "processed",
            Commitment::Confirmed => "confirmed",
            Commitment::Finalized => "finalized",
        }
    }

    /// Reads the JSON-RPC spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<Commitment> {
        match s {
            "processed" => Some(Commitment::Processed),
            "confirmed" => Some(Commitment::Confirmed),
            "finalized" => Some(Commitment::Finalized),
            _ => None,
        }
    }
}

/// `getLatestBlockhash`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatestBlockhash {
    /// The recent blockhash a transaction signs over (and expires with).
    pub blockhash: Hash,
    /// The last block height at which a transaction using `blockhash` can still land.
    pub last_valid_block_height: u64,
}

/// One entry of `getSignatureStatuses`.
#[derive(Clone, Debug, PartialEq)]
pub struct SignatureStatus {
    /// The slot the transaction landed in.
    pub slot: u64,
    /// The transaction error (validator JSON, e.g. `{"InstructionError":[0,{"Custom":1}]}`).
    pub err: Option<Value>,
    /// `confirmationStatus`: how final that slot is; `None` when the node does not say.
    pub confirmation_status: Option<Commitment>,
}

impl SignatureStatus {
    /// Whether the slot is finalized: the outcome (`err`) can no longer change.
    pub fn is_finalized(&self) -> bool {
        self.confirmation_status == Some(Commitment::Finalized)
    }
}

/// `getAccountInfo` (base64 data, decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountInfo {
    /// Balance, in lamports (10^9 per SOL).
    pub lamports: u64,
    /// The program that owns the account (SPL Token for a token account).
    pub owner: Pubkey,
    /// The account data, decoded from base64 (a token account's 165 bytes: see
    /// [`parse_token_account`](super::codec::parse_token_account)).
    pub data: Vec<u8>,
    /// Whether the account holds a program.
    pub executable: bool,
}

/// One entry of `getSignaturesForAddress` (newest first).
#[derive(Clone, Debug, PartialEq)]
pub struct SignatureInfo {
    /// The transaction's first signature: its id.
    pub signature: Signature,
    /// The slot it landed in.
    pub slot: u64,
    /// The transaction error (validator JSON, as in [`SignatureStatus::err`]); `None` on
    /// success.
    pub err: Option<Value>,
    /// `memo`: the transaction's memos as the node renders them, if any.
    pub memo: Option<String>,
    /// `blockTime`: Unix seconds; `None` when the node does not know it.
    pub block_time: Option<i64>,
}

/// A `preTokenBalances` / `postTokenBalances` entry of `getTransaction`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBalance {
    /// `accountIndex`: the token account's index in [`TransactionDetails::account_keys`].
    pub account_index: u32,
    /// Which token: its mint.
    pub mint: Pubkey,
    /// The token account's owner (wallet), when the node reports it.
    pub owner: Option<Pubkey>,
    /// Base units.
    pub amount: u64,
    /// The mint's decimals (6 for USDC and USDT).
    pub decimals: u8,
}

/// The parts of `getTransaction` (encoding `json`) the rail reads.
#[derive(Clone, Debug, PartialEq)]
pub struct TransactionDetails {
    /// The slot it landed in.
    pub slot: u64,
    /// `blockTime`: Unix seconds; `None` when the node does not know it.
    pub block_time: Option<i64>,
    /// `meta.err`: the transaction error (validator JSON); `None` on success.
    pub err: Option<Value>,
    /// `meta.fee`: lamports charged to the fee payer.
    pub fee: u64,
    /// Every account of the transaction: the message's keys, then the ones loaded from
    /// lookup tables (writable, then readonly). The balances below index into it.
    pub account_keys: Vec<Pubkey>,
    /// `meta.preBalances`: lamports of each account before the transaction.
    pub pre_balances: Vec<u64>,
    /// `meta.postBalances`: lamports of each account after it.
    pub post_balances: Vec<u64>,
    /// `meta.preTokenBalances`: the token accounts that existed before, with their balances.
    pub pre_token_balances: Vec<TokenBalance>,
    /// `meta.postTokenBalances`: the token accounts after, with their balances.
    pub post_token_balances: Vec<TokenBalance>,
}

/// Pagination of `getSignaturesForAddress`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignaturesQuery {
    /// Start searching backwards from this signature (exclusive).
    pub before: Option<Signature>,
    /// Stop at this signature (exclusive).
    pub until: Option<Signature>,
    /// At most this many (the validator caps it at 1000).
    pub limit: usize,
}

/// JSON-RPC error codes the rail interprets.
pub mod codes {
    /// `sendTransaction` preflight simulation failed: the node did not forward it.
    pub const SEND_TRANSACTION_PREFLIGHT_FAILURE: i64 = -32002;
    /// Signature verification failed: the node did not forward it.
    pub const TRANSACTION_SIGNATURE_VERIFICATION_FAILURE: i64 = -32003;
    /// Invalid params (`getTokenAccountBalance` of a missing account answers this).
    pub const INVALID_PARAMS: i64 = -32602;
}

/// What went wrong talking to the node.
#[derive(Clone, Debug, PartialEq)]
pub enum RpcError {
    /// The request may or may not have reached the node (connect failure, timeout, lost
    /// response). For `sendTransaction` this means the outcome is unknown.
    Transport {
        /// The method (or the HTTP client setup) and what failed.
        reason: String,
    },
    /// The node answered with a JSON-RPC error object.
    Server {
        /// JSON-RPC error code (see [`codes`]).
        code: i64,
        /// The error object's `message`, in the node's words.
        message: String,
        /// The error's `data`: for a preflight failure, the simulation result (see
        /// [`RpcError::preflight_err`]).
        data: Option<Value>,
    },
    /// The node answered something this client cannot read.
    Decode {
        /// What could not be read.
        reason: String,
    },
}

impl RpcError {
    /// A [`RpcError::Transport`] with `reason`.
    pub fn transport(reason: impl Into<String>) -> Self {
        RpcError::Transport {
            reason: reason.into(),
        }
    }
    /// A [`RpcError::Decode`] with `reason`.
    pub fn decode(reason: impl Into<String>) -> Self {
        RpcError::Decode {
            reason: reason.into(),
        }
    }
    /// The transaction error carried in a preflight failure (`data.err`).
    pub fn preflight_err(&self) -> Option<&Value> {
        match self {
            RpcError::Server {
                code: codes::SEND_TRANSACTION_PREFLIGHT_FAILURE,
                data: Some(d),
                ..
            } => d.get("err").filter(|e| !e.is_null()),
            _ => None,
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Transport { reason } => write!(f, "rpc transport: {reason}"),
            RpcError::Server { code, message, .. } => write!(f, "rpc error {code}: {message}"),
            RpcError::Decode { reason } => write!(f, "rpc decode: {reason}"),
        }
    }
}

impl std::error::Error for RpcError {}

/// The JSON-RPC methods the Solana rail calls. Object safe (`Arc<dyn SolanaRpc>`).
#[async_trait]
pub trait SolanaRpc: Send + Sync {
    /// `getLatestBlockhash`.
    async fn get_latest_blockhash(
        &self,
        commitment: Commitment,
    ) -> Result<LatestBlockhash, RpcError>;

    /// `getBlockHeight`.
    async fn get_block_height(&self, commitment: Commitment) -> Result<u64, RpcError>;

    /// `getSlot`.
    async fn get_slot(&self, commitment: Commitment) -> Result<u64, RpcError>;

    /// `sendTransaction` of signed wire bytes (sent base64, preflight at `confirmed`,
    /// `maxRetries: 0`: the rail decides about rebroadcasts). Returns the signature the
    /// node computed (the first signature).
    async fn send_transaction(&self, wire: &[u8]) -> Result<Signature, RpcError>;

    /// `getSignatureStatuses` with `searchTransactionHistory: true`, one entry per input.
    async fn get_signature_statuses(
        &self,
        signatures: &[Signature],
    ) -> Result<Vec<Option<SignatureStatus>>, RpcError>;

    /// `getAccountInfo` (base64); `None` when the account does not exist.
    async fn get_account_info(
        &self,
        address: &Pubkey,
        commitment: Commitment,
    ) -> Result<Option<AccountInfo>, RpcError>;

    /// `getBalance` in lamports (0 for a missing account).
    async fn get_balance(&self, address: &Pubkey, commitment: Commitment) -> Result<u64, RpcError>;

    /// `getTokenAccountBalance` in base units; `None` when the account does not exist.
    async fn get_token_account_balance(
        &self,
        address: &Pubkey,
        commitment: Commitment,
    ) -> Result<Option<u64>, RpcError>;

    /// `getMinimumBalanceForRentExemption`.
    async fn get_minimum_balance_for_rent_exemption(
        &self,
        data_len: usize,
    ) -> Result<u64, RpcError>;

    /// `getSignaturesForAddress`, newest first.
    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        query: &SignaturesQuery,
        commitment: Commitment,
    ) -> Result<Vec<SignatureInfo>, RpcError>;

    /// `getTransaction` (encoding `json`, `maxSupportedTransactionVersion: 0`); `None`
    /// when unknown at this commitment.
    async fn get_transaction(
        &self,
        signature: &Signature,
        commitment: Commitment,
    ) -> Result<Option<TransactionDetails>, RpcError>;

    /// `getRecentPrioritizationFees` for transactions writing `accounts` (at most 128):
    /// per recent slot, the lowest compute-unit price, in micro-lamports, that landed a
    /// transaction locking them.
    async fn get_recent_prioritization_fees(
        &self,
        accounts: &[Pubkey],
    ) -> Result<Vec<u64>, RpcError>;

    /// The health of each URL behind this client (issue #49), for readiness; empty when
    /// the implementation tracks none (litesvm in process).
    fn endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        Vec::new()
    }
}

#[allow(dead_code)]
trait _ObjectSafe {
    fn rpc(&self) -> &dyn SolanaRpc;
}
