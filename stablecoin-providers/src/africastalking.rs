//! Africa's Talking SMS: a [`Notifier`] over its messaging API, and the parser of its
//! delivery reports.
//!
//! - Send: `POST {base}/version1/messaging`, form-encoded (`username`, `to`, `message`,
//!   optional `from`), headers `apiKey` and `Accept: application/json`. The answer lists
//!   one entry per recipient; `statusCode` 101 means sent, and its `messageId` is what
//!   the delivery reports name.
//! - Delivery reports: a form POST to the callback URL configured in the Africa's
//!   Talking dashboard (`id`, `status`, `phoneNumber`, `networkCode`, `failureReason`,
//!   `retryCount`). They carry no signature: a host records them only as a hint, for a
//!   message id it knows ([`stablecoin_core::engine::Engine::record_sms_report`] with
//!   `verified = false`).

use crate::ProviderError;
use crate::http::{base_url, client, field, form_pairs, status_error, transport};
use async_trait::async_trait;
use serde::Deserialize;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::ports::SmsDelivery;
use stablecoin_core::ports::{Notifier, NotifyError, SmsAccepted, SmsMessage};
use std::time::Duration;

/// The production API base.
pub const LIVE_BASE_URL: &str = "https://api.africastalking.com";
/// The sandbox API base (username `sandbox`).
pub const SANDBOX_BASE_URL: &str = "https://api.sandbox.africastalking.com";

/// The settings of an [`AfricasTalking`] notifier. `Debug` hides the API key.
#[derive(Clone)]
pub struct AfricasTalkingConfig {
    /// API base: [`LIVE_BASE_URL`], [`SANDBOX_BASE_URL`], or a fake's in tests.
    pub base_url: String,
    /// The application's username (`sandbox` on the sandbox).
    pub username: String,
    /// The application's API key (the `apiKey` header).
    pub api_key: String,
    /// The sender id or short code (`from`); `None`: the account's default.
    pub from: Option<String>,
    /// The whole request's time limit; a send that outlasts it is retried later.
    pub timeout: Duration,
}

impl std::fmt::Debug for AfricasTalkingConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AfricasTalkingConfig")
            .field("base_url", &self.base_url)
            .field("username", &self.username)
            .field("api_key", &"<redacted>")
            .field("from", &self.from)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Sends SMS through Africa's Talking.
#[derive(Clone, Debug)]
pub struct AfricasTalking {
    config: AfricasTalkingConfig,
    endpoint: String,
    http: reqwest::Client,
}

impl AfricasTalking {
    /// A notifier with these settings; refuses an empty username or key, or a base URL
    /// that is not HTTP(S).
    pub fn new(config: AfricasTalkingConfig) -> Result<Self, ProviderError> {
        if config.username.trim().is_empty() || config.api_key.trim().is_empty() {
            return Err(ProviderError::Config(
                "Africa's Talking needs a username and an API key".into(),
            ));
        }
        let endpoint = format!("{}/version1/messaging", base_url(&config.base_url)?);
        let http = client(config.timeout)?;
        Ok(AfricasTalking {
            config,
            endpoint,
            http,
        })
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "SMSMessageData")]
    data: MessageData,
}

#[derive(Deserialize)]
struct MessageData {
    #[serde(rename = "Recipients", default)]
    recipients: Vec<Recipient>,
    #[serde(rename = "Message", default)]
    message: String,
}

#[derive(Deserialize)]
struct Recipient {
    #[serde(rename = "statusCode")]
    status_code: u16,
    #[serde(default)]
    status: String,
    #[serde(rename = "messageId", default)]
    message_id: String,
}

/// A recipient's `statusCode` other than 101 (sent), as a `NotifyError`: the codes a
/// later attempt may pass (risk hold, insufficient balance, routing, the gateway's own
/// errors) are retryable; the refusals of this number or sender are not. 100
/// (processed) and 102 (queued) are retryable too: only 101 is an acceptance.
fn recipient_error(code: u16, status: &str) -> NotifyError {
    let status: String = status.chars().take(40).collect();
    let reason = format!("Africa's Talking: statusCode {code} {status}");
    match code {
        // 402 InvalidSenderId, 403 InvalidPhoneNumber, 404 UnsupportedNumberType,
        // 406 UserInBlacklist, 409 DoNotDisturbRejection.
        402 | 403 | 404 | 406 | 409 => NotifyError::permanent(reason),
        _ => NotifyError::retryable(reason),
    }
}

#[async_trait]
impl Notifier for AfricasTalking {
    async fn send_sms(&self, to: &Phone, message: &SmsMessage) -> Result<SmsAccepted, NotifyError> {
        let mut form = vec![
            ("username", self.config.username.as_str()),
            ("to", to.as_str()),
            ("message", message.text.as_str()),
        ];
        if let Some(from) = &self.config.from {
            form.push(("from", from.as_str()));
        }
        let res = self
            .http
            .post(&self.endpoint)
            .header("apiKey", &self.config.api_key)
            .header("Accept", "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|e| transport("Africa's Talking", &e))?;
        let status = res.status().as_u16();
        if !res.status().is_success() {
            return Err(status_error("Africa's Talking", status, ""));
        }
        let answer: Answer = res
            .json()
            .await
            .map_err(|_| NotifyError::retryable("Africa's Talking: unreadable answer to a send"))?;
        let Some(r) = answer.data.recipients.into_iter().next() else {
            // No recipient entry: the request was refused as a whole (the Message
            // says why, e.g. "InvalidSenderId").
            let why: String = answer.data.message.chars().take(80).collect();
            return Err(NotifyError::permanent(format!(
                "Africa's Talking: no recipient accepted ({why})"
            )));
        };
        if r.status_code != 101 {
            return Err(recipient_error(r.status_code, &r.status));
        }
        if r.message_id.is_empty() || r.message_id == "None" {
            return Err(NotifyError::retryable(
                "Africa's Talking: sent without a message id",
            ));
        }
        Ok(SmsAccepted {
            message_id: r.message_id,
        })
    }
}

/// One delivery report, as Africa's Talking posts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryReport {
    /// The message id (`ATXid_...`) the send answered with.
    pub id: String,
    /// The gateway's status word (`Success`, `Failed`, `Buffered`, ...).
    pub status: String,
    /// The recipient (E.164), when given.
    pub phone_number: Option<String>,
    /// The operator's network code, when given.
    pub network_code: Option<String>,
    /// Why it failed (`AbsentSubscriber`, `UserInBlacklist`, ...), when it did.
    pub failure_reason: Option<String>,
    /// How many times the gateway retried it, when given.
    pub retry_count: Option<u32>,
}

impl DeliveryReport {
    /// Parses the form body of a report; `BadCallback` without an `id` or `status`.
    pub fn parse(body: &[u8]) -> Result<Self, ProviderError> {
        let pairs = form_pairs(body);
        let get = |n: &str| field(&pairs, n).map(str::to_string);
        let id = get("id").filter(|s| !s.is_empty());
        let status = get("status").filter(|s| !s.is_empty());
        let (Some(id), Some(status)) = (id, status) else {
            return Err(ProviderError::BadCallback(
                "an Africa's Talking delivery report needs id and status".into(),
            ));
        };
        Ok(DeliveryReport {
            id,
            status,
            phone_number: get("phoneNumber"),
            network_code: get("networkCode"),
            failure_reason: get("failureReason").filter(|s| !s.is_empty()),
            retry_count: get("retryCount").and_then(|s| s.parse().ok()),
        })
    }

    /// What the report says of the message: `Success` is delivered; `Failed`,
    /// `Rejected`, `AbsentSubscriber` and `Expired` are final failures; `Sent`,
    /// `Submitted`, `Buffered` (and any other word) are still in progress.
    pub fn delivery(&self) -> SmsDelivery {
        match self.status.as_str() {
            "Success" => SmsDelivery::Delivered,
            "Failed" | "Rejected" | "AbsentSubscriber" | "Expired" => SmsDelivery::Failed {
                reason: self
                    .failure_reason
                    .clone()
                    .unwrap_or_else(|| self.status.clone()),
            },
            _ => SmsDelivery::InProgress,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_parses_and_maps_to_a_delivery() {
        let r = DeliveryReport::parse(
            b"id=ATXid_1&status=Failed&phoneNumber=%2B254711000000&networkCode=63902\
              &failureReason=AbsentSubscriber&retryCount=2",
        )
        .unwrap();
        assert_eq!(r.id, "ATXid_1");
        assert_eq!(r.phone_number.as_deref(), Some("+254711000000"));
        assert_eq!(r.retry_count, Some(2));
        assert_eq!(
            r.delivery(),
            SmsDelivery::Failed {
                reason: "AbsentSubscriber".into()
            }
        );
        let ok = DeliveryReport::parse(b"id=ATXid_2&status=Success").unwrap();
        assert_eq!(ok.delivery(), SmsDelivery::Delivered);
        let buffered = DeliveryReport::parse(b"id=ATXid_2&status=Buffered").unwrap();
        assert_eq!(buffered.delivery(), SmsDelivery::InProgress);
    }

    #[test]
    fn a_report_without_id_or_status_is_refused() {
        for body in [
            &b"status=Success"[..],
            b"id=ATXid_1",
            b"id=&status=Success",
            b"",
        ] {
            assert_eq!(
                DeliveryReport::parse(body).unwrap_err().code(),
                "BAD_CALLBACK"
            );
        }
    }

    #[test]
    fn the_key_is_not_in_debug() {
        let c = AfricasTalkingConfig {
            base_url: SANDBOX_BASE_URL.into(),
            username: "sandbox".into(),
            api_key: "atsk_secret_key".into(),
            from: None,
            timeout: Duration::from_secs(5),
        };
        let n = AfricasTalking::new(c.clone()).unwrap();
        assert!(!format!("{c:?} {n:?}").contains("atsk_secret_key"));
    }

    #[test]
    fn recipient_codes_map_to_retryability() {
        assert!(!recipient_error(403, "InvalidPhoneNumber").retryable);
        assert!(!recipient_error(406, "UserInBlacklist").retryable);
        assert!(recipient_error(405, "InsufficientBalance").retryable);
        assert!(recipient_error(500, "InternalServerError").retryable);
        assert!(recipient_error(102, "Queued").retryable);
    }
}
