//! The dispatcher: webhook delivery as a task of its own, beside settlement and never
//! inside it, that no receiver can stall.
//!
//! [`Deliverer::round`] attempts a batch and returns when its slowest attempt ends: right
//! for tests and for a host that drives delivery itself, but a receiver that accepts and
//! never answers holds such a round (and whatever loop awaits it) for the whole timeout.
//! [`Deliverer::run`] goes on instead:
//!
//! - **A budget**: at most [`DeliveryConfig::concurrency`] requests in flight. It claims
//!   only as many due deliveries as it has free slots, and claims again as attempts end,
//!   without waiting for the others.
//! - **Per-endpoint cap**: at most [`DeliveryConfig::endpoint_concurrency`] requests to one
//!   endpoint, so a hanging receiver holds a few slots, never the budget.
//! - **Per-tenant cap and turns**: at most [`DeliveryConfig::tenant_concurrency`] requests
//!   for one tenant, and within a claim tenants take turns, so one tenant's backlog at the
//!   head of the due order does not fill the budget.
//! - **Deferral**: a claimed delivery over a cap is written back due a little later (no
//!   attempt is counted). The delay follows the endpoint's recent latency divided by its
//!   cap, and the deferred deliveries of one endpoint get successive slots: a hanging
//!   endpoint's backlog is spread over the time it can take, not claimed again and again.
//! - Outcomes are committed in groups as attempts end, as in a round.
//!
//! The caps and the latency are this process's view: several processes each apply them
//! to what they claimed. When `stop` resolves the dispatcher stops claiming and abandons
//! the attempts in flight: their claims lapse after the lease and they are attempted
//! again (receivers dedupe on the event id / `X-Webhook-ID` / `webhook-id`).
//!
//! [`DeliveryConfig::concurrency`]: super::DeliveryConfig::concurrency
//! [`DeliveryConfig::endpoint_concurrency`]: super::DeliveryConfig::endpoint_concurrency
//! [`DeliveryConfig::tenant_concurrency`]: super::DeliveryConfig::tenant_concurrency

use super::deliver::{Health, Prepared};
use super::{Deliverer, Delivery, DeliveryConfig, Endpoint, RoundReport};
use crate::error::WebhookResult;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::Record;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// The latency assumed of an endpoint before any attempt to it has ended.
const FIRST_GUESS_MS: u64 = 200;
/// The shortest deferral.
const MIN_DEFER_MS: i64 = 250;

/// What the dispatcher knows of one endpoint's load (in memory, this process only).
#[derive(Debug, Default)]
struct Load {
    /// Start times of its attempts in flight.
    started: Vec<Instant>,
    /// Smoothed latency of its recent attempts, ms; `None` until one ended.
    latency_ms: Option<u64>,
    /// The latest slot given to one of its deferred deliveries (ms, clock port).
    last_slot_ms: i64,
}

impl Load {
    /// How long an attempt is expected to take: the smoothed latency, or longer when an
    /// attempt in flight has already taken longer (a receiver that just started hanging).
    fn expected_ms(&self, now: Instant) -> u64 {
        let running = self
            .started
            .iter()
            .map(|s| now.saturating_duration_since(*s).as_millis() as u64)
            .max()
            .unwrap_or(0);
        self.latency_ms.unwrap_or(FIRST_GUESS_MS).max(running)
    }
}

/// Requests in flight against the budget and the caps. Pure bookkeeping (no I/O), so
/// the rules are tested without a receiver.
#[derive(Debug)]
pub(super) struct Budget {
    concurrency: usize,
    per_endpoint: usize,
    per_tenant: usize,
    endpoints: HashMap<String, Load>,
    tenants: HashMap<String, usize>,
    deliveries: HashSet<String>,
}

/// One attempt in flight: what to release when it ends.
#[derive(Debug)]
pub(super) struct Flight {
    delivery: String,
    endpoint: String,
    tenant: String,
    started: Instant,
}

impl Budget {
    pub(super) fn new(config: &DeliveryConfig) -> Self {
        Budget {
            concurrency: config.concurrency.max(1),
            per_endpoint: config.endpoint_concurrency.max(1),
            per_tenant: config.tenant_concurrency.max(1),
            endpoints: HashMap::new(),
            tenants: HashMap::new(),
            deliveries: HashSet::new(),
        }
    }

    fn in_flight(&self) -> usize {
        self.deliveries.len()
    }

    fn free(&self) -> usize {
        self.concurrency.saturating_sub(self.in_flight())
    }

    /// Whether to claim now: when idle, or when a quarter of the budget is free (one
    /// claim per ended attempt would cost a store round trip per delivery).
    fn worth_claiming(&self) -> bool {
        self.in_flight() == 0 || self.free() >= (self.concurrency / 4).max(1)
    }

    fn is_in_flight(&self, delivery: &str) -> bool {
        self.deliveries.contains(delivery)
    }

    fn can_start(&self, d: &Delivery) -> bool {
        let endpoint = self
            .endpoints
            .get(d.endpoint.as_str())
            .map_or(0, |l| l.started.len());
        let tenant = self.tenants.get(&d.tenant.0).copied().unwrap_or(0);
        self.free() > 0 && endpoint < self.per_endpoint && tenant < self.per_tenant
    }

    fn start(&mut self, d: &Delivery, now: Instant) -> Flight {
        self.deliveries.insert(d.id.clone());
        let load = self.endpoints.entry(d.endpoint.0.clone()).or_default();
        load.started.push(now);
        *self.tenants.entry(d.tenant.0.clone()).or_default() += 1;
        Flight {
            delivery: d.id.clone(),
            endpoint: d.endpoint.0.clone(),
            tenant: d.tenant.0.clone(),
            started: now,
        }
    }

    /// Releases an ended attempt and folds its latency into the endpoint's: `took_ms`,
    /// the attempt's own measure when it has one, else the time from its start to `now`
    /// (which also counts the dispatcher's own waits: a dispatcher held 10 s by a store
    /// failing over would otherwise take a 6 ms endpoint for a 10 s one and spread its
    /// deferred deliveries seconds apart for minutes).
    fn finish(&mut self, f: &Flight, now: Instant, took_ms: Option<u64>) {
        self.deliveries.remove(&f.delivery);
        if let Some(load) = self.endpoints.get_mut(&f.endpoint) {
            if let Some(i) = load.started.iter().position(|s| *s == f.started) {
                load.started.swap_remove(i);
            }
            let took = took_ms
                .unwrap_or_else(|| now.saturating_duration_since(f.started).as_millis() as u64);
            load.latency_ms = Some(match load.latency_ms {
                None => took,
                Some(l) => (l * 3 + took) / 4,
            });
        }
        if let Some(n) = self.tenants.get_mut(&f.tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.tenants.remove(&f.tenant);
            }
        }
    }

    /// When a delivery to `endpoint` that cannot start now is due again (ms, clock
    /// port): one slot per expected attempt time divided by the endpoint's cap, after
    /// the slots already given.
    fn defer_slot(&mut self, endpoint: &str, now_ms: i64, now: Instant) -> i64 {
        let per_endpoint = self.per_endpoint as i64;
        let load = self.endpoints.entry(endpoint.to_string()).or_default();
        let step = (load.expected_ms(now) as i64 / per_endpoint).max(MIN_DEFER_MS);
        let slot = (now_ms + step).max(load.last_slot_ms + step);
        load.last_slot_ms = slot;
        slot
    }

    /// Forgets endpoints with nothing in flight whose deferral slots have passed.
    fn prune(&mut self, now_ms: i64) {
        self.endpoints
            .retain(|_, l| !l.started.is_empty() || l.last_slot_ms > now_ms);
    }
}

/// Claimed deliveries reordered so tenants take turns (each tenant's own due order
/// kept): one tenant's backlog at the head of a claim does not go first as a whole.
pub(super) fn take_turns<T>(items: Vec<T>, tenant: impl Fn(&T) -> &str) -> Vec<T> {
    let mut queues: Vec<(String, std::collections::VecDeque<T>)> = Vec::new();
    for item in items {
        let t = tenant(&item);
        match queues.iter_mut().find(|(k, _)| k == t) {
            Some((_, q)) => q.push_back(item),
            None => queues.push((t.to_string(), [item].into())),
        }
    }
    let mut out = Vec::new();
    loop {
        let mut any = false;
        for (_, q) in queues.iter_mut() {
            if let Some(item) = q.pop_front() {
                out.push(item);
                any = true;
            }
        }
        if !any {
            return out;
        }
    }
}

/// The attempts in flight, and what each holds of the budget (by task, so an attempt
/// that panicked is released too).
struct Attempts {
    tasks: JoinSet<Option<Prepared>>,
    flights: HashMap<tokio::task::Id, Flight>,
}

impl Attempts {
    /// Ends one finished attempt: its flight and its outcome (none if it panicked).
    fn ended(
        &mut self,
        r: Result<(tokio::task::Id, Option<Prepared>), tokio::task::JoinError>,
    ) -> (Option<Flight>, Option<Prepared>) {
        match r {
            Ok((id, prepared)) => (self.flights.remove(&id), prepared),
            Err(e) => (self.flights.remove(&e.id()), None),
        }
    }
}

impl Deliverer {
    /// Delivers until `stop` resolves, on the caller's runtime, each attempt a task of
    /// its own, so no receiver holds anything but its own deliveries:
    ///
    /// - at most [`DeliveryConfig::concurrency`] attempts in flight: it claims only as
    ///   many due deliveries as it has free slots, and claims again as attempts end;
    /// - at most [`DeliveryConfig::endpoint_concurrency`] to one endpoint and
    ///   [`DeliveryConfig::tenant_concurrency`] for one tenant, tenants taking turns
    ///   within a claim; a claimed delivery over a cap is written back due a little
    ///   later (no attempt counted), one endpoint's deferrals spread by its latency;
    /// - outcomes committed in groups as attempts end, health tracked as in a round.
    ///
    /// `on_report` hears what each step did (when it did anything) and every error; an
    /// error never stops the dispatcher. At `stop` the attempts in flight are abandoned:
    /// their claims lapse and they are attempted again (receivers dedupe).
    pub async fn run<F, R>(&self, stop: F, mut on_report: R)
    where
        F: Future<Output = ()>,
        R: FnMut(WebhookResult<RoundReport>),
    {
        let mut stop = std::pin::pin!(stop);
        let mut budget = Budget::new(&self.config);
        let mut running = Attempts {
            tasks: JoinSet::new(),
            flights: HashMap::new(),
        };
        loop {
            let mut report = RoundReport::default();
            let more = match self.dispatch(&mut budget, &mut running, &mut report).await {
                Ok(more) => more,
                Err(e) => {
                    on_report(Err(e));
                    false
                }
            };
            let pause = if more {
                Duration::ZERO
            } else {
                self.config.poll_interval
            };
            let mut ended = Vec::new();
            tokio::select! {
                _ = &mut stop => break,
                Some(done) = running.tasks.join_next_with_id(), if !running.tasks.is_empty() => {
                    ended.push(done);
                }
                _ = tokio::time::sleep(pause) => {}
            }
            while let Some(done) = running.tasks.try_join_next_with_id() {
                ended.push(done);
            }
            let now = Instant::now();
            let mut ready = Vec::with_capacity(ended.len());
            for done in ended {
                let (flight, prepared) = running.ended(done);
                if let Some(f) = flight {
                    let took = prepared
                        .as_ref()
                        .and_then(|p| p.delivery.attempts.last())
                        .map(|a| a.latency_ms);
                    budget.finish(&f, now, took);
                }
                ready.extend(prepared);
            }
            budget.prune(self.clock.now().millis());
            if !ready.is_empty() {
                let mut health = Health::new();
                let committed = self.commit_and_count(ready, &mut report, &mut health).await;
                let tracked = self.track_all(health, &mut report).await;
                if let Err(e) = committed.and(tracked) {
                    on_report(Err(e));
                }
            }
            if report != RoundReport::default() {
                on_report(Ok(report));
            }
        }
        // Abandoned attempts: their claims lapse and they are attempted again.
        running.tasks.abort_all();
    }

    /// One step: fan out a page, claim what the budget allows, start what the caps
    /// allow and defer the rest. True when more may be due right now.
    async fn dispatch(
        &self,
        budget: &mut Budget,
        running: &mut Attempts,
        report: &mut RoundReport,
    ) -> WebhookResult<bool> {
        let fan = match self.fan_out_gate.try_lock() {
            // Due now, not held: the claim below takes them as the budget allows.
            Ok(_held) => self.fan_out_page(None).await?,
            Err(_) => Default::default(),
        };
        report.fanned_out += fan.created;
        if !budget.worth_claiming() {
            return Ok(fan.full_page);
        }
        let want = budget.free().min(self.config.batch_limit.max(1));
        let now = self.clock.now();
        let claimed = self.claim(want).await?;
        let more = fan.full_page || claimed.len() == want;
        let mut due = Vec::with_capacity(claimed.len());
        let mut endpoints: HashMap<String, Option<Endpoint>> = HashMap::new();
        for stored in &claimed {
            let d = Delivery::from_stored(stored)?;
            if budget.is_in_flight(&d.id) {
                // Its claim lapsed while our attempt runs; that attempt's outcome counts.
                continue;
            }
            if !endpoints.contains_key(d.endpoint.as_str()) {
                let e = self.usable_endpoint(d.endpoint.as_str()).await?;
                endpoints.insert(d.endpoint.0.clone(), e);
            }
            due.push((d, stored.version));
        }
        let started = Instant::now();
        let mut deferred = Vec::new();
        for (mut d, version) in take_turns(due, |(d, _)| d.tenant.0.as_str()) {
            let endpoint = endpoints.get(d.endpoint.as_str()).cloned().flatten();
            // A delivery to a disabled or deleted endpoint sends nothing: it ends at once.
            if endpoint.is_some() && !budget.can_start(&d) {
                let slot = budget.defer_slot(d.endpoint.as_str(), now.millis(), started);
                d.next_attempt_at = Some(Timestamp::from_millis(slot));
                deferred.push((d, version));
                continue;
            }
            let flight = budget.start(&d, started);
            let this = self.clone();
            let task = running
                .tasks
                .spawn(async move { this.attempt_claimed(d, version, endpoint.as_ref()).await });
            running.flights.insert(task.id(), flight);
        }
        self.commit_each(deferred, |(d, version)| d.update(*version))
            .await?;
        Ok(more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::DeliveryState;
    use stablecoin_core::domain::ids::{TenantId, WebhookEndpointId};

    fn delivery(id: &str, tenant: &str, endpoint: &str) -> Delivery {
        Delivery {
            id: id.into(),
            tenant: TenantId(tenant.into()),
            endpoint: WebhookEndpointId(endpoint.into()),
            event_id: "evt".into(),
            event_type: "transfer.settled".into(),
            body: "{}".into(),
            state: DeliveryState::Pending,
            next_attempt_at: None,
            attempts: Vec::new(),
            replay_of: None,
            replayed_by: None,
            created_at: Timestamp::from_millis(0),
        }
    }

    fn budget(concurrency: usize, endpoint: usize, tenant: usize) -> Budget {
        Budget::new(&DeliveryConfig {
            concurrency,
            endpoint_concurrency: endpoint,
            tenant_concurrency: tenant,
            ..Default::default()
        })
    }

    #[test]
    fn caps_per_endpoint_per_tenant_and_overall() {
        let now = Instant::now();
        let mut b = budget(5, 2, 3);
        let a1 = b.start(&delivery("d1", "A", "e1"), now);
        b.start(&delivery("d2", "A", "e1"), now);
        assert!(!b.can_start(&delivery("d3", "A", "e1")), "endpoint cap");
        assert!(b.can_start(&delivery("d3", "A", "e2")));
        b.start(&delivery("d3", "A", "e2"), now);
        assert!(!b.can_start(&delivery("d4", "A", "e3")), "tenant cap");
        assert!(b.can_start(&delivery("d4", "B", "e4")), "another tenant");
        b.start(&delivery("d4", "B", "e4"), now);
        b.start(&delivery("d5", "B", "e5"), now);
        assert!(!b.can_start(&delivery("d6", "C", "e6")), "the budget");
        assert!(b.is_in_flight("d1") && b.free() == 0);
        b.finish(&a1, now, None);
        assert!(!b.is_in_flight("d1"));
        assert!(b.can_start(&delivery("d6", "C", "e6")));
        assert!(
            b.can_start(&delivery("d7", "A", "e1")),
            "a slot of e1 freed"
        );
    }

    #[test]
    fn deferrals_of_a_slow_endpoint_are_spread_by_its_latency() {
        let t0 = Instant::now();
        let mut b = budget(16, 2, 8);
        // Nothing known yet: the first guess, floored at the shortest deferral.
        assert_eq!(b.defer_slot("fast", 1_000, t0), 1_000 + MIN_DEFER_MS);
        assert_eq!(b.defer_slot("fast", 1_000, t0), 1_000 + 2 * MIN_DEFER_MS);
        // An endpoint whose attempts take 10 s, cap 2: one slot every 5 s.
        let f = b.start(&delivery("d1", "A", "slow"), t0);
        b.finish(&f, t0 + Duration::from_secs(10), None);
        let slot = |b: &mut Budget| b.defer_slot("slow", 1_000, t0 + Duration::from_secs(10));
        assert_eq!(slot(&mut b), 6_000);
        assert_eq!(slot(&mut b), 11_000);
        // An attempt in flight for 20 s already counts before it ends (hanging).
        let mut b = budget(16, 2, 8);
        b.start(&delivery("d1", "A", "hang"), t0);
        assert_eq!(
            b.defer_slot("hang", 0, t0 + Duration::from_secs(20)),
            10_000
        );
        b.prune(5_000);
        assert!(b.endpoints.contains_key("hang"), "in flight: kept");
    }

    #[test]
    fn an_attempts_own_latency_wins_over_a_late_reaping() {
        // The attempt took 6 ms; the dispatcher reaped it 10 s later (it was waiting on
        // a store failing over): the endpoint is fast, its deferrals stay at the floor.
        let t0 = Instant::now();
        let mut b = budget(16, 2, 8);
        let f = b.start(&delivery("d1", "A", "quick"), t0);
        let late = t0 + Duration::from_secs(10);
        b.finish(&f, late, Some(6));
        assert_eq!(b.defer_slot("quick", 1_000, late), 1_000 + MIN_DEFER_MS);
        assert_eq!(b.defer_slot("quick", 1_000, late), 1_000 + 2 * MIN_DEFER_MS);
    }

    #[test]
    fn tenants_take_turns_in_their_own_order() {
        let items = vec![("A", 1), ("A", 2), ("A", 3), ("B", 1), ("A", 4), ("C", 1)];
        let out = take_turns(items, |(t, _)| t);
        assert_eq!(
            out,
            vec![("A", 1), ("B", 1), ("C", 1), ("A", 2), ("A", 3), ("A", 4)]
        );
        assert!(take_turns(Vec::<(&str, u8)>::new(), |(t, _)| t).is_empty());
    }
}
