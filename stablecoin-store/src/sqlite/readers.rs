//! The reader connections: `get`, `list`, `balance` and the other reads run here, beside
//! the writer (WAL lets them).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The reader connections, used synchronously by the calling task.
///
/// Why not an async pool: a read here is a point lookup or a short page on an index,
/// which takes SQLite microseconds; handing it to a connection's worker thread and back
/// (sqlx's model) costs two thread wake-ups, and under load those hand-offs were most of
/// a read's cost. WAL readers never wait for the writer, so a read holds the calling
/// thread only for SQLite's own work. A task takes a free connection, or waits for one
/// only when every connection is busy (more concurrent reads than `readers`).
#[derive(Debug)]
pub(super) struct Readers {
    /// `None` once the store is closed.
    conns: Vec<Mutex<Option<rusqlite::Connection>>>,
    next: AtomicUsize,
}

impl Readers {
    pub(super) fn new(conns: Vec<Mutex<Option<rusqlite::Connection>>>) -> Self {
        Readers {
            conns,
            next: AtomicUsize::new(0),
        }
    }

    pub(super) fn with<T>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Result<T, String> {
        let n = self.conns.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let guard = (0..n)
            .find_map(|i| self.conns[(start + i) % n].try_lock().ok())
            .unwrap_or_else(|| unpoisoned(&self.conns[start]));
        match guard.as_ref() {
            Some(conn) => read(conn).map_err(|e| format!("sqlite: {e}")),
            None => Err("sqlite store is closed".to_string()),
        }
    }

    /// `read` in one read transaction: everything it selects comes from one snapshot.
    pub(super) fn snapshot<T>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Result<T, String> {
        self.with(|conn| {
            conn.execute_batch("BEGIN")?;
            let result = read(conn);
            let end = conn.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" });
            let value = result?;
            end?;
            Ok(value)
        })
    }

    pub(super) fn close(&self) {
        for conn in &self.conns {
            unpoisoned(conn).take();
        }
    }
}

/// A lock whose holder panicked still guards plain data here: take it.
pub(super) fn unpoisoned<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
