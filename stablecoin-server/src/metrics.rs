//! Prometheus metrics (text exposition format 0.0.4) and the request log.
//!
//! - `http_requests_total{method,route,status}` and
//!   `http_request_duration_seconds{method,route}` (histogram) per route template.
//! - `stablecoin_operations_accepted_total{kind}`: operations accepted (QUEUED/PENDING).
//! - `stablecoin_operation_transitions_total{to}`: what the workers moved operations to
//!   (SUBMITTED, SETTLED, FAILED, SUBMISSION_UNKNOWN), plus polls and credited deposits.
//! - `stablecoin_worker_ticks_total`, `stablecoin_worker_errors_total`.
//! - `stablecoin_sandbox_simulations_total{route}`, `stablecoin_idempotent_replays_total`.
//! - `stablecoin_rail_ready{rail,status}` (gauge, read at scrape time).
//! - `stablecoin_sponsorship_spent{tenant,rail,period,resource}` and
//!   `stablecoin_sponsorship_cap{...}` (gauges read from the budget records at scrape
//!   time, `api::sponsorship::budget_gauges`; only tenants staff gave a budget).
//! - `stablecoin_quarantined_deposits{status}`, `stablecoin_quarantine_held_deposits{rail,token}`
//!   and `stablecoin_quarantine_held_micros{rail,token}` (gauges read from the records at
//!   scrape time: [`render_quarantine`]).
//!
//! Webhook delivery metrics join when `stablecoin-webhooks` is wired.

use crate::error::ErrorCode;
use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use stablecoin_core::engine::{DriftDirection, QuarantineTotals, ReconciliationReport, TickReport};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

/// The server's metric registry.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
    accepted: Mutex<BTreeMap<String, u64>>,
    transitions: Mutex<BTreeMap<&'static str, u64>>,
    simulations: Mutex<BTreeMap<String, u64>>,
    ticks: AtomicU64,
    worker_errors: AtomicU64,
    replays: AtomicU64,
    worker_panics: AtomicU64,
    /// When the workers last finished a round (`None`: not yet).
    last_tick: Mutex<Option<std::time::Instant>>,
    /// Rows the retention job deleted, by what they were.
    retention_purged: Mutex<BTreeMap<&'static str, u64>>,
    retention_runs: AtomicU64,
    retention_errors: AtomicU64,
    /// The last chain reconciliation pass (`None`: none finished yet).
    reconciliation: Mutex<Option<ReconciliationReport>>,
    reconciliation_runs: AtomicU64,
    reconciliation_failures: AtomicU64,
    started: StartedAt,
}

/// When the registry was made: the start of the workers' first round's grace period.
struct StartedAt(std::time::Instant);

impl Default for StartedAt {
    fn default() -> Self {
        StartedAt(std::time::Instant::now())
    }
}

/// How the workers are doing, for `/health/ready`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerHealth {
    /// A round finished recently.
    Ok,
    /// No round has finished for [`Metrics::STALL_AFTER`]: the loop is stuck or dead.
    Stalled,
}

impl WorkerHealth {
    /// The readiness report's name: `OK` or `STALLED`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerHealth::Ok => "OK",
            WorkerHealth::Stalled => "STALLED",
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A label value escaped for the text format (`\\`, `\"`, `\n`).
pub(crate) fn escape_label(s: &str) -> String {
    escape(s)
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// Counts one answered request under its route template (never the raw path, so ids
    /// do not multiply the series); `seconds` is its latency.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        *lock(&self.requests)
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        lock(&self.latency)
            .entry((method.to_string(), route.to_string()))
            .or_default()
            .observe(seconds);
    }

    /// Counts one accepted operation of `kind` (`transfer`, `funding`, `withdrawal`).
    pub fn operation_accepted(&self, kind: &str) {
        *lock(&self.accepted).entry(kind.to_string()).or_default() += 1;
    }

    /// Counts one sandbox simulation answered on `route`.
    pub fn simulation(&self, route: &str) {
        *lock(&self.simulations)
            .entry(route.to_string())
            .or_default() += 1;
    }

    /// Counts one idempotent replay (a stored response served again).
    pub fn replay(&self) {
        self.replays.fetch_add(1, Ordering::Relaxed);
    }

    /// How long the workers may go without finishing a round before readiness reports
    /// them stalled: longer than any round takes with every RPC at its timeout.
    pub const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

    /// The worker loop panicked (it is restarted).
    pub fn worker_panicked(&self) {
        self.worker_panics.fetch_add(1, Ordering::Relaxed);
    }

    /// The workers' state: stalled when no round finished within [`Self::STALL_AFTER`]
    /// (counted from the start for the first round).
    pub fn worker_health(&self) -> WorkerHealth {
        let since = lock(&self.last_tick).unwrap_or(self.started.0);
        if since.elapsed() > Self::STALL_AFTER {
            WorkerHealth::Stalled
        } else {
            WorkerHealth::Ok
        }
    }

    /// Records a finished worker round: marks the workers alive and adds its transitions
    /// and errors.
    pub fn tick(&self, r: &TickReport) {
        *lock(&self.last_tick) = Some(std::time::Instant::now());
        self.ticks.fetch_add(1, Ordering::Relaxed);
        self.worker_errors
            .fetch_add(r.errors.len() as u64, Ordering::Relaxed);
        let mut t = lock(&self.transitions);
        for (to, n) in [
            ("SUBMITTED", r.submitted),
            ("SETTLED", r.settled),
            ("FAILED", r.failed),
            ("SUBMISSION_UNKNOWN", r.unknown),
            ("DEPOSIT_CREDITED", r.deposits),
            ("POLLED", r.polled),
        ] {
            *t.entry(to).or_default() += n as u64;
        }
    }

    /// Records a finished retention run and what it deleted, as (what, rows).
    pub fn retention_ran(&self, purged: &[(&'static str, u64)]) {
        self.retention_runs.fetch_add(1, Ordering::Relaxed);
        let mut counts = lock(&self.retention_purged);
        for (what, n) in purged {
            *counts.entry(what).or_default() += n;
        }
    }

    /// Counts a retention run that failed (it is tried again at the next interval).
    pub fn retention_failed(&self) {
        self.retention_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a finished chain reconciliation pass (its drifts become the gauges).
    pub fn reconciliation_ran(&self, report: &ReconciliationReport) {
        self.reconciliation_runs.fetch_add(1, Ordering::Relaxed);
        *lock(&self.reconciliation) = Some(report.clone());
    }

    /// Counts a reconciliation pass that panicked (tried again at the next interval).
    pub fn reconciliation_failed(&self) {
        self.reconciliation_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text; `rails` are (rail, readiness status) read at scrape time.
    pub fn render(&self, rails: &[(String, String)]) -> String {
        let mut out = String::new();
        out.push_str("# HELP http_requests_total HTTP requests by method, route template and status.\n# TYPE http_requests_total counter\n");
        for ((m, r, s), n) in lock(&self.requests).iter() {
            let _ = writeln!(
                out,
                "http_requests_total{{method=\"{}\",route=\"{}\",status=\"{s}\"}} {n}",
                escape(m),
                escape(r)
            );
        }
        out.push_str("# HELP http_request_duration_seconds HTTP request latency by method and route template.\n# TYPE http_request_duration_seconds histogram\n");
        for ((m, r), h) in lock(&self.latency).iter() {
            let labels = format!("method=\"{}\",route=\"{}\"", escape(m), escape(r));
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "http_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "http_request_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "http_request_duration_seconds_count{{{labels}}} {}",
                h.count
            );
        }
        out.push_str("# HELP stablecoin_operations_accepted_total Money-moving operations accepted, by kind.\n# TYPE stablecoin_operations_accepted_total counter\n");
        for (k, n) in lock(&self.accepted).iter() {
            let _ = writeln!(
                out,
                "stablecoin_operations_accepted_total{{kind=\"{}\"}} {n}",
                escape(k)
            );
        }
        out.push_str("# HELP stablecoin_operation_transitions_total Operation state changes made by the workers, by resulting state.\n# TYPE stablecoin_operation_transitions_total counter\n");
        for (to, n) in lock(&self.transitions).iter() {
            let _ = writeln!(
                out,
                "stablecoin_operation_transitions_total{{to=\"{to}\"}} {n}"
            );
        }
        let _ = write!(
            out,
            "# HELP stablecoin_worker_ticks_total Worker rounds run.\n# TYPE stablecoin_worker_ticks_total counter\nstablecoin_worker_ticks_total {}\n",
            self.ticks.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP stablecoin_worker_panics_total Worker loop panics (each restarted the loop).\n# TYPE stablecoin_worker_panics_total counter\nstablecoin_worker_panics_total {}\n",
            self.worker_panics.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP stablecoin_worker_errors_total Errors met by worker rounds.\n# TYPE stablecoin_worker_errors_total counter\nstablecoin_worker_errors_total {}\n",
            self.worker_errors.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP stablecoin_idempotent_replays_total Responses replayed for a repeated Idempotency-Key.\n# TYPE stablecoin_idempotent_replays_total counter\nstablecoin_idempotent_replays_total {}\n",
            self.replays.load(Ordering::Relaxed)
        );
        out.push_str("# HELP stablecoin_sandbox_simulations_total Simulated (test-key) mutations, by route.\n# TYPE stablecoin_sandbox_simulations_total counter\n");
        for (r, n) in lock(&self.simulations).iter() {
            let _ = writeln!(
                out,
                "stablecoin_sandbox_simulations_total{{route=\"{}\"}} {n}",
                escape(r)
            );
        }
        out.push_str("# HELP stablecoin_rail_ready Rail readiness (1 for the reported status).\n# TYPE stablecoin_rail_ready gauge\n");
        for (rail, status) in rails {
            let _ = writeln!(
                out,
                "stablecoin_rail_ready{{rail=\"{}\",status=\"{}\"}} 1",
                escape(rail),
                escape(status)
            );
        }
        out.push_str("# HELP stablecoin_retention_purged_total Rows the retention job deleted, by what they were.\n# TYPE stablecoin_retention_purged_total counter\n");
        for (what, n) in lock(&self.retention_purged).iter() {
            let _ = writeln!(
                out,
                "stablecoin_retention_purged_total{{what=\"{what}\"}} {n}"
            );
        }
        let _ = write!(
            out,
            "# HELP stablecoin_retention_runs_total Retention job runs finished.\n# TYPE stablecoin_retention_runs_total counter\nstablecoin_retention_runs_total {}\n# HELP stablecoin_retention_errors_total Retention job runs that failed.\n# TYPE stablecoin_retention_errors_total counter\nstablecoin_retention_errors_total {}\n",
            self.retention_runs.load(Ordering::Relaxed),
            self.retention_errors.load(Ordering::Relaxed)
        );
        self.render_reconciliation(&mut out);
        out
    }

    fn render_reconciliation(&self, out: &mut String) {
        let _ = write!(
            out,
            "# HELP stablecoin_reconciliation_runs_total Chain reconciliation passes finished.\n# TYPE stablecoin_reconciliation_runs_total counter\nstablecoin_reconciliation_runs_total {}\n# HELP stablecoin_reconciliation_failures_total Chain reconciliation passes that panicked.\n# TYPE stablecoin_reconciliation_failures_total counter\nstablecoin_reconciliation_failures_total {}\n",
            self.reconciliation_runs.load(Ordering::Relaxed),
            self.reconciliation_failures.load(Ordering::Relaxed)
        );
        let last = lock(&self.reconciliation);
        let Some(report) = last.as_ref() else {
            return;
        };
        let _ = write!(
            out,
            "# HELP stablecoin_reconciliation_accounts_checked Accounts the last pass compared.\n# TYPE stablecoin_reconciliation_accounts_checked gauge\nstablecoin_reconciliation_accounts_checked {}\n# HELP stablecoin_reconciliation_unreadable_accounts Accounts the last pass could not compare (a rail or the store did not answer).\n# TYPE stablecoin_reconciliation_unreadable_accounts gauge\nstablecoin_reconciliation_unreadable_accounts {}\n# HELP stablecoin_ledger_drift_accounts Accounts whose chain balance the last pass found outside what the ledger allows.\n# TYPE stablecoin_ledger_drift_accounts gauge\nstablecoin_ledger_drift_accounts {}\n",
            report.accounts_checked,
            report.errors.len(),
            report.drifts.len()
        );
        out.push_str("# HELP stablecoin_ledger_drift_micros Drift the last pass found, in micro-units, by rail, token and direction (SHORTFALL: missing on chain).\n# TYPE stablecoin_ledger_drift_micros gauge\n");
        for (rail, token, direction, micros) in report.totals() {
            let direction = match direction {
                DriftDirection::Shortfall => "SHORTFALL",
                DriftDirection::Excess => "EXCESS",
            };
            let _ = writeln!(
                out,
                "stablecoin_ledger_drift_micros{{rail=\"{}\",token=\"{token}\",direction=\"{direction}\"}} {micros}",
                escape(&rail)
            );
        }
    }
}

/// The quarantine gauges (issue #51, inbound screening), from the records at scrape time
/// so they are right on every node and after a restart:
/// - `stablecoin_quarantined_deposits{status}`: deposits from flagged senders per status,
///   every status listed. `held` and `proposed` wait for staff (alert above 0);
///   `released` and `returned` only grow, so a rate of them is what staff decided.
/// - `stablecoin_quarantine_held_deposits{rail,token}` and
///   `stablecoin_quarantine_held_micros{rail,token}`: the deposits whose tokens are still in
///   quarantine (held, proposed, releasing, returning) and their micro-units.
pub fn render_quarantine(t: &QuarantineTotals) -> String {
    let mut out = String::from(
        "# HELP stablecoin_quarantined_deposits Deposits from senders the sanctions screen flagged, by status.\n# TYPE stablecoin_quarantined_deposits gauge\n",
    );
    for (status, n) in &t.by_status {
        let _ = writeln!(
            out,
            "stablecoin_quarantined_deposits{{status=\"{}\"}} {n}",
            status.as_str()
        );
    }
    out.push_str("# HELP stablecoin_quarantine_held_deposits Quarantined deposits whose tokens are still in quarantine, by rail and token.\n# TYPE stablecoin_quarantine_held_deposits gauge\n");
    for ((rail, token), (n, _)) in &t.held {
        let _ = writeln!(
            out,
            "stablecoin_quarantine_held_deposits{{rail=\"{}\",token=\"{token}\"}} {n}",
            escape(rail)
        );
    }
    out.push_str("# HELP stablecoin_quarantine_held_micros Micro-units still in quarantine, by rail and token.\n# TYPE stablecoin_quarantine_held_micros gauge\n");
    for ((rail, token), (_, micros)) in &t.held {
        let _ = writeln!(
            out,
            "stablecoin_quarantine_held_micros{{rail=\"{}\",token=\"{token}\"}} {micros}",
            escape(rail)
        );
    }
    out
}

/// A request id (`req_` + 16 hex), echoed as `X-Request-Id` and logged.
fn request_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        b = (Instant::now().elapsed().as_nanos() as u64).to_be_bytes();
    }
    format!("req_{}", crate::config::hex(&b))
}

/// Counts, times and logs every request. Logs the route template (never the query string,
/// which may carry phone numbers) and never a header value.
pub async fn track(
    axum::extract::State(metrics): axum::extract::State<std::sync::Arc<Metrics>>,
    req: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let id = request_id();
    let mut res = next.run(req).await;
    let elapsed = start.elapsed();
    let status = res.status().as_u16();
    metrics.observe_request(&method, &route, status, elapsed.as_secs_f64());
    let code = res
        .extensions()
        .get::<ErrorCode>()
        .map(|c| c.0)
        .unwrap_or("");
    tracing::info!(
        request_id = %id,
        method = %method,
        route = %route,
        status,
        error_code = code,
        latency_ms = elapsed.as_secs_f64() * 1000.0,
        "request"
    );
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert("x-request-id", v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.observe_request("GET", "/v1/transfers/{id}", 200, 0.003);
        m.operation_accepted("transfer");
        m.tick(&TickReport {
            settled: 2,
            ..Default::default()
        });
        let t = m.render(&[("polygon".into(), "READY".into())]);
        assert!(t.contains(
            "http_requests_total{method=\"GET\",route=\"/v1/transfers/{id}\",status=\"200\"} 1"
        ));
        assert!(t.contains("le=\"0.005\"} 1"));
        assert!(t.contains("le=\"0.001\"} 0"));
        assert!(t.contains("stablecoin_operation_transitions_total{to=\"SETTLED\"} 2"));
        assert!(t.contains("stablecoin_rail_ready{rail=\"polygon\",status=\"READY\"} 1"));
    }

    #[test]
    fn renders_the_quarantine_gauges() {
        use stablecoin_core::domain::money::Token;
        use stablecoin_core::kernel::stray::StrayStatus;
        let mut t = QuarantineTotals {
            by_status: StrayStatus::ALL.iter().map(|s| (*s, 0)).collect(),
            ..Default::default()
        };
        t.by_status[0].1 = 2;
        t.held
            .insert(("polygon".into(), Token::Usdc), (2, 45_000_000));
        t.held.insert(("tron".into(), Token::Usdt), (1, 7));
        let out = render_quarantine(&t);
        assert!(out.contains("stablecoin_quarantined_deposits{status=\"held\"} 2\n"));
        assert!(out.contains("stablecoin_quarantined_deposits{status=\"released\"} 0\n"));
        assert!(out.contains(
            "stablecoin_quarantine_held_micros{rail=\"polygon\",token=\"USDC\"} 45000000\n"
        ));
        assert!(
            out.contains("stablecoin_quarantine_held_deposits{rail=\"tron\",token=\"USDT\"} 1\n")
        );
        assert_eq!(out.matches("# TYPE").count(), 3);
    }
}
