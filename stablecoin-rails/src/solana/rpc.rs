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
    Processed,
    Confirmed,
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
    pub blockhash: Hash,
    /// The last block height at which a transaction using `blockhash` can still land.
    pub last_valid_block_height: u64,
}

/// One entry of `getSignatureStatuses`.
#[derive(Clone, Debug, PartialEq)]
pub struct SignatureStatus {
    pub slot: u64,
    /// The transaction error (validator JSON, e.g. `{"InstructionError":[0,{"Custom":1}]}`).
    pub err: Option<Value>,
    pub confirmation_status: Option<Commitment>,
}

impl SignatureStatus {
    pub fn is_finalized(&self) -> bool {
        self.confirmation_status == Some(Commitment::Finalized)
    }
}

/// `getAccountInfo` (base64 data, decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountInfo {
    pub lamports: u64,
    pub owner: Pubkey,
    pub data: Vec<u8>,
    pub executable: bool,
}

/// One entry of `getSignaturesForAddress` (newest first).
#[derive(Clone, Debug, PartialEq)]
pub struct SignatureInfo {
    pub signature: Signature,
    pub slot: u64,
    pub err: Option<Value>,
    pub memo: Option<String>,
    pub block_time: Option<i64>,
}

/// A `preTokenBalances` / `postTokenBalances` entry of `getTransaction`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBalance {
    pub account_index: u32,
    pub mint: Pubkey,
    pub owner: Option<Pubkey>,
    /// Base units.
    pub amount: u64,
    pub decimals: u8,
}

/// The parts of `getTransaction` (encoding `json`) the rail reads.
#[derive(Clone, Debug, PartialEq)]
pub struct TransactionDetails {
    pub slot: u64,
    pub block_time: Option<i64>,
    pub err: Option<Value>,
    pub fee: u64,
    pub account_keys: Vec<Pubkey>,
    pub pre_balances: Vec<u64>,
    pub post_balances: Vec<u64>,
    pub pre_token_balances: Vec<TokenBalance>,
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
    Transport { reason: String },
    /// The node answered with a JSON-RPC error object.
    Server {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The node answered something this client cannot read.
    Decode { reason: String },
}

impl RpcError {
    pub fn transport(reason: impl Into<String>) -> Self {
        RpcError::Transport {
            reason: reason.into(),
        }
    }
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
}

#[allow(dead_code)]
trait _ObjectSafe {
    fn rpc(&self) -> &dyn SolanaRpc;
}
