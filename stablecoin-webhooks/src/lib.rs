//! `stablecoin-webhooks`: the two webhook families of the service (spec 6).
//!
//! - [`payload`]: the wallet-service family's wire payloads (spec 6.1), rendered from the
//!   core's domain events; escrow events pass through as the escrow engine rendered them.
//! - [`payments`]: the payments family's wire payloads (spec 6.2): flat `payment.*`,
//!   enveloped `wallet.deposit.*` and `wallet.transfer.*`, built from typed facts.
//! - [`signature`]: signing and constant-time verification of both families, secrets.
//! - [`delivery`]: endpoint registration per tenant, the durable delivery worker over the
//!   outbox (claimed deliveries, retry schedule with jitter, `Retry-After`, dead events,
//!   automatic disabling), every attempt recorded, replay and inspection.
//! - [`receiver`]: the kit for tenants receiving our webhooks: verification, lenient
//!   typed parsing, a deposit handler deduping on `deposit_id`, and (feature `axum`) an
//!   axum route.
//!
//! Golden files under `tests/fixtures/` pin every payload; `tests/fixtures/hmac_vectors.json`
//! was computed by Python's `hmac` (`scripts/gen_hmac_vectors.py`).

pub mod delivery;
pub mod error;
pub mod payload;
pub mod payments;
pub mod receiver;
pub mod secret_box;
pub mod signature;
pub mod ssrf;
pub mod standard;

pub use delivery::{
    Deliverer, Delivery, DeliveryConfig, DeliveryState, Endpoint, EventDetail, Page, RoundReport,
    WebhookEvent,
};
pub use error::{WebhookError, WebhookResult};
pub use payload::WalletPayload;
pub use payments::PaymentsPayload;
pub use signature::Family;
