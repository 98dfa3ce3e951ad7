//! The server's workers on the kernel's runtime ([`stablecoin_core::kernel::Runtime`]):
//! the one inbound router (every product's deposits), the wallet engine's two claim
//! lanes, escrow and checkout, each a loop of its own.
//!
//! Why the lanes are two workers here (an embedder can run the whole [`Engine`] as one):
//! under load the submissions queue is long, and in one loop it would keep the polls
//! (whose money is already on its way) waiting behind it. Their reports feed the
//! metrics. Escrow and checkout used to run inside the advance lane's loop, one after
//! the other; as workers of their own, a slow round of one no longer delays the others.
//!
//! With several nodes on one database, the jobs of [`SINGLETONS`] run on one node at a
//! time: the runtime keeps their leases ([`stablecoin_core::kernel::lease`]); the
//! claim lanes, escrow, checkout and the webhook dispatcher claim due records and run
//! on every node.
//!
//! [`Engine`]: stablecoin_core::engine::Engine

use crate::state::AppState;
use async_trait::async_trait;
use stablecoin_core::engine::{LANE_ADVANCE, LANE_SUBMIT, TickReport, WALLET_PRODUCT};
use stablecoin_core::kernel::{InboundHandler, InboundRouter, RoundReport, Runtime, Worker};
use std::sync::Arc;
use std::time::Duration;

/// One claim lane of the wallet engine; the advance lane also runs the housekeeping
/// (due SMS).
struct WalletLane {
    state: AppState,
    lane: u8,
}

#[async_trait]
impl Worker for WalletLane {
    fn name(&self) -> &str {
        if self.lane == LANE_SUBMIT {
            "wallets:submit"
        } else {
            "wallets:advance"
        }
    }

    async fn round(&self) -> RoundReport {
        let mut report = self.state.engine.tick_lane(self.lane).await;
        if self.lane == LANE_ADVANCE {
            self.state.engine.tick_housekeeping(&mut report).await;
        }
        self.state.metrics.tick(&report);
        report.into()
    }
}

/// A product engine the state holds by value, run as a worker through the state.
struct Held {
    state: AppState,
    name: &'static str,
    pick: for<'a> fn(&'a AppState) -> Option<&'a dyn Worker>,
}

#[async_trait]
impl Worker for Held {
    fn name(&self) -> &str {
        self.name
    }

    async fn round(&self) -> RoundReport {
        match (self.pick)(&self.state) {
            Some(worker) => worker.round().await,
            None => RoundReport::default(),
        }
    }
}

/// The one inbound router of every product (wallets, escrow when enabled, checkout):
/// one scan of each rail page per round feeds them all.
struct Inbound {
    state: AppState,
    router: InboundRouter,
}

#[async_trait]
impl Worker for Inbound {
    fn name(&self) -> &str {
        INBOUND
    }

    async fn round(&self) -> RoundReport {
        let r = self.router.pump().await;
        let wallet = r.of(WALLET_PRODUCT);
        // The wallet deposits feed the transition metrics as the wallet lanes' did.
        self.state.metrics.tick(&TickReport {
            deposits: wallet.credited,
            polled: wallet.detected,
            errors: r.errors.clone(),
            ..Default::default()
        });
        RoundReport {
            progressed: r.moved(),
            more_due: r.more_due,
            errors: r.errors,
        }
    }
}

fn inbound(state: &AppState) -> Arc<dyn Worker> {
    let engine = &state.engine;
    let mut handlers: Vec<Arc<dyn InboundHandler>> = vec![Arc::new(engine.clone())];
    if let Some(escrow) = &state.escrow {
        handlers.push(Arc::new(escrow.clone()));
    }
    handlers.push(Arc::new(state.checkout.clone()));
    let router = handlers.into_iter().fold(
        engine.kernel().inbound_router(engine.config().batch_limit),
        InboundRouter::with_handler,
    );
    Arc::new(Inbound {
        state: state.clone(),
        router,
    })
}

/// The chain scan (the inbound router).
pub const INBOUND: &str = "inbound";
/// The comparison of the ledger with the chains (`crate::chain_reconciliation`).
pub const RECONCILIATION: &str = "reconciliation";
/// The purges (`crate::retention`).
pub const RETENTION: &str = "retention";

/// The jobs that run on one node at a time, each under a lease: they scan or compare
/// everything instead of claiming due records, so on two nodes each would do all the
/// work twice (two scans of every chain page, two reconciliations, two purges racing).
pub const SINGLETONS: [&str; 3] = [INBOUND, RECONCILIATION, RETENTION];

/// The singleton jobs this node's configuration runs (a disabled job takes no lease).
fn singletons(state: &AppState) -> Vec<String> {
    let on = |job: &str| match job {
        RECONCILIATION => state.config.reconciliation.enabled,
        RETENTION => state.config.retention.enabled,
        _ => true,
    };
    SINGLETONS
        .iter()
        .filter(|job| on(job))
        .map(|job| job.to_string())
        .collect()
}

/// The runtime of `state`'s workers, every `worker_interval_ms`, logging each round's
/// errors.
pub(crate) fn runtime(state: &AppState) -> Runtime {
    let lane = |lane| -> Arc<dyn Worker> {
        Arc::new(WalletLane {
            state: state.clone(),
            lane,
        })
    };
    let mut workers = vec![inbound(state), lane(LANE_SUBMIT), lane(LANE_ADVANCE)];
    if state.escrow.is_some() {
        workers.push(Arc::new(Held {
            state: state.clone(),
            name: "escrow",
            pick: |s| s.escrow.as_ref().map(|e| e as &dyn Worker),
        }));
    }
    workers.push(Arc::new(Held {
        state: state.clone(),
        name: "checkout",
        pick: |s| Some(&s.checkout as &dyn Worker),
    }));
    Runtime::new(
        workers,
        Duration::from_millis(state.config.worker_interval_ms),
    )
    .singletons(state.leases.clone(), singletons(state))
    .observe(Arc::new(|worker, report| {
        for e in &report.errors {
            tracing::warn!(worker, error = %e, "worker");
        }
    }))
}
