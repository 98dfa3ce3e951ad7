#![doc = include_str!("../README.md")]

pub mod admin;
mod deposits;
pub mod engine;
pub mod error;
pub mod events;
pub mod model;
pub mod queue;
pub mod state;
pub mod view;
mod worker;

pub use admin::{
    EscrowAdmin, PendingRecoveryView, PendingResolutionView, RecoveryOutcome, ResolveOutcome,
    StaffActor, StaffEscrowList, StaffEscrowView,
};
pub use deposits::ESCROW_PRODUCT;
pub use engine::{Decision, Effect, EscrowEngine, Requester, decide, parse_on_behalf_of};
pub use error::{EscrowError, EscrowResult};
pub use events::EscrowEventType;
pub use model::{EscrowConfig, Party, PendingRecovery, PendingResolution, TRON_MAINNET_CHAIN_ID};
pub use state::{
    Action, DepositKind, EscrowState, PayoutPurpose, Phase, RecoveryKind, TransitionError,
    classify_deposit, transition,
};
pub use view::{
    CreateEscrowRequest, DealAccounting, EscrowActionRequest, EscrowEventList, EscrowEventView,
    EscrowList, EscrowView, EscrowWebhookPayload, ListEscrowsQuery, PayoutView, RecoveryRequest,
    ResolveRequest, TokenAccounting,
};
pub use worker::{EscrowTickReport, PAYOUT_VALIDITY_MS};
