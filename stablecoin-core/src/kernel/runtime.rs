//! The workers' runtime: every product's background work behind one trait, run by one
//! loop (KERNEL.md §2.1, `kernel/runtime.rs`).
//!
//! Why: the wallet engine, escrow and checkout each have a `tick` (claim what is due,
//! advance it, report), and each embedder used to copy the server's loop to run them
//! side by side. A [`Worker`] is one such round; [`Runtime::run`] gives each worker a
//! loop of its own (so a slow product never holds up another's rounds), runs it again
//! at once while its rounds come back [`RoundReport::more_due`], and otherwise every
//! `interval`; [`Runtime::settle`] runs rounds until every worker is idle (tests,
//! examples, a CLI).
//!
//! With several nodes on one database, [`Runtime::singletons`] puts named jobs under a
//! lease ([`super::lease`]): the runtime keeps their leases, and a worker named among
//! them runs its rounds only on the node holding its lease (the others skip the round
//! and ask again after `interval`). Workers that claim due records need no lease.

use super::inbound::{InboundHandler, InboundRouter};
use super::lease::Leases;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What one round of a worker did, in the terms the runtime needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// Items the round moved (submitted, settled, credited, expired, ...); 0 is an idle
    /// round.
    pub progressed: usize,
    /// Errors met on single items (the round went on with the next one).
    pub errors: Vec<String>,
    /// The round stopped at its batch limit with work left: run again without pausing.
    pub more_due: bool,
}

impl RoundReport {
    /// Whether the round moved nothing (its errors aside).
    pub fn is_idle(&self) -> bool {
        self.progressed == 0
    }
}

/// One product's background work, one round at a time.
#[async_trait]
pub trait Worker: Send + Sync {
    /// A short name for logs and metrics (`wallets`, `escrow`, `checkout`, ...).
    fn name(&self) -> &str;
    /// One round: claim what is due, advance it, report. Errors on single items are
    /// reported, never returned: the next round tries again.
    async fn round(&self) -> RoundReport;
}

/// A product on the kernel: its background work ([`Worker`]) and its share of the inbound
/// transfers ([`InboundHandler`]). The wallet engine, escrow and checkout are each one.
pub trait Product: Worker + InboundHandler {}

impl<T: Worker + InboundHandler> Product for T {}

/// Called after every round with the worker's name and report (logs, metrics).
pub type RoundObserver = Arc<dyn Fn(&str, &RoundReport) + Send + Sync>;

/// The workers of one deployment and how often they run.
#[derive(Clone)]
pub struct Runtime {
    workers: Vec<Arc<dyn Worker>>,
    interval: Duration,
    observer: Option<RoundObserver>,
    singletons: Option<Singletons>,
}

/// The jobs under a lease, and this node's leases.
#[derive(Clone)]
struct Singletons {
    leases: Arc<Leases>,
    jobs: Vec<String>,
}

impl Runtime {
    /// `workers`, each run every `interval` when it has nothing due.
    pub fn new(workers: Vec<Arc<dyn Worker>>, interval: Duration) -> Self {
        Runtime {
            workers,
            interval,
            observer: None,
            singletons: None,
        }
    }

    /// Puts `jobs` under `leases` when the runtime [runs](Runtime::run): it keeps their
    /// leases (taken, renewed, released at shutdown: [`Leases::keep`]), and a worker
    /// whose name is among `jobs` runs a round only while this node holds its lease.
    /// `jobs` may name work that runs outside the runtime (a periodic job that asks
    /// [`Leases::holds`] itself). A renewal's store error reaches the observer as an
    /// error of the worker `lease:<job>`.
    pub fn singletons(mut self, leases: Arc<Leases>, jobs: Vec<String>) -> Self {
        self.singletons = Some(Singletons { leases, jobs });
        self
    }

    /// The one call that runs products side by side: each product's worker, plus
    /// `router` feeding every product's share of the inbound transfers (one scan of each
    /// rail page for all of them; the products' own rounds never scan). `router` comes
    /// with its rails and store and usually no handlers; the products are added to it.
    pub fn products(
        router: InboundRouter,
        products: Vec<Arc<dyn Product>>,
        interval: Duration,
    ) -> Self {
        let mut router = router;
        let mut workers: Vec<Arc<dyn Worker>> = Vec::with_capacity(products.len() + 1);
        for p in products {
            router = router.with_handler(p.clone());
            workers.push(p);
        }
        workers.insert(0, Arc::new(router));
        Runtime::new(workers, interval)
    }

    /// Calls `observer` after every round of every worker.
    pub fn observe(mut self, observer: RoundObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The workers' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.workers.iter().map(|w| w.name().to_string()).collect()
    }

    /// Runs every worker in a loop of its own (a task each, so they use every thread
    /// of the runtime) until `shutdown` turns true; each finishes the round it is in
    /// (graceful shutdown). A panic in a worker's round ends every loop and is resumed
    /// here, so a supervisor (the server's) can count it and start again.
    pub async fn run(&self, shutdown: watch::Receiver<bool>) {
        let mut loops = tokio::task::JoinSet::new();
        if let Some(s) = &self.singletons {
            let (s, observer, shutdown) = (s.clone(), self.observer.clone(), shutdown.clone());
            loops.spawn(async move {
                s.leases
                    .keep(&s.jobs, shutdown, |job, e| {
                        if let Some(observe) = &observer {
                            let report = RoundReport {
                                errors: vec![e.to_string()],
                                ..Default::default()
                            };
                            observe(&format!("lease:{job}"), &report);
                        }
                    })
                    .await
            });
        }
        for worker in &self.workers {
            let lease = self
                .singletons
                .as_ref()
                .filter(|s| s.jobs.iter().any(|j| j == worker.name()))
                .map(|s| s.leases.clone());
            loops.spawn(run_loop(
                worker.clone(),
                lease,
                self.interval,
                self.observer.clone(),
                shutdown.clone(),
            ));
        }
        while let Some(ended) = loops.join_next().await {
            if let Err(e) = ended
                && e.is_panic()
            {
                loops.abort_all();
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }

    /// Runs rounds of every worker, one after another, until a pass over all of them
    /// moves nothing (or `max_passes`); the reports of every round, summed per worker.
    /// For tests and examples: with `poll_interval_ms` 0 (or a moved clock) it drives
    /// everything due to its end.
    pub async fn settle(&self, max_passes: usize) -> Vec<(String, RoundReport)> {
        let mut totals: Vec<(String, RoundReport)> = self
            .workers
            .iter()
            .map(|w| (w.name().to_string(), RoundReport::default()))
            .collect();
        for _ in 0..max_passes {
            let mut idle = true;
            for (worker, (_, total)) in self.workers.iter().zip(totals.iter_mut()) {
                let r = worker.round().await;
                if let Some(observe) = &self.observer {
                    observe(worker.name(), &r);
                }
                idle &= r.is_idle();
                total.progressed += r.progressed;
                total.errors.extend(r.errors);
                total.more_due = r.more_due;
            }
            if idle {
                break;
            }
        }
        totals
    }
}

/// One worker's loop: a round, then at once again while it comes back `more_due`, else
/// after `interval` (or at shutdown). Under a `lease`, a round only while this node
/// holds it.
async fn run_loop(
    worker: Arc<dyn Worker>,
    lease: Option<Arc<Leases>>,
    interval: Duration,
    observer: Option<RoundObserver>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        if let Some(leases) = &lease
            && !leases.holds(worker.name())
        {
            // Another node runs it (or nobody yet): ask again after the interval.
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        let report = worker.round().await;
        if let Some(observe) = &observer {
            observe(worker.name(), &report);
        }
        if report.more_due {
            // A full claim: work is waiting, go again (letting other tasks run).
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts down `left` items, `batch` per round; `more_due` while a full batch ran.
    struct Countdown {
        name: &'static str,
        left: AtomicUsize,
        batch: usize,
        rounds: AtomicUsize,
    }

    #[async_trait]
    impl Worker for Countdown {
        fn name(&self) -> &str {
            self.name
        }
        async fn round(&self) -> RoundReport {
            self.rounds.fetch_add(1, Ordering::SeqCst);
            let left = self.left.load(Ordering::SeqCst);
            let take = left.min(self.batch);
            self.left.store(left - take, Ordering::SeqCst);
            RoundReport {
                progressed: take,
                errors: Vec::new(),
                more_due: take == self.batch && take > 0,
            }
        }
    }

    fn countdown(name: &'static str, left: usize, batch: usize) -> Arc<Countdown> {
        Arc::new(Countdown {
            name,
            left: AtomicUsize::new(left),
            batch,
            rounds: AtomicUsize::new(0),
        })
    }

    #[tokio::test]
    async fn settle_runs_every_worker_until_all_are_idle() {
        let a = countdown("a", 5, 2);
        let b = countdown("b", 1, 10);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let rt = Runtime::new(vec![a.clone(), b.clone()], Duration::from_secs(60)).observe(
            Arc::new(move |name, r| log.lock().unwrap().push((name.to_string(), r.progressed))),
        );
        assert_eq!(rt.names(), ["a", "b"]);
        let totals = rt.settle(10).await;
        assert_eq!(totals[0].1.progressed, 5);
        assert_eq!(totals[1].1.progressed, 1);
        assert_eq!(a.left.load(Ordering::SeqCst), 0);
        // a: 2, 2, 1, 0 (the idle pass); b: 1, 0, 0, 0.
        assert_eq!(a.rounds.load(Ordering::SeqCst), 4);
        assert_eq!(seen.lock().unwrap().len(), 8);
    }

    #[tokio::test]
    async fn run_gives_each_worker_its_loop_and_stops_on_shutdown() {
        // `a` has a backlog (rounds come back more_due: no pause); `b` is idle and
        // sleeps its interval; both stop when told.
        let a = countdown("a", 1_000, 10);
        let b = countdown("b", 0, 10);
        let rt = Runtime::new(vec![a.clone(), b.clone()], Duration::from_millis(5));
        let (stop, shutdown) = watch::channel(false);
        let running = tokio::spawn({
            let rt = rt.clone();
            async move { rt.run(shutdown).await }
        });
        for _ in 0..200 {
            if a.left.load(Ordering::SeqCst) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(a.left.load(Ordering::SeqCst), 0, "the backlog drained");
        assert!(
            b.rounds.load(Ordering::SeqCst) >= 1,
            "the idle worker ran too"
        );
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), running)
            .await
            .expect("stops on shutdown")
            .unwrap();
    }

    #[tokio::test]
    async fn a_singleton_runs_on_the_one_node_holding_its_lease() {
        use crate::kernel::lease::Leases;
        use crate::memory::MemoryStore;
        let store = Arc::new(MemoryStore::new());
        let clock: Arc<dyn crate::ports::Clock> = Arc::new(crate::ports::SystemClock);
        let node = |id: &str| {
            Arc::new(Leases::new(
                store.clone(),
                clock.clone(),
                id.into(),
                Duration::from_secs(60),
            ))
        };
        let (la, lb) = (node("a"), node("b"));
        // Two nodes, each with a singleton `scan` and an ordinary `claims` worker.
        let (scan_a, claims_a) = (countdown("scan", 0, 1), countdown("claims", 0, 1));
        let (scan_b, claims_b) = (countdown("scan", 0, 1), countdown("claims", 0, 1));
        let jobs = vec!["scan".to_string()];
        let rt_a = Runtime::new(
            vec![scan_a.clone(), claims_a.clone()],
            Duration::from_millis(5),
        )
        .singletons(la.clone(), jobs.clone());
        let rt_b = Runtime::new(
            vec![scan_b.clone(), claims_b.clone()],
            Duration::from_millis(5),
        )
        .singletons(lb.clone(), jobs);
        // a's keeper runs first, so a takes the lease.
        let (stop, shutdown) = watch::channel(false);
        let run_a = tokio::spawn({
            let (rt, s) = (rt_a.clone(), shutdown.clone());
            async move { rt.run(s).await }
        });
        for _ in 0..400 {
            if la.holds("scan") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(la.holds("scan"));
        let run_b = tokio::spawn({
            let rt = rt_b.clone();
            async move { rt.run(shutdown).await }
        });
        for _ in 0..400 {
            if claims_b.rounds.load(Ordering::SeqCst) >= 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            claims_b.rounds.load(Ordering::SeqCst) >= 5,
            "b's own workers run"
        );
        assert!(
            scan_a.rounds.load(Ordering::SeqCst) >= 1,
            "the holder runs the job"
        );
        assert_eq!(
            scan_b.rounds.load(Ordering::SeqCst),
            0,
            "the other never does"
        );
        assert!(!lb.holds("scan"));
        stop.send(true).unwrap();
        for run in [run_a, run_b] {
            tokio::time::timeout(Duration::from_secs(5), run)
                .await
                .expect("stops on shutdown")
                .unwrap();
        }
        assert!(!la.holds("scan"), "released at shutdown");
    }

    struct Panics;

    #[async_trait]
    impl Worker for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        async fn round(&self) -> RoundReport {
            panic!("a bug in one worker");
        }
    }

    #[tokio::test]
    async fn a_panic_in_one_worker_ends_the_run_and_reaches_the_caller() {
        let idle = countdown("idle", 0, 1);
        let rt = Runtime::new(vec![idle, Arc::new(Panics)], Duration::from_millis(5));
        let (_stop, shutdown) = watch::channel(false);
        let ended = tokio::spawn(async move { rt.run(shutdown).await }).await;
        assert!(ended.unwrap_err().is_panic());
    }
}
