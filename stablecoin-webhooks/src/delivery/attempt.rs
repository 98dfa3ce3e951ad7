//! One attempt: POST a claimed delivery's body to its endpoint with the family's headers
//! (and the Standard Webhooks ones when the endpoint opted in), record what happened
//! ([`Attempt`]), and decide the delivery's next state with the pure [`retry`] schedule.
//! Nothing is committed here.
//!
//! What an attempt records is what its tenant reads back, so it never carries an address,
//! a resolver error or anything that tells apart a closed port from a filtered one: an
//! attempt ends with an HTTP status, `timeout`, or `connection failed` (which also covers
//! a URL the SSRF rules refuse at that moment).

use super::deliver::Prepared;
use super::retry::{Attempted, Next, retry, retry_after_ms};
use super::{Attempt, Deliverer, Delivery, DeliveryState, Endpoint};
use crate::signature::{Family, PAYMENTS_EVENT_HEADER, PAYMENTS_ID_HEADER, WALLET_USER_AGENT};
use crate::standard;
use stablecoin_core::domain::time::Timestamp;
use std::time::Instant;

/// The error of an attempt that got no response in time.
pub const TIMEOUT: &str = "timeout";
/// The error of every other attempt that got no response: refused, reset, closed, not
/// resolvable, or refused by the SSRF rules.
pub const CONNECTION_FAILED: &str = "connection failed";
/// The error of an attempt to an endpoint that was disabled or deleted meanwhile.
pub const ENDPOINT_UNUSABLE: &str = "endpoint disabled or deleted";
/// The error of an attempt whose signing secret cannot be opened (sealed under another
/// key than the configured one): nothing was sent.
pub const SECRET_UNAVAILABLE: &str = "signing secret unavailable";

/// An attempt that got no response.
fn failed(at: Timestamp, error: &str, latency_ms: u64) -> Attempt {
    Attempt {
        at,
        status: None,
        latency_ms,
        error: Some(error.into()),
    }
}

impl Deliverer {
    /// Attempts one claimed delivery (`version` as claimed) to `endpoint` (`None`:
    /// disabled or deleted) and decides its next state (not yet committed). `None` when
    /// the delivery is no longer pending.
    pub(super) async fn attempt_claimed(
        &self,
        mut d: Delivery,
        version: u64,
        endpoint: Option<&Endpoint>,
    ) -> Option<Prepared> {
        if d.state != DeliveryState::Pending {
            return None;
        }
        let (attempt, retry_after) = match endpoint {
            Some(e) => self.attempt(e, &d).await,
            None => (failed(self.clock.now(), ENDPOINT_UNUSABLE, 0), None),
        };
        let ok = attempt.status.is_some_and(|s| (200..300).contains(&s));
        let at = attempt.at;
        d.attempts.push(attempt);
        let attempted = match endpoint {
            _ if ok => Attempted::Delivered,
            None => Attempted::EndpointUnusable,
            Some(_) => Attempted::Failed {
                retry_after_ms: retry_after,
            },
        };
        let outcome = retry(d.attempts.len(), attempted, || {
            let mut j = [0u8; 2];
            self.entropy.fill(&mut j);
            u16::from_le_bytes(j)
        });
        match outcome {
            Next::Delivered => {
                d.state = DeliveryState::Delivered;
                d.next_attempt_at = None;
            }
            Next::Dead => {
                d.state = DeliveryState::Dead;
                d.next_attempt_at = None;
            }
            Next::Retry { delay_ms } => {
                d.next_attempt_at = Some(self.clock.now().plus_millis(delay_ms));
            }
        }
        Some(Prepared {
            endpoint: d.endpoint.0.clone(),
            health: endpoint.map(|_| (ok, at)),
            delivery: d,
            version,
            outcome,
        })
    }

    /// POSTs the delivery's body once; the attempt as recorded and the `Retry-After`
    /// (ms) the response asked for, if any. The URL is checked against the SSRF rules
    /// first: an IP literal never reaches the client's resolver, and a pooled
    /// connection is reused without one, so the resolver alone would not see them.
    async fn attempt(&self, endpoint: &Endpoint, d: &Delivery) -> (Attempt, Option<i64>) {
        let at = self.clock.now();
        let started = Instant::now();
        let elapsed = || started.elapsed().as_millis() as u64;
        if self.check_target(&endpoint.url).await.is_err() {
            return (failed(at, CONNECTION_FAILED, elapsed()), None);
        }
        let Some(secret) = self.signing_secret(endpoint) else {
            return (failed(at, SECRET_UNAVAILABLE, elapsed()), None);
        };
        let body = d.body.as_bytes();
        let mut req = self
            .http
            .post(&endpoint.url)
            .header("Content-Type", "application/json")
            .header(
                endpoint.family.signature_header(),
                endpoint.family.sign(&secret, body),
            );
        req = match endpoint.family {
            Family::Wallet => req.header("User-Agent", WALLET_USER_AGENT),
            Family::Payments => req
                .header(PAYMENTS_EVENT_HEADER, &d.event_type)
                .header(PAYMENTS_ID_HEADER, &d.id),
        };
        if endpoint.standard_webhooks {
            // Our secrets are always `<prefix>_<hex>`, valid keys; a record that is not
            // (written by hand) gets the family's header only.
            let ts = at.millis().div_euclid(1000);
            if let Ok(sig) = standard::sign(&secret, &d.id, ts, body) {
                req = req
                    .header(standard::ID_HEADER, &d.id)
                    .header(standard::TIMESTAMP_HEADER, ts.to_string())
                    .header(standard::SIGNATURE_HEADER, sig);
            }
        }
        let result = req.body(d.body.clone()).send().await;
        let latency_ms = elapsed();
        match result {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let header = resp.headers().get("retry-after");
                let retry_after = retry_after_ms(status, header.and_then(|v| v.to_str().ok()));
                let error = (!(200..300).contains(&status)).then(|| format!("HTTP {status}"));
                (
                    Attempt {
                        at,
                        status: Some(status),
                        latency_ms,
                        error,
                    },
                    retry_after,
                )
            }
            Err(e) => {
                let error = if e.is_timeout() {
                    TIMEOUT
                } else {
                    CONNECTION_FAILED
                };
                (failed(at, error, latency_ms), None)
            }
        }
    }
}
