#![doc = include_str!("../README.md")]

pub mod engine;
pub mod error;
pub mod events;
pub mod inbound;
pub mod links;
pub mod model;
pub mod refund_model;
pub mod refund_state;
pub mod refund_views;
mod refund_worker;
pub mod state;
pub mod sweep;
pub mod views;
pub mod wallet_links;
pub mod worker;

pub use engine::{
    CheckoutConfig, CheckoutEngine, DepositFact, DepositOutcome, DepositStage,
    PhonePaymentCodeView, PhonePaymentView, is_session_id,
};
pub use error::{CheckoutError, CheckoutResult};
pub use inbound::CHECKOUT_PRODUCT;
pub use model::{
    Business, DEFAULT_BUSINESS, Mode, PayOption, Session, SessionDeposit, WalletPayer,
};
pub use refund_model::Refund;
pub use refund_state::RefundStatus;
pub use refund_views::{
    CreateRefundRequest, RefundClaimView, RefundList, RefundView, RefundableView,
};
pub use state::SessionStatus;
pub use views::*;
pub use worker::CheckoutTickReport;
