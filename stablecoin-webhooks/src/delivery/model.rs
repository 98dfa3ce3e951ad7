//! The records of webhook delivery and its settings: endpoints, deliveries and their
//! attempts, the tenant-scoped event records, the fan-out cursor, and what a round
//! reports. Kinds and field names are stored: changing them is a data migration.

use crate::payments::is_payments_event_type;
use crate::secret_box::SecretKey;
use crate::signature::Family;
use crate::ssrf::AllowList;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::{TenantId, WebhookEndpointId};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::Record;
use std::time::Duration;

/// An endpoint failing without a success for this long is disabled (Svix: 5 days).
pub const AUTO_DISABLE_AFTER_MS: i64 = 5 * 24 * 3_600_000;

/// A registered endpoint of either family. Its `Debug` output never shows the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// `whe_...`.
    pub id: WebhookEndpointId,
    /// The tenant that registered it; no other tenant sees it.
    pub tenant: TenantId,
    /// Which family's payloads, headers and secrets it gets.
    #[serde(default = "wallet_family")]
    pub family: Family,
    /// Where deliveries are POSTed (checked against the SSRF rules at registration and
    /// before every attempt, see [`crate::ssrf`]).
    pub url: String,
    /// Subscribed event types; only these are delivered.
    pub events: Vec<String>,
    /// Signing secret. In the clear only in what [`Deliverer::register_endpoint`] and
    /// [`Deliverer::rotate_secret`] return (shown to the tenant once); as stored, and so
    /// in every record read back, it is sealed (`v1:...`, see [`crate::secret_box`])
    /// when the deliverer has a [`DeliveryConfig::secret_key`].
    ///
    /// [`Deliverer::register_endpoint`]: super::Deliverer::register_endpoint
    /// [`Deliverer::rotate_secret`]: super::Deliverer::rotate_secret
    pub secret: String,
    /// Also sign with Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`), beside the family's own header (see [`crate::standard`]).
    #[serde(default)]
    pub standard_webhooks: bool,
    /// Whether deliveries are sent to it.
    pub enabled: bool,
    /// Why it is disabled (by the tenant, or automatically after failing for days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Start of the current run of failures without a success; `None` when healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Timestamp>,
    /// When it was registered.
    pub created_at: Timestamp,
}

/// Redacted: the secret (sealed or not) never reaches a log.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("tenant", &self.tenant)
            .field("family", &self.family)
            .field("url", &self.url)
            .field("events", &self.events)
            .field("secret", &"<redacted>")
            .field("standard_webhooks", &self.standard_webhooks)
            .field("enabled", &self.enabled)
            .field("disabled_reason", &self.disabled_reason)
            .field("failing_since", &self.failing_since)
            .field("created_at", &self.created_at)
            .finish()
    }
}

fn wallet_family() -> Family {
    Family::Wallet
}

impl Record for Endpoint {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::WEBHOOK_ENDPOINT;
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
    "treasury.topup.credited",
    SANDBOX_STRAY_DEPOSIT,
    DEPOSIT_QUARANTINED,
];

/// A real deposit reached one of the tenant's sandbox addresses (a test checkout
/// session's, a simulated escrow's): recorded as a stray deposit, never credited, owed
/// back by staff. Its payload is the flat body the core builds
/// (core's `kernel::stray`), sent as it is.
pub const SANDBOX_STRAY_DEPOSIT: &str = stablecoin_core::domain::events::STRAY_DEPOSIT_EVENT;

/// A deposit from a source the sanctions screen flagged was held in quarantine, not
/// credited (issue #51), or staff released or returned it (its `status`). Its payload
/// is the flat body the core builds (core's `kernel::quarantine`), sent as it is.
pub const DEPOSIT_QUARANTINED: &str = stablecoin_core::domain::events::DEPOSIT_QUARANTINED_EVENT;

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
    /// When it started.
    pub at: Timestamp,
    /// HTTP status, absent when no response came (timeout, connection error).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<u16>,
    /// Milliseconds from the start to the response or the failure.
    pub latency_ms: u64,
    /// Why it failed (`HTTP 503`, `timeout`, `connection failed`, ...); absent on a 2xx.
    /// Never an address or a resolver error: the tenant reads it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// Delivery states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryState {
    /// Waiting for its next attempt (`next_attempt_at`).
    Pending,
    /// A 2xx answered it: final.
    Delivered,
    /// Final without a 2xx: the retry schedule is spent, the endpoint is gone, or the
    /// payload could not be rendered. Only a replay sends it again.
    Dead,
}

impl DeliveryState {
    /// The stored and listed name (`PENDING`, `DELIVERED`, `DEAD`).
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
    /// `whd_<event id>_<endpoint id>` (`_r<n>` appended for the n-th replay); sent as the
    /// delivery id header receivers dedupe on.
    pub id: String,
    /// The endpoint's tenant; no other tenant sees the delivery.
    pub tenant: TenantId,
    /// Where it goes.
    pub endpoint: WebhookEndpointId,
    /// The outbox event delivered ([`WebhookEvent::id`]).
    pub event_id: String,
    /// Its event name (`transfer.settled`, ...).
    pub event_type: String,
    /// The exact bytes that are signed and sent (UTF-8 JSON).
    pub body: String,
    /// Where it stands.
    pub state: DeliveryState,
    /// When the next attempt is due while PENDING; `None` once final.
    pub next_attempt_at: Option<Timestamp>,
    /// Every attempt made, oldest first.
    pub attempts: Vec<Attempt>,
    /// The delivery this one replays, if it is a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The delivery that replayed this one (a failed delivery is replayed once per range
    /// replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_by: Option<String>,
    /// When it was created (fan-out or replay).
    pub created_at: Timestamp,
}

impl Record for Delivery {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::WEBHOOK_DELIVERY;
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
    /// The tenant it was written for; only that tenant sees it.
    pub tenant: TenantId,
    /// The event name (`transfer.settled`, `payment.confirmed`, ...).
    pub event_type: String,
    /// When the engine committed it.
    pub occurred_at: Timestamp,
    /// The outbox payload, rendered again on replay.
    pub payload: serde_json::Value,
    /// Every delivery made of it (first fan-out and replays), oldest first.
    pub deliveries: Vec<String>,
    /// Replays made so far; numbers the next replay's delivery ids.
    pub replays: u32,
}

impl Record for WebhookEvent {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::WEBHOOK_EVENT;
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
pub(super) struct Cursor {
    pub(super) after_seq: u64,
    pub(super) created_at: Timestamp,
}

impl Record for Cursor {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::WEBHOOK_CURSOR;
    fn id(&self) -> String {
        "wallet".into()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// Settings of a [`Deliverer`](super::Deliverer).
#[derive(Clone, Debug)]
pub struct DeliveryConfig {
    /// Per-request timeout (connection, request and response together).
    pub timeout: Duration,
    /// How long a claimed delivery is held before another worker may take it.
    pub lease_ms: i64,
    /// Records per step.
    pub batch_limit: usize,
    /// Requests in flight at once: within a [`round`](super::Deliverer::round), and the
    /// whole budget of the [dispatcher](super::Deliverer::run).
    pub concurrency: usize,
    /// Most requests the dispatcher has in flight to one endpoint: a slow or hanging
    /// receiver holds at most this much of the budget.
    pub endpoint_concurrency: usize,
    /// Most requests the dispatcher has in flight for one tenant: one tenant's backlog
    /// leaves the rest of the budget to the others.
    pub tenant_concurrency: usize,
    /// The dispatcher's pause when nothing is due.
    pub poll_interval: Duration,
    /// Name of this worker (claims); unique per process.
    pub worker_id: String,
    /// Networks a webhook may reach although they are not public (see
    /// [`crate::ssrf`]); plain `http://` is accepted only to an allowed loopback
    /// address. Empty (the default): only public addresses, over https.
    /// [`AllowList::loopback`] lets tests and local development reach this machine.
    pub allow_networks: AllowList,
    /// The key sealing endpoint secrets at rest ([`crate::secret_box`]). `None` stores
    /// them as they are: for in-memory stores and tests only; a host with a durable
    /// store sets it (the server derives it from its master seed).
    pub secret_key: Option<SecretKey>,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            timeout: Duration::from_secs(10),
            lease_ms: 60_000,
            batch_limit: 64,
            concurrency: 16,
            endpoint_concurrency: 4,
            tenant_concurrency: 8,
            poll_interval: Duration::from_millis(250),
            worker_id: "webhooks-1".into(),
            allow_networks: AllowList::default(),
            secret_key: None,
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// Deliveries created from new outbox events.
    pub fanned_out: usize,
    /// Deliveries an attempt delivered (2xx).
    pub delivered: usize,
    /// Failed attempts with another attempt scheduled.
    pub retried: usize,
    /// Deliveries an attempt left DEAD (schedule spent, endpoint gone).
    pub dead: usize,
    /// Endpoints this round disabled because they had failed for
    /// [`AUTO_DISABLE_AFTER_MS`].
    pub auto_disabled: Vec<WebhookEndpointId>,
}

/// A page of a tenant's records and their total.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// This page's records.
    pub items: Vec<T>,
    /// How many records match in all, across every page.
    pub total: u64,
}

/// An event with its deliveries and their attempts (inspection).
#[derive(Clone, Debug, PartialEq)]
pub struct EventDetail {
    /// The event.
    pub event: WebhookEvent,
    /// Its deliveries, in the order of [`WebhookEvent::deliveries`].
    pub deliveries: Vec<Delivery>,
}
