//! What the rail journals for each payment id: the [`SendRecord`] (the signed
//! transaction and where it stands), written to core's
//! [`RailJournal`](stablecoin_core::ports::RailJournal) before the transaction is
//! broadcast, so a lost response, a crash or an expired blockhash is reconciled by the
//! signature's status and never by a blind resend. With a durable journal
//! (`StoreJournal`, the deployment's database) that holds across a restart.

use serde::{Deserialize, Serialize};
use stablecoin_core::ports::{ChainAddress, RailError};

/// What a sponsored send did, as the engine and the API report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaSendInfo {
    /// The payment (idempotency) id the send belongs to.
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
    /// The compute-unit limit the current transaction asks (0 in records written before
    /// sends carried one).
    #[serde(default)]
    pub compute_unit_limit: u32,
    /// Its compute-unit price, micro-lamports per unit: the priority fee is
    /// `ceil(limit * price / 10^6)` lamports.
    #[serde(default)]
    pub compute_unit_price_micro_lamports: u64,
    /// Lamports the fee payer lost to the landed transaction, read from the finalized
    /// transaction (succeeded or failed): `meta.preBalances - meta.postBalances` of the
    /// fee payer, which is the fee (signatures and priority) plus the rent of every token
    /// account it created (none when it failed). `None` until read (or in records
    /// written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_payer_spent_lamports: Option<u64>,
}

/// Where a journaled send stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SendState {
    /// Signed and handed to the node (or about to be): may land until its blockhash
    /// expires.
    Sent,
    /// The node refused it (preflight or signature check): it never reached the network.
    Rejected {
        /// The node's refusal, as the rail reports it.
        reason: String,
    },
    /// Finalized on chain (`err` set: it failed there and moved nothing).
    Finalized {
        /// The slot it landed in.
        slot: u64,
        /// The transaction error, described as text
        /// ([`describe_transaction_error`](super::codec::describe_transaction_error));
        /// `None` on success.
        err: Option<String>,
    },
    /// Its blockhash expired and it was not found: it can never land.
    Expired,
}

/// One journaled payment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRecord {
    /// The payment (idempotency) id: the record's journal key.
    pub payment_id: String,
    /// SHA-256 (hex) of the payment as submitted: one id never pays two different things.
    pub request_digest: String,
    /// The signed wire transaction, base64 (rebroadcast as is while it may land).
    pub wire_base64: String,
    /// Where the current attempt (`wire_base64`) stands.
    pub state: SendState,
    /// Signatures of earlier attempts that expired unseen.
    pub superseded: Vec<String>,
    /// The token accounts of the legs with role `Recipient` (to tell a recipient ATA
    /// from a fee-leg ATA among the created accounts).
    #[serde(default)]
    pub recipient_token_accounts: Vec<ChainAddress>,
    /// What the send reports, updated once checked on chain.
    pub info: SolanaSendInfo,
}

impl SendRecord {
    /// The journal entry: the record as JSON.
    pub(crate) fn to_entry(&self) -> Result<serde_json::Value, RailError> {
        serde_json::to_value(self).map_err(|e| RailError::Unavailable {
            reason: format!("send journal: cannot encode {}: {e}", self.payment_id),
        })
    }

    /// A journal entry read back (`None`: not a record this rail wrote).
    pub(crate) fn from_entry(entry: &serde_json::Value) -> Option<SendRecord> {
        SendRecord::deserialize(entry).ok()
    }
}
