#![doc = include_str!("../README.md")]

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
    Deliverer, Delivery, DeliveryConfig, DeliveryState, Endpoint, EventDetail, NewEndpoint, Page,
    RoundReport, WebhookEvent,
};
pub use error::{WebhookError, WebhookResult};
pub use payload::WalletPayload;
pub use payments::PaymentsPayload;
pub use signature::Family;
