//! `stablecoin-webhooks`: the two webhook families of the service (spec 6).
//!
//! What is here today: the signature scheme of both families ([`signature`]: signing,
//! constant-time verification over the exact bytes, secret generation) and the crate's
//! error enum. Not built yet (issue #5): the wire payload types, endpoint registration,
//! the durable delivery worker over the outbox, replay and the receiver kit. Nothing in
//! this crate pretends to deliver anything.

pub mod error;
pub mod signature;

pub use error::{WebhookError, WebhookResult};
pub use signature::Family;
