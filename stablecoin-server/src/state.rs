//! The state every handler shares: [`AppState`], built by [`crate::app::App`].
//!
//! Its own module, not `app`'s: every handler takes it, and `app` builds the router and
//! so imports every handler; with the state in `app`, the handlers and `app` were one
//! import cycle (issue #45). This module imports only the parts the state holds.

use crate::config::Config;
use crate::in_flight::InFlight;
use crate::metrics::Metrics;
use crate::payout_providers::SimPayouts;
use crate::rails::LiveRail;
use crate::storage::Storage;
use stablecoin_checkout::CheckoutEngine;
use stablecoin_core::engine::Engine;
use stablecoin_core::memory::MemoryNotifier;
use stablecoin_core::ports::{PayoutProvider, RailId};
use stablecoin_escrow::EscrowEngine;
use stablecoin_rails::sim::SimRail;
use stablecoin_rails::sim::http::RemoteSimRail;
use stablecoin_webhooks::Deliverer;
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

/// Everything the handlers share.
pub struct AppInner {
    /// The validated configuration the server was built from.
    pub config: Config,
    /// The wallet engine every wallet, transfer and FX handler calls.
    pub engine: Engine,
    /// The opened backend (the engine's store and ledger are the same).
    pub storage: Storage,
    /// Request and worker counters served on `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Idempotency keys of requests running in this process (see [`crate::idempotency`]).
    pub inflight: Arc<InFlight>,
    /// The simulated chains of this process, by rail (test and demo controls: mint,
    /// faults, readiness).
    pub sim_rails: BTreeMap<RailId, Arc<SimRail>>,
    /// The simulated chains on the shared chain of `[sim] chain_url`, by rail (the same
    /// controls, over HTTP).
    pub remote_sim_rails: BTreeMap<RailId, Arc<RemoteSimRail>>,
    /// The real chains (configured `[rails.evm.<chain id>]`).
    pub live_rails: BTreeMap<RailId, LiveRail>,
    /// The in-memory SMS gateway of `sms.kind = "memory"` (tests read the codes here);
    /// empty when a real gateway is configured (`crate::sms`).
    pub notifier: Arc<MemoryNotifier>,
    /// The payout provider of `[payouts]` withdrawals are paid through.
    pub payouts: Arc<dyn PayoutProvider>,
    /// The simulated payout provider, when `payouts.kind` is `simulated`; `None` with a
    /// real provider or `disabled`.
    pub sim_payouts: Option<Arc<SimPayouts>>,
    /// The store of Daraja's results, when `payouts.kind = "mpesa"` (its callback route
    /// records into it; see [`crate::payouts`]).
    pub mpesa_results: Option<Arc<stablecoin_providers::mpesa::MpesaResults>>,
    /// The key of the payout providers' per-payout callback tokens, when the
    /// configured provider calls back (see [`crate::payouts`]).
    pub payout_callbacks: Option<stablecoin_providers::callback::CallbackKey>,
    /// The escrow engine over the TRON rail; `None` when TRON is disabled (every escrow
    /// route then answers `ESCROW_UNAVAILABLE`).
    pub escrow: Option<EscrowEngine>,
    /// The checkout gateway: businesses, payment sessions, deposit monitoring.
    pub checkout: CheckoutEngine,
    /// Wallet-service webhook endpoints and their delivery worker.
    pub webhooks: Deliverer,
    /// Per-API-key request budgets (`[rate_limits]`).
    pub rate_limiter: Arc<crate::rate_limit::RateLimiter>,
    /// Phone payments per client address (`api::phone_payments::PER_IP`): the public
    /// pay routes have no key to count on.
    pub phone_pay_limiter: Arc<crate::rate_limit::RateLimiter>,
    /// This node's id and its leases of the singleton jobs (`workers::SINGLETONS`),
    /// kept by the workers' runtime; readiness shows which it holds.
    pub leases: Arc<stablecoin_core::kernel::Leases>,
    /// Signs and checks the web consoles' session cookies and CSRF tokens.
    pub sessions: crate::pages::session::SessionKeys,
    /// Failed sign-ins per source and per credential (`[consoles]`).
    pub sign_in_throttle: Arc<crate::sign_in_throttle::SignInThrottle>,
}

impl AppInner {
    /// The simulated rails, in this process or on the shared chain, in order.
    pub fn simulated_rails(&self) -> Vec<RailId> {
        let mut ids: Vec<RailId> = self
            .sim_rails
            .keys()
            .chain(self.remote_sim_rails.keys())
            .copied()
            .collect();
        ids.sort();
        ids
    }
}

/// Cheap-to-clone handle on [`AppInner`]; the router's state.
#[derive(Clone)]
pub struct AppState(pub Arc<AppInner>);

impl Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}
