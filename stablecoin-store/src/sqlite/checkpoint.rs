//! The background WAL checkpoints (see [`super::SqliteConfig::checkpoint_interval`]).

use super::config::SqliteConfig;
use super::readers::unpoisoned;
use crate::error::Error;
use std::path::Path;
use std::sync::Mutex;

/// The background checkpoint thread (see [`SqliteConfig::checkpoint_interval`]). It
/// stops when told to, or when the store is dropped (its sender goes with it).
#[derive(Debug)]
pub(super) struct Checkpointer {
    stop: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Checkpointer {
    pub(super) fn start(config: &SqliteConfig, file: &Path) -> Result<Self, Error> {
        let none = Checkpointer {
            stop: Mutex::new(None),
            thread: Mutex::new(None),
        };
        let every = config.checkpoint_interval;
        if every.is_zero() {
            return Ok(none);
        }
        let conn = config.open_connection(file)?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    // A checkpoint that cannot finish (a reader still needs old frames,
                    // the writer holds the lock for a moment) copies what it can and the
                    // next one goes on from there: nothing to handle.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .map_err(|e| Error::Config {
                reason: format!("cannot start the sqlite checkpoint thread: {e}"),
            })?;
        Ok(Checkpointer {
            stop: Mutex::new(Some(stop)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Stops the thread and waits for it (its connection is closed when this returns).
    pub(super) async fn stop(&self) {
        if let Some(stop) = unpoisoned(&self.stop).take() {
            let _ = stop.send(());
        }
        let thread = unpoisoned(&self.thread).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}
