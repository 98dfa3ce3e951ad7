//! Storage settings: where records and the ledger live.

use super::Secret;
use serde::Deserialize;
use std::path::PathBuf;

/// Where records and the ledger live. `open_storage` in [`crate::storage`] turns this into
/// a `Store` + `Ledger`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum StorageConfig {
    /// In-process memory: nothing survives a restart.
    Memory,
    /// Embedded SQLite file (default path `<data_dir>/stablecoin.db`): the default.
    Sqlite {
        /// The database file; `<data_dir>/stablecoin.db` when absent.
        #[serde(default)]
        path: Option<PathBuf>,
        /// Background (worker) commits the SQLite writer adds to a group that carries API
        /// commits (>= 1): lower keeps API latency down under a settlement backlog,
        /// higher lets settlement progress faster while the API is busy.
        #[serde(default = "default_sqlite_max_background")]
        max_background: usize,
    },
    /// PostgreSQL by URL.
    Postgres {
        /// `postgres://` connection URL; carries the password, so never printed.
        url: Secret,
        /// How long to wait for a connection (at start and later) before failing.
        #[serde(default = "default_pg_connect_timeout_secs")]
        connect_timeout_secs: u64,
    },
}

fn default_pg_connect_timeout_secs() -> u64 {
    30
}

fn default_sqlite_max_background() -> usize {
    stablecoin_store::DEFAULT_MAX_BACKGROUND
}

impl Default for StorageConfig {
    /// Embedded SQLite under `data_dir`: durable with zero configuration.
    fn default() -> Self {
        StorageConfig::Sqlite {
            path: None,
            max_background: default_sqlite_max_background(),
        }
    }
}

impl StorageConfig {
    /// The backend's name as configured: `memory`, `sqlite` or `postgres`.
    pub fn name(&self) -> &'static str {
        match self {
            StorageConfig::Memory => "memory",
            StorageConfig::Sqlite { .. } => "sqlite",
            StorageConfig::Postgres { .. } => "postgres",
        }
    }

    /// Whether records survive a restart.
    pub fn is_durable(&self) -> bool {
        !matches!(self, StorageConfig::Memory)
    }
}
