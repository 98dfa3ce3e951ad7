//! `RailJournal`: what a rail sent for each payment id, written before the send.
//!
//! A rail learns things at send time that the chain cannot give back by payment id
//! alone (the TRON txID, the user-operation hash and the block to search from, the signed
//! Solana transaction). Kept only in memory, they are lost by a restart while a send is in
//! flight, and the engine would then be told `NotFound` about a payment that may have
//! landed. Written here first (write-ahead), a restarted rail reconciles instead.
//!
//! Entries are opaque JSON owned by the rail that wrote them; [`StoreJournal`] keeps
//! them in the deployment's [`Store`] (same database as the operations), and
//! [`MemoryJournal`] is for tests and embedded uses without durability.

use crate::ports::rail::RailError;
use crate::ports::services::Clock;
use crate::ports::store::{Batch, JsonText, Put, Store, StoreError, StoredRecord};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Where a rail writes what it sent for a payment before sending it, and reads it back
/// after a restart to reconcile instead of answering `NotFound`.
#[async_trait]
pub trait RailJournal: Send + Sync {
    /// The entry of `payment_id` on `rail` (a rail name such as `evm:137`), if any.
    async fn load(&self, rail: &str, payment_id: &str) -> Result<Option<Value>, RailError>;
    /// Inserts or replaces the entry; durable when it returns.
    async fn save(&self, rail: &str, payment_id: &str, entry: &Value) -> Result<(), RailError>;
}

/// An in-process [`RailJournal`]: forgotten by a restart.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    entries: Mutex<HashMap<(String, String), Value>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl RailJournal for MemoryJournal {
    async fn load(&self, rail: &str, payment_id: &str) -> Result<Option<Value>, RailError> {
        let map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map
            .get(&(rail.to_string(), payment_id.to_string()))
            .cloned())
    }

    async fn save(&self, rail: &str, payment_id: &str, entry: &Value) -> Result<(), RailError> {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        map.insert((rail.to_string(), payment_id.to_string()), entry.clone());
        Ok(())
    }
}

/// A [`RailJournal`] in a [`Store`] (records of kind `rail_journal`, id
/// `<rail>/<payment id>`).
pub struct StoreJournal {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl StoreJournal {
    /// The record kind of the entries in the store.
    pub const KIND: &'static str = crate::ports::kinds::kind::RAIL_JOURNAL;

    /// A journal in `store`; `clock` stamps each entry's `created_at`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        StoreJournal { store, clock }
    }

    fn id(rail: &str, payment_id: &str) -> String {
        format!("{rail}/{payment_id}")
    }
}

fn journal_unavailable(e: StoreError) -> RailError {
    RailError::Unavailable {
        reason: format!("send journal: {e}"),
    }
}

#[async_trait]
impl RailJournal for StoreJournal {
    async fn load(&self, rail: &str, payment_id: &str) -> Result<Option<Value>, RailError> {
        Ok(self
            .store
            .get(Self::KIND, &Self::id(rail, payment_id))
            .await
            .map_err(journal_unavailable)?
            .map(|r| r.body.to_value())
            .transpose()
            .map_err(|e| RailError::Unavailable {
                reason: format!("send journal: corrupt entry {payment_id}: {e}"),
            })?)
    }

    async fn save(&self, rail: &str, payment_id: &str, entry: &Value) -> Result<(), RailError> {
        let id = Self::id(rail, payment_id);
        // One writer per payment id (the rail serializes its sends), so a version read
        // just before the write only races with itself; one retry covers a lost reply.
        let mut last = None;
        for _ in 0..2 {
            let current = self
                .store
                .get(Self::KIND, &id)
                .await
                .map_err(journal_unavailable)?;
            let put = Put {
                expected_version: current.as_ref().map(|r| r.version),
                record: StoredRecord {
                    kind: Self::KIND.into(),
                    id: id.clone(),
                    tenant: None,
                    version: 0,
                    created_at: current
                        .as_ref()
                        .map(|r| r.created_at)
                        .unwrap_or_else(|| self.clock.now()),
                    status: None,
                    subkind: None,
                    due_at: None,
                    lane: 0,
                    unique_keys: Vec::new(),
                    body: JsonText::from(entry),
                },
            };
            match self
                .store
                .commit(Batch {
                    puts: vec![put],
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(()),
                Err(e @ StoreError::VersionConflict { .. }) => last = Some(e),
                Err(e) => return Err(journal_unavailable(e)),
            }
        }
        Err(journal_unavailable(last.unwrap_or(StoreError::Backend(
            "journal write lost twice".into(),
        ))))
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::memory::{MemoryStore, SystemClock};
    use serde_json::json;

    #[tokio::test]
    async fn store_journal_inserts_replaces_and_keeps_rails_apart() {
        let store = Arc::new(MemoryStore::new());
        let j = StoreJournal::new(store.clone(), Arc::new(SystemClock));
        assert_eq!(j.load("evm:137", "pay_1").await.unwrap(), None);
        j.save("evm:137", "pay_1", &json!({"tx": null}))
            .await
            .unwrap();
        j.save("evm:137", "pay_1", &json!({"tx": "0xab"}))
            .await
            .unwrap();
        j.save("tron", "pay_1", &json!({"txid": "cd"}))
            .await
            .unwrap();
        assert_eq!(
            j.load("evm:137", "pay_1").await.unwrap(),
            Some(json!({"tx": "0xab"}))
        );
        assert_eq!(
            j.load("tron", "pay_1").await.unwrap(),
            Some(json!({"txid": "cd"}))
        );
        let stored = store
            .get(StoreJournal::KIND, "evm:137/pay_1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.version, 2, "replaced in place, not duplicated");
    }

    #[tokio::test]
    async fn memory_journal_round_trips() {
        let j = MemoryJournal::new();
        j.save("sol", "p", &json!(1)).await.unwrap();
        assert_eq!(j.load("sol", "p").await.unwrap(), Some(json!(1)));
        assert_eq!(j.load("sol", "q").await.unwrap(), None);
    }
}
