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
//! longer than the schedule, up to 24 hours. Time comes from the `Clock` port, so tests
//! drive the schedule without sleeping.
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

use crate::error::{WebhookError, WebhookResult};
use crate::payload::WalletPayload;
use crate::payments::{PaymentsPayload, is_payments_event_type};
use crate::signature::{Family, PAYMENTS_EVENT_HEADER, PAYMENTS_ID_HEADER, WALLET_USER_AGENT};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::{TenantId, WebhookEndpointId};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{
    Batch, Clock, Entropy, ListQuery, OutboxEvent, Store, StoreError, StoredRecord,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Delays after attempt 1, 2, ... (ms); its length + 1 is the number of attempts.
pub const RETRY_SCHEDULE_MS: [i64; 7] = [
    5_000,
    5 * 60_000,
    30 * 60_000,
    2 * 3_600_000,
    5 * 3_600_000,
    10 * 3_600_000,
    10 * 3_600_000,
];
/// Longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER_MS: i64 = 24 * 3_600_000;
/// An endpoint failing without a success for this long is disabled (Svix: 5 days).
pub const AUTO_DISABLE_AFTER_MS: i64 = 5 * 24 * 3_600_000;

/// A registered endpoint of either family.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub id: WebhookEndpointId,
    pub tenant: TenantId,
    /// Which family's payloads, headers and secrets it gets.
    #[serde(default = "wallet_family")]
    pub family: Family,
    pub url: String,
    /// Subscribed event types; only these are delivered.
    pub events: Vec<String>,
    /// Signing secret (shown to the tenant once, at registration or rotation).
    pub secret: String,
    pub enabled: bool,
    /// Why it is disabled (by the tenant, or automatically after failing for days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Start of the current run of failures without a success; `None` when healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Timestamp>,
    pub created_at: Timestamp,
}

fn wallet_family() -> Family {
    Family::Wallet
}

impl Record for Endpoint {
    const KIND: &'static str = "webhook_endpoint";
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(if self.enabled { "enabled" } else { "disabled" }.into())
    }
}

/// Wallet-service event types an endpoint may subscribe to.
pub const WALLET_EVENT_TYPES: &[&str] = &[
    "transfer.received",
    "transfer.settled",
    "transfer.failed",
    "swap.settled",
    "swap.failed",
    "user.linked",
    "user.phone_changed",
];

/// Escrow event types (wallet-service family) are accepted with this prefix
/// (`escrow.created`, `escrow.funded`, ...; see `stablecoin-escrow`'s `events`).
pub const ESCROW_PREFIX: &str = "escrow.";

/// The family an event name belongs to, if any.
pub fn family_of(event_type: &str) -> Option<Family> {
    if WALLET_EVENT_TYPES.contains(&event_type)
        || (event_type.starts_with(ESCROW_PREFIX) && event_type.len() > ESCROW_PREFIX.len())
    {
        Some(Family::Wallet)
    } else if is_payments_event_type(event_type) {
        Some(Family::Payments)
    } else {
        None
    }
}

/// One attempt, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub at: Timestamp,
    /// HTTP status, absent when no response came (timeout, connection error).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<u16>,
    pub latency_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// Delivery states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryState {
    Pending,
    Delivered,
    Dead,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "PENDING",
            DeliveryState::Delivered => "DELIVERED",
            DeliveryState::Dead => "DEAD",
        }
    }
}

/// One event to one endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub id: String,
    pub tenant: TenantId,
    pub endpoint: WebhookEndpointId,
    pub event_id: String,
    pub event_type: String,
    /// The exact bytes that are signed and sent (UTF-8 JSON).
    pub body: String,
    pub state: DeliveryState,
    pub next_attempt_at: Option<Timestamp>,
    pub attempts: Vec<Attempt>,
    /// The delivery this one replays, if it is a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The delivery that replayed this one (a failed delivery is replayed once per range
    /// replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_by: Option<String>,
    pub created_at: Timestamp,
}

impl Record for Delivery {
    const KIND: &'static str = "webhook_delivery";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.state.as_str().into())
    }
    fn due_at(&self) -> Option<Timestamp> {
        match self.state {
            DeliveryState::Pending => self.next_attempt_at,
            _ => None,
        }
    }
}

/// One outbox event as its tenant sees it: what inspection lists and replay re-sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookEvent {
    /// The outbox event id (`evt_...`), stable across deliveries and replays.
    pub id: String,
    pub tenant: TenantId,
    pub event_type: String,
    pub occurred_at: Timestamp,
    /// The outbox payload, rendered again on replay.
    pub payload: serde_json::Value,
    /// Every delivery made of it (first fan-out and replays), oldest first.
    pub deliveries: Vec<String>,
    pub replays: u32,
}

impl Record for WebhookEvent {
    const KIND: &'static str = "webhook_event";
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.occurred_at
    }
    fn status(&self) -> Option<String> {
        Some(self.event_type.clone())
    }
}

/// The fan-out cursor: the last outbox sequence fanned out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    after_seq: u64,
    created_at: Timestamp,
}

impl Record for Cursor {
    const KIND: &'static str = "webhook_cursor";
    fn id(&self) -> String {
        "wallet".into()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// Settings of a [`Deliverer`].
#[derive(Clone, Debug)]
pub struct DeliveryConfig {
    /// Per-request timeout.
    pub timeout: Duration,
    /// How long a claimed delivery is held before another worker may take it.
    pub lease_ms: i64,
    /// Records per step.
    pub batch_limit: usize,
    /// Requests in flight at once within a step.
    pub concurrency: usize,
    /// Name of this worker (claims); unique per process.
    pub worker_id: String,
    /// Accept `http://` URLs on loopback hosts (tests, local development). Elsewhere
    /// only `https://` is accepted.
    pub allow_loopback_http: bool,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            timeout: Duration::from_secs(10),
            lease_ms: 60_000,
            batch_limit: 64,
            concurrency: 16,
            worker_id: "webhooks-1".into(),
            allow_loopback_http: false,
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundReport {
    pub fanned_out: usize,
    pub delivered: usize,
    pub retried: usize,
    pub dead: usize,
    /// Endpoints this round disabled because they had failed for
    /// [`AUTO_DISABLE_AFTER_MS`].
    pub auto_disabled: Vec<WebhookEndpointId>,
}

/// A page of a tenant's records and their total.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: u64,
}

/// An event with its deliveries and their attempts (inspection).
#[derive(Clone, Debug, PartialEq)]
pub struct EventDetail {
    pub event: WebhookEvent,
    pub deliveries: Vec<Delivery>,
}

enum Outcome {
    Delivered,
    Retried,
    Dead,
}

/// Most attempt outcomes committed in one store commit.
pub const OUTCOME_GROUP: usize = 64;

/// An attempted delivery whose new state is not committed yet.
struct Prepared {
    endpoint: String,
    /// (2xx, when) of the attempt, when the endpoint was usable.
    health: Option<(bool, Timestamp)>,
    delivery: Delivery,
    version: u64,
    outcome: Outcome,
}

/// Registration, delivery, replay and inspection of webhooks.
#[derive(Clone)]
pub struct Deliverer {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    http: reqwest::Client,
    config: DeliveryConfig,
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
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        entropy: Arc<dyn Entropy>,
        config: DeliveryConfig,
    ) -> WebhookResult<Self> {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| WebhookError::Transport(e.to_string()))?;
        Ok(Deliverer {
            store,
            clock,
            entropy,
            http,
            config,
            fan_out_gate: Arc::default(),
        })
    }

    fn random10(&self) -> [u8; 10] {
        let mut b = [0u8; 10];
        self.entropy.fill(&mut b);
        b
    }

    fn check_url(&self, url: &str) -> WebhookResult<()> {
        let bad = |reason: &str| {
            Err(WebhookError::InvalidUrl {
                url: url.chars().take(200).collect(),
                reason: reason.into(),
            })
        };
        if url.len() > 2048 {
            return bad("longer than 2048 bytes");
        }
        let parsed = match reqwest::Url::parse(url) {
            Ok(u) => u,
            Err(_) => return bad("not an absolute URL"),
        };
        let loopback = matches!(
            parsed.host_str(),
            Some("127.0.0.1") | Some("localhost") | Some("[::1]")
        );
        match parsed.scheme() {
            "https" => Ok(()),
            "http" if loopback && self.config.allow_loopback_http => Ok(()),
            _ => bad("https is required"),
        }
    }

    /// Registers a wallet-service endpoint; the returned record holds the secret, shown
    /// once.
    pub async fn register(
        &self,
        tenant: &TenantId,
        url: &str,
        events: &[String],
    ) -> WebhookResult<Endpoint> {
        self.register_for(Family::Wallet, tenant, url, events).await
    }

    /// Registers an endpoint of `family` subscribed to `events` (names of that family);
    /// the returned record holds the secret (`whsec_...` for payments), shown once.
    pub async fn register_for(
        &self,
        family: Family,
        tenant: &TenantId,
        url: &str,
        events: &[String],
    ) -> WebhookResult<Endpoint> {
        self.check_url(url)?;
        if events.is_empty() {
            return Err(WebhookError::InvalidParameter {
                field: "events",
                reason: "subscribe to at least one event type".into(),
            });
        }
        if events.len() > 64 {
            return Err(WebhookError::InvalidParameter {
                field: "events",
                reason: "at most 64 event types".into(),
            });
        }
        for e in events {
            if family_of(e) != Some(family) {
                return Err(WebhookError::UnknownEventType {
                    event_type: e.chars().take(100).collect(),
                    family: match family {
                        Family::Wallet => "wallet-service",
                        Family::Payments => "payments",
                    },
                });
            }
        }
        let mut events = events.to_vec();
        events.sort();
        events.dedup();
        let now = self.clock.now();
        let endpoint = Endpoint {
            id: WebhookEndpointId::generate(now.millis(), self.random10()),
            tenant: tenant.clone(),
            family,
            url: url.to_string(),
            events,
            secret: family.generate_secret(&*self.entropy),
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            created_at: now,
        };
        self.put(endpoint.insert()?).await?;
        Ok(endpoint)
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

    /// Replaces an endpoint's secret; the previous one stops verifying at once. The
    /// returned record holds the new secret, shown once.
    pub async fn rotate_secret(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        e.secret = e.family.generate_secret(&*self.entropy);
        self.put(e.update(version)?).await?;
        Ok(e)
    }

    /// One round: fan out new outbox events (unless another task of this `Deliverer`
    /// is doing so right now), then attempt every due delivery.
    pub async fn round(&self) -> WebhookResult<RoundReport> {
        let (fanned_out, fresh) = match self.fan_out_gate.try_lock() {
            Ok(_held) => self.fan_out_page(Some(self.config.lease_ms)).await?,
            Err(_) => (0, Vec::new()),
        };
        let mut report = RoundReport {
            fanned_out,
            ..Default::default()
        };
        self.deliver(fresh, &mut report).await?;
        Ok(report)
    }

    /// Fans out one page of outbox events after the cursor; returns how many deliveries
    /// it created, due now.
    pub async fn fan_out(&self) -> WebhookResult<usize> {
        Ok(self.fan_out_page(None).await?.0)
    }

    /// One page of fan-out. `lease_ms`: `None` makes the deliveries due now; `Some` holds
    /// them for this worker that long (due after the lease), for [`Self::round`] to
    /// attempt at once. Returns how many deliveries it created and the pending ones as
    /// stored (version 1).
    async fn fan_out_page(
        &self,
        lease_ms: Option<i64>,
    ) -> WebhookResult<(usize, Vec<StoredRecord>)> {
        for _ in 0..8 {
            let cursor = get_record::<Cursor>(&*self.store, "wallet").await?;
            let after = cursor.as_ref().map_or(0, |c| c.record.after_seq);
            let events = self
                .store
                .outbox_after(after, self.config.batch_limit)
                .await
                .map_err(store_err)?;
            let Some((last_seq, _)) = events.last() else {
                return Ok((0, Vec::new()));
            };
            let now = self.clock.now();
            let mut puts = Vec::new();
            let mut created = 0;
            let mut fresh = Vec::new();
            // One endpoint read per tenant per page, not per event.
            let mut by_tenant: HashMap<String, Vec<Endpoint>> = HashMap::new();
            for (_, event) in &events {
                if !by_tenant.contains_key(&event.tenant) {
                    let endpoints = self.enabled_endpoints(&event.tenant).await?;
                    by_tenant.insert(event.tenant.clone(), endpoints);
                }
                let mut record = WebhookEvent {
                    id: event.id.clone(),
                    tenant: TenantId(event.tenant.clone()),
                    event_type: event.event_type.clone(),
                    occurred_at: event.occurred_at,
                    payload: event.payload.clone(),
                    deliveries: Vec::new(),
                    replays: 0,
                };
                for endpoint in subscribed(&by_tenant[&event.tenant], &event.event_type) {
                    let mut d = new_delivery(&record, endpoint, now, None);
                    if let (Some(lease), DeliveryState::Pending) = (lease_ms, d.state) {
                        d.next_attempt_at = Some(now.plus_millis(lease));
                    }
                    record.deliveries.push(d.id.clone());
                    let put = d.insert()?;
                    if lease_ms.is_some() && d.state == DeliveryState::Pending {
                        let mut stored = put.record.clone();
                        stored.version = 1;
                        fresh.push(stored);
                    }
                    puts.push(put);
                    created += 1;
                }
                puts.push(record.insert()?);
            }
            let next = Cursor {
                after_seq: *last_seq,
                created_at: cursor.as_ref().map_or(now, |c| c.record.created_at),
            };
            puts.push(match &cursor {
                Some(c) => next.update(c.version)?,
                None => next.insert()?,
            });
            match self
                .store
                .commit(Batch {
                    puts,
                    background: true,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok((created, fresh)),
                // Another worker fanned out this page first: read the cursor again.
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(e) => return Err(store_err(e)),
            }
        }
        Err(WebhookError::Conflict {
            what: "webhook fan-out cursor".into(),
        })
    }

    async fn all_endpoints(
        &self,
        tenant: &str,
        status: Option<&str>,
    ) -> WebhookResult<Vec<Endpoint>> {
        let (records, _) = self
            .store
            .list(&ListQuery {
                kind: Endpoint::KIND.into(),
                tenant: tenant.to_string(),
                subkind: None,
                status: status.map(str::to_string),
                limit: 1000,
                offset: 0,
            })
            .await
            .map_err(store_err)?;
        records
            .iter()
            .map(|r| Endpoint::from_stored(r).map_err(WebhookError::from))
            .collect()
    }

    async fn enabled_endpoints(&self, tenant: &str) -> WebhookResult<Vec<Endpoint>> {
        self.all_endpoints(tenant, Some("enabled")).await
    }

    /// Attempts every due delivery once (up to the batch limit), several at once.
    /// Outcomes are committed in groups as attempts finish (one store commit for up to
    /// [`OUTCOME_GROUP`] outcomes instead of one each): a crash between an attempt and
    /// its commit only means the delivery is attempted again after its lease, which
    /// receivers already handle (they dedupe on the event id / `X-Webhook-ID`).
    pub async fn deliver_due(&self, report: &mut RoundReport) -> WebhookResult<()> {
        self.deliver(Vec::new(), report).await
    }

    /// Attempts `held` (deliveries this worker already holds, as stored) and every due
    /// delivery it can claim.
    async fn deliver(
        &self,
        held: Vec<StoredRecord>,
        report: &mut RoundReport,
    ) -> WebhookResult<()> {
        let now = self.clock.now();
        let mut claimed = self
            .store
            .claim_due(
                Delivery::KIND,
                &self.config.worker_id,
                now,
                self.config.lease_ms,
                self.config.batch_limit,
            )
            .await
            .map_err(store_err)?;
        claimed.extend(held);
        if claimed.is_empty() {
            return Ok(());
        }
        // One read per endpoint per round, not per delivery.
        let mut endpoints: HashMap<String, Option<(Endpoint, u64)>> = HashMap::new();
        for stored in &claimed {
            let d = Delivery::from_stored(stored)?;
            if !endpoints.contains_key(d.endpoint.as_str()) {
                let e = get_record::<Endpoint>(&*self.store, d.endpoint.as_str())
                    .await?
                    .filter(|e| e.record.enabled)
                    .map(|e| (e.record, e.version));
                endpoints.insert(d.endpoint.0.clone(), e);
            }
        }
        let endpoints = &endpoints;
        // Attempts and commits overlap: while a group of outcomes is being committed,
        // the next requests are already in flight.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let attempts = async move {
            let mut finished = futures_util::stream::iter(claimed)
                .map(|stored| self.attempt_claimed(stored, endpoints))
                .buffer_unordered(self.config.concurrency.max(1));
            while let Some(r) = finished.next().await {
                if tx.send(r).is_err() {
                    break;
                }
            }
        };
        let commits = async {
            // Per endpoint: (ok, time) of each attempt, for the health tracking below.
            let mut health: HashMap<String, Vec<(bool, Timestamp)>> = HashMap::new();
            let mut first_error = None;
            while let Some(first) = rx.recv().await {
                let mut chunk = vec![first];
                while chunk.len() < OUTCOME_GROUP {
                    match rx.try_recv() {
                        Ok(r) => chunk.push(r),
                        Err(_) => break,
                    }
                }
                let mut ready = Vec::with_capacity(chunk.len());
                for r in chunk {
                    match r {
                        Ok(Some(p)) => ready.push(p),
                        Ok(None) => {}
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                match self.commit_outcomes(ready).await {
                    Ok(kept) => {
                        for p in kept {
                            match p.outcome {
                                Outcome::Delivered => report.delivered += 1,
                                Outcome::Retried => report.retried += 1,
                                Outcome::Dead => report.dead += 1,
                            }
                            if let Some(a) = p.health {
                                health.entry(p.endpoint).or_default().push(a);
                            }
                        }
                    }
                    Err(e) => {
                        // Not committed: the claims lapse and the deliveries are tried again.
                        first_error.get_or_insert(e);
                    }
                }
            }
            (health, first_error)
        };
        let ((), (health, mut first_error)) = tokio::join!(attempts, commits);
        for (id, mut attempts) in health {
            attempts.sort_by_key(|(_, at)| *at);
            if let Some(Some((e, version))) = endpoints.get(&id) {
                match self.track_health(e.clone(), *version, &attempts).await {
                    Ok(Some(disabled)) => report.auto_disabled.push(disabled),
                    Ok(None) => {}
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Commits attempted deliveries together; if one of them lost its claim (a version
    /// conflict fails the whole group), commits them one by one and drops the losers,
    /// whose outcome another worker decided.
    async fn commit_outcomes(&self, ready: Vec<Prepared>) -> WebhookResult<Vec<Prepared>> {
        if ready.is_empty() {
            return Ok(ready);
        }
        let puts = ready
            .iter()
            .map(|p| p.delivery.update(p.version))
            .collect::<Result<Vec<_>, _>>()?;
        match self
            .store
            .commit(Batch {
                puts,
                background: true,
                ..Default::default()
            })
            .await
        {
            Ok(_) => return Ok(ready),
            Err(StoreError::VersionConflict { .. }) => {}
            Err(e) => return Err(store_err(e)),
        }
        let mut kept = Vec::with_capacity(ready.len());
        for p in ready {
            match self
                .store
                .commit(Batch {
                    puts: vec![p.delivery.update(p.version)?],
                    background: true,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => kept.push(p),
                Err(StoreError::VersionConflict { .. }) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        Ok(kept)
    }

    /// Attempts one claimed delivery and decides its next state (not yet committed).
    async fn attempt_claimed(
        &self,
        stored: StoredRecord,
        endpoints: &HashMap<String, Option<(Endpoint, u64)>>,
    ) -> WebhookResult<Option<Prepared>> {
        let mut d = Delivery::from_stored(&stored)?;
        if d.state != DeliveryState::Pending {
            return Ok(None);
        }
        let usable = endpoints.get(d.endpoint.as_str()).and_then(Option::as_ref);
        let (attempt, retry_after) = match usable {
            Some((e, _)) => self.attempt(e, &d).await,
            None => (
                Attempt {
                    at: self.clock.now(),
                    status: None,
                    latency_ms: 0,
                    error: Some("endpoint disabled or deleted".into()),
                },
                None,
            ),
        };
        let ok = attempt.status.is_some_and(|s| (200..300).contains(&s));
        let at = attempt.at;
        d.attempts.push(attempt);
        let n = d.attempts.len();
        let outcome = if ok {
            d.state = DeliveryState::Delivered;
            d.next_attempt_at = None;
            Outcome::Delivered
        } else if n > RETRY_SCHEDULE_MS.len() || usable.is_none() {
            d.state = DeliveryState::Dead;
            d.next_attempt_at = None;
            Outcome::Dead
        } else {
            let base = RETRY_SCHEDULE_MS[n - 1];
            let mut j = [0u8; 2];
            self.entropy.fill(&mut j);
            let jitter = base * i64::from(u16::from_le_bytes(j) % 1000) / 10_000;
            let mut delay = base + jitter;
            if let Some(ra) = retry_after {
                delay = delay.max(ra.min(MAX_RETRY_AFTER_MS));
            }
            d.next_attempt_at = Some(self.clock.now().plus_millis(delay));
            Outcome::Retried
        };
        Ok(Some(Prepared {
            endpoint: d.endpoint.0.clone(),
            health: usable.map(|_| (ok, at)),
            delivery: d,
            version: stored.version,
            outcome,
        }))
    }

    /// Keeps `failing_since` and disables an endpoint that has failed for days, given
    /// this round's attempts to it in time order. Best effort under concurrency: a
    /// version conflict means another worker just updated the endpoint, and the next
    /// round looks again.
    async fn track_health(
        &self,
        mut e: Endpoint,
        version: u64,
        attempts: &[(bool, Timestamp)],
    ) -> WebhookResult<Option<WebhookEndpointId>> {
        let before = (e.enabled, e.failing_since);
        let mut disabled = None;
        for &(ok, at) in attempts {
            match (ok, e.failing_since) {
                (true, _) => e.failing_since = None,
                (false, None) => e.failing_since = Some(at),
                (false, Some(since))
                    if e.enabled && at.millis() - since.millis() >= AUTO_DISABLE_AFTER_MS =>
                {
                    e.enabled = false;
                    e.disabled_reason = Some(format!(
                        "disabled automatically: every delivery has failed since {}",
                        since.to_rfc3339()
                    ));
                    disabled = Some(e.id.clone());
                }
                (false, Some(_)) => {}
            }
        }
        if (e.enabled, e.failing_since) == before {
            return Ok(None);
        }
        match self.put(e.update(version)?).await {
            Ok(()) => Ok(disabled),
            Err(WebhookError::Conflict { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn attempt(&self, endpoint: &Endpoint, d: &Delivery) -> (Attempt, Option<i64>) {
        let at = self.clock.now();
        let started = Instant::now();
        let signature = endpoint.family.sign(&endpoint.secret, d.body.as_bytes());
        let mut req = self
            .http
            .post(&endpoint.url)
            .header("Content-Type", "application/json")
            .header(endpoint.family.signature_header(), signature);
        req = match endpoint.family {
            Family::Wallet => req.header("User-Agent", WALLET_USER_AGENT),
            Family::Payments => req
                .header(PAYMENTS_EVENT_HEADER, &d.event_type)
                .header(PAYMENTS_ID_HEADER, &d.id),
        };
        let result = req.body(d.body.clone()).send().await;
        let latency_ms = started.elapsed().as_millis() as u64;
        match result {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<i64>().ok())
                    .filter(|s| *s >= 0 && matches!(status, 429 | 503))
                    .map(|s| s.saturating_mul(1000));
                let error = (!(200..300).contains(&status)).then(|| format!("HTTP {status}"));
                (
                    Attempt {
                        at,
                        status: Some(status),
                        latency_ms,
                        error,
                    },
                    retry_after,
                )
            }
            Err(e) => {
                let error = if e.is_timeout() {
                    "timeout".to_string()
                } else if e.is_connect() {
                    "connection refused or failed".to_string()
                } else {
                    "connection closed without a response".to_string()
                };
                (
                    Attempt {
                        at,
                        status: None,
                        latency_ms,
                        error: Some(error),
                    },
                    None,
                )
            }
        }
    }

    /// The tenant's endpoints, newest first, and their total.
    pub async fn list_endpoints(
        &self,
        tenant: &TenantId,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<(Vec<Endpoint>, u64)> {
        let page = self.list::<Endpoint>(tenant, None, limit, offset).await?;
        Ok((page.items, page.total))
    }

    async fn list<R: Record>(
        &self,
        tenant: &TenantId,
        status: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<Page<R>> {
        let (records, total) = self
            .store
            .list(&ListQuery {
                kind: R::KIND.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: status.map(str::to_string),
                limit,
                offset,
            })
            .await
            .map_err(store_err)?;
        let items = records
            .iter()
            .map(R::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page { items, total })
    }

    /// One endpoint of the tenant; another tenant's is not found.
    pub async fn endpoint(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        Ok(self.endpoint_versioned(tenant, id).await?.0)
    }

    async fn endpoint_versioned(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> WebhookResult<(Endpoint, u64)> {
        get_record::<Endpoint>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| (v.record, v.version))
            .ok_or_else(|| not_found("webhook endpoint", id))
    }

    /// Disables an endpoint: it receives nothing more, and its pending deliveries end
    /// DEAD at their next attempt. Disabling twice is harmless.
    pub async fn disable(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        if !e.enabled {
            return Ok(e);
        }
        e.enabled = false;
        e.disabled_reason = Some("disabled by the tenant".into());
        self.put(e.update(version)?).await?;
        Ok(e)
    }

    /// Enables an endpoint again (after a manual or automatic disable); its failure run
    /// starts afresh. Events missed meanwhile are recovered with the replays.
    pub async fn enable(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        if e.enabled {
            return Ok(e);
        }
        e.enabled = true;
        e.disabled_reason = None;
        e.failing_since = None;
        self.put(e.update(version)?).await?;
        Ok(e)
    }

    /// A delivery of the tenant (inspection); another tenant's is not found.
    pub async fn delivery(&self, tenant: &TenantId, id: &str) -> WebhookResult<Delivery> {
        get_record::<Delivery>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| v.record)
            .ok_or_else(|| not_found("webhook delivery", id))
    }

    /// The tenant's events, newest first (optionally of one type), and their total.
    pub async fn list_events(
        &self,
        tenant: &TenantId,
        event_type: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<Page<WebhookEvent>> {
        self.list(tenant, event_type, limit, offset).await
    }

    /// The tenant's deliveries, newest first (optionally in one state), and their total.
    pub async fn list_deliveries(
        &self,
        tenant: &TenantId,
        state: Option<DeliveryState>,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<Page<Delivery>> {
        self.list(tenant, state.map(DeliveryState::as_str), limit, offset)
            .await
    }

    async fn event_versioned(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> WebhookResult<(WebhookEvent, u64)> {
        get_record::<WebhookEvent>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| (v.record, v.version))
            .ok_or_else(|| not_found("webhook event", id))
    }

    /// One event of the tenant with its deliveries and every attempt of each.
    pub async fn event(&self, tenant: &TenantId, id: &str) -> WebhookResult<EventDetail> {
        let (event, _) = self.event_versioned(tenant, id).await?;
        let mut deliveries = Vec::with_capacity(event.deliveries.len());
        for d in &event.deliveries {
            if let Some(v) = get_record::<Delivery>(&*self.store, d).await? {
                deliveries.push(v.record);
            }
        }
        Ok(EventDetail { event, deliveries })
    }

    /// Sends one event again, now, to every enabled endpoint of the tenant subscribed to
    /// its type; returns the new deliveries. Same body, same `event_id`.
    pub async fn replay_event(&self, tenant: &TenantId, id: &str) -> WebhookResult<Vec<Delivery>> {
        for _ in 0..4 {
            let (mut event, version) = self.event_versioned(tenant, id).await?;
            let endpoints = self.enabled_endpoints(&tenant.0).await?;
            let now = self.clock.now();
            event.replays += 1;
            let created: Vec<Delivery> = subscribed(&endpoints, &event.event_type)
                .map(|e| new_delivery(&event, e, now, Some(event.replays)))
                .collect();
            let mut puts = Vec::with_capacity(created.len() + 1);
            for d in &created {
                event.deliveries.push(d.id.clone());
                puts.push(d.insert()?);
            }
            puts.push(event.update(version)?);
            match self
                .store
                .commit(Batch {
                    puts,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(created),
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(e) => return Err(store_err(e)),
            }
        }
        Err(WebhookError::Conflict {
            what: format!("webhook event {id}"),
        })
    }

    /// Re-sends every `DEAD` delivery of the tenant created in `[from, to)` whose
    /// endpoint is enabled and that no earlier replay re-sent; returns the new
    /// deliveries (up to 1,000 per call; call again for more).
    pub async fn replay_failed(
        &self,
        tenant: &TenantId,
        from: Timestamp,
        to: Timestamp,
    ) -> WebhookResult<Vec<Delivery>> {
        if to.millis() <= from.millis() {
            return Err(WebhookError::InvalidParameter {
                field: "to",
                reason: "the range end must be after its start".into(),
            });
        }
        let endpoints: HashMap<String, Endpoint> = self
            .enabled_endpoints(&tenant.0)
            .await?
            .into_iter()
            .map(|e| (e.id.0.clone(), e))
            .collect();
        let mut created = Vec::new();
        let mut offset = 0;
        loop {
            let (records, _) = self
                .store
                .list(&ListQuery {
                    kind: Delivery::KIND.into(),
                    tenant: tenant.0.clone(),
                    subkind: None,
                    status: Some(DeliveryState::Dead.as_str().into()),
                    limit: 100,
                    offset,
                })
                .await
                .map_err(store_err)?;
            if records.is_empty() || created.len() >= 1000 {
                break;
            }
            offset += records.len();
            for r in &records {
                let mut old = Delivery::from_stored(r)?;
                let t = old.created_at.millis();
                if t < from.millis() || t >= to.millis() || old.replayed_by.is_some() {
                    continue;
                }
                let Some(endpoint) = endpoints.get(&old.endpoint.0) else {
                    continue;
                };
                let Some((mut event, ev_version)) =
                    get_record::<WebhookEvent>(&*self.store, &old.event_id)
                        .await?
                        .map(|v| (v.record, v.version))
                else {
                    continue;
                };
                let now = self.clock.now();
                event.replays += 1;
                let mut d = new_delivery(&event, endpoint, now, Some(event.replays));
                if old.body != d.body && !old.body.is_empty() {
                    // The bytes first sent are the ones replayed.
                    d.body = old.body.clone();
                }
                d.replay_of = Some(old.id.clone());
                old.replayed_by = Some(d.id.clone());
                event.deliveries.push(d.id.clone());
                let batch = Batch {
                    puts: vec![
                        d.insert()?,
                        old.update(r.version)?,
                        event.update(ev_version)?,
                    ],
                    ..Default::default()
                };
                match self.store.commit(batch).await {
                    Ok(_) => created.push(d),
                    // A concurrent replay got there first.
                    Err(StoreError::VersionConflict { .. }) => {}
                    Err(e) => return Err(store_err(e)),
                }
            }
        }
        Ok(created)
    }
}

fn subscribed<'a>(
    endpoints: &'a [Endpoint],
    event_type: &'a str,
) -> impl Iterator<Item = &'a Endpoint> + 'a {
    endpoints
        .iter()
        .filter(move |e| e.events.iter().any(|t| t == event_type))
}

/// The wire body of an event for its family: core events are rendered to their spec
/// payload; escrow events already carry theirs; payments events are parsed strictly and
/// re-serialised in the spec's field order.
pub fn render(event_type: &str, payload: &serde_json::Value) -> Result<String, String> {
    let body = match family_of(event_type) {
        Some(Family::Wallet) if event_type.starts_with(ESCROW_PREFIX) => {
            return serde_json::to_string(payload).map_err(|e| e.to_string());
        }
        Some(Family::Wallet) => {
            let domain: DomainEvent =
                serde_json::from_value(payload.clone()).map_err(|e| e.to_string())?;
            WalletPayload::from_event(&domain)
                .to_body()
                .map_err(|e| e.to_string())?
        }
        Some(Family::Payments) => PaymentsPayload::from_value(payload)?
            .to_body()
            .map_err(|e| e.to_string())?,
        None => return Err(format!("{event_type} belongs to no webhook family")),
    };
    String::from_utf8(body).map_err(|e| e.to_string())
}

fn new_delivery(
    event: &WebhookEvent,
    endpoint: &Endpoint,
    now: Timestamp,
    replay: Option<u32>,
) -> Delivery {
    let (body, state, attempts) = match render(&event.event_type, &event.payload) {
        Ok(body) => (body, DeliveryState::Pending, Vec::new()),
        // Kept, visibly dead, rather than dropped: an operator can see what failed.
        Err(reason) => (
            String::new(),
            DeliveryState::Dead,
            vec![Attempt {
                at: now,
                status: None,
                latency_ms: 0,
                error: Some(format!("cannot render the payload: {reason}")),
            }],
        ),
    };
    let id = match replay {
        None => format!("whd_{}_{}", event.id, endpoint.id),
        Some(n) => format!("whd_{}_{}_r{n}", event.id, endpoint.id),
    };
    Delivery {
        id,
        tenant: endpoint.tenant.clone(),
        endpoint: endpoint.id.clone(),
        event_id: event.id.clone(),
        event_type: event.event_type.clone(),
        body,
        state,
        next_attempt_at: Some(now),
        attempts,
        replay_of: None,
        replayed_by: None,
        created_at: now,
    }
}

/// Builds the outbox event of a domain event (what the engines commit); exposed for
/// hosts and tests that emit events themselves.
pub fn outbox_event(
    id: &str,
    tenant: &TenantId,
    at: Timestamp,
    event: &DomainEvent,
) -> WebhookResult<OutboxEvent> {
    Ok(OutboxEvent {
        id: id.to_string(),
        tenant: tenant.0.clone(),
        event_type: event.name().to_string(),
        occurred_at: at,
        payload: serde_json::to_value(event).map_err(|e| WebhookError::InvalidParameter {
            field: "payload",
            reason: e.to_string(),
        })?,
    })
}
