//! Typed records over the untyped `StoredRecord`.

use crate::error::CoreError;
use crate::ports::store::{JsonText, Put, Store, StoredRecord};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A record type the engine stores.
pub trait Record: Serialize + DeserializeOwned + Send + Sync {
    const KIND: &'static str;
    fn id(&self) -> String;
    fn tenant(&self) -> Option<String> {
        None
    }
    fn created_at(&self) -> crate::domain::time::Timestamp;
    fn status(&self) -> Option<String> {
        None
    }
    fn due_at(&self) -> Option<crate::domain::time::Timestamp> {
        None
    }
    fn unique_keys(&self) -> Vec<String> {
        Vec::new()
    }

    fn to_stored(&self) -> Result<StoredRecord, CoreError> {
        Ok(StoredRecord {
            kind: Self::KIND.to_string(),
            id: self.id(),
            tenant: self.tenant(),
            version: 0,
            created_at: self.created_at(),
            status: self.status(),
            due_at: self.due_at(),
            unique_keys: self.unique_keys(),
            body: JsonText::encode(self)
                .map_err(|e| CoreError::Storage(format!("encode {}: {e}", Self::KIND)))?,
        })
    }

    fn from_stored(r: &StoredRecord) -> Result<Self, CoreError> {
        r.body
            .decode()
            .map_err(|e| CoreError::Storage(format!("decode {} {}: {e}", Self::KIND, r.id)))
    }

    /// A put that inserts this record (it must not exist).
    fn insert(&self) -> Result<Put, CoreError> {
        Ok(Put {
            record: self.to_stored()?,
            expected_version: None,
        })
    }

    /// A put that updates this record from `version`.
    fn update(&self, version: u64) -> Result<Put, CoreError> {
        Ok(Put {
            record: self.to_stored()?,
            expected_version: Some(version),
        })
    }
}

/// A record with the version it was read at.
#[derive(Clone, Debug, PartialEq)]
pub struct Versioned<R> {
    pub record: R,
    pub version: u64,
}

/// Typed reads on any `Store`.
pub async fn get_record<R: Record>(
    store: &dyn Store,
    id: &str,
) -> Result<Option<Versioned<R>>, CoreError> {
    match store
        .get(R::KIND, id)
        .await
        .map_err(|e| CoreError::Storage(e.to_string()))?
    {
        Some(r) => Ok(Some(Versioned {
            version: r.version,
            record: R::from_stored(&r)?,
        })),
        None => Ok(None),
    }
}

pub async fn get_record_by_unique<R: Record>(
    store: &dyn Store,
    key: &str,
) -> Result<Option<Versioned<R>>, CoreError> {
    match store
        .get_by_unique(key)
        .await
        .map_err(|e| CoreError::Storage(e.to_string()))?
    {
        Some(r) if r.kind == R::KIND => Ok(Some(Versioned {
            version: r.version,
            record: R::from_stored(&r)?,
        })),
        _ => Ok(None),
    }
}
