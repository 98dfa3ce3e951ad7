//! Storage selection: the one place where a `storage` configuration becomes a `Store` and
//! a `Ledger` (the same backend, so a batch commits records and ledger together).

use crate::config::StorageConfig;
use stablecoin_core::memory::MemoryStore;
use stablecoin_core::ports::{Ledger, Store};
use stablecoin_store::{PgConfig, PgStore, SqliteConfig, SqliteStore};
use std::path::Path;
use std::sync::Arc;

/// An opened storage backend.
#[derive(Clone)]
pub struct Storage {
    /// The record store (records, idempotency, outbox) of the opened backend.
    pub store: Arc<dyn Store>,
    /// The double-entry ledger, on the same backend as `store` so one batch commits both.
    pub ledger: Arc<dyn Ledger>,
    /// The in-memory backend, when that is the one in use (tests count its commits).
    pub memory: Option<Arc<MemoryStore>>,
    /// The PostgreSQL store, when that is the backend (the rate limits share their state
    /// through it: `crate::rate_limit`).
    pub postgres: Option<PgStore>,
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

/// Why the configured storage could not be opened or migrated.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The backend could not be opened, connected to or migrated, or its directory could
    /// not be created; the text says which.
    #[error("storage: {0}")]
    Open(String),
}

impl From<stablecoin_store::Error> for StorageError {
    fn from(e: stablecoin_store::Error) -> Self {
        StorageError::Open(e.to_string())
    }
}

/// Opens the configured storage and applies its migrations.
///
/// The store and the ledger are always the same backend, so a batch commits records,
/// ledger entries and outbox events in one transaction. SQLite runs with WAL and
/// `synchronous=FULL` (an acknowledged write survives power loss); its directory is
/// created if missing.
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
                postgres: None,
                kind: "memory",
                durable: false,
            })
        }
        StorageConfig::Sqlite {
            path,
            max_background,
        } => {
            let path = path
                .clone()
                .unwrap_or_else(|| data_dir.join("stablecoin.db"));
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::file_modes::ensure_private_dir(dir).map_err(|e| {
                    StorageError::Open(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
            crate::file_modes::private_database_file(&path).map_err(|e| {
                StorageError::Open(format!("cannot create {}: {e}", path.display()))
            })?;
            let config = SqliteConfig::file(&path).max_background(*max_background);
            let store = Arc::new(SqliteStore::open(config).await?);
            Ok(Storage {
                store: store.clone(),
                ledger: store,
                memory: None,
                postgres: None,
                kind: "sqlite",
                durable: true,
            })
        }
        StorageConfig::Postgres {
            url,
            connect_timeout_secs,
        } => {
            let mut pg = PgConfig::new(url.expose());
            pg.acquire_timeout = std::time::Duration::from_secs((*connect_timeout_secs).max(1));
            let pg = PgStore::connect(pg).await?;
            let store = Arc::new(pg.clone());
            Ok(Storage {
                store: store.clone(),
                ledger: store,
                memory: None,
                postgres: Some(pg),
                kind: "postgres",
                durable: true,
            })
        }
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
