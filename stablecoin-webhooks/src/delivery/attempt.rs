//! One attempt: POST a claimed delivery's body to its endpoint with the family's headers,
//! record what happened ([`Attempt`]), and decide the delivery's next state with the
//! pure [`retry`] schedule. Nothing is committed here.

use super::deliver::Prepared;
use super::retry::{Attempted, Next, retry, retry_after_ms};
use super::{Attempt, Deliverer, Delivery, DeliveryState, Endpoint};
use crate::error::WebhookResult;
use crate::signature::{Family, PAYMENTS_EVENT_HEADER, PAYMENTS_ID_HEADER, WALLET_USER_AGENT};
use stablecoin_core::ports::StoredRecord;
use stablecoin_core::ports::record::Record;
use std::collections::HashMap;
use std::time::Instant;

impl Deliverer {
    /// Attempts one claimed delivery and decides its next state (not yet committed).
    pub(super) async fn attempt_claimed(
        &self,
        stored: StoredRecord,
        endpoints: &HashMap<String, Option<(Endpoint, u64)>>,
    ) -> WebhookResult<Option<Prepared>> {
        let mut d = Delivery::from_stored(&stored)?;
        if d.state != DeliveryState::Pending {
            return Ok(None);
        }
        let usable = endpoints.get(d.endpoint.as_str()).and_then(Option::as_ref);
        let (attempt, retry_after) = match usable {
            Some((e, _)) => self.attempt(e, &d).await,
            None => (
                Attempt {
                    at: self.clock.now(),
                    status: None,
                    latency_ms: 0,
                    error: Some("endpoint disabled or deleted".into()),
                },
                None,
            ),
        };
        let ok = attempt.status.is_some_and(|s| (200..300).contains(&s));
        let at = attempt.at;
        d.attempts.push(attempt);
        let attempted = match usable {
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
        Ok(Some(Prepared {
            endpoint: d.endpoint.0.clone(),
            health: usable.map(|_| (ok, at)),
            delivery: d,
            version: stored.version,
            outcome,
        }))
    }

    /// POSTs the delivery's body once; the attempt as recorded and the `Retry-After`
    /// (ms) the response asked for, if any.
    async fn attempt(&self, endpoint: &Endpoint, d: &Delivery) -> (Attempt, Option<i64>) {
        let at = self.clock.now();
        let started = Instant::now();
        let signature = endpoint.family.sign(&endpoint.secret, d.body.as_bytes());
        let mut req = self
            .http
            .post(&endpoint.url)
            .header("Content-Type", "application/json")
            .header(endpoint.family.signature_header(), signature);
        req = match endpoint.family {
            Family::Wallet => req.header("User-Agent", WALLET_USER_AGENT),
            Family::Payments => req
                .header(PAYMENTS_EVENT_HEADER, &d.event_type)
                .header(PAYMENTS_ID_HEADER, &d.id),
        };
        let result = req.body(d.body.clone()).send().await;
        let latency_ms = started.elapsed().as_millis() as u64;
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
                    "timeout".to_string()
                } else if e.is_connect() {
                    "connection refused or failed".to_string()
                } else {
                    "connection closed without a response".to_string()
                };
                (
                    Attempt {
                        at,
                        status: None,
                        latency_ms,
                        error: Some(error),
                    },
                    None,
                )
            }
        }
    }
}
