//! The events API's reads (issue #52): a tenant's events of one family, newest first,
//! filtered by type (exact, or a prefix such as `transfer.*`) and time, paged by an
//! opaque cursor, each with its payload exactly as the webhook delivered it.
//!
//! The source is the [`WebhookEvent`] record fan-out keeps for EVERY outbox event,
//! whether or not an endpoint is subscribed (only deliveries depend on subscriptions), so
//! the list is complete for a tenant that never registered an endpoint. Records go with
//! the webhook retention window ([`super::WebhookRetention`], 30 days by default).
//!
//! # How a page is read
//!
//! A record's stored status is its event type, and the store keeps one index range per
//! (kind, tenant, status) in (created_at, id) order. A page is, for each event type the
//! filter admits, one keyset read of that range strictly after the cursor
//! ([`Store::list_before`], `limit + 1` rows), merged newest first and cut at `limit`.
//! No read walks another type's rows or another tenant's, and a cursor is a place in the
//! order, not an offset: events arriving while a client walks the pages land ahead of
//! its cursor and never shift what it has not read yet (no duplicate, no gap).
//!
//! The types a family admits are the catalogue below. A prefix expands over it; an exact
//! type outside it (a `wallet.transfer.<status>` the catalogue does not name) is read as
//! its own range.

use super::fan_out::render;
use super::{Deliverer, WALLET_EVENT_TYPES, WebhookEvent, family_of, not_found, store_err};
use crate::error::{WebhookError, WebhookResult};
use crate::payments::PAYMENTS_EVENT_TYPES;
use crate::signature::Family;
use base64::Engine as _;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{ListPosition, ListQuery, StoredRecord};

/// Escrow events (wallet family), as `stablecoin-escrow` names them.
pub const ESCROW_EVENT_TYPES: &[&str] = &[
    "escrow.created",
    "escrow.deposit_recorded",
    "escrow.funded",
    "escrow.payout_pending",
    "escrow.payout_failed",
    "escrow.released",
    "escrow.refunded",
    "escrow.disputed",
    "escrow.expired",
    "escrow.cancelled",
    "escrow.recovery_pending",
    "escrow.recovered",
    "escrow.recovery_failed",
];

/// The `wallet.transfer.<status>` events the engines emit (payments family).
pub const WALLET_TRANSFER_EVENT_TYPES: &[&str] =
    &["wallet.transfer.confirmed", "wallet.transfer.failed"];

/// Most events a page holds (and the default is 20, as every list).
pub const EVENTS_PAGE_MAX: usize = 100;

/// Every event type of `family` the events API lists.
pub fn event_types(family: Family) -> Vec<&'static str> {
    match family {
        Family::Wallet => WALLET_EVENT_TYPES
            .iter()
            .chain(ESCROW_EVENT_TYPES)
            .copied()
            .collect(),
        Family::Payments => PAYMENTS_EVENT_TYPES
            .iter()
            .chain(WALLET_TRANSFER_EVENT_TYPES)
            .copied()
            .collect(),
    }
}

/// Which types a list admits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeFilter {
    /// Every type of the family.
    Any,
    /// One type.
    Exact(String),
    /// Every type of the family starting with this (`transfer.` for `transfer.*`,
    /// `escrow.re` for `escrow.re*`).
    Prefix(String),
}

impl TypeFilter {
    /// Parses the `type` parameter for `family`: absent or `*` is every type; `x.*` a
    /// prefix, which must match at least one type of the family; anything else one type
    /// of the family. `INVALID_PARAMETER` (field `type`) otherwise.
    pub fn parse(family: Family, raw: Option<&str>) -> WebhookResult<Self> {
        let invalid = |reason: String| WebhookError::InvalidParameter {
            field: "type",
            reason,
        };
        let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty() && *s != "*") else {
            return Ok(TypeFilter::Any);
        };
        let well_formed = |s: &str| {
            s.len() <= 64
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_')
        };
        if let Some(prefix) = raw.strip_suffix('*') {
            if prefix.is_empty() || !well_formed(prefix) {
                return Err(invalid(
                    "a prefix is written like transfer.* (lowercase letters, digits, dots \
                     and underscores, then *)"
                        .into(),
                ));
            }
            if !event_types(family).iter().any(|t| t.starts_with(prefix)) {
                return Err(invalid(format!(
                    "no {} event type starts with {prefix}",
                    family.as_str()
                )));
            }
            return Ok(TypeFilter::Prefix(prefix.to_string()));
        }
        if !well_formed(raw) || family_of(raw) != Some(family) {
            return Err(invalid(format!(
                "{} is not a {} event type",
                raw.chars().take(64).collect::<String>(),
                family.as_str()
            )));
        }
        Ok(TypeFilter::Exact(raw.to_string()))
    }

    /// The types whose index ranges a page reads.
    fn types(&self, family: Family) -> Vec<String> {
        match self {
            TypeFilter::Any => event_types(family).into_iter().map(String::from).collect(),
            TypeFilter::Exact(t) => vec![t.clone()],
            TypeFilter::Prefix(p) => event_types(family)
                .into_iter()
                .filter(|t| t.starts_with(p.as_str()))
                .map(String::from)
                .collect(),
        }
    }
}

/// An opaque cursor: where the last page ended. Encoded as base64url of
/// `v1:<created_at ms>:<event id>`; clients must treat it as opaque.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventCursor(pub ListPosition);

impl EventCursor {
    /// The string a client sends back as `starting_after`.
    pub fn encode(&self) -> String {
        let raw = format!("v1:{}:{}", self.0.created_at.0, self.0.id);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }

    /// Reads a cursor; `INVALID_PARAMETER` (field `starting_after`) when it is not one
    /// this server gave out.
    pub fn decode(s: &str) -> WebhookResult<Self> {
        let invalid = || WebhookError::InvalidParameter {
            field: "starting_after",
            reason: "not a cursor this API returned (use next_cursor of a page)".into(),
        };
        if s.len() > 512 {
            return Err(invalid());
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s.trim())
            .map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let rest = text.strip_prefix("v1:").ok_or_else(invalid)?;
        let (ms, id) = rest.split_once(':').ok_or_else(invalid)?;
        let ms: i64 = ms.parse().map_err(|_| invalid())?;
        if id.is_empty() || ms < 0 {
            return Err(invalid());
        }
        Ok(EventCursor(ListPosition {
            created_at: Timestamp::from_millis(ms),
            id: id.to_string(),
        }))
    }
}

/// What a page asks for.
#[derive(Clone, Debug)]
pub struct EventQuery {
    /// The family the caller's key sees (tenant keys: wallet; business keys: payments).
    pub family: Family,
    /// Which types.
    pub types: TypeFilter,
    /// Only events created at or after this.
    pub from: Option<Timestamp>,
    /// Only events created strictly before this.
    pub to: Option<Timestamp>,
    /// Continue after this cursor (a previous page's `next`).
    pub after: Option<EventCursor>,
    /// Page size, 1 to [`EVENTS_PAGE_MAX`].
    pub limit: usize,
}

/// One event as the events API shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedEvent {
    /// `evt_...`: the id the webhook carried.
    pub id: String,
    /// Its type.
    pub event_type: String,
    /// When the engine committed it.
    pub created_at: Timestamp,
    /// The delivered body, byte for byte (rendered by the same function fan-out and
    /// replay use); `None` only for an event fan-out could not render either (its
    /// deliveries are DEAD with that reason).
    pub body: Option<String>,
}

impl ListedEvent {
    fn of(e: WebhookEvent) -> Self {
        ListedEvent {
            body: render(&e.event_type, &e.payload).ok(),
            id: e.id,
            event_type: e.event_type,
            created_at: e.occurred_at,
        }
    }
}

/// A page of events, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct EventsPage {
    /// The events.
    pub events: Vec<ListedEvent>,
    /// Where the next page starts, when there are more (the last event's place).
    pub next: Option<EventCursor>,
}

/// The older of two positions (the one a page starts after, so both bounds hold).
fn older(a: ListPosition, b: ListPosition) -> ListPosition {
    if (a.created_at, a.id.as_str()) <= (b.created_at, b.id.as_str()) {
        a
    } else {
        b
    }
}

impl Deliverer {
    /// A page of the tenant's events of one family (see the module docs for how it is
    /// read).
    pub async fn events_page(
        &self,
        tenant: &TenantId,
        query: &EventQuery,
    ) -> WebhookResult<EventsPage> {
        if query.limit == 0 || query.limit > EVENTS_PAGE_MAX {
            return Err(WebhookError::InvalidParameter {
                field: "limit",
                reason: format!("must be from 1 to {EVENTS_PAGE_MAX}"),
            });
        }
        if let (Some(from), Some(to)) = (query.from, query.to)
            && to <= from
        {
            return Err(WebhookError::InvalidParameter {
                field: "to",
                reason: "the range end must be after its start".into(),
            });
        }
        let start = match (query.after.clone().map(|c| c.0), query.to) {
            (Some(a), Some(to)) => Some(older(a, ListPosition::before_time(to))),
            (Some(a), None) => Some(a),
            (None, Some(to)) => Some(ListPosition::before_time(to)),
            (None, None) => None,
        };
        let mut rows: Vec<StoredRecord> = Vec::new();
        for event_type in query.types.types(query.family) {
            let list = ListQuery {
                kind: WebhookEvent::KIND.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: Some(event_type),
                limit: query.limit + 1,
                offset: 0,
            };
            let page = self
                .store
                .list_before(&list, start.as_ref())
                .await
                .map_err(store_err)?;
            rows.extend(
                page.into_iter()
                    .filter(|r| query.from.is_none_or(|from| r.created_at >= from)),
            );
        }
        rows.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        let more = rows.len() > query.limit;
        rows.truncate(query.limit);
        let next = more
            .then(|| rows.last().map(|r| EventCursor(ListPosition::of(r))))
            .flatten();
        let events = rows
            .iter()
            .map(|r| WebhookEvent::from_stored(r).map(ListedEvent::of))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EventsPage { events, next })
    }

    /// One event of the tenant in `family`, as listed. Another tenant's event, or one
    /// of the other family, is `NOT_FOUND`.
    pub async fn listed_event(
        &self,
        tenant: &TenantId,
        family: Family,
        id: &str,
    ) -> WebhookResult<ListedEvent> {
        get_record::<WebhookEvent>(&*self.store, id)
            .await?
            .map(|v| v.record)
            .filter(|e| &e.tenant == tenant && family_of(&e.event_type) == Some(family))
            .map(ListedEvent::of)
            .ok_or_else(|| not_found("event", id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_garbage_is_refused() {
        let c = EventCursor(ListPosition {
            created_at: Timestamp::from_millis(1_764_000_000_123),
            id: "evt_01:x".into(),
        });
        assert_eq!(EventCursor::decode(&c.encode()).unwrap(), c);
        for bad in ["", "abc", "djE6", "djE6eDp5", &"A".repeat(600)] {
            assert!(EventCursor::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn type_filters_parse_per_family() {
        use Family::*;
        assert_eq!(TypeFilter::parse(Wallet, None).unwrap(), TypeFilter::Any);
        assert_eq!(
            TypeFilter::parse(Wallet, Some("*")).unwrap(),
            TypeFilter::Any
        );
        let p = TypeFilter::parse(Wallet, Some("transfer.*")).unwrap();
        assert_eq!(
            p.types(Wallet),
            ["transfer.received", "transfer.settled", "transfer.failed"]
        );
        assert_eq!(
            TypeFilter::parse(Payments, Some("wallet.deposit.*"))
                .unwrap()
                .types(Payments)
                .len(),
            3
        );
        assert!(TypeFilter::parse(Payments, Some("transfer.*")).is_err());
        assert!(TypeFilter::parse(Wallet, Some("payment.confirmed")).is_err());
        assert_eq!(
            TypeFilter::parse(Wallet, Some("escrow.re*"))
                .unwrap()
                .types(Wallet)
                .len(),
            5,
            "released, refunded, recovery_pending, recovered, recovery_failed"
        );
        assert!(TypeFilter::parse(Wallet, Some("*x*")).is_err());
        assert!(TypeFilter::parse(Wallet, Some("Transfer.settled")).is_err());
        assert_eq!(
            TypeFilter::parse(Payments, Some("wallet.transfer.pending")).unwrap(),
            TypeFilter::Exact("wallet.transfer.pending".into())
        );
        assert_eq!(
            event_types(Wallet).len(),
            23,
            "with sandbox.stray_deposit and deposit.quarantined"
        );
    }
}
