//! Endpoint registration, the durable delivery worker, replay and inspection for both
//! families (spec 6.1, 6.2), over the `Store` port so it runs on memory, SQLite and
//! PostgreSQL alike.
//!
//! # How an event travels
//!
//! 1. The engines write each event to the outbox in the same commit as the change it
//!    reports. Settlement never waits on delivery.
//! 2. **Fan-out** ([`Deliverer::fan_out`]) reads the outbox after a persisted cursor and,
//!    for every event, records a tenant-scoped [`WebhookEvent`] (what inspection and replay
//!    read) and, for every enabled endpoint of the event's tenant subscribed to its type,
//!    one [`Delivery`] (id derived from event id + endpoint id) holding the exact signed
//!    body. The records and the advanced cursor are ONE commit on the cursor's version:
//!    two workers racing on the same page cannot both fan out; the loser gets a version
//!    conflict and reads again. An event is thus fanned out exactly once.
//! 3. **Delivery** ([`Deliverer::deliver_due`]) claims due deliveries with
//!    `Store::claim_due` (no two workers, even in two processes, hold one delivery at
//!    once), POSTs the body with the family's headers and a timeout (several at once, up
//!    to [`DeliveryConfig::concurrency`]), records the attempt (time, HTTP status,
//!    latency, error) and commits the outcome on the claimed version. Any 2xx is
//!    delivered. Anything else (non-2xx, timeout, connection error) schedules the next
//!    attempt; after the last one the delivery is `DEAD`.
//!
//! The worker that fans a delivery out holds it from birth: the fan-out commit writes it
//! due only at the end of a lease (`now + lease_ms`) and [`Deliverer::round`] attempts it
//! straight away, so a fresh delivery costs two writes (fan-out, outcome) rather than
//! three (fan-out, claim, outcome). Its outcome is committed on the inserted version like
//! any claimed delivery, so if the lease ran out and another worker took it, only one
//! outcome lands.
//!
//! Two ways to drive it: [`Deliverer::round`] (one batch, returns when its slowest
//! attempt ends: tests, a host's own loop) and [`Deliverer::run`], the dispatcher, a task
//! of its own with a concurrency budget, a cap per endpoint and per tenant, and tenants
//! taking turns, so a slow receiver never holds anything but its own deliveries (see
//! `dispatch`). The server runs the dispatcher beside (never inside) settlement.
//!
//! # Safety of the targets
//!
//! An endpoint URL must be `https://` to a public address: it is checked at registration
//! and before every attempt, and the HTTP client connects only to addresses vetted at
//! connection time, through no proxy and following no redirect ([`crate::ssrf`]). An
//! attempt records an HTTP status, `timeout` or `connection failed`, never an address.
//! Secrets are sealed at rest under [`DeliveryConfig::secret_key`] and opened only to
//! sign ([`crate::secret_box`]).
//!
//! Finished deliveries (delivered or dead) and old event records are purged after a
//! window of at least the longest retry span ([`Deliverer::purge_expired`]); a pending
//! delivery is never purged.
//!
//! A worker that dies mid-attempt loses nothing: its claim lapses after the lease and the
//! delivery is attempted again (receivers dedupe on `event_id` / `X-Webhook-ID`, which
//! stay the same).
//!
//! # Retry schedule
//!
//! Svix's: after the first attempt, retries at +5 s, +5 min, +30 min, +2 h, +5 h, +10 h and
//! +10 h (8 attempts over about 27.5 hours), each delay stretched by a random 0-10 %
//! (jitter from the `Entropy` port) so a recovering receiver is not hit by every retry at
//! once. A `Retry-After` header in seconds on a 429 or 503 is honoured when it asks for
//! longer than the schedule, up to 24 hours. The pure [`retry`](fn@retry) function decides
//! it (delivered, retry after how long, or dead); time comes from the `Clock` port and
//! the jitter from the `Entropy` port only around it, so the schedule is tested without
//! a clock and the worker's tests drive it without sleeping.
//!
//! # Automatic disabling
//!
//! An endpoint remembers since when it has failed without a single success in between
//! (`failing_since`). When an attempt fails and that is [`AUTO_DISABLE_AFTER_MS`] (5 days,
//! as Svix) or more ago, the endpoint is disabled with a `disabled_reason` saying so, and
//! the round reports it ([`RoundReport::auto_disabled`]). Any 2xx clears `failing_since`.
//! The tenant re-enables it with [`Deliverer::enable`] and replays what it missed.
//!
//! # Replay
//!
//! [`Deliverer::replay_event`] sends one event again to every enabled endpoint of the
//! tenant subscribed to it; [`Deliverer::replay_failed`] re-sends every `DEAD` delivery
//! created in a time range. A replay is a new delivery with the same body: escrow events
//! keep their `event_id`, payments deliveries get a new `X-Webhook-ID`. Everything is
//! tenant-scoped: another tenant's event or delivery is `NOT_FOUND`.
//!
//! # Modules
//!
//! - `model`: the records (endpoints, deliveries, attempts, events, the cursor) and the
//!   settings of a [`Deliverer`].
//! - `endpoints`: register, rotate, disable, enable, read and list endpoints.
//! - `fan_out`: outbox events to events and deliveries; the wire body of an event.
//! - `deliver`: claim due deliveries, attempt them concurrently, commit outcomes in groups,
//!   track endpoint health.
//! - `dispatch`: the dispatcher ([`Deliverer::run`]): budget, caps, turns, deferral.
//! - `attempt`: one HTTP attempt and its outcome.
//! - [`retry`](fn@retry): the retry schedule as a pure function (no clock, no entropy).
//! - `inspection`: lists, event and delivery reads, replay.
//! - `events_api`: the events API's pages (cursor, type and time filters) and reads.

mod attempt;
mod deliver;
mod dispatch;
mod endpoints;
mod events_api;
mod fan_out;
mod inspection;
mod model;
mod retention;
mod retry;

pub use attempt::{CONNECTION_FAILED, ENDPOINT_UNUSABLE, SECRET_UNAVAILABLE, TIMEOUT};
pub use deliver::OUTCOME_GROUP;
pub use endpoints::NewEndpoint;
pub use events_api::{
    ESCROW_EVENT_TYPES, EVENTS_PAGE_MAX, EventCursor, EventQuery, EventsPage, ListedEvent,
    TypeFilter, WALLET_TRANSFER_EVENT_TYPES, event_types,
};
pub use fan_out::{outbox_event, render};
pub use model::{
    AUTO_DISABLE_AFTER_MS, Attempt, Delivery, DeliveryConfig, DeliveryState, ESCROW_PREFIX,
    Endpoint, EventDetail, Page, RoundReport, WALLET_EVENT_TYPES, WebhookEvent, family_of,
};
pub use retention::{WebhookPurgeReport, WebhookRetention};
pub use retry::{
    Attempted, MAX_RETRY_AFTER_MS, MAX_RETRY_SPAN_MS, Next, RETRY_SCHEDULE_MS, retry,
    retry_after_ms,
};

use crate::error::{WebhookError, WebhookResult};
use crate::ssrf::{HostResolver, SystemResolver, VettingResolver};
use model::Cursor;
use stablecoin_core::ports::{Batch, Clock, Entropy, Store, StoreError};
use std::sync::Arc;

/// Registration, delivery, replay and inspection of webhooks.
#[derive(Clone)]
pub struct Deliverer {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    /// Connects only to addresses [`VettingResolver`] vetted at connection time; no
    /// proxy (a proxy would resolve the name itself, past the vetting) and no redirect
    /// (a receiver could redirect to an internal address).
    http: reqwest::Client,
    /// Resolves endpoint hosts for the checks at registration and before each attempt.
    resolver: Arc<dyn HostResolver>,
    config: Arc<DeliveryConfig>,
    /// Held while one task of this process fans out: clones of a `Deliverer` running
    /// rounds at once would otherwise all render the same page and all but one lose the
    /// cursor's version check. (Across processes that check alone keeps fan-out exactly
    /// once; the losers' work is wasted, not duplicated.)
    fan_out_gate: Arc<tokio::sync::Mutex<()>>,
}

fn store_err(e: StoreError) -> WebhookError {
    e.into()
}

fn not_found(kind: &'static str, id: &str) -> WebhookError {
    WebhookError::NotFound {
        kind,
        id: id.chars().take(120).collect(),
    }
}

impl Deliverer {
    /// A deliverer resolving endpoint hosts with the operating system's resolver.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        config: DeliveryConfig,
    ) -> WebhookResult<Self> {
        Self::with_resolver(store, clock, entropy, config, Arc::new(SystemResolver))
    }

    /// A deliverer resolving endpoint hosts with `resolver` (a test's scripted answers,
    /// or a deployment's own resolver). Every address it answers is vetted
    /// ([`crate::ssrf`]) before a connection is made.
    pub fn with_resolver(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        config: DeliveryConfig,
        resolver: Arc<dyn HostResolver>,
    ) -> WebhookResult<Self> {
        let vetting = VettingResolver::new(resolver.clone(), config.allow_networks.clone());
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(vetting)
            .build()
            .map_err(|e| WebhookError::Transport(e.to_string()))?;
        Ok(Deliverer {
            store,
            clock,
            entropy,
            http,
            resolver,
            config: Arc::new(config),
            fan_out_gate: Arc::default(),
        })
    }

    fn random10(&self) -> [u8; 10] {
        let mut b = [0u8; 10];
        self.entropy.fill(&mut b);
        b
    }

    async fn put(&self, put: stablecoin_core::ports::Put) -> WebhookResult<()> {
        self.store
            .commit(Batch {
                puts: vec![put],
                ..Default::default()
            })
            .await
            .map_err(store_err)?;
        Ok(())
    }

    /// One round: fan out new outbox events (unless another task of this `Deliverer`
    /// is doing so right now), then attempt every due delivery.
    pub async fn round(&self) -> WebhookResult<RoundReport> {
        let fan = match self.fan_out_gate.try_lock() {
            Ok(_held) => self.fan_out_page(Some(self.config.lease_ms)).await?,
            Err(_) => Default::default(),
        };
        let mut report = RoundReport {
            fanned_out: fan.created,
            ..Default::default()
        };
        self.deliver(fan.fresh, &mut report).await?;
        Ok(report)
    }
}
