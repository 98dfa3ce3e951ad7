//! Endpoint registration and the durable delivery worker of the wallet-service family
//! (spec 6.1), over the `Store` port so it runs on memory, SQLite and PostgreSQL alike.
//!
//! # How an event travels
//!
//! 1. The engines write each event to the outbox in the same commit as the change it
//!    reports. Settlement never waits on delivery.
//! 2. **Fan-out** ([`Deliverer::fan_out`]) reads the outbox after a persisted cursor and,
//!    for every enabled endpoint of the event's tenant subscribed to its type, inserts one
//!    `webhook_delivery` record (id derived from event id + endpoint id) holding the exact
//!    signed body. The new deliveries and the advanced cursor are ONE commit on the
//!    cursor's version: two workers racing on the same page cannot both fan out; the loser
//!    gets a version conflict and reads again. An event is thus fanned out exactly once.
//! 3. **Delivery** ([`Deliverer::deliver_due`]) claims due deliveries with
//!    `Store::claim_due` (no two workers, even in two processes, hold one delivery at
//!    once), POSTs the body with the family's headers and a timeout, records the attempt
//!    (time, HTTP status, latency, error) and commits the outcome on the claimed version.
//!    Any 2xx is delivered. Anything else (non-2xx, timeout, connection error) schedules
//!    the next attempt; after the last one the delivery is `DEAD`.
//!
//! A worker that dies mid-attempt loses nothing: its claim lapses after the lease and the
//! delivery is attempted again (receivers dedupe on `event_id`, which stays the same).
//!
//! # Retry schedule
//!
//! Svix's: after the first attempt, retries at +5 s, +5 min, +30 min, +2 h, +5 h, +10 h and
//! +10 h (8 attempts over about 27.5 hours), each delay stretched by a random 0-10 %
//! (jitter from the `Entropy` port) so a recovering receiver is not hit by every retry at
//! once. A `Retry-After` header in seconds on a 429 or 503 is honoured when it asks for
//! longer than the schedule, up to 24 hours. Time comes from the `Clock` port, so tests
//! drive the schedule without sleeping.

use crate::error::{WebhookError, WebhookResult};
use crate::payload::WalletPayload;
use crate::signature::{Family, WALLET_SIGNATURE_HEADER, WALLET_USER_AGENT};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::{TenantId, WebhookEndpointId};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{Batch, Clock, Entropy, ListQuery, OutboxEvent, Store, StoreError};
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

/// A registered wallet-service endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub id: WebhookEndpointId,
    pub tenant: TenantId,
    pub url: String,
    /// Subscribed event types; only these are delivered.
    pub events: Vec<String>,
    /// Signing secret (shown to the tenant once, at registration or rotation).
    pub secret: String,
    pub enabled: bool,
    pub created_at: Timestamp,
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

/// Escrow event types are accepted with this prefix (`escrow.created`, ...).
const ESCROW_PREFIX: &str = "escrow.";

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
        Some(
            match self.state {
                DeliveryState::Pending => "PENDING",
                DeliveryState::Delivered => "DELIVERED",
                DeliveryState::Dead => "DEAD",
            }
            .into(),
        )
    }
    fn due_at(&self) -> Option<Timestamp> {
        match self.state {
            DeliveryState::Pending => self.next_attempt_at,
            _ => None,
        }
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
}

/// Registration and delivery of wallet-service webhooks.
#[derive(Clone)]
pub struct Deliverer {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    http: reqwest::Client,
    config: DeliveryConfig,
}

fn store_err(e: StoreError) -> WebhookError {
    e.into()
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

    /// Registers an endpoint; the returned record holds the secret, shown once.
    pub async fn register(
        &self,
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
        for e in events {
            if !WALLET_EVENT_TYPES.contains(&e.as_str()) && !e.starts_with(ESCROW_PREFIX) {
                return Err(WebhookError::UnknownEventType {
                    event_type: e.chars().take(100).collect(),
                    family: "wallet-service",
                });
            }
        }
        let now = self.clock.now();
        let endpoint = Endpoint {
            id: WebhookEndpointId::generate(now.millis(), self.random10()),
            tenant: tenant.clone(),
            url: url.to_string(),
            events: events.to_vec(),
            secret: Family::Wallet.generate_secret(&*self.entropy),
            enabled: true,
            created_at: now,
        };
        let put = endpoint.insert().map_err(WebhookError::from)?;
        self.store
            .commit(Batch {
                puts: vec![put],
                ..Default::default()
            })
            .await
            .map_err(store_err)?;
        Ok(endpoint)
    }

    /// Replaces an endpoint's secret; the previous one stops verifying at once.
    pub async fn rotate_secret(
        &self,
        tenant: &TenantId,
        id: &WebhookEndpointId,
    ) -> WebhookResult<Endpoint> {
        let v = get_record::<Endpoint>(&*self.store, id.as_str())
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .ok_or_else(|| WebhookError::NotFound {
                kind: "webhook endpoint",
                id: id.0.clone(),
            })?;
        let mut e = v.record;
        e.secret = Family::Wallet.generate_secret(&*self.entropy);
        let put = e.update(v.version)?;
        self.store
            .commit(Batch {
                puts: vec![put],
                ..Default::default()
            })
            .await
            .map_err(store_err)?;
        Ok(e)
    }

    /// One round: fan out new outbox events, then attempt every due delivery.
    pub async fn round(&self) -> WebhookResult<RoundReport> {
        let mut report = RoundReport {
            fanned_out: self.fan_out().await?,
            ..Default::default()
        };
        self.deliver_due(&mut report).await?;
        Ok(report)
    }

    /// Fans out one page of outbox events after the cursor; returns how many deliveries
    /// it created.
    pub async fn fan_out(&self) -> WebhookResult<usize> {
        for _ in 0..8 {
            let cursor = get_record::<Cursor>(&*self.store, "wallet").await?;
            let after = cursor.as_ref().map_or(0, |c| c.record.after_seq);
            let events = self
                .store
                .outbox_after(after, self.config.batch_limit)
                .await
                .map_err(store_err)?;
            let Some((last_seq, _)) = events.last() else {
                return Ok(0);
            };
            let now = self.clock.now();
            let mut puts = Vec::new();
            // One endpoint read per tenant per page, not per event.
            let mut by_tenant: std::collections::HashMap<String, Vec<Endpoint>> =
                std::collections::HashMap::new();
            for (_, event) in &events {
                if !by_tenant.contains_key(&event.tenant) {
                    let endpoints = self.enabled_endpoints(&event.tenant).await?;
                    by_tenant.insert(event.tenant.clone(), endpoints);
                }
                let subscribed = by_tenant[&event.tenant]
                    .iter()
                    .filter(|e| e.events.iter().any(|t| t == &event.event_type));
                for endpoint in subscribed {
                    puts.push(self.new_delivery(event, endpoint, now).insert()?);
                }
            }
            let created = puts.len();
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
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(created),
                // Another worker fanned out this page first: read the cursor again.
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(e) => return Err(store_err(e)),
            }
        }
        Err(WebhookError::Conflict {
            what: "webhook fan-out cursor".into(),
        })
    }

    async fn enabled_endpoints(&self, tenant: &str) -> WebhookResult<Vec<Endpoint>> {
        let (records, _) = self
            .store
            .list(&ListQuery {
                kind: Endpoint::KIND.into(),
                tenant: tenant.to_string(),
                status: Some("enabled".into()),
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

    /// The wire body of an outbox event: core events are rendered to their spec payload;
    /// escrow events already carry theirs.
    fn render(event: &OutboxEvent) -> Result<String, String> {
        if event.event_type.starts_with(ESCROW_PREFIX) {
            return serde_json::to_string(&event.payload).map_err(|e| e.to_string());
        }
        let domain: DomainEvent =
            serde_json::from_value(event.payload.clone()).map_err(|e| e.to_string())?;
        let body = WalletPayload::from_event(&domain)
            .to_body()
            .map_err(|e| e.to_string())?;
        String::from_utf8(body).map_err(|e| e.to_string())
    }

    fn new_delivery(&self, event: &OutboxEvent, endpoint: &Endpoint, now: Timestamp) -> Delivery {
        let (body, state, attempts) = match Self::render(event) {
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
        Delivery {
            id: format!("whd_{}_{}", event.id, endpoint.id),
            tenant: endpoint.tenant.clone(),
            endpoint: endpoint.id.clone(),
            event_id: event.id.clone(),
            event_type: event.event_type.clone(),
            body,
            state,
            next_attempt_at: Some(now),
            attempts,
            created_at: now,
        }
    }

    /// Attempts every due delivery once (up to the batch limit).
    pub async fn deliver_due(&self, report: &mut RoundReport) -> WebhookResult<()> {
        let now = self.clock.now();
        let claimed = self
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
        for stored in claimed {
            let mut d = Delivery::from_stored(&stored)?;
            if d.state != DeliveryState::Pending {
                continue;
            }
            let endpoint = get_record::<Endpoint>(&*self.store, d.endpoint.as_str()).await?;
            let (attempt, retry_after) = match &endpoint {
                Some(e) if e.record.enabled => self.attempt(&e.record, &d).await,
                _ => (
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
            d.attempts.push(attempt);
            let n = d.attempts.len();
            if ok {
                d.state = DeliveryState::Delivered;
                d.next_attempt_at = None;
                report.delivered += 1;
            } else if n > RETRY_SCHEDULE_MS.len()
                || !endpoint.as_ref().is_some_and(|e| e.record.enabled)
            {
                d.state = DeliveryState::Dead;
                d.next_attempt_at = None;
                report.dead += 1;
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
                report.retried += 1;
            }
            match self
                .store
                .commit(Batch {
                    puts: vec![d.update(stored.version)?],
                    ..Default::default()
                })
                .await
            {
                Ok(_) => {}
                // Our lease lapsed and another worker took it: its outcome stands.
                Err(StoreError::VersionConflict { .. }) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        Ok(())
    }

    async fn attempt(&self, endpoint: &Endpoint, d: &Delivery) -> (Attempt, Option<i64>) {
        let at = self.clock.now();
        let started = Instant::now();
        let result = self
            .http
            .post(&endpoint.url)
            .header("Content-Type", "application/json")
            .header("User-Agent", WALLET_USER_AGENT)
            .header(
                WALLET_SIGNATURE_HEADER,
                Family::Wallet.sign(&endpoint.secret, d.body.as_bytes()),
            )
            .body(d.body.clone())
            .send()
            .await;
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
                    format!("transport: {e}")
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
        let (records, total) = self
            .store
            .list(&ListQuery {
                kind: Endpoint::KIND.into(),
                tenant: tenant.0.clone(),
                status: None,
                limit,
                offset,
            })
            .await
            .map_err(store_err)?;
        let endpoints = records
            .iter()
            .map(Endpoint::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((endpoints, total))
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
            .ok_or_else(|| WebhookError::NotFound {
                kind: "webhook endpoint",
                id: id.chars().take(120).collect(),
            })
    }

    /// Disables an endpoint: it receives nothing more, and its pending deliveries end
    /// DEAD at their next attempt. Disabling twice is harmless.
    pub async fn disable(&self, tenant: &TenantId, id: &str) -> WebhookResult<Endpoint> {
        let (mut e, version) = self.endpoint_versioned(tenant, id).await?;
        if !e.enabled {
            return Ok(e);
        }
        e.enabled = false;
        self.store
            .commit(Batch {
                puts: vec![e.update(version)?],
                ..Default::default()
            })
            .await
            .map_err(store_err)?;
        Ok(e)
    }

    /// A delivery of the tenant (inspection); another tenant's is not found.
    pub async fn delivery(&self, tenant: &TenantId, id: &str) -> WebhookResult<Delivery> {
        get_record::<Delivery>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| v.record)
            .ok_or_else(|| WebhookError::NotFound {
                kind: "webhook delivery",
                id: id.chars().take(120).collect(),
            })
    }
}
