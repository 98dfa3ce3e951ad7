//! What the rail remembers of each payment ([`Submitted`]): in memory, and written
//! through to the [`RailJournal`](stablecoin_core::ports::RailJournal) before the bundle
//! is sent, so a restarted rail finds its operations again.

use crate::evm::rpc::hex0x;
use crate::evm::rpc_bundler::{user_op_from_json, user_op_json};
use crate::evm::userop::UserOp;
use crate::evm::{EvmAddress, EvmRail};
use stablecoin_core::ports::{Rail, RailError};

/// What the rail remembers of a submitted payment: written to the journal before the
/// bundle is sent (without `tx_hash`) and again once it is, so a restarted rail
/// reconciles an in-flight operation from its `UserOperationEvent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The smart account that sends the operation.
    pub sender: EvmAddress,
    /// The operation's [`UserOp::hash`](crate::evm::userop::UserOp::hash): what its
    /// `UserOperationEvent` is found by.
    pub user_op_hash: [u8; 32],
    /// The bundle transaction, when known.
    pub tx_hash: Option<[u8; 32]>,
    /// Where to start looking for its `UserOperationEvent`.
    pub from_block: u64,
    /// The bundler refused it before sending: nothing is on its way.
    pub rejected: bool,
    /// The bundler accepted it (an external bundler answers before any bundle exists, so
    /// `tx_hash` may still be `None`): it is on its way.
    pub sent: bool,
    /// The operation's `validUntil` (Unix seconds), when it has one: once the chain's
    /// head is past it without its `UserOperationEvent`, it can never land.
    pub valid_until: Option<u64>,
    /// The signed operation, kept when an external bundler carries it: handed over again
    /// (the same operation, hash and nonce) if the bundler drops it
    /// ([`Bundler::resend`](crate::evm::Bundler::resend)). `None` for the self-bundler and
    /// for entries written before.
    pub op: Option<UserOp>,
}

impl Submitted {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "sender": self.sender.to_string(),
            "user_op_hash": hex0x(&self.user_op_hash),
            "tx_hash": self.tx_hash.map(|h| hex0x(&h)),
            "from_block": self.from_block,
            "rejected": self.rejected,
            "sent": self.sent,
            "valid_until": self.valid_until,
            "op": self.op.as_ref().map(user_op_json),
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<Submitted> {
        let h32 = |s: &str| -> Option<[u8; 32]> {
            hex::decode(s.trim_start_matches("0x"))
                .ok()?
                .try_into()
                .ok()
        };
        Some(Submitted {
            sender: v.get("sender")?.as_str()?.parse().ok()?,
            user_op_hash: h32(v.get("user_op_hash")?.as_str()?)?,
            tx_hash: match v.get("tx_hash")? {
                serde_json::Value::Null => None,
                t => Some(h32(t.as_str()?)?),
            },
            from_block: v.get("from_block")?.as_u64()?,
            rejected: v.get("rejected")?.as_bool()?,
            // Entries written before external bundlers existed: sent when a bundle
            // hash was recorded.
            sent: v
                .get("sent")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(tx_hash_present(v)),
            // Entries written before deadlines existed have none.
            valid_until: v.get("valid_until").and_then(serde_json::Value::as_u64),
            op: v.get("op").and_then(user_op_from_json),
        })
    }
}

fn tx_hash_present(v: &serde_json::Value) -> bool {
    v.get("tx_hash").is_some_and(|t| !t.is_null())
}

impl EvmRail {
    /// What this process remembers of a payment (user-operation hash beside the
    /// `tx_hash`); [`EvmRail::lookup`] also reads the journal.
    pub fn submitted(&self, payment_id: &str) -> Option<Submitted> {
        self.journal.lock().ok()?.get(payment_id).cloned()
    }

    /// What the rail knows of a payment, from memory or else from the journal.
    pub async fn lookup(&self, payment_id: &str) -> Result<Option<Submitted>, RailError> {
        if let Some(s) = self.submitted(payment_id) {
            return Ok(Some(s));
        }
        let Some(s) = crate::journal::load_entry(
            &*self.durable,
            &self.id().name(),
            payment_id,
            Submitted::from_json,
        )
        .await?
        else {
            return Ok(None);
        };
        if let Ok(mut j) = self.journal.lock() {
            j.insert(payment_id.to_string(), s.clone());
        }
        Ok(Some(s))
    }

    /// Records `s` durably, then in memory.
    pub(super) async fn remember(&self, payment_id: &str, s: Submitted) -> Result<(), RailError> {
        self.durable
            .save(&self.id().name(), payment_id, &s.to_json())
            .await?;
        if let Ok(mut j) = self.journal.lock() {
            j.insert(payment_id.to_string(), s);
        }
        Ok(())
    }
}
