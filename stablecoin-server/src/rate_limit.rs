//! Per-API-key rate limits (API-CONVENTIONS "Rate limits").
//!
//! Each key has three budgets, so a burst of reads never starves the key's payments:
//! money-moving POSTs (sends, fundings, withdrawals, swaps, escrow payouts: the routes the
//! router marks [`RouteKind::Money`], see [`crate::route_kind`]), other POSTs, and reads. A budget is `quota` requests per `window_s` seconds, enforced with GCRA (the
//! generic cell rate algorithm: a token bucket kept as one timestamp per key), which
//! allows a burst of `quota` and then one request every `window_s / quota` seconds.
//!
//! Over budget the answer is `429 RATE_LIMITED` with `Retry-After`; every answer carries
//! the IETF `RateLimit-Policy` and `RateLimit` headers
//! (draft-ietf-httpapi-ratelimit-headers), so clients can pace themselves.
//!
//! Where the state lives: one policy ([`decide`], the GCRA step and the numbers the
//! headers carry), two backends for the arrival times.
//!
//! - PostgreSQL storage: in the database, shared by every node on it
//!   ([`RateLimiter::shared`]), so N nodes behind a balancer give a key its budget once,
//!   not N times. Each request is one statement (`PgStore::rate_limit`: an `INSERT ..
//!   ON CONFLICT DO UPDATE .. RETURNING` in autocommit, on the database's clock, in an
//!   UNLOGGED table), so the key's row is locked for that statement only and no session
//!   state is kept (it works through PgBouncer in transaction mode). The statement takes
//!   the same step as [`decide`] and returns the state; the decision and its headers are
//!   [`decide`]'s on that state. If the database does not answer, the request is
//!   counted in this process instead (the in-process backend), so a database outage
//!   never lifts the limits, and the request goes on to meet the outage itself.
//! - Memory and SQLite storage (one node): in this process, sharded maps of arrival
//!   times ([`RateLimiter::new`]).

use crate::caller::Caller;
use crate::error::ApiError;
use crate::route_kind::RouteKind;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use stablecoin_store::{PgStore, RateLimitStep};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The three budgets of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// POSTs that move money (a payment, a funding, a withdrawal, an escrow payout).
    Money,
    /// Every other POST or DELETE.
    Write,
    /// GETs.
    Read,
}

impl Class {
    /// The policy name in the `RateLimit` headers.
    pub fn name(self) -> &'static str {
        match self {
            Class::Money => "money",
            Class::Write => "write",
            Class::Read => "read",
        }
    }

    /// The class of a request, by its method and the mark of the route it was routed to
    /// ([`RouteKind`]): a read, a POST of a money route, or any other write.
    pub fn of(method: &Method, kind: Option<RouteKind>) -> Class {
        if method == Method::GET || method == Method::HEAD {
            return Class::Read;
        }
        match kind {
            Some(RouteKind::Money) => Class::Money,
            Some(RouteKind::EngineRecorded) | None => Class::Write,
        }
    }
}

/// `quota` requests per `window_s` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Requests allowed per window, also the largest burst; positive.
    pub quota: u32,
    /// The window in seconds; positive.
    pub window_s: u32,
}

impl Budget {
    /// Microseconds between two requests at the sustained rate.
    fn interval_us(self) -> i64 {
        (self.window_s as i64 * 1_000_000 / self.quota.max(1) as i64).max(1)
    }

    /// How far ahead of now the theoretical arrival time may run: a full burst.
    fn tolerance_us(self) -> i64 {
        self.interval_us() * (self.quota.max(1) as i64 - 1)
    }
}

/// The budgets of every key. The defaults are generous for one integration and tight
/// enough that a leaked key cannot flood the service: 100 money-moving requests a
/// second, 50 other writes and 300 reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimits {
    /// `false` turns every limit off (no `RateLimit` headers either), e.g. for benchmarks.
    pub enabled: bool,
    /// Money-moving POSTs ([`Class::Money`]).
    pub money: Budget,
    /// Other POSTs and DELETEs ([`Class::Write`]).
    pub write: Budget,
    /// GETs ([`Class::Read`]).
    pub read: Budget,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            enabled: true,
            money: Budget {
                quota: 100,
                window_s: 1,
            },
            write: Budget {
                quota: 50,
                window_s: 1,
            },
            read: Budget {
                quota: 300,
                window_s: 1,
            },
        }
    }
}

impl RateLimits {
    /// The budget of one class.
    pub fn budget(&self, class: Class) -> Budget {
        match class {
            Class::Money => self.money,
            Class::Write => self.write,
            Class::Read => self.read,
        }
    }

    /// Refuses a zero `quota` or `window_s` (naming the `rate_limits.<class>` setting).
    pub fn validate(&self) -> Result<(), String> {
        for class in [Class::Money, Class::Write, Class::Read] {
            let b = self.budget(class);
            if b.quota == 0 || b.window_s == 0 {
                return Err(format!(
                    "rate_limits.{}: quota and window_s must be positive",
                    class.name()
                ));
            }
        }
        Ok(())
    }
}

/// What a request was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The request may go through; `false` is a `429 RATE_LIMITED`.
    pub allowed: bool,
    /// Requests the key may still make at once in this budget.
    pub remaining: u32,
    /// Seconds until the budget is whole again.
    pub reset_s: u64,
    /// Seconds until a refused request may be retried (0 when allowed).
    pub retry_after_s: u64,
}

/// GCRA on one theoretical arrival time. Pure: `now_us` comes in. The one policy of both
/// backends: the in-process one runs it on its map, and the shared one's statement takes
/// the same step ([`decision_of_step`] reads its outcome through this function).
pub fn decide(tat_us: Option<i64>, now_us: i64, budget: Budget) -> (Decision, Option<i64>) {
    let interval = budget.interval_us();
    let tolerance = budget.tolerance_us();
    let tat = tat_us.unwrap_or(now_us).max(now_us);
    let secs_up = |us: i64| (us.max(0) as u64).div_ceil(1_000_000);
    if tat - now_us > tolerance {
        let wait = tat - now_us - tolerance;
        let decision = Decision {
            allowed: false,
            remaining: 0,
            reset_s: secs_up(tat - now_us),
            retry_after_s: secs_up(wait).max(1),
        };
        return (decision, None);
    }
    let new_tat = tat + interval;
    // Floor division: the numerator is negative on the last request of a burst.
    let remaining = ((tolerance - (new_tat - now_us)).div_euclid(interval) + 1).max(0) as u32;
    let decision = Decision {
        allowed: true,
        remaining,
        reset_s: secs_up(new_tat - now_us),
        retry_after_s: 0,
    };
    (decision, Some(new_tat))
}

/// The decision on a step the shared backend took (`PgStore::rate_limit`): [`decide`] on
/// the arrival time the step started from, at the database's clock. An allowed step
/// moved the time one interval forward from `max(tat, now)`; a refused one left it.
pub fn decision_of_step(step: RateLimitStep, budget: Budget) -> Decision {
    let before = if step.allowed {
        step.tat_us - budget.interval_us()
    } else {
        step.tat_us
    };
    let (mut decision, _) = decide(Some(before), step.now_us, budget);
    // The same inequality on the same numbers; the database's answer counted the request.
    decision.allowed = step.allowed;
    if !step.allowed {
        decision.remaining = 0;
        decision.retry_after_s = decision.retry_after_s.max(1);
    }
    decision
}

/// Shared checks between two purges of the shared table's whole budgets.
const PURGE_EVERY: u64 = 4_096;
/// Rows one purge deletes at most.
const PURGE_ROWS: i64 = 10_000;

const SHARDS: usize = 16;
/// Keys one shard tracks before it forgets the idle ones (a key whose budget is whole
/// again needs no entry).
const SHARD_ENTRIES: usize = 4_096;

/// The state of every key's budgets: in this process, or shared in PostgreSQL.
pub struct RateLimiter {
    limits: RateLimits,
    started: Instant,
    shards: Vec<Mutex<HashMap<(String, Class), i64>>>,
    /// The shared backend, when storage is PostgreSQL.
    shared: Option<PgStore>,
    /// Shared checks so far (a purge every [`PURGE_EVERY`]).
    shared_checks: AtomicU64,
    /// When the last "shared state did not answer" warning was logged (seconds on the
    /// limiter's clock, +1; 0: never): at most one every [`WARN_EVERY_S`], not one per
    /// request during an outage.
    warned_at_s: AtomicU64,
}

/// Seconds between two warnings that the shared state did not answer.
const WARN_EVERY_S: u64 = 10;

impl RateLimiter {
    /// A limiter keeping its state in this process, no key tracked yet.
    pub fn new(limits: RateLimits) -> Self {
        RateLimiter {
            limits,
            started: Instant::now(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            shared: None,
            shared_checks: AtomicU64::new(0),
            warned_at_s: AtomicU64::new(0),
        }
    }

    /// A limiter keeping its state in `pg`'s `rate_limits` table, shared by every node
    /// on that database (in this process while the database does not answer).
    pub fn shared(limits: RateLimits, pg: PgStore) -> Self {
        RateLimiter {
            shared: Some(pg),
            ..RateLimiter::new(limits)
        }
    }

    /// `shared` or `in-process`: where the budgets are kept.
    pub fn backend(&self) -> &'static str {
        if self.shared.is_some() {
            "shared"
        } else {
            "in-process"
        }
    }

    /// The limits it enforces.
    pub fn limits(&self) -> &RateLimits {
        &self.limits
    }

    /// Counts one request of `key` in `class` at `now_us` (microseconds on any monotonic
    /// scale).
    pub fn check_at(&self, key: &str, class: Class, now_us: i64) -> Decision {
        let budget = self.limits.budget(class);
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let shard = &self.shards[h.finish() as usize % SHARDS];
        let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
        let entry = (key.to_string(), class);
        let (decision, new_tat) = decide(map.get(&entry).copied(), now_us, budget);
        if let Some(t) = new_tat {
            if map.len() >= SHARD_ENTRIES {
                map.retain(|_, tat| *tat > now_us);
            }
            map.insert(entry, t);
        }
        decision
    }

    /// Counts one request of `key` in `class` now: in the shared table when there is
    /// one (one statement), else (or when the database fails) as
    /// [`RateLimiter::check_at`] on the limiter's own monotonic clock.
    pub async fn check(&self, key: &str, class: Class) -> Decision {
        if let Some(pg) = &self.shared {
            let budget = self.limits.budget(class);
            let step = pg
                .rate_limit(
                    key,
                    class.name(),
                    budget.interval_us(),
                    budget.tolerance_us(),
                )
                .await;
            if self.shared_checks.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
                let pg = pg.clone();
                tokio::spawn(async move {
                    if let Err(e) = pg.purge_rate_limits(PURGE_ROWS).await {
                        tracing::debug!(error = %e, "rate limits: purge of whole budgets");
                    }
                });
            }
            match step {
                Ok(step) => return decision_of_step(step, budget),
                Err(e) => {
                    let now_s = self.started.elapsed().as_secs() + 1;
                    let last = self.warned_at_s.load(Ordering::Relaxed);
                    if (last == 0 || now_s >= last + WARN_EVERY_S)
                        && self
                            .warned_at_s
                            .compare_exchange(last, now_s, Ordering::Relaxed, Ordering::Relaxed)
                            .is_ok()
                    {
                        tracing::warn!(error = %e, "rate limits: the shared state did not answer; counting in this process");
                    }
                }
            }
        }
        let now_us = self.started.elapsed().as_micros() as i64;
        self.check_at(key, class, now_us)
    }
}

fn set_headers(res: &mut Response, class: Class, budget: Budget, d: &Decision) {
    let name = class.name();
    let policy = format!("\"{name}\";q={};w={}", budget.quota, budget.window_s);
    let state = format!("\"{name}\";r={};t={}", d.remaining, d.reset_s);
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&policy) {
        headers.insert("ratelimit-policy", v);
    }
    if let Ok(v) = HeaderValue::from_str(&state) {
        headers.insert("ratelimit", v);
    }
}

/// The middleware: after authentication (it keys on the caller's API key id), before
/// idempotency and the handler.
pub async fn enforce(
    State(limiter): State<Arc<RateLimiter>>,
    req: Request,
    next: Next,
) -> Response {
    if !limiter.limits.enabled {
        return next.run(req).await;
    }
    let Some(key) = req
        .extensions()
        .get::<Caller>()
        .map(|c| c.0.key_id.0.clone())
    else {
        return next.run(req).await;
    };
    let class = Class::of(req.method(), RouteKind::of(&req));
    let budget = limiter.limits.budget(class);
    let decision = limiter.check(&key, class).await;
    let mut res = if decision.allowed {
        next.run(req).await
    } else {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            format!(
                "this key's {} budget of {} requests per {} s is spent; retry after {} s",
                class.name(),
                budget.quota,
                budget.window_s,
                decision.retry_after_s
            ),
        );
        e.retry_after_secs = Some(decision.retry_after_s as i64);
        e.into_response()
    };
    set_headers(&mut res, class, budget, &decision);
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Budget = Budget {
        quota: 5,
        window_s: 1,
    };

    #[test]
    fn a_burst_of_the_quota_then_one_per_interval() {
        let l = RateLimiter::new(RateLimits {
            money: B,
            ..RateLimits::default()
        });
        for left in (0..5).rev() {
            let d = l.check_at("k", Class::Money, 0);
            assert!(d.allowed);
            assert_eq!(d.remaining, left);
        }
        let d = l.check_at("k", Class::Money, 0);
        assert!(!d.allowed);
        assert_eq!((d.remaining, d.retry_after_s, d.reset_s), (0, 1, 1));
        // One interval (200 ms) later, exactly one more.
        assert!(l.check_at("k", Class::Money, 200_000).allowed);
        assert!(!l.check_at("k", Class::Money, 200_000).allowed);
        // Budgets are per key and per class.
        assert!(l.check_at("other", Class::Money, 200_000).allowed);
        assert!(l.check_at("k", Class::Read, 200_000).allowed);
        // A whole window later the burst is back.
        for _ in 0..5 {
            assert!(l.check_at("k", Class::Money, 2_000_000).allowed);
        }
    }

    #[test]
    fn remaining_counts_down_to_zero_when_time_passes_between_requests() {
        let mut tat = None;
        for (i, left) in [4, 3, 2, 1, 0].into_iter().enumerate() {
            let (d, t) = decide(tat, i as i64 * 1_000, B);
            assert!(d.allowed);
            assert_eq!(d.remaining, left, "request {i}");
            tat = t;
        }
    }

    #[test]
    fn a_refusal_costs_nothing() {
        let (d, _) = decide(Some(2_000_000), 0, B);
        assert!(!d.allowed);
        let mut tat = None;
        for _ in 0..5 {
            let (d, t) = decide(tat, 0, B);
            assert!(d.allowed);
            tat = t;
        }
        for _ in 0..100 {
            assert_eq!(decide(tat, 0, B).1, None, "refused: the state is unchanged");
        }
        assert!(decide(tat, 200_000, B).0.allowed);
    }

    #[test]
    fn requests_are_classed_by_method_and_route_mark() {
        // Which routes carry which mark: `tests/rate_classes.rs`, over HTTP.
        assert_eq!(Class::of(&Method::GET, None), Class::Read);
        assert_eq!(Class::of(&Method::GET, Some(RouteKind::Money)), Class::Read);
        assert_eq!(
            Class::of(&Method::POST, Some(RouteKind::Money)),
            Class::Money
        );
        assert_eq!(
            Class::of(&Method::POST, Some(RouteKind::EngineRecorded)),
            Class::Write
        );
        assert_eq!(Class::of(&Method::POST, None), Class::Write);
        assert_eq!(Class::of(&Method::DELETE, None), Class::Write);
    }

    #[test]
    fn idle_keys_are_forgotten_when_a_shard_fills() {
        let l = RateLimiter::new(RateLimits::default());
        for i in 0..(SHARD_ENTRIES * SHARDS * 2) {
            l.check_at(&format!("key-{i}"), Class::Read, (i as i64) * 1_000_000);
        }
        let total: usize = l.shards.iter().map(|s| s.lock().unwrap().len()).sum();
        assert!(total <= SHARD_ENTRIES * SHARDS, "{total}");
    }

    #[test]
    fn a_shared_step_reads_as_the_in_process_decision_on_the_same_state() {
        // Replay the shared statement's step (`PgStore::rate_limit`) beside `decide` at
        // the same times: every request gets the same decision, remaining, reset and
        // retry-after from either backend.
        let mut local = None;
        let mut stored: Option<i64> = None;
        for (i, now) in [
            0, 0, 0, 0, 0, 0, 10_000, 190_000, 200_000, 200_001, 5_000_000,
        ]
        .into_iter()
        .enumerate()
        {
            let (want, next) = decide(local, now, B);
            if next.is_some() {
                local = next;
            }
            // The SQL: allowed when max(tat, now) - now <= tolerance; then + interval.
            let base = stored.unwrap_or(now).max(now);
            let allowed = base - now <= B.tolerance_us();
            if allowed {
                stored = Some(base + B.interval_us());
            }
            let step = RateLimitStep {
                allowed,
                tat_us: stored.unwrap_or(now),
                now_us: now,
            };
            assert_eq!(decision_of_step(step, B), want, "request {i} at {now}");
        }
    }

    #[test]
    fn budgets_must_be_positive() {
        assert!(RateLimits::default().validate().is_ok());
        let bad = RateLimits {
            read: Budget {
                quota: 0,
                window_s: 1,
            },
            ..RateLimits::default()
        };
        assert!(bad.validate().unwrap_err().contains("read"));
    }
}
