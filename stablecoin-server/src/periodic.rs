//! The loop of the server's periodic jobs (retention, chain reconciliation): a pass at
//! start, then one every interval, until the server stops; on the node holding the
//! job's lease only (`crate::workers::SINGLETONS`).

use std::future::Future;
use tokio::sync::watch;
use tokio::task::JoinError;

/// Runs `pass` at once and then every `interval` until `stop` turns true, handing each
/// outcome to `done`; only while this node holds the lease of `job` (else it asks again
/// every renewal period, so a node that takes the job over runs it soon after). Each pass is a task of its own: a panic in it (a store or adapter
/// bug) reaches `done` as a `JoinError` instead of ending the job, and a pass still
/// going when the server stops is abandoned (the jobs are reads or atomic deletes, so
/// nothing is left half done).
pub(crate) async fn every<T, F, Fut>(
    job: (&str, &stablecoin_core::kernel::Leases),
    interval: std::time::Duration,
    mut stop: watch::Receiver<bool>,
    pass: F,
    mut done: impl FnMut(Result<T, JoinError>),
) where
    F: Fn() -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    loop {
        if *stop.borrow() {
            return;
        }
        let (name, leases) = job;
        if !leases.holds(name) {
            tokio::select! {
                _ = tokio::time::sleep(leases.renew_every()) => {}
                changed = stop.changed() => if changed.is_err() { return },
            }
            continue;
        }
        let mut task = tokio::spawn(pass());
        let outcome = tokio::select! {
            outcome = &mut task => outcome,
            _ = stop.changed() => {
                task.abort();
                return;
            }
        };
        done(outcome);
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            changed = stop.changed() => if changed.is_err() { return },
        }
    }
}
