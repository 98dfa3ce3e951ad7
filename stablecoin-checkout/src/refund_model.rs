//! The stored refund of a checkout session, and the ledger account its money waits in.
//!
//! A refund reserves its money in the commit that creates it: the session's `refunded`
//! grows (under the session's version), and for a live session the ledger moves the
//! amount from where it came from (the business's refundable account, the tenant's
//! treasury) to the refund's own account `checkout_refund:<id>:<TOKEN>`. From there it
//! leaves to the chain when the payment lands, or goes back to its sources when the
//! refund fails or its claim link expires.

use crate::model::Mode;
use crate::refund_state::{RefundSources, RefundStatus};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::kinds::kind;
use stablecoin_core::ports::{LedgerAccount, RailPayment, Record};

/// One refund of a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refund {
    /// `rf_` and 26 Crockford characters: unguessable, so it is also the claim link's
    /// capability (`/pay/refunds/{id}`).
    pub id: String,
    /// The session's tenant.
    pub tenant: TenantId,
    /// The session's business.
    pub business: String,
    /// The session's mode: a test refund moves nothing and completes with a simulated
    /// hash.
    pub mode: Mode,
    /// The refunded session.
    pub session: String,
    /// Which stablecoin.
    pub token: Token,
    /// Micro-units: `sources.owed_back + sources.settled`.
    pub amount: Micros,
    /// Where the amount was taken from (and goes back to on failure or expiry).
    pub sources: RefundSources,
    /// The network it is sent on: given with the address, or chosen on the claim page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The destination: given by the business, or by the payer on the claim page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The networks the payer may choose on the claim page (the session's networks that
    /// carry the token, or the one the business named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claim_networks: Vec<String>,
    /// The business's reason, shown to the payer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Where it stands.
    pub status: RefundStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Attempts started (the payment id is `<id>_<attempt>`).
    #[serde(default)]
    pub attempt: u32,
    /// The current attempt's payment, once built (a retry of the same attempt sends the
    /// same bytes and deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment: Option<RailPayment>,
    /// The settling transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    /// The last refusal or failure of an attempt, for operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Until when the claim link may be used (claim-link refunds only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_expires_at: Option<Timestamp>,
    /// When the worker next looks at it; `None` once final.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Timestamp>,
    /// Created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When the payer claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<Timestamp>,
    /// When it landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Timestamp>,
}

impl Refund {
    /// The claim link's path.
    pub fn claim_path(&self) -> String {
        format!("/pay/refunds/{}", self.id)
    }
}

impl Record for Refund {
    const KIND: &'static str = kind::CHECKOUT_REFUND;
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
        Some(self.status.as_str().into())
    }
    /// Listed per session.
    fn subkind(&self) -> Option<String> {
        Some(self.session.clone())
    }
    fn due_at(&self) -> Option<Timestamp> {
        self.due_at
    }
}

/// `checkout_refund:<id>:<TOKEN>`: a refund's money between its reservation and its
/// landing (or its return). Its ledger transfers are named after the refund
/// (`<rf_id>:reserve:owed`, `:reserve:settled`, `:return:...`, `:out`), so a statement
/// shows them as one `refund` operation.
pub fn refund_account(id: &str, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("checkout_refund:{id}:{token}"),
        allow_negative: false,
    }
}

/// `rf_` and 26 Crockford characters: anything else is never looked up.
pub fn is_refund_id(id: &str) -> bool {
    stablecoin_core::domain::ids::is_valid_id("rf", id)
}
