//! The send journal: what the rail signed for each payment id, written before the
//! transaction is broadcast, so a lost response, a crash or an expired blockhash is
//! reconciled by the signature's status and never by a blind resend.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use stablecoin_core::ports::{ChainAddress, RailError};
use std::collections::HashMap;
use std::sync::Mutex;

/// What a sponsored send did, as the engine and the API report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaSendInfo {
    pub payment_id: String,
    /// The transaction signature (base58): the transaction id on Solana.
    pub signature: String,
    /// The service account that paid the fee (and any rent).
    pub fee_payer: ChainAddress,
    /// The sender's token account (its ATA for the mint).
    pub source_token_account: ChainAddress,
    /// The service paid the rent of a recipient-leg token account (spec 2.6
    /// `created_recipient_ata`).
    pub created_recipient_ata: bool,
    /// Every token account this transaction creates (recipient and fee legs).
    pub created_token_accounts: Vec<ChainAddress>,
    /// Lamports of rent the service paid for those accounts (0 when none).
    pub rent_paid_lamports: u64,
    /// `true` once `created_*` were checked against the finalized transaction's
    /// balances (`false`: the values are what the transaction was built to do).
    pub verified_on_chain: bool,
    /// The last block height at which this transaction can land.
    pub last_valid_block_height: u64,
    /// Signed transactions so far (a new one only after the previous expired unseen).
    pub attempts: u32,
}

/// Where a journaled send stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SendState {
    /// Signed and handed to the node (or about to be): may land until its blockhash
    /// expires.
    Sent,
    /// The node refused it (preflight or signature check): it never reached the network.
    Rejected { reason: String },
    /// Finalized on chain (`err` set: it failed there and moved nothing).
    Finalized { slot: u64, err: Option<String> },
    /// Its blockhash expired and it was not found: it can never land.
    Expired,
}

/// One journaled payment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRecord {
    pub payment_id: String,
    /// SHA-256 (hex) of the payment as submitted: one id never pays two different things.
    pub request_digest: String,
    /// The signed wire transaction, base64 (rebroadcast as is while it may land).
    pub wire_base64: String,
    pub state: SendState,
    /// Signatures of earlier attempts that expired unseen.
    pub superseded: Vec<String>,
    /// The token accounts of the legs with role `Recipient` (to tell a recipient ATA
    /// from a fee-leg ATA among the created accounts).
    #[serde(default)]
    pub recipient_token_accounts: Vec<ChainAddress>,
    pub info: SolanaSendInfo,
}

/// Storage of [`SendRecord`]s by payment id. [`MemoryJournal`] keeps them in the
/// process; a deployment that restarts while sends are in flight plugs in a durable one
/// (the same database as its `Store`), or a restart forgets in-flight signatures.
#[async_trait]
pub trait SendJournal: Send + Sync {
    async fn load(&self, payment_id: &str) -> Result<Option<SendRecord>, RailError>;
    /// Inserts or replaces the record of `record.payment_id`; durable when it returns.
    async fn save(&self, record: &SendRecord) -> Result<(), RailError>;
}

/// An in-process [`SendJournal`].
#[derive(Debug, Default)]
pub struct MemoryJournal {
    records: Mutex<HashMap<String, SendRecord>>,
}

impl MemoryJournal {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SendJournal for MemoryJournal {
    async fn load(&self, payment_id: &str) -> Result<Option<SendRecord>, RailError> {
        let map = self.records.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.get(payment_id).cloned())
    }

    async fn save(&self, record: &SendRecord) -> Result<(), RailError> {
        let mut map = self.records.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(record.payment_id.clone(), record.clone());
        Ok(())
    }
}
