//! Payment links (issue #50): a business's reusable link, `/pay/l/{link_id}`, that opens
//! a new session for each payer: a fixed amount, or one the payer chooses between
//! bounds; optionally until a time or a number of payments. The records, the requests
//! and the views; the rules are in `engine::links`.

use crate::model::{Mode, Session};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::kinds::kind;
use stablecoin_core::ports::{ListPosition, Record};

/// A payment link as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentLink {
    /// `plink_...`: public (it is in the link's URL) and unguessable.
    pub id: String,
    /// The owning tenant.
    pub tenant: TenantId,
    /// The owning business.
    pub business: String,
    /// Live or test: its sessions are of this mode.
    pub mode: Mode,
    /// The fixed amount, or `None` when the payer chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Micros>,
    /// The least a payer may choose (payer-chosen links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_amount: Option<Micros>,
    /// The most a payer may choose (payer-chosen links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_amount: Option<Micros>,
    /// `USDC`, `USDT` or `USD`, as a session's.
    pub currency: String,
    /// What is bought, shown to the payer and copied to each session.
    pub description: String,
    /// After this instant the link opens no session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// The link opens no session once this many of its sessions are paid or still open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_payments: Option<u32>,
    /// False once deactivated (for good).
    pub active: bool,
    /// When it was deactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<Timestamp>,
    /// Sessions opened from it so far. Bumped in the commit of each session, so two
    /// payers opening at once are serialised by the link's version (the `max_payments`
    /// count is exact).
    #[serde(default)]
    pub sessions_opened: u64,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Record for PaymentLink {
    const KIND: &'static str = kind::PAYMENT_LINK;
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
        Some(if self.active { "active" } else { "inactive" }.into())
    }
    /// Listed per business and mode, as sessions are.
    fn subkind(&self) -> Option<String> {
        Some(Session::scope(&self.business, self.mode))
    }
}

/// The index entry of one session opened from a link: listed per link, it is how the
/// link counts its sessions and payments without a scan of the business's sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkSession {
    /// The session, `cs_...` (also the record id).
    pub session: String,
    /// The link it was opened from.
    pub link: String,
    /// The owning tenant.
    pub tenant: TenantId,
    /// When it was opened.
    pub created_at: Timestamp,
}

impl Record for LinkSession {
    const KIND: &'static str = kind::PAYMENT_LINK_SESSION;
    fn id(&self) -> String {
        self.session.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn subkind(&self) -> Option<String> {
        Some(self.link.clone())
    }
}

/// `POST /api/v1/payment-links`: a fixed `amount`, or neither (the payer chooses,
/// between `min_amount` and `max_amount` when given).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreatePaymentLinkRequest {
    /// The fixed amount of every payment: a positive decimal with at most 6 places.
    /// Absent: the payer chooses.
    #[serde(default)]
    #[cfg_attr(
        feature = "utoipa",
        schema(example = "25.00", pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$")
    )]
    pub amount: Option<String>,
    /// The least a payer may choose (only without `amount`; default 0.000001).
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$"))]
    pub min_amount: Option<String>,
    /// The most a payer may choose (only without `amount`; default the checkout's
    /// largest session amount).
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$"))]
    pub max_amount: Option<String>,
    /// `USDC`, `USDT`, or `USD` (either stablecoin, at par).
    #[cfg_attr(
        feature = "utoipa",
        schema(example = "USDC", pattern = "^(USDC|USDT|USD)$")
    )]
    pub currency: String,
    /// What is bought, shown to the payer; up to 500 characters.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(max_length = 500))]
    pub description: Option<String>,
    /// RFC 3339; after it the link opens no session. Must be in the future.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(format = DateTime, max_length = 64))]
    pub expires_at: Option<String>,
    /// How many payments the link takes: 1 to 1000000. A session opened from it holds
    /// a place while it is open.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(minimum = 1, maximum = 1000000))]
    pub max_payments: Option<u32>,
}

/// What a payer sends to open a session from a link: the amount, for a link whose
/// payer chooses it (ignored for a fixed amount).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenLinkRequest {
    /// The payer's amount, a decimal string.
    #[serde(default)]
    pub amount: Option<String>,
}

/// A payment link as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PaymentLinkView {
    /// `plink_...`.
    pub link_id: String,
    /// The owning business.
    pub business_id: String,
    /// `live` or `test`.
    pub mode: String,
    /// `active` (opens sessions), `inactive` (deactivated), `expired` (past
    /// `expires_at`) or `completed` (`max_payments` reached).
    pub status: String,
    /// The fixed amount, 6 places; absent when the payer chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// The least a payer may choose, 6 places (payer-chosen links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_amount: Option<String>,
    /// The most a payer may choose, 6 places (payer-chosen links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_amount: Option<String>,
    /// `USDC`, `USDT` or `USD`.
    pub currency: String,
    /// What is bought.
    pub description: String,
    /// RFC 3339, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The payments it takes, when limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_payments: Option<u32>,
    /// The payer's page: `/pay/l/{link_id}`.
    pub url: String,
    /// Sessions opened from it.
    pub sessions_count: u64,
    /// Of those, the paid ones.
    pub payments_count: u64,
    /// Of those, the ones still open (pending).
    pub open_sessions_count: u64,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// RFC 3339, once deactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<String>,
}

/// A page of a business's payment links, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PaymentLinkList {
    /// The links of this page.
    pub payment_links: Vec<PaymentLinkView>,
    /// Send as `starting_after` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The opaque cursor of a link list: hex of `v1:<created_at ms>:<link id>`, a place in
/// the list's order ([`ListPosition`]), so pages walked while links are created never
/// repeat or skip one.
pub fn encode_cursor(p: &ListPosition) -> String {
    format!("v1:{}:{}", p.created_at.millis(), p.id)
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads a cursor [`encode_cursor`] wrote; `None` for anything else.
pub fn decode_cursor(s: &str) -> Option<ListPosition> {
    if s.len() > 512 || !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let text = String::from_utf8(bytes).ok()?;
    let (ms, id) = text.strip_prefix("v1:")?.split_once(':')?;
    let ms: i64 = ms.parse().ok().filter(|m| *m >= 0)?;
    (!id.is_empty()).then(|| ListPosition {
        created_at: Timestamp::from_millis(ms),
        id: id.into(),
    })
}

/// `plink_` and 26 Crockford characters: anything else is never looked up.
pub fn is_link_id(id: &str) -> bool {
    stablecoin_core::domain::ids::is_valid_id("plink", id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_garbage_is_refused() {
        let p = ListPosition {
            created_at: Timestamp::from_millis(1_700_000_000_123),
            id: "plink_01ABC".into(),
        };
        assert_eq!(decode_cursor(&encode_cursor(&p)), Some(p));
        for bad in ["", "zz", "7631", &"a".repeat(600), "76313a2d313a78"] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
    }
}
