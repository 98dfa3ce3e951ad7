//! Singleton jobs under a lease: work that must run on one node at a time (the inbound
//! router that scans the chains, the chain reconciliation, the retention purges) when N
//! nodes share one database (KERNEL.md §2.1).
//!
//! Why a lease and not a claim: the workers that claim due records (`Store::claim_due`)
//! are safe on every node, since each record goes to one claimant. A chain scan or a
//! reconciliation has no record to claim: two nodes would both scan every page and
//! both compare every account. So each such job has one [`LeaseRecord`] (kind `lease`,
//! id the job's name) naming the node that runs it and until when.
//!
//! How: taking or renewing a lease is a read and one versioned commit of that record
//! (a [`Put`](crate::ports::store::Put) with the version read, the check every store
//! applies), so of two nodes that race for it exactly one commit succeeds, on memory,
//! SQLite and PostgreSQL alike and with no table of its own. A node runs the job only while it holds the lease by its
//! own clock ([`Leases::holds`]: the expiry it wrote is still ahead); [`Leases::keep`]
//! renews every lease a third of the lease's length apart, so the lease never runs out
//! while the node is alive; a node that dies (or loses the database) stops renewing,
//! and after the expiry another node's next renewal takes the job over. A node that
//! stops cleanly releases its leases, so another takes them at once.
//!
//! Limits, said plainly: the nodes' clocks must agree to well within the lease's length
//! (NTP does); and a round that started while the lease was held may still be running
//! after it expired (a pause longer than the lease). The jobs under a lease are the
//! ones whose double run wastes work but moves no money twice (their commits are
//! versioned, and deposits are credited once by id): the lease keeps them from running
//! twice in the normal course, it is not what keeps money exact.

use crate::domain::time::Timestamp;
use crate::ports::kinds::kind;
use crate::ports::record::{Record, Versioned, get_record};
use crate::ports::services::Clock;
use crate::ports::store::{Batch, Store, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The stored lease of one singleton job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// The job's name (the record's id).
    pub job: String,
    /// The node that holds it; `None` once released.
    pub holder: Option<String>,
    /// Until when the holder holds it; from then on any node may take it.
    pub expires_at: Timestamp,
    /// When the holder took it (renewals keep this).
    pub taken_at: Timestamp,
    /// When the lease was first written.
    pub created_at: Timestamp,
}

impl Record for LeaseRecord {
    const KIND: &'static str = kind::LEASE;
    fn id(&self) -> String {
        self.job.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// Who holds a lease after [`Leases::acquire`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseStatus {
    /// This node holds it until `until`.
    Held {
        /// The expiry this node wrote.
        until: Timestamp,
    },
    /// Another node holds it (or won the race for it).
    Elsewhere {
        /// That node's id (empty when the record could not be read again after a lost
        /// race).
        holder: String,
        /// Its expiry.
        until: Timestamp,
    },
}

/// One node's leases of the singleton jobs, over the store every node shares.
pub struct Leases {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    node: String,
    ttl_ms: i64,
    /// The jobs this node holds, with the expiry it wrote last.
    held: Mutex<BTreeMap<String, Timestamp>>,
}

impl Leases {
    /// The leases of node `node` (unique per node: two nodes with one id would both
    /// run the jobs), each held for `ttl` after its last renewal (at least 3 ms).
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, node: String, ttl: Duration) -> Self {
        Leases {
            store,
            clock,
            node,
            ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX).max(3),
            held: Mutex::new(BTreeMap::new()),
        }
    }

    /// This node's id.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// How long a lease lasts after its last renewal.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms as u64)
    }

    /// How often [`Leases::keep`] renews: a third of the lease, so two renewals may fail
    /// before it runs out.
    pub fn renew_every(&self) -> Duration {
        Duration::from_millis((self.ttl_ms / 3).max(1) as u64)
    }

    /// Whether this node holds `job`'s lease now: it wrote an expiry that is still
    /// ahead by this node's clock. Reads no store: the job's loop asks before each round.
    pub fn holds(&self, job: &str) -> bool {
        let now = self.clock.now();
        self.lock().get(job).is_some_and(|until| now < *until)
    }

    /// The jobs this node holds now, with their expiry, by name.
    pub fn held(&self) -> Vec<(String, Timestamp)> {
        let now = self.clock.now();
        self.lock()
            .iter()
            .filter(|(_, until)| now < **until)
            .map(|(job, until)| (job.clone(), *until))
            .collect()
    }

    /// Takes `job`'s lease if it is free, released or expired, or renews it if this node
    /// holds it: one read and at most one versioned commit. A lost race is
    /// [`LeaseStatus::Elsewhere`], never an error. A store error leaves what this node
    /// knew: if it held the lease it still does until the expiry it wrote (nobody else
    /// can take it before), and then [`Leases::holds`] turns false by itself.
    pub async fn acquire(&self, job: &str) -> Result<LeaseStatus, StoreError> {
        let current = self.read(job).await?;
        self.decide(job, current).await
    }

    /// Releases `job`'s lease if this node holds it (a clean stop), so another node
    /// takes it at its next renewal instead of after the expiry. A lease held by
    /// another node is left alone.
    pub async fn release(&self, job: &str) -> Result<(), StoreError> {
        self.lock().remove(job);
        let Some(current) = self.read(job).await? else {
            return Ok(());
        };
        if current.record.holder.as_deref() != Some(self.node.as_str()) {
            return Ok(());
        }
        let now = self.clock.now();
        let released = LeaseRecord {
            holder: None,
            expires_at: now,
            ..current.record
        };
        match self.write(&released, Some(current.version)).await {
            // Taken meanwhile (it had expired): it is not ours to release.
            Err(StoreError::VersionConflict { .. }) => Ok(()),
            other => other,
        }
    }

    /// Keeps `jobs`' leases until `shutdown` turns true: tries to take or renew each one
    /// at once and then every [`Leases::renew_every`], handing store errors to
    /// `on_error` (the next renewal tries again); at shutdown releases the ones held.
    pub async fn keep(
        &self,
        jobs: &[String],
        mut shutdown: watch::Receiver<bool>,
        on_error: impl Fn(&str, &StoreError),
    ) {
        loop {
            if *shutdown.borrow() {
                break;
            }
            for job in jobs {
                if let Err(e) = self.acquire(job).await {
                    on_error(job, &e);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.renew_every()) => {}
                changed = shutdown.changed() => if changed.is_err() { break },
            }
        }
        for job in jobs {
            if self.lock().contains_key(job)
                && let Err(e) = self.release(job).await
            {
                on_error(job, &e);
            }
        }
    }

    /// The decision on the lease as read (`current`): renew, take, or leave to its
    /// holder. Separate from the read so a test can hand two nodes the same snapshot.
    async fn decide(
        &self,
        job: &str,
        current: Option<Versioned<LeaseRecord>>,
    ) -> Result<LeaseStatus, StoreError> {
        let now = self.clock.now();
        let until = now.plus_millis(self.ttl_ms);
        let (next, expected) = match current {
            None => (
                LeaseRecord {
                    job: job.to_string(),
                    holder: Some(self.node.clone()),
                    expires_at: until,
                    taken_at: now,
                    created_at: now,
                },
                None,
            ),
            Some(Versioned { record, version }) => {
                let mine = record.holder.as_deref() == Some(self.node.as_str());
                let live = now < record.expires_at;
                match &record.holder {
                    Some(other) if !mine && live => {
                        self.lock().remove(job);
                        return Ok(LeaseStatus::Elsewhere {
                            holder: other.clone(),
                            until: record.expires_at,
                        });
                    }
                    _ => (
                        LeaseRecord {
                            holder: Some(self.node.clone()),
                            expires_at: until,
                            // A renewal keeps when it was taken; a take starts anew.
                            taken_at: if mine && live { record.taken_at } else { now },
                            ..record
                        },
                        Some(version),
                    ),
                }
            }
        };
        match self.write(&next, expected).await {
            Ok(()) => {
                self.lock().insert(job.to_string(), until);
                Ok(LeaseStatus::Held { until })
            }
            Err(StoreError::VersionConflict { .. } | StoreError::UniqueViolation { .. }) => {
                // Another node wrote it since the read: it holds it now.
                self.lock().remove(job);
                Ok(match self.read(job).await.ok().flatten() {
                    Some(v) => LeaseStatus::Elsewhere {
                        holder: v.record.holder.unwrap_or_default(),
                        until: v.record.expires_at,
                    },
                    None => LeaseStatus::Elsewhere {
                        holder: String::new(),
                        until: now,
                    },
                })
            }
            Err(e) => Err(e),
        }
    }

    async fn read(&self, job: &str) -> Result<Option<Versioned<LeaseRecord>>, StoreError> {
        get_record::<LeaseRecord>(&*self.store, job)
            .await
            .map_err(|e| match e {
                crate::ports::record::RecordError::Store(e) => e,
                other => StoreError::Backend(other.to_string()),
            })
    }

    async fn write(&self, lease: &LeaseRecord, expected: Option<u64>) -> Result<(), StoreError> {
        let put = match expected {
            None => lease.insert(),
            Some(v) => lease.update(v),
        }
        .map_err(|e| StoreError::Backend(e.to_string()))?;
        self.store
            .commit(Batch {
                puts: vec![put],
                background: true,
                ..Default::default()
            })
            .await
            .map(|_| ())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Timestamp>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A node id for a process that was given none: `<hostname>-<pid>-<8 hex digits>`, so two
/// processes never share one, even two containers that are both pid 1 on hosts of one
/// name.
pub fn default_node_id(entropy: &dyn crate::ports::services::Entropy) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".into());
    let mut r = [0u8; 4];
    entropy.fill(&mut r);
    let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
    format!("{host}-{}-{hex}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{ManualClock, MemoryStore};

    const TTL: i64 = 3_000;
    const JOB: &str = "inbound";

    struct World {
        store: Arc<MemoryStore>,
        clock: Arc<ManualClock>,
    }

    impl World {
        fn new() -> Self {
            World {
                store: Arc::new(MemoryStore::new()),
                clock: Arc::new(ManualClock::new(Timestamp(1_000_000))),
            }
        }
        fn node(&self, id: &str) -> Leases {
            Leases::new(
                self.store.clone(),
                self.clock.clone(),
                id.into(),
                Duration::from_millis(TTL as u64),
            )
        }
        fn now(&self) -> Timestamp {
            self.clock.now()
        }
        async fn stored(&self) -> Versioned<LeaseRecord> {
            get_record::<LeaseRecord>(&*self.store, JOB)
                .await
                .unwrap()
                .unwrap()
        }
    }

    fn held(until: Timestamp) -> LeaseStatus {
        LeaseStatus::Held { until }
    }

    fn elsewhere(holder: &str, until: Timestamp) -> LeaseStatus {
        LeaseStatus::Elsewhere {
            holder: holder.into(),
            until,
        }
    }

    #[tokio::test]
    async fn a_free_lease_is_taken_and_the_other_node_sees_its_holder() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        assert!(!a.holds(JOB), "nothing is held before a take");
        let until = w.now().plus_millis(TTL);
        assert_eq!(a.acquire(JOB).await.unwrap(), held(until));
        assert!(a.holds(JOB));
        assert_eq!(a.held(), vec![(JOB.to_string(), until)]);
        assert_eq!(b.acquire(JOB).await.unwrap(), elsewhere("a", until));
        assert!(!b.holds(JOB));
        assert!(b.held().is_empty());
        let s = w.stored().await;
        assert_eq!(s.version, 1);
        assert_eq!(s.record.holder.as_deref(), Some("a"));
        assert_eq!(s.record.taken_at, w.now());
    }

    #[tokio::test]
    async fn the_holder_renews_and_keeps_when_it_took_the_lease() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        let taken = w.now();
        a.acquire(JOB).await.unwrap();
        for _ in 0..5 {
            w.clock.advance_ms(TTL / 3);
            let until = w.now().plus_millis(TTL);
            assert_eq!(a.acquire(JOB).await.unwrap(), held(until));
            assert!(a.holds(JOB));
            assert_eq!(b.acquire(JOB).await.unwrap(), elsewhere("a", until));
        }
        let s = w.stored().await;
        assert_eq!(s.version, 6, "one insert and five renewals");
        assert_eq!(s.record.taken_at, taken, "renewals keep the take time");
    }

    #[tokio::test]
    async fn nobody_takes_a_live_lease_and_anyone_takes_it_at_its_expiry() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        let first = w.now().plus_millis(TTL);
        a.acquire(JOB).await.unwrap();
        // One millisecond before the expiry: still a's, for a and for b.
        w.clock.set(first.plus_millis(-1));
        assert!(a.holds(JOB));
        assert_eq!(b.acquire(JOB).await.unwrap(), elsewhere("a", first));
        // At the expiry a stops by itself, without any store call, and b takes it.
        w.clock.set(first);
        assert!(!a.holds(JOB), "an expired lease is not held");
        assert!(a.held().is_empty());
        let second = first.plus_millis(TTL);
        assert_eq!(b.acquire(JOB).await.unwrap(), held(second));
        assert!(b.holds(JOB));
        // a comes back (a long pause): it sees b and does not run the job.
        assert_eq!(a.acquire(JOB).await.unwrap(), elsewhere("b", second));
        assert!(!a.holds(JOB));
        let s = w.stored().await;
        assert_eq!(s.record.holder.as_deref(), Some("b"));
        assert_eq!(s.record.taken_at, first, "a take starts anew");
    }

    #[tokio::test]
    async fn a_holder_whose_lease_expired_untaken_takes_it_again() {
        let w = World::new();
        let a = w.node("a");
        a.acquire(JOB).await.unwrap();
        w.clock.advance_ms(TTL * 2);
        assert!(!a.holds(JOB));
        let until = w.now().plus_millis(TTL);
        assert_eq!(a.acquire(JOB).await.unwrap(), held(until));
        assert_eq!(w.stored().await.record.taken_at, w.now(), "taken anew");
    }

    #[tokio::test]
    async fn of_two_nodes_deciding_on_the_same_read_exactly_one_takes_the_lease() {
        for expired_first in [false, true] {
            let w = World::new();
            let (a, b, c) = (w.node("a"), w.node("b"), w.node("c"));
            if expired_first {
                // A lease of a third node that ran out: both a and b may take it.
                c.acquire(JOB).await.unwrap();
                w.clock.advance_ms(TTL);
            }
            // Both read the same state, then both commit: the version check lets one.
            let snapshot = a.read(JOB).await.unwrap();
            let ra = a.decide(JOB, snapshot.clone()).await.unwrap();
            let rb = b.decide(JOB, snapshot).await.unwrap();
            let until = w.now().plus_millis(TTL);
            assert_eq!(ra, held(until), "expired_first={expired_first}");
            assert_eq!(rb, elsewhere("a", until), "expired_first={expired_first}");
            assert!(a.holds(JOB) && !b.holds(JOB) && !c.holds(JOB));
        }
    }

    #[tokio::test]
    async fn a_renewal_from_a_stale_read_loses_to_the_node_that_took_the_lease() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        a.acquire(JOB).await.unwrap();
        w.clock.advance_ms(TTL);
        // a read its own (expired) lease, then b took it before a's commit.
        let stale = a.read(JOB).await.unwrap();
        let until = w.now().plus_millis(TTL);
        assert_eq!(b.acquire(JOB).await.unwrap(), held(until));
        assert_eq!(a.decide(JOB, stale).await.unwrap(), elsewhere("b", until));
        assert!(!a.holds(JOB) && b.holds(JOB));
    }

    #[tokio::test]
    async fn a_release_frees_the_lease_at_once_and_only_the_holder_releases() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        a.acquire(JOB).await.unwrap();
        // b releasing a's lease changes nothing.
        b.release(JOB).await.unwrap();
        assert!(a.holds(JOB));
        assert_eq!(w.stored().await.record.holder.as_deref(), Some("a"));
        // a releases: b takes it before the old expiry.
        a.release(JOB).await.unwrap();
        assert!(!a.holds(JOB));
        let s = w.stored().await;
        assert_eq!(s.record.holder, None);
        let until = w.now().plus_millis(TTL);
        assert_eq!(b.acquire(JOB).await.unwrap(), held(until));
        // Releasing a job never taken, or twice, is a no-op.
        a.release("never-taken").await.unwrap();
        a.release(JOB).await.unwrap();
        assert!(b.holds(JOB));
    }

    #[tokio::test]
    async fn a_store_error_keeps_the_lease_only_until_the_expiry_written() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        let until = w.now().plus_millis(TTL);
        a.acquire(JOB).await.unwrap();
        w.clock.advance_ms(TTL / 3);
        w.store.fail_next_commits(1);
        assert!(matches!(a.acquire(JOB).await, Err(StoreError::Backend(_))));
        assert!(a.holds(JOB), "nobody can take it before the expiry a wrote");
        assert_eq!(a.held(), vec![(JOB.to_string(), until)]);
        w.clock.set(until);
        assert!(!a.holds(JOB), "then a stops by itself");
        assert_eq!(b.acquire(JOB).await.unwrap(), held(until.plus_millis(TTL)));
        // A failed first take leaves nothing held.
        w.store.fail_next_commits(1);
        assert!(a.acquire("other").await.is_err());
        assert!(!a.holds("other"));
    }

    #[tokio::test]
    async fn leases_of_different_jobs_are_independent() {
        let w = World::new();
        let (a, b) = (w.node("a"), w.node("b"));
        a.acquire("inbound").await.unwrap();
        b.acquire("retention").await.unwrap();
        assert!(matches!(
            a.acquire("retention").await.unwrap(),
            LeaseStatus::Elsewhere { .. }
        ));
        assert!(a.holds("inbound") && !a.holds("retention"));
        assert!(b.holds("retention") && !b.holds("inbound"));
    }

    #[tokio::test]
    async fn keep_takes_renews_and_releases_at_shutdown() {
        let w = World::new();
        let clock: Arc<dyn Clock> = Arc::new(crate::ports::SystemClock);
        let a = Arc::new(Leases::new(
            w.store.clone(),
            clock.clone(),
            "a".into(),
            Duration::from_millis(300),
        ));
        let b = Leases::new(
            w.store.clone(),
            clock,
            "b".into(),
            Duration::from_millis(300),
        );
        let jobs = vec!["x".to_string(), "y".to_string()];
        let (stop, shutdown) = watch::channel(false);
        let keeper = tokio::spawn({
            let (a, jobs) = (a.clone(), jobs.clone());
            async move { a.keep(&jobs, shutdown, |_, _| {}).await }
        });
        // The keeper's first pass takes both.
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if a.holds("x") && a.holds("y") {
                break;
            }
        }
        assert!(a.holds("x") && a.holds("y"));
        assert!(matches!(
            b.acquire("x").await.unwrap(),
            LeaseStatus::Elsewhere { .. }
        ));
        stop.send(true).unwrap();
        keeper.await.unwrap();
        assert!(!a.holds("x") && !a.holds("y"));
        // Released: b takes both at once.
        assert!(matches!(
            b.acquire("x").await.unwrap(),
            LeaseStatus::Held { .. }
        ));
        assert!(matches!(
            b.acquire("y").await.unwrap(),
            LeaseStatus::Held { .. }
        ));
    }

    #[test]
    fn a_default_node_id_names_host_and_process_and_differs_each_time() {
        let e = crate::memory::OsEntropy;
        let (x, y) = (default_node_id(&e), default_node_id(&e));
        assert_ne!(x, y);
        assert!(x.contains(&format!("-{}-", std::process::id())), "{x}");
    }
}
