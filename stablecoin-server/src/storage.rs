//! Storage selection: the one place where a `storage` configuration becomes a `Store` and
//! a `Ledger` (the same backend, so a batch commits records and ledger together).

use crate::config::StorageConfig;
use stablecoin_core::memory::MemoryStore;
use stablecoin_core::ports::{Ledger, Store};
use std::path::Path;
use std::sync::Arc;

/// An opened storage backend.
#[derive(Clone)]
pub struct Storage {
    pub store: Arc<dyn Store>,
    pub ledger: Arc<dyn Ledger>,
    /// The in-memory backend, when that is the one in use (tests count its commits).
    pub memory: Option<Arc<MemoryStore>>,
    /// `memory`, `sqlite` or `postgres`.
    pub kind: &'static str,
    /// Whether records survive a restart.
    pub durable: bool,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("kind", &self.kind)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(
        "storage `{0}` is not wired into this server yet (stablecoin-store is being built); \
         use storage.kind = \"memory\" (STABLECOIN_STORAGE=memory) for now"
    )]
    NotWired(&'static str),
    #[error("storage: {0}")]
    Open(String),
}

/// Opens the configured storage and applies its migrations.
///
/// WIRING POINT for `stablecoin-store`: the `Sqlite` and `Postgres` arms are the only code
/// to change when `SqliteStore` / `PgStore` land (open, migrate, return them as both
/// `store` and `ledger`, `durable: true`). Until then they fail at startup with a clear
/// error rather than silently falling back to memory.
pub async fn open_storage(
    config: &StorageConfig,
    data_dir: &Path,
) -> Result<Storage, StorageError> {
    match config {
        StorageConfig::Memory => {
            let mem = Arc::new(MemoryStore::new());
            Ok(Storage {
                store: mem.clone(),
                ledger: mem.clone(),
                memory: Some(mem),
                kind: "memory",
                durable: false,
            })
        }
        StorageConfig::Sqlite { path } => {
            let _path = path
                .clone()
                .unwrap_or_else(|| data_dir.join("stablecoin.db"));
            Err(StorageError::NotWired("sqlite"))
        }
        StorageConfig::Postgres { url: _ } => Err(StorageError::NotWired("postgres")),
    }
}

/// `stablecoin-server migrate`: brings the schema up to date, reporting what it did.
pub async fn migrate(config: &StorageConfig, data_dir: &Path) -> Result<String, StorageError> {
    let storage = open_storage(config, data_dir).await?;
    Ok(match storage.kind {
        "memory" => "storage `memory` has no schema: nothing to migrate".to_string(),
        other => format!("storage `{other}` is up to date"),
    })
}
