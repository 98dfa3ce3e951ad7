//! Wiring: storage, signer, rails and engine from a [`Config`], the demo tenant, the
//! background workers and the HTTP server with graceful shutdown. Where keys come from
//! (the master seed, or the signing service) is [`crate::custody`].

use crate::api;
use crate::config::{Config, ConfigError, PayoutSettings};
use crate::custody::Custody;
pub use crate::custody::load_master_seed;
use crate::idempotency::InFlight;
use crate::metrics::Metrics;
pub use crate::payouts::SimPayouts;
use crate::rails::Rails;
use crate::storage::open_storage;
use serde::{Deserialize, Serialize};
use stablecoin_checkout::{CheckoutConfig, CheckoutEngine};
use stablecoin_core::CoreError;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, EngineConfig, KeyKind, KeyMode, Ports};
use stablecoin_core::memory::{MemoryNotifier, OsEntropy, SystemClock};
use stablecoin_core::ports::{Batch, Clock, RailId, Record, get_record};
use stablecoin_escrow::{EscrowConfig, EscrowEngine};
use stablecoin_rails::sim::SimRail;
use stablecoin_rails::sim::http::RemoteSimRail;
use stablecoin_webhooks::secret_box::SecretKey;
use stablecoin_webhooks::ssrf::{HostResolver, SystemResolver};
use stablecoin_webhooks::{Deliverer, DeliveryConfig};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

// Kept at their old paths (`app::AppState`, `app::StartupError`) for embedders; they
// live in `state` and `error` so the modules that take them need not import `app`.
pub use crate::error::StartupError;
pub use crate::state::{AppInner, AppState};

/// The demo tenant of a zero-configuration start. Keys are present only when they were
/// issued by this start (they are shown once; only hashes are stored).
#[derive(Clone)]
pub struct DemoTenant {
    /// The demo tenant's id.
    pub tenant: TenantId,
    /// Its display name (`[demo] tenant_name` at the start that created it).
    pub name: String,
    /// True when this start created it; false when an earlier start's tenant was reused.
    pub created: bool,
    /// The live tenant key (`svc_sk_live_...`), only when `created` (shown once).
    pub live_key: Option<String>,
    /// The sandbox tenant key (`svc_sk_test_...`), only when `created` (shown once).
    pub test_key: Option<String>,
}

impl fmt::Debug for DemoTenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DemoTenant")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("created", &self.created)
            .field("live_key", &self.live_key.as_ref().map(|_| "<redacted>"))
            .field("test_key", &self.test_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// A marker the server keeps in the store (kind `server_meta`), e.g. which tenant is the
/// demo tenant, so a restart on durable storage reuses it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ServerMeta {
    id: String,
    tenant: TenantId,
    created_at: Timestamp,
}

impl Record for ServerMeta {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::SERVER_META;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// What [`App::build_with`] may replace.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// Resolves webhook endpoint hosts, for the SSRF checks and the delivery client's
    /// connections (default: the operating system's resolver). Whatever it answers is
    /// vetted: this decides what a name resolves to, never what may be reached.
    pub webhook_resolver: Option<Arc<dyn HostResolver>>,
    /// Builds even when PostgreSQL storage meets a per-process simulated chain
    /// ([`Config::shared_chain_refusal`]). For the one-shot admin commands only: they
    /// run no workers and send nothing, so their throwaway chain harms nothing, while a
    /// serving process would submit payments no other process can find.
    pub allow_per_process_chains: bool,
    /// The clock of the engines, their caches and expiries, and the rate feed (default:
    /// the system clock). Tests pass one they can move forward
    /// ([`stablecoin_core::memory::ShiftedClock`]) instead of sleeping through a
    /// cache's lifetime or an expiry.
    pub clock: Option<Arc<dyn Clock>>,
}

/// The webhook deliverer: the SSRF allow-list and budget of `[webhooks]`, secrets sealed
/// under `secret_key` (derived from the master seed, here or in the signing service).
fn webhook_deliverer(
    config: &Config,
    ports: &Ports,
    engine: &EngineConfig,
    secret_key: SecretKey,
    options: BuildOptions,
) -> Result<Deliverer, StartupError> {
    let w = &config.webhooks;
    let delivery = DeliveryConfig {
        worker_id: format!("{}-webhooks", engine.worker_id),
        lease_ms: engine.claim_lease_ms.max(30_000),
        batch_limit: engine.batch_limit,
        timeout: std::time::Duration::from_millis(w.timeout_ms),
        concurrency: w.concurrency,
        endpoint_concurrency: w.endpoint_concurrency,
        tenant_concurrency: w.tenant_concurrency,
        poll_interval: std::time::Duration::from_millis(config.worker_interval_ms),
        allow_networks: config.webhooks_allow_list()?,
        secret_key: Some(secret_key),
    };
    let resolver = options
        .webhook_resolver
        .unwrap_or_else(|| Arc::new(SystemResolver));
    Deliverer::with_resolver(
        ports.store.clone(),
        ports.clock.clone(),
        ports.entropy.clone(),
        delivery,
        resolver,
    )
    .map_err(|e| StartupError::Rails(format!("webhooks: {e}")))
}

/// The server: state, router and demo tenant. Clone it freely (tests keep a handle while
/// it serves).
#[derive(Clone)]
pub struct App {
    pub(crate) state: AppState,
    pub(crate) demo: Option<DemoTenant>,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("storage", &self.state.storage)
            .field("demo", &self.demo)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Opens storage, derives keys, starts the simulated rails, builds the engine and (when
    /// enabled) creates or reuses the demo tenant. Does not listen yet: see [`App::serve`].
    pub async fn build(config: Config) -> Result<App, StartupError> {
        Self::build_with(config, BuildOptions::default()).await
    }

    /// [`App::build`] with parts replaced (tests: a scripted webhook resolver).
    pub async fn build_with(config: Config, options: BuildOptions) -> Result<App, StartupError> {
        config.validate()?;
        if !options.allow_per_process_chains
            && let Some(reason) = config.shared_chain_refusal()
        {
            return Err(StartupError::Config(ConfigError::Invalid(reason)));
        }
        let storage = open_storage(&config.storage, &config.data_dir).await?;
        let Custody {
            signer,
            code_key,
            webhook_key,
            session_key,
        } = Custody::build(&config, storage.durable).await?;
        let clock: Arc<dyn Clock> = options
            .clock
            .clone()
            .unwrap_or_else(|| Arc::new(SystemClock));
        let rails = Rails::build(
            &config,
            signer.clone(),
            storage.store.clone(),
            clock.clone(),
        )
        .await?;
        let notifier = Arc::new(MemoryNotifier::new());
        let payouts = crate::payouts::build(&config.payouts, storage.store.clone(), clock.clone())?;
        let ports = Ports {
            store: storage.store.clone(),
            ledger: storage.ledger.clone(),
            signer,
            notifier: crate::sms::notifier(&config.sms, notifier.clone())?,
            rates: config
                .rates
                .rate_source(clock.clone())
                .map_err(ConfigError::Invalid)?,
            payouts: payouts.provider.clone(),
            clock,
            entropy: Arc::new(OsEntropy),
        };
        let engine_config = EngineConfig {
            primary_evm_rail: config.primary_evm_chain().map(RailId::Evm),
            claim_lease_ms: config.engine.claim_lease_ms,
            poll_interval_ms: config.engine.poll_interval_ms,
            unknown_grace_ms: config.engine.unknown_grace_ms,
            batch_limit: config.engine.batch_limit,
            read_cache_ms: config.engine.read_cache_ms,
            wallet_cache_ms: config.engine.wallet_cache_ms,
            worker_id: config
                .engine
                .worker_id
                .clone()
                .unwrap_or_else(|| stablecoin_core::kernel::default_node_id(&OsEntropy)),
            code_key: Some(code_key),
            otp: config.otp.policy(),
            payment_validity_ms: config.engine.payment_validity_ms,
            refund_retry_ms: config.engine.refund_retry_ms,
            refund_retry_max_ms: config.engine.refund_retry_max_ms,
            min_send: config
                .limits
                .min_send()
                .map_err(|e| StartupError::Config(ConfigError::Invalid(e)))?,
            rent_quota: config.limits.rent_quota(),
            withdrawals_enabled: !matches!(config.payouts, PayoutSettings::Disabled),
            sms: config.notices.sms_policy(),
            topup_ttl_ms: config.admin.topup_ttl_ms(),
            topup_single_approval_max: config.admin.topup_single_approval_max_micros(),
            ..EngineConfig::default()
        };
        // Escrow runs on the engine's kernel (its TRON rail), built below.
        let escrow_config = match rails.get(RailId::Tron) {
            Some(_) => {
                let defaults = EscrowConfig::default();
                let mut escrow_config = EscrowConfig {
                    claim_lease_ms: engine_config.claim_lease_ms,
                    poll_interval_ms: engine_config.poll_interval_ms,
                    // Longer than a TRON transaction's expiry, whatever the engine uses.
                    unknown_grace_ms: engine_config
                        .unknown_grace_ms
                        .max(defaults.unknown_grace_ms),
                    batch_limit: engine_config.batch_limit,
                    worker_id: format!("{}-escrow", engine_config.worker_id),
                    second_approval_above: config.admin.second_approval_above_micros(),
                    ..defaults
                };
                // A deal's view names the network the TRON node serves (a simulated TRON
                // or a testnet node is never "mainnet").
                if rails.is_simulated(RailId::Tron) {
                    escrow_config.network = "simulated".into();
                    escrow_config.chain_id = 0;
                } else if let Some((network, chain_id)) = rails
                    .live
                    .get(&RailId::Tron)
                    .and_then(|(_, info)| info.network.clone())
                {
                    escrow_config.network = network;
                    escrow_config.chain_id = chain_id;
                }
                escrow_config.deposits_enabled = config.escrow.deposits_enabled;
                Some(escrow_config)
            }
            None => None,
        };
        let webhooks = webhook_deliverer(&config, &ports, &engine_config, webhook_key, options)?;
        let checkout_config = CheckoutConfig {
            batch_limit: engine_config.batch_limit,
            claim_lease_ms: engine_config.claim_lease_ms,
            worker_id: format!("{}-checkout", engine_config.worker_id),
            wallet_networks: crate::wallet_links::wallet_networks(&config),
            ..config.checkout.engine_config()
        };
        // The leases of the singleton jobs, on the wall clock: they are about real time
        // between nodes, whatever clock the engine reads (a test's shifted one).
        let leases = Arc::new(stablecoin_core::kernel::Leases::new(
            storage.store.clone(),
            Arc::new(SystemClock),
            engine_config.worker_id.clone(),
            std::time::Duration::from_millis(config.engine.singleton_lease_ms as u64),
        ));
        let swap_ledger = ports.ledger.clone();
        let engine = crate::swaps::with_venue(
            Engine::new(ports, rails.all(), engine_config),
            &config.swaps,
            &rails,
            swap_ledger,
        )?;
        // Sanctions screening of every outbound payment (issue #51), on the kernel that
        // escrow and checkout share.
        engine
            .kernel()
            .set_screening(crate::screening::gate(&config.screening, config.mode)?);
        let escrow = match escrow_config {
            Some(escrow_config) => Some(
                EscrowEngine::new(engine.kernel(), escrow_config)
                    .map_err(|e| StartupError::Rails(format!("escrow: {e}")))?
                    .with_spending_policies(Arc::new(engine.clone())),
            ),
            None => None,
        };
        let checkout = CheckoutEngine::new(engine.kernel(), checkout_config)
            .map_err(|e| StartupError::Config(ConfigError::Invalid(format!("checkout: {e}"))))?
            // Payers who hold a wallet here may pay from it by phone (issue #50 item 4).
            .with_phone_wallets(Arc::new(engine.clone()))
            .with_spending_policies(Arc::new(engine.clone()));
        let phone_pay_limiter = Arc::new(crate::api::phone_payments::limiter(
            storage.postgres.clone(),
        ));
        // PostgreSQL: one budget per key across every node on the database.
        let rate_limiter = Arc::new(match &storage.postgres {
            Some(pg) => {
                crate::rate_limit::RateLimiter::shared(config.rate_limits.limits(), pg.clone())
            }
            None => crate::rate_limit::RateLimiter::new(config.rate_limits.limits()),
        });
        let config_throttle = (
            config.consoles.sign_in_max_failures,
            config.consoles.sign_in_lockout_s,
        );
        let state = AppState(Arc::new(AppInner {
            config,
            engine,
            storage,
            metrics: Arc::new(Metrics::default()),
            inflight: Arc::new(InFlight::default()),
            sim_rails: rails.sim,
            remote_sim_rails: rails.remote_sim,
            live_rails: rails.live.into_values().map(|(_, i)| (i.rail, i)).collect(),
            notifier,
            payouts: payouts.provider,
            sim_payouts: payouts.simulated,
            mpesa_results: payouts.mpesa_results,
            payout_callbacks: payouts.callbacks,
            escrow,
            checkout,
            webhooks,
            rate_limiter,
            phone_pay_limiter,
            leases,
            sessions: crate::pages::session::SessionKeys::new(session_key),
            sign_in_throttle: Arc::new(crate::sign_in::SignInThrottle::new(
                config_throttle.0,
                config_throttle.1,
            )),
        }));
        let demo = if state.config.demo.enabled {
            Some(ensure_demo_tenant(&state).await?)
        } else {
            None
        };
        Ok(App { state, demo })
    }

    /// The state the handlers share.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The wallet engine (the CLI's admin commands and tests drive it directly).
    pub fn engine(&self) -> &Engine {
        &self.state.engine
    }

    /// The configuration the server was built from.
    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// `memory`, `sqlite` or `postgres`.
    pub fn storage_kind(&self) -> &'static str {
        self.state.storage.kind
    }

    /// The demo tenant; `None` when `[demo] enabled` is false.
    pub fn demo(&self) -> Option<&DemoTenant> {
        self.demo.as_ref()
    }

    /// The simulated chain of a rail, when it runs in this process.
    pub fn sim_rail(&self, id: RailId) -> Option<&Arc<SimRail>> {
        self.state.sim_rails.get(&id)
    }

    /// The simulated chain of a rail, when it runs on the shared chain (`[sim]
    /// chain_url`).
    pub fn remote_sim_rail(&self, id: RailId) -> Option<&Arc<RemoteSimRail>> {
        self.state.remote_sim_rails.get(&id)
    }

    /// The router, ready to serve (see [`crate::build_router`]).
    pub fn router(&self) -> axum::Router {
        api::build_router(self.state.clone())
    }

    /// Serves on `listener` and runs the engine workers until `shutdown` resolves; then
    /// stops accepting, lets in-flight requests finish, lets the running worker tick
    /// finish, and returns.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let worker = match self.state.config.run_workers {
            true => Some(spawn_workers(self.state.clone(), stop_rx)?),
            false => None,
        };
        let limits = self.state.config.http.serve_limits();
        let result = crate::listener::serve(listener, self.router(), limits, shutdown).await;
        let _ = stop_tx.send(true);
        if let Some(thread) = worker {
            // Joined, not only signalled: when serve returns, no worker thread is left
            // (http_api checks). Err: the thread panicked; nothing more to wait for.
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        tracing::info!("stopped");
        result
    }
}

/// Threads of the workers' runtime: the two claim lanes' loops and the webhook
/// dispatcher advance in parallel on them (on one thread, the settlement drain was
/// bound by that thread: ~1 core for signing, JSON and the rail calls, with the store's
/// writer thread beside it).
const WORKER_THREADS: usize = 2;

/// The workers' runtime: [`WORKER_THREADS`] threads, each (and each blocking thread it
/// starts) at the lower CPU priority `nice`.
fn worker_runtime(nice: i32) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("stablecoin-worker")
        .on_thread_start(move || lower_thread_priority(nice))
        .enable_all()
        .build()
}

/// Starts the workers on a runtime of their own, at the lower CPU priority
/// `worker_nice`; joining the returned thread waits until they have stopped and every
/// thread of their runtime has exited.
///
/// Why not tasks on the API's runtime: with a settlement backlog the workers always
/// have work, and on the API's threads they took CPU from requests exactly when load is
/// highest (measured: `POST /v1/transfers/send` p99 at a fixed 5k req/s went from 22 ms
/// to 170 ms-1.1 s once settlement kept up with submissions). At a higher nice value
/// the kernel gives the workers the CPU the API leaves idle, and the backlog waits
/// instead of the caller. Everything the workers run (store reads, rail calls, JSON)
/// runs on the workers' threads; their commits join the API's on the SQLite writer's
/// groups. The webhook dispatcher and the purges are tasks on this runtime too.
fn spawn_workers(
    state: AppState,
    stop: watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let nice = state.config.worker_nice;
    let runtime = worker_runtime(nice)?;
    std::thread::Builder::new()
        .name("stablecoin-workers".into())
        .spawn(move || {
            lower_thread_priority(nice);
            let metrics = state.metrics.clone();
            let mut runtime = Some(runtime);
            run_guarded(
                || {
                    // A fresh runtime after a panic: the one that unwound may hold
                    // half-run tasks.
                    let rt = match runtime.take() {
                        Some(rt) => rt,
                        None => worker_runtime(nice).expect("the workers' runtime builds"),
                    };
                    rt.block_on(async {
                        let mut webhooks = tokio::spawn(run_webhooks(state.clone(), stop.clone()));
                        // Purges (`[retention]`): a third task, stopping on the same signal.
                        let retention =
                            tokio::spawn(crate::retention::run(state.clone(), stop.clone()));
                        // The ledger against the chains (`[reconciliation]`): a fourth.
                        let reconciliation = tokio::spawn(crate::chain_reconciliation::run(
                            state.clone(),
                            stop.clone(),
                        ));
                        let workers = run_workers(state.clone(), stop.clone());
                        tokio::pin!(workers);
                        tokio::select! {
                            // Stopping: the dispatcher stops on the same signal.
                            _ = &mut workers => {
                                let _ = webhooks.await;
                            }
                            // The dispatcher ended early: a panic restarts both loops.
                            ended = &mut webhooks => {
                                if let Err(e) = ended
                                    && e.is_panic()
                                {
                                    std::panic::resume_unwind(e.into_panic());
                                }
                                workers.await;
                            }
                        }
                        let _ = retention.await;
                        let _ = reconciliation.await;
                    });
                    // Connection tasks the workers spawned (webhook deliveries) end with it.
                    drop(rt);
                },
                || metrics.worker_panicked(),
                || *stop.borrow(),
            );
        })
}

/// Runs `round` (the worker loop) until it returns; a panic is counted (`on_panic`),
/// logged, and the loop restarted after a pause, unless `stopping` says the server is
/// shutting down. Why: one bad record or adapter bug must not silently end settlement
/// for the process while the API keeps accepting money.
fn run_guarded(mut round: impl FnMut(), on_panic: impl Fn(), stopping: impl Fn() -> bool) {
    loop {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut round)) {
            Ok(()) => return,
            Err(_) => {
                on_panic();
                tracing::error!("the worker loop panicked; restarting it in 1 s");
                if stopping() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
                if stopping() {
                    return;
                }
            }
        }
    }
}

/// Raises the calling thread's nice value to `nice` (Linux: the nice value is per
/// thread, and threads this one starts inherit it). Raising it needs no privilege; a
/// failure leaves the thread at its priority and is logged, nothing else.
#[cfg(target_os = "linux")]
fn lower_thread_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: setpriority only reads its integer arguments; `who` 0 is the calling
    // thread (Linux keeps nice values per thread).
    #[allow(unsafe_code)] // the workspace's one unsafe call: see this crate's [lints]
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if rc != 0 {
        tracing::warn!(
            nice,
            error = %std::io::Error::last_os_error(),
            "cannot lower the workers' CPU priority; they run at the API's"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_thread_priority(nice: i32) {
    if nice != 0 {
        tracing::debug!(nice, "worker_nice applies on Linux only");
    }
}

/// The engines' workers on the kernel's runtime ([`crate::workers`]), until `stop`. A
/// panic in any of them ends all of them and reaches [`run_guarded`], which restarts
/// them.
async fn run_workers(state: AppState, stop: watch::Receiver<bool>) {
    crate::workers::runtime(&state).run(stop).await
}

/// The webhook dispatcher: a task of its own beside the engines' loop, never inside it,
/// with its own budget and caps (`stablecoin_webhooks::Deliverer::run`), so a receiver
/// that hangs holds a few delivery slots and never settlement.
async fn run_webhooks(state: AppState, mut stop: watch::Receiver<bool>) {
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    state
        .webhooks
        .run(stopped, |r| match r {
            Ok(report) => {
                for id in &report.auto_disabled {
                    tracing::warn!(endpoint = %id, "webhook endpoint disabled after failing for 5 days");
                }
            }
            Err(e) => tracing::warn!(error = %e, "webhook dispatcher"),
        })
        .await;
}

const DEMO_MARKER: &str = "demo_tenant";

async fn ensure_demo_tenant(state: &AppState) -> Result<DemoTenant, StartupError> {
    let engine = &state.engine;
    let name = state.config.demo.tenant_name.trim().to_string();
    if let Some(v) = get_record::<ServerMeta>(&*state.storage.store, DEMO_MARKER).await? {
        let t = engine.tenant(&v.record.tenant).await?;
        return Ok(DemoTenant {
            tenant: t.id,
            name: t.name,
            created: false,
            live_key: None,
            test_key: None,
        });
    }
    let tenant = engine.create_tenant(&name).await?;
    let marker = ServerMeta {
        id: DEMO_MARKER.into(),
        tenant: tenant.id.clone(),
        created_at: engine.ports().clock.now(),
    };
    engine
        .ports()
        .store
        .commit(Batch {
            puts: vec![marker.insert()?],
            ..Default::default()
        })
        .await
        .map_err(|e| StartupError::Engine(CoreError::Storage(e.to_string())))?;
    let credit = Micros::parse_whole_tokens(&state.config.demo.treasury_credit)
        .map_err(|e| StartupError::Engine(e.into()))?;
    if !credit.is_zero() {
        for token in Token::ALL {
            engine
                .credit_treasury(&tenant.id, token, credit, &format!("demo-seed-{token}"))
                .await?;
        }
    }
    let live = engine
        .issue_api_key(&tenant.id, KeyKind::Tenant, KeyMode::Live)
        .await?;
    let test = engine
        .issue_api_key(&tenant.id, KeyKind::Tenant, KeyMode::Test)
        .await?;
    tracing::info!(tenant = %tenant.id, "created the demo tenant");
    Ok(DemoTenant {
        tenant: tenant.id,
        name,
        created: true,
        live_key: Some(live.secret),
        test_key: Some(test.secret),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_worker_loop_is_counted_and_restarted() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let rounds = AtomicU32::new(0);
        let panics = AtomicU32::new(0);
        run_guarded(
            || {
                if rounds.fetch_add(1, Ordering::SeqCst) == 0 {
                    panic!("a bad record");
                }
            },
            || {
                panics.fetch_add(1, Ordering::SeqCst);
            },
            || false,
        );
        assert_eq!(
            rounds.load(Ordering::SeqCst),
            2,
            "restarted once, then returned"
        );
        assert_eq!(panics.load(Ordering::SeqCst), 1);
        // Shutting down: no restart.
        let rounds = AtomicU32::new(0);
        run_guarded(
            || {
                rounds.fetch_add(1, Ordering::SeqCst);
                panic!("again");
            },
            || {},
            || true,
        );
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
    }
}
