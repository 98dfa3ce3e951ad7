//! Group commit: concurrent interactive commits share one transaction and its
//! statements.
//!
//! Why: a send's commit is about a dozen statements and a durable COMMIT; on PostgreSQL
//! each statement is a round trip and an executor run, and the database spent ~2 ms of
//! CPU per settled transfer on them (#46). The SQLite writer already commits every
//! batch waiting for it in one transaction; this does the same for `PgStore`, and
//! further, since its commit path is statements over arrays (`commit.rs`, `puts.rs`,
//! `ledger_rows.rs`): the batches of a group are merged into one batch, so 16 sends are
//! still a dozen statements and one COMMIT.
//!
//! How, and why it is the same as committing them one by one:
//! - Each commit call that is not `background` queues its batch; `group_writers` tasks
//!   each take what is queued (up to `group_commit` batches), so groups form by
//!   themselves under load and a lone commit waits for nobody.
//! - A group holds only batches that touch disjoint things ([`Footprint`]): no record
//!   put by one is put or relied on (`unchanged`) by another, no unique key, idempotency
//!   key or ledger transfer id (new or resolved) is named by two. Their checks then
//!   cannot see each other's writes, and the merged batch decides what committing them
//!   one after the other in queue order decides; the ledger rules run on the merged
//!   transfers in that order, so two debits of one account are checked in sequence. A
//!   batch that overlaps the group waits for the next one.
//! - If the merged batch fails at all (a version conflict, an insufficient balance, a
//!   key already taken, a lost race), its transaction is rolled back and every batch of
//!   the group is committed alone, as it would have been without grouping, and gets its
//!   own outcome. Only a failure of COMMIT itself is everyone's answer: its outcome is
//!   unknown, exactly as for a lone commit, and running the batches again could apply
//!   them twice.
//! - Background batches (settlement, deliveries: large, and nobody waits on them) are
//!   committed alone by their caller, as before.

use super::{Attempt, PgStore};
use stablecoin_core::ports::store::{Batch, CommitReceipt, IdempotencyRecord, StoreError};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{Mutex, mpsc, oneshot};

/// One queued commit and where its outcome goes.
struct Job {
    batch: Batch,
    reply: oneshot::Sender<Result<CommitReceipt, StoreError>>,
}

/// Counters of what group commit did, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    /// Transactions that committed two batches or more.
    pub groups: u64,
    /// Batches committed in those transactions.
    pub grouped_batches: u64,
    /// Groups that failed and were committed one batch at a time.
    pub fallbacks: u64,
    /// Batches queued now that no writer has taken yet.
    pub waiting: u64,
}

#[derive(Default)]
struct Counters {
    groups: AtomicU64,
    grouped_batches: AtomicU64,
    fallbacks: AtomicU64,
    waiting: AtomicU64,
}

/// The queue of interactive commits and its writers. Dropping the last `PgStore` that
/// holds it closes the queue; the writers finish what they hold and stop.
pub(super) struct Queue {
    tx: mpsc::UnboundedSender<Job>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Queue {
    /// Starts `writers` writer tasks on the current runtime, committing with `store`
    /// (a `PgStore` without a queue, so the writers do not keep the queue open).
    pub(super) fn start(store: PgStore, writers: usize, max_group: usize) -> Arc<Queue> {
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Arc::new(Mutex::new(rx));
        let counters = Arc::new(Counters::default());
        for _ in 0..writers {
            let writer = Writer {
                store: store.clone(),
                rx: rx.clone(),
                max_group,
                counters: counters.clone(),
                carry: VecDeque::new(),
            };
            tokio::spawn(writer.run());
        }
        Arc::new(Queue { tx, counters })
    }

    /// Queues the batch and waits for its outcome; `Err(batch)` when the writers are
    /// gone (their runtime shut down), for the caller to commit it alone.
    pub(super) async fn commit(
        &self,
        batch: Batch,
    ) -> Result<Result<CommitReceipt, StoreError>, Batch> {
        let (reply, outcome) = oneshot::channel();
        self.counters.waiting.fetch_add(1, Ordering::Relaxed);
        if let Err(mpsc::error::SendError(job)) = self.tx.send(Job { batch, reply }) {
            self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(job.batch);
        }
        Ok(outcome.await.unwrap_or_else(|_| {
            Err(StoreError::Backend(
                "postgres: the group writer stopped before the commit's outcome was known".into(),
            ))
        }))
    }

    pub(super) fn stats(&self) -> GroupStats {
        GroupStats {
            groups: self.counters.groups.load(Ordering::Relaxed),
            grouped_batches: self.counters.grouped_batches.load(Ordering::Relaxed),
            fallbacks: self.counters.fallbacks.load(Ordering::Relaxed),
            waiting: self.counters.waiting.load(Ordering::Relaxed),
        }
    }
}

/// One writer task: takes a group, commits it, answers its callers.
struct Writer {
    store: PgStore,
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Job>>>,
    max_group: usize,
    counters: Arc<Counters>,
    /// Batches this writer took that overlapped its group: the first of its next ones.
    carry: VecDeque<Job>,
}

impl Writer {
    async fn run(mut self) {
        while let Some(group) = self.next_group().await {
            self.commit(group).await;
        }
    }

    /// The next group: the carried batches that fit first, in order, then what is
    /// queued. Waits for the queue only when nothing is carried; `None` once the
    /// queue is closed and empty.
    async fn next_group(&mut self) -> Option<Vec<Job>> {
        let mut footprint = Footprint::default();
        let mut group = Vec::new();
        let mut later = VecDeque::new();
        while let Some(job) = self.carry.pop_front() {
            if group.len() < self.max_group && footprint.admit(&job.batch) {
                group.push(job);
            } else {
                later.push_back(job);
            }
        }
        self.carry = later;
        let mut rx = if group.is_empty() {
            let mut rx = self.rx.lock().await;
            let first = rx.recv().await?;
            self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
            footprint.admit(&first.batch);
            group.push(first);
            rx
        } else {
            match self.rx.try_lock() {
                Ok(rx) => rx,
                // Another writer is taking from the queue: go with what is carried.
                Err(_) => return Some(group),
            }
        };
        // Take at most a group's worth from the queue, whether or not each fits.
        for _ in 0..self.max_group {
            if group.len() >= self.max_group {
                break;
            }
            let Ok(job) = rx.try_recv() else { break };
            self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
            if footprint.admit(&job.batch) {
                group.push(job);
            } else {
                self.carry.push_back(job);
            }
        }
        Some(group)
    }

    async fn commit(&self, group: Vec<Job>) {
        if group.len() == 1 {
            for job in group {
                let outcome = self.store.commit_alone(&job.batch).await;
                let _ = job.reply.send(outcome);
            }
            return;
        }
        let batches: Vec<&Batch> = group.iter().map(|j| &j.batch).collect();
        match self.store.try_commit(&batches).await {
            Ok(receipts) => {
                self.counters.groups.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .grouped_batches
                    .fetch_add(group.len() as u64, Ordering::Relaxed);
                for (job, receipt) in group.into_iter().zip(receipts) {
                    let _ = job.reply.send(Ok(receipt));
                }
            }
            // COMMIT itself failed: nobody knows whether it happened.
            Err(Failed::AtCommit(e)) => {
                for job in group {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
            Err(Failed::Before(_)) => {
                self.counters.fallbacks.fetch_add(1, Ordering::Relaxed);
                for job in group {
                    let outcome = self.store.commit_alone(&job.batch).await;
                    let _ = job.reply.send(outcome);
                }
            }
        }
    }
}

/// Why a transaction of one or more batches did not commit.
pub(super) enum Failed {
    /// Before COMMIT: rolled back, nothing written.
    Before(Attempt),
    /// COMMIT was sent and failed: the outcome is unknown.
    AtCommit(StoreError),
}

/// What the batches of a group touch; see the module doc.
#[derive(Default)]
struct Footprint {
    /// Records put, (kind, id).
    written: HashSet<(String, String)>,
    /// Records relied on unchanged.
    read: HashSet<(String, String)>,
    /// Unique keys, idempotency keys (tenant, key) and ledger transfer ids, each in
    /// its own namespace.
    names: HashSet<(u8, String, String)>,
}

impl Footprint {
    /// Adds the batch's footprint and answers true if it is disjoint from the group's;
    /// else adds nothing and answers false.
    fn admit(&mut self, batch: &Batch) -> bool {
        let puts = || {
            batch
                .puts
                .iter()
                .map(|p| (p.record.kind.clone(), p.record.id.clone()))
        };
        let reads = || {
            batch
                .unchanged
                .iter()
                .map(|u| (u.kind.clone(), u.id.clone()))
        };
        let names: Vec<(u8, String, String)> = batch
            .puts
            .iter()
            .flat_map(|p| p.record.unique_keys.iter())
            .map(|k| (0, k.clone(), String::new()))
            .chain(batch.idempotency.iter().map(idem_name))
            .chain(batch.ledger.iter().flat_map(|t| {
                let pending = match &t.phase {
                    stablecoin_core::ports::ledger::Phase::Post { pending_id }
                    | stablecoin_core::ports::ledger::Phase::Void { pending_id } => {
                        Some((2, pending_id.clone(), String::new()))
                    }
                    _ => None,
                };
                std::iter::once((2, t.id.clone(), String::new())).chain(pending)
            }))
            .collect();
        let clash = puts().any(|r| self.written.contains(&r) || self.read.contains(&r))
            || reads().any(|r| self.written.contains(&r))
            || names.iter().any(|n| self.names.contains(n));
        if clash {
            return false;
        }
        self.written.extend(puts());
        self.read.extend(reads());
        self.names.extend(names);
        true
    }
}

fn idem_name(i: &IdempotencyRecord) -> (u8, String, String) {
    (1, i.tenant.clone(), i.key.clone())
}

/// The batches of a group as one: everything concatenated in group order, but the
/// idempotency records, returned apart (a batch has at most one); and how many outbox
/// events each batch brought, to hand the sequence numbers back.
pub(super) fn merge<'a>(batches: &[&'a Batch]) -> (Batch, Vec<&'a IdempotencyRecord>, Vec<usize>) {
    let mut merged = Batch::default();
    let mut idempotency = Vec::new();
    let mut outbox_counts = Vec::with_capacity(batches.len());
    for b in batches {
        merged.unchanged.extend(b.unchanged.iter().cloned());
        merged.puts.extend(b.puts.iter().cloned());
        merged.accounts.extend(b.accounts.iter().cloned());
        merged.ledger.extend(b.ledger.iter().cloned());
        merged.outbox.extend(b.outbox.iter().cloned());
        idempotency.extend(b.idempotency.iter());
        outbox_counts.push(b.outbox.len());
    }
    (merged, idempotency, outbox_counts)
}

/// A merged commit's receipt handed back batch by batch.
pub(super) fn split(receipt: CommitReceipt, outbox_counts: &[usize]) -> Vec<CommitReceipt> {
    let mut seqs = receipt.outbox_seqs.into_iter();
    outbox_counts
        .iter()
        .map(|&n| CommitReceipt {
            outbox_seqs: seqs.by_ref().take(n).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablecoin_core::domain::time::Timestamp;
    use stablecoin_core::ports::store::{JsonText, Put, StoredRecord, Unchanged};

    fn put(kind: &str, id: &str, keys: &[&str]) -> Put {
        Put {
            record: StoredRecord {
                kind: kind.into(),
                id: id.into(),
                tenant: None,
                version: 0,
                created_at: Timestamp(0),
                status: None,
                subkind: None,
                due_at: None,
                lane: 0,
                unique_keys: keys.iter().map(|k| k.to_string()).collect(),
                body: JsonText::from_stored_text("null".into()),
            },
            expected_version: None,
        }
    }

    fn idem(tenant: &str, key: &str) -> IdempotencyRecord {
        IdempotencyRecord {
            tenant: tenant.into(),
            key: key.into(),
            request_hash: "h".into(),
            response: serde_json::Value::Null,
            created_at: Timestamp(0),
        }
    }

    #[test]
    fn a_group_holds_only_batches_that_touch_disjoint_things() {
        let mut f = Footprint::default();
        let a = Batch {
            puts: vec![put("op", "1", &["k1"])],
            unchanged: vec![Unchanged {
                kind: "wallet".into(),
                id: "w".into(),
                version: 3,
            }],
            idempotency: Some(idem("t", "i1")),
            ..Batch::default()
        };
        assert!(f.admit(&a));
        // Another batch relying on the same wallet, unchanged, is fine.
        let b = Batch {
            puts: vec![put("op", "2", &["k2"])],
            unchanged: a.unchanged.clone(),
            idempotency: Some(idem("t", "i2")),
            ..Batch::default()
        };
        assert!(f.admit(&b));
        // Each of these overlaps the group in one way, and is refused whole.
        let overlapping = [
            Batch {
                puts: vec![put("op", "1", &[])],
                ..Batch::default()
            },
            Batch {
                puts: vec![put("wallet", "w", &[])],
                ..Batch::default()
            },
            Batch {
                puts: vec![put("op", "3", &["k2"])],
                ..Batch::default()
            },
            Batch {
                puts: vec![put("op", "4", &[])],
                idempotency: Some(idem("t", "i1")),
                ..Batch::default()
            },
        ];
        for batch in &overlapping {
            assert!(!f.admit(batch), "{batch:?}");
        }
        // Refused batches left nothing behind: op 3 and op 4 alone still fit.
        assert!(f.admit(&Batch {
            puts: vec![put("op", "3", &[]), put("op", "4", &[])],
            ..Batch::default()
        }));
        // The same idempotency key of another tenant is another key.
        assert!(f.admit(&Batch {
            idempotency: Some(idem("u", "i1")),
            ..Batch::default()
        }));
    }

    #[test]
    fn a_merged_receipt_goes_back_batch_by_batch() {
        let receipt = CommitReceipt {
            outbox_seqs: vec![7, 8, 9, 10],
        };
        let parts = split(receipt, &[1, 0, 3]);
        let seqs: Vec<Vec<u64>> = parts.into_iter().map(|r| r.outbox_seqs).collect();
        assert_eq!(seqs, vec![vec![7], vec![], vec![8, 9, 10]]);
    }
}
