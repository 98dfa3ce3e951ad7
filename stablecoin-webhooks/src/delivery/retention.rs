//! Retention of webhook records: events and finished deliveries older than a window are
//! deleted by [`Deliverer::purge_expired`], which a host runs from time to time.
//!
//! What may go is decided here, not by the host:
//! - a delivery only once it is final (`DELIVERED`, or `DEAD`: given up). A `PENDING`
//!   one is kept whatever its age, so a delivery still being retried is never lost;
//! - an event record (what inspection and replay read) once it is older than the window.
//!   Delivery never reads it (a delivery carries its own signed body), so a delivery
//!   still pending of an old event goes on; only its inspection and replay are gone;
//! - the window is at least [`MAX_RETRY_SPAN_MS`], the longest a delivery can be retried
//!   (a shorter one is refused), so an event is kept for as long as any delivery made
//!   when it was fanned out can still be attempted.
//!
//! - an outbox event once fan-out has passed it (its cursor): fan-out has copied it into
//!   the event record (and its deliveries) in the same commit that moved the cursor, so
//!   the outbox row is a second copy nobody reads again (~1.4 KB per settled transfer,
//!   kept forever before issue 47). An event fan-out has not reached is never purged.
//!
//! Endpoints and the fan-out cursor are never purged here.

use super::retry::MAX_RETRY_SPAN_MS;
use super::{Cursor, Deliverer, DeliveryState, store_err};
use crate::error::{WebhookError, WebhookResult};
use stablecoin_core::ports::kinds::kind;
use stablecoin_core::ports::record::get_record;
use stablecoin_core::ports::store::{Purge, PurgeTarget, purge_all};

/// How long webhook events and finished deliveries are kept after they were created.
/// Built by [`WebhookRetention::new`] (or its default), which refuses a window shorter
/// than the retry schedule's longest span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebhookRetention {
    window_ms: i64,
    batch_limit: usize,
}

impl WebhookRetention {
    /// The default window: 30 days, time for a tenant to inspect and replay a month of
    /// events after an outage of its receiver.
    pub const DEFAULT_WINDOW_MS: i64 = 30 * 24 * 3_600_000;
    /// Rows one store call deletes by default.
    pub const DEFAULT_BATCH_LIMIT: usize = 500;

    /// A window of `window_ms`; `INVALID_PARAMETER` below [`MAX_RETRY_SPAN_MS`] (7 days).
    pub fn new(window_ms: i64) -> WebhookResult<Self> {
        if window_ms < MAX_RETRY_SPAN_MS {
            return Err(WebhookError::InvalidParameter {
                field: "window_ms",
                reason: format!(
                    "must be at least {MAX_RETRY_SPAN_MS} ms, the longest a delivery is retried"
                ),
            });
        }
        Ok(WebhookRetention {
            window_ms,
            batch_limit: Self::DEFAULT_BATCH_LIMIT,
        })
    }

    /// The same window, deleting at most `limit` rows per store call (at least 1).
    pub fn with_batch_limit(mut self, limit: usize) -> Self {
        self.batch_limit = limit.max(1);
        self
    }

    /// How long an event or a finished delivery is kept, in ms.
    pub fn window_ms(&self) -> i64 {
        self.window_ms
    }

    /// Rows one store call deletes at most.
    pub fn batch_limit(&self) -> usize {
        self.batch_limit
    }
}

impl Default for WebhookRetention {
    /// [`Self::DEFAULT_WINDOW_MS`] (30 days).
    fn default() -> Self {
        WebhookRetention {
            window_ms: Self::DEFAULT_WINDOW_MS,
            batch_limit: Self::DEFAULT_BATCH_LIMIT,
        }
    }
}

/// What one [`Deliverer::purge_expired`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WebhookPurgeReport {
    /// Event records (inspection and replay).
    pub events: u64,
    /// Deliveries that were `DELIVERED` or `DEAD`.
    pub deliveries: u64,
    /// Outbox events fan-out had passed.
    pub outbox: u64,
}

impl Deliverer {
    /// Deletes the events, and the delivered or dead deliveries, created more than
    /// `retention`'s window ago by this deliverer's clock, and the outbox events fan-out
    /// has passed. Pending deliveries are never deleted. Safe to run from several
    /// processes at once.
    pub async fn purge_expired(
        &self,
        retention: &WebhookRetention,
    ) -> WebhookResult<WebhookPurgeReport> {
        let before = self
            .clock
            .now()
            .plus_millis(retention.window_ms.saturating_neg());
        let purge = |kind: &str, statuses: Option<Vec<String>>| Purge {
            target: PurgeTarget::Records {
                kind: kind.to_string(),
                statuses,
            },
            before,
            limit: retention.batch_limit,
        };
        let events = purge(kind::WEBHOOK_EVENT, None);
        let finished = [DeliveryState::Delivered, DeliveryState::Dead]
            .map(|s| s.as_str().to_string())
            .to_vec();
        let deliveries = purge(kind::WEBHOOK_DELIVERY, Some(finished));
        let store = &*self.store;
        // The cursor as read now: fan-out may move it on meanwhile, never back.
        let fanned_out = get_record::<Cursor>(store, "wallet")
            .await?
            .map_or(0, |c| c.record.after_seq);
        let outbox = Purge {
            target: PurgeTarget::Outbox {
                through_seq: fanned_out,
            },
            before: self.clock.now(),
            limit: retention.batch_limit,
        };
        Ok(WebhookPurgeReport {
            events: purge_all(store, &events).await.map_err(store_err)?,
            deliveries: purge_all(store, &deliveries).await.map_err(store_err)?,
            outbox: if fanned_out == 0 {
                0
            } else {
                purge_all(store, &outbox).await.map_err(store_err)?
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_shorter_than_the_retry_span_is_refused() {
        let e = WebhookRetention::new(MAX_RETRY_SPAN_MS - 1).unwrap_err();
        assert_eq!(e.code(), "INVALID_PARAMETER");
        assert_eq!(
            WebhookRetention::new(MAX_RETRY_SPAN_MS)
                .unwrap()
                .window_ms(),
            MAX_RETRY_SPAN_MS
        );
        let d = WebhookRetention::default();
        assert_eq!(WebhookRetention::new(d.window_ms()), Ok(d));
        assert_eq!(d.with_batch_limit(0).batch_limit(), 1);
    }
}
