//! Retention: how long the engine's short-lived records are kept, and the purge that
//! deletes them once that time is up.
//!
//! Four things grow with traffic and are useless after a while: idempotency records
//! (one per keyed request), FX quotes (one per quote asked, dead after 60 s),
//! one-time-code challenges (one per code sent, dead after 10 minutes) and payout
//! providers' results (one per payout, read within seconds; the provider can be asked
//! again). Nothing else the
//! engine stores is purged: operations, wallets, deposits and the ledger are the money's
//! history, and the one-time-code guards hold lockouts.
//!
//! What may be purged is a product rule, so it is decided here and not by the host:
//! - an idempotency record is kept at least [`Retention::MIN_IDEMPOTENCY_MS`] (24 h,
//!   API-CONVENTIONS "Idempotency": a retry within a day replays, never runs again);
//! - a quote or a challenge is kept at least its own lifetime ([`QUOTE_TTL_MS`],
//!   [`CODE_TTL_MS`]), so one that could still be used is never deleted. A window
//!   shorter than that is refused when the [`Retention`] is built.
//!
//! Once purged, a quote or challenge id answers `NOT_FOUND` rather than "expired" or
//! "already used", and an idempotency key runs its request again: that is why the
//! defaults keep each well past its minimum.

use super::{Engine, store_err};
use crate::domain::consent::CODE_TTL_MS;
use crate::domain::fx::QUOTE_TTL_MS;
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::kinds::kind;
use crate::ports::store::{Purge, PurgeTarget, purge_all};

/// One hour, in ms.
const HOUR_MS: i64 = 3_600_000;

/// How long each kind of short-lived record is kept after it was created. Built only by
/// [`Retention::new`] (or its default), which refuses windows below each kind's minimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    idempotency_ms: i64,
    quotes_ms: i64,
    challenges_ms: i64,
    payout_results_ms: i64,
    batch_limit: usize,
}

impl Retention {
    /// The shortest time an idempotency record is kept: 24 hours (API-CONVENTIONS).
    pub const MIN_IDEMPOTENCY_MS: i64 = 24 * HOUR_MS;
    /// The default window of idempotency records: 72 hours, so a client retrying over a
    /// long weekend's outage still gets its first answer.
    pub const DEFAULT_IDEMPOTENCY_MS: i64 = 72 * HOUR_MS;
    /// The default window of FX quotes: 24 hours (a quote is dead after 60 s; a day lets
    /// a client still be told "already used" or "expired" for the quote it just used).
    pub const DEFAULT_QUOTES_MS: i64 = 24 * HOUR_MS;
    /// The default window of one-time-code challenges: 7 days (a code is dead after 10
    /// minutes; a week keeps recent requests inspectable in the database).
    pub const DEFAULT_CHALLENGES_MS: i64 = 7 * 24 * HOUR_MS;
    /// The default window of payout providers' results ([`kind::PAYOUT_RESULT`]): 30
    /// days after their last change.
    pub const DEFAULT_PAYOUT_RESULTS_MS: i64 = 30 * 24 * HOUR_MS;
    /// The shortest: 24 hours (a result is read within seconds of arriving; once purged
    /// the adapter asks the provider again, so a window only bounds the table).
    pub const MIN_PAYOUT_RESULTS_MS: i64 = 24 * HOUR_MS;
    /// Rows one store call deletes by default (see [`Retention::batch_limit`]).
    pub const DEFAULT_BATCH_LIMIT: usize = 500;

    /// Windows in ms. Refused (`INVALID_PARAMETER`): an idempotency window under
    /// [`Self::MIN_IDEMPOTENCY_MS`], a quote window under [`QUOTE_TTL_MS`], a challenge
    /// window under [`CODE_TTL_MS`].
    pub fn new(idempotency_ms: i64, quotes_ms: i64, challenges_ms: i64) -> CoreResult<Self> {
        let refuse = |field: &'static str, min: i64, what: &str| CoreError::InvalidParameter {
            field,
            reason: format!("must be at least {min} ms ({what})"),
        };
        if idempotency_ms < Self::MIN_IDEMPOTENCY_MS {
            return Err(refuse(
                "idempotency_ms",
                Self::MIN_IDEMPOTENCY_MS,
                "idempotent requests are replayed for at least 24 hours",
            ));
        }
        if quotes_ms < QUOTE_TTL_MS {
            return Err(refuse("quotes_ms", QUOTE_TTL_MS, "a quote's lifetime"));
        }
        if challenges_ms < CODE_TTL_MS {
            return Err(refuse(
                "challenges_ms",
                CODE_TTL_MS,
                "a one-time code's lifetime",
            ));
        }
        Ok(Retention {
            idempotency_ms,
            quotes_ms,
            challenges_ms,
            payout_results_ms: Self::DEFAULT_PAYOUT_RESULTS_MS,
            batch_limit: Self::DEFAULT_BATCH_LIMIT,
        })
    }

    /// The same windows, payout results kept `ms` (INVALID_PARAMETER
    /// `payout_results_ms` under [`Self::MIN_PAYOUT_RESULTS_MS`]).
    pub fn with_payout_results_ms(mut self, ms: i64) -> CoreResult<Self> {
        if ms < Self::MIN_PAYOUT_RESULTS_MS {
            return Err(CoreError::InvalidParameter {
                field: "payout_results_ms",
                reason: format!("must be at least {} ms", Self::MIN_PAYOUT_RESULTS_MS),
            });
        }
        self.payout_results_ms = ms;
        Ok(self)
    }

    /// How long a payout provider's results are kept, in ms.
    pub fn payout_results_ms(&self) -> i64 {
        self.payout_results_ms
    }

    /// The same windows, deleting at most `limit` rows per store call (at least 1).
    /// Smaller calls hold the database for less time each; a purge makes as many as it
    /// needs either way.
    pub fn with_batch_limit(mut self, limit: usize) -> Self {
        self.batch_limit = limit.max(1);
        self
    }

    /// How long an idempotency record is kept, in ms.
    pub fn idempotency_ms(&self) -> i64 {
        self.idempotency_ms
    }

    /// How long a quote is kept, in ms.
    pub fn quotes_ms(&self) -> i64 {
        self.quotes_ms
    }

    /// How long a challenge is kept, in ms.
    pub fn challenges_ms(&self) -> i64 {
        self.challenges_ms
    }

    /// Rows one store call deletes at most.
    pub fn batch_limit(&self) -> usize {
        self.batch_limit
    }
}

impl Default for Retention {
    /// 72 hours for idempotency records, 24 hours for quotes, 7 days for challenges.
    fn default() -> Self {
        Retention {
            idempotency_ms: Self::DEFAULT_IDEMPOTENCY_MS,
            quotes_ms: Self::DEFAULT_QUOTES_MS,
            challenges_ms: Self::DEFAULT_CHALLENGES_MS,
            payout_results_ms: Self::DEFAULT_PAYOUT_RESULTS_MS,
            batch_limit: Self::DEFAULT_BATCH_LIMIT,
        }
    }
}

/// What one [`Engine::purge_expired`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Idempotency records (the engine's and any host's, e.g. the server's HTTP ones).
    pub idempotency: u64,
    /// FX quotes.
    pub quotes: u64,
    /// One-time-code challenges.
    pub challenges: u64,
    /// Web-console sessions ([`super::ConsoleSession`]) created more than
    /// [`super::CONSOLE_SESSION_RETENTION_MS`] ago: every one of them
    /// has expired, since a session lasts at most
    /// [`super::MAX_CONSOLE_SESSION_TTL_MS`].
    pub console_sessions: u64,
    /// Payout providers' results (per payout).
    pub payout_results: u64,
}

impl Engine {
    /// Deletes the idempotency records, quotes, challenges and console sessions older
    /// than their window
    /// in `retention`, as of the engine's clock. Safe to run from several processes at
    /// once (each row goes once) and at any time: nothing it deletes can still be used.
    pub async fn purge_expired(&self, retention: &Retention) -> CoreResult<PurgeReport> {
        let now = self.now();
        let store = &*self.ports().store;
        let purge = |target: PurgeTarget, window_ms: i64| Purge {
            target,
            before: cutoff(now, window_ms),
            limit: retention.batch_limit,
        };
        let records = |kind: &str| PurgeTarget::Records {
            kind: kind.to_string(),
            statuses: None,
        };
        let idempotency = purge(PurgeTarget::Idempotency, retention.idempotency_ms);
        let quotes = purge(records(kind::QUOTE), retention.quotes_ms);
        let challenges = purge(records(kind::CHALLENGE), retention.challenges_ms);
        let sessions = purge(
            records(kind::CONSOLE_SESSION),
            super::console_sessions::CONSOLE_SESSION_RETENTION_MS,
        );
        let payout_results = purge(records(kind::PAYOUT_RESULT), retention.payout_results_ms);
        Ok(PurgeReport {
            console_sessions: purge_all(store, &sessions).await.map_err(store_err)?,
            idempotency: purge_all(store, &idempotency).await.map_err(store_err)?,
            quotes: purge_all(store, &quotes).await.map_err(store_err)?,
            challenges: purge_all(store, &challenges).await.map_err(store_err)?,
            payout_results: purge_all(store, &payout_results).await.map_err(store_err)?,
        })
    }
}

/// Rows created before this instant are older than `window_ms` at `now`.
fn cutoff(now: Timestamp, window_ms: i64) -> Timestamp {
    now.plus_millis(window_ms.saturating_neg())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_below_each_minimum_are_refused() {
        let day = Retention::MIN_IDEMPOTENCY_MS;
        let ok = Retention::new(day, QUOTE_TTL_MS, CODE_TTL_MS).unwrap();
        assert_eq!(
            (ok.idempotency_ms(), ok.quotes_ms(), ok.challenges_ms()),
            (day, QUOTE_TTL_MS, CODE_TTL_MS)
        );
        for (r, field) in [
            (
                Retention::new(day - 1, QUOTE_TTL_MS, CODE_TTL_MS),
                "idempotency_ms",
            ),
            (
                Retention::new(day, QUOTE_TTL_MS - 1, CODE_TTL_MS),
                "quotes_ms",
            ),
            (
                Retention::new(day, QUOTE_TTL_MS, CODE_TTL_MS - 1),
                "challenges_ms",
            ),
            (
                Retention::new(-1, QUOTE_TTL_MS, CODE_TTL_MS),
                "idempotency_ms",
            ),
        ] {
            let e = r.unwrap_err();
            assert_eq!((e.code(), e.param()), ("INVALID_PARAMETER", Some(field)));
        }
    }

    #[test]
    fn the_defaults_keep_each_kind_past_its_minimum() {
        let d = Retention::default();
        assert_eq!(
            Retention::new(d.idempotency_ms(), d.quotes_ms(), d.challenges_ms()),
            Ok(d)
        );
        assert_eq!(d.idempotency_ms(), 72 * HOUR_MS);
        assert_eq!(d.batch_limit(), 500);
        assert_eq!(d.with_batch_limit(0).batch_limit(), 1, "0 would never end");
    }

    #[test]
    fn the_cutoff_is_the_window_before_now_and_saturates() {
        assert_eq!(cutoff(Timestamp(10_000), 3_000), Timestamp(7_000));
        assert_eq!(cutoff(Timestamp(i64::MIN), 1), Timestamp(i64::MIN));
    }
}
