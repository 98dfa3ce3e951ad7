//! `stablecoin-webhooks`: the two webhook families of the service (spec 6).
//!
//! What is here today: the signature scheme of both families ([`signature`]: signing,
//! constant-time verification over the exact bytes, secret generation), the wallet-service
//! family's wire payloads ([`payload`], pinned by golden files), endpoint registration and
//! the durable delivery worker over the outbox ([`delivery`]), and the crate's error enum.
//! Not built yet (issue #5): the payments family's payloads and delivery, replay and
//! inspection APIs beyond one delivery, automatic endpoint disabling, the receiver kit
//! and the server routes. Nothing in
//! this crate pretends to deliver anything.

pub mod delivery;
pub mod error;
pub mod payload;
pub mod signature;

pub use delivery::{Deliverer, DeliveryConfig, Endpoint};
pub use error::{WebhookError, WebhookResult};
pub use payload::WalletPayload;
pub use signature::Family;
