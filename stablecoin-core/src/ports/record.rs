//! Typed records over the untyped `StoredRecord`.

use crate::ports::store::{JsonText, Put, Store, StoreError, StoredRecord, Unchanged};
use serde::Serialize;
use serde::de::DeserializeOwned;
use thiserror::Error;

/// Why a typed record could not be written or read: the port's own error, so the ports
/// name no outer layer (docs/architecture.md §2). `CoreError` wraps every variant as
/// `CoreError::Storage` with this text (`encode wallet: ...`, `decode wallet w1: ...`,
/// or the store's own), the text the API and logs showed before it had its own type.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record could not be serialized (a bug in its type, never bad input).
    #[error("encode {kind}: {reason}")]
    Encode {
        /// `Record::KIND`.
        kind: &'static str,
        /// What serde said.
        reason: String,
    },
    /// A stored body that does not decode as its kind: corrupt, or written by an
    /// incompatible version.
    #[error("decode {kind} {id}: {reason}")]
    Decode {
        /// `Record::KIND`.
        kind: &'static str,
        /// The record's id.
        id: String,
        /// What serde said.
        reason: String,
    },
    /// The store's read failed.
    #[error("{0}")]
    Store(StoreError),
}

/// A record type the engine stores.
pub trait Record: Serialize + DeserializeOwned + Send + Sync {
    /// The kind every record of this type is stored under (`"wallet"`, `"operation"`, ...);
    /// unique across record types.
    const KIND: &'static str;
    /// The record's id, unique within its kind.
    fn id(&self) -> String;
    /// The owning tenant, for tenant-scoped lists; `None` (the default) for system-wide
    /// records.
    fn tenant(&self) -> Option<String> {
        None
    }
    /// When the record was created; lists are newest first by it.
    fn created_at(&self) -> crate::domain::time::Timestamp;
    /// The status a list may filter on; `None` (the default) for a kind without one.
    fn status(&self) -> Option<String> {
        None
    }
    /// The second-level kind lists select on (`StoredRecord::subkind`). A kind either
    /// gives every record one or none: a list of a kind runs on one subkind
    /// ([`crate::ports::store::ListQuery::subkind`]).
    fn subkind(&self) -> Option<String> {
        None
    }
    /// When a background worker should next claim it (`Store::claim_due`); `None` (the
    /// default): never.
    fn due_at(&self) -> Option<crate::domain::time::Timestamp> {
        None
    }
    /// The claim lane it is due in (`Store::claim_due`): 0, the default, for a kind
    /// whose due work is one queue.
    fn lane(&self) -> u8 {
        0
    }
    /// Globally unique index keys (`"wallet_phone:+225..."`); a commit giving one key to
    /// two records fails.
    fn unique_keys(&self) -> Vec<String> {
        Vec::new()
    }

    /// The untyped form a store writes (version 0: the store sets it).
    fn to_stored(&self) -> Result<StoredRecord, RecordError> {
        Ok(StoredRecord {
            kind: Self::KIND.to_string(),
            id: self.id(),
            tenant: self.tenant(),
            version: 0,
            created_at: self.created_at(),
            status: self.status(),
            subkind: self.subkind(),
            due_at: self.due_at(),
            lane: self.lane(),
            unique_keys: self.unique_keys(),
            body: JsonText::encode(self).map_err(|e| RecordError::Encode {
                kind: Self::KIND,
                reason: e.to_string(),
            })?,
        })
    }

    /// Decodes a stored body; a corrupt one is [`RecordError::Decode`] naming the record.
    fn from_stored(r: &StoredRecord) -> Result<Self, RecordError> {
        r.body.decode().map_err(|e| RecordError::Decode {
            kind: Self::KIND,
            id: r.id.clone(),
            reason: e.to_string(),
        })
    }

    /// A put that inserts this record (it must not exist).
    fn insert(&self) -> Result<Put, RecordError> {
        Ok(Put {
            record: self.to_stored()?,
            expected_version: None,
        })
    }

    /// A put that updates this record from `version`.
    fn update(&self, version: u64) -> Result<Put, RecordError> {
        Ok(Put {
            record: self.to_stored()?,
            expected_version: Some(version),
        })
    }
}

/// A record with the version it was read at.
#[derive(Clone, Debug, PartialEq)]
pub struct Versioned<R> {
    /// The decoded record.
    pub record: R,
    /// The stored version it was read at (1 on insert, +1 per update), for the next
    /// `update` or `unchanged` check.
    pub version: u64,
}

impl<R: Record> Versioned<R> {
    /// The check that this record is still at the version it was read at when a batch
    /// that relied on it commits ([`Unchanged`]).
    pub fn unchanged(&self) -> Unchanged {
        Unchanged {
            kind: R::KIND.to_string(),
            id: self.record.id(),
            version: self.version,
        }
    }
}

/// Typed reads on any `Store`.
pub async fn get_record<R: Record>(
    store: &dyn Store,
    id: &str,
) -> Result<Option<Versioned<R>>, RecordError> {
    match store.get(R::KIND, id).await.map_err(RecordError::Store)? {
        Some(r) => Ok(Some(Versioned {
            version: r.version,
            record: R::from_stored(&r)?,
        })),
        None => Ok(None),
    }
}

/// The record of type `R` holding the unique `key`; `None` if no record holds it or one of
/// another kind does.
pub async fn get_record_by_unique<R: Record>(
    store: &dyn Store,
    key: &str,
) -> Result<Option<Versioned<R>>, RecordError> {
    match store.get_by_unique(key).await.map_err(RecordError::Store)? {
        Some(r) if r.kind == R::KIND => Ok(Some(Versioned {
            version: r.version,
            record: R::from_stored(&r)?,
        })),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::Timestamp;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Note {
        id: String,
        n: u64,
        at: Timestamp,
    }

    impl Record for Note {
        const KIND: &'static str = "note";
        fn id(&self) -> String {
            self.id.clone()
        }
        fn created_at(&self) -> Timestamp {
            self.at
        }
    }

    fn note() -> Note {
        Note {
            id: "n1".into(),
            n: 7,
            at: Timestamp::from_millis(5),
        }
    }

    #[test]
    fn a_record_round_trips_through_its_json_text() {
        let stored = note().to_stored().unwrap();
        assert_eq!(stored.body.text(), r#"{"id":"n1","n":7,"at":5}"#);
        assert_eq!(Note::from_stored(&stored).unwrap(), note());
    }

    #[test]
    fn bodies_are_equal_as_json_values_not_as_text() {
        let a = JsonText::from(json!({ "a": 1, "b": [true, null] }));
        let b = JsonText::from_stored_text(r#"{ "b": [true,null], "a": 1 }"#.into());
        assert_eq!(a, b, "key order and spaces are not the value");
        assert_ne!(a, JsonText::from(json!({ "a": 2, "b": [true, null] })));
        assert_ne!(
            JsonText::from_stored_text("{".into()),
            JsonText::from_stored_text("}".into()),
            "two corrupt texts are equal only if identical"
        );
    }

    #[test]
    fn a_body_serializes_as_its_value_not_as_a_string() {
        let body = JsonText::from(json!({ "k": "v" }));
        assert_eq!(serde_json::to_value(&body).unwrap(), json!({ "k": "v" }));
        let back: JsonText = serde_json::from_value(json!({ "k": "v" })).unwrap();
        assert_eq!(back, body);
    }

    #[test]
    fn a_corrupt_body_is_a_storage_error_naming_the_record() {
        let mut stored = note().to_stored().unwrap();
        stored.body = JsonText::from_stored_text(r#"{"id":"n1","n":"#.into());
        let err = Note::from_stored(&stored).unwrap_err();
        assert!(
            matches!(&err, RecordError::Decode { .. } if err.to_string().contains("decode note n1")),
            "{err:?}"
        );
        stored.body = JsonText::from(json!({ "id": "n1", "n": "seven", "at": 5 }));
        assert!(matches!(
            Note::from_stored(&stored),
            Err(RecordError::Decode { .. })
        ));
    }
}
