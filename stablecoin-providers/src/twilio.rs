//! Twilio Messages: a [`Notifier`] over its REST API, and the verification and parsing
//! of its status callbacks.
//!
//! - Send: `POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json`, Basic auth
//!   (account SID, auth token), form fields `To`, `From` or `MessagingServiceSid`,
//!   `Body`, and `StatusCallback`. The answer is 201 `{sid: "SM...", status, ...}`.
//! - Status callbacks: form POSTs (`MessageSid`, `MessageStatus`, `ErrorCode`, `To`,
//!   `From`) signed with `X-Twilio-Signature` = base64(HMAC-SHA1(auth token, the full
//!   URL followed by every POST parameter sorted by name, name then value)). Only a
//!   verified callback is trusted ([`StatusCallback::verify_and_parse`]).

use crate::ProviderError;
use crate::http::{base_url, client, field, form_pairs, status_error, transport};
use async_trait::async_trait;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha1::Sha1;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::ports::SmsDelivery;
use stablecoin_core::ports::{Notifier, NotifyError, SmsAccepted, SmsMessage};
use std::time::Duration;
use subtle::ConstantTimeEq;

/// Twilio's API base.
pub const LIVE_BASE_URL: &str = "https://api.twilio.com";

/// Who a message is sent as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TwilioSender {
    /// A Twilio phone number or alphanumeric sender id (`From`).
    From(String),
    /// A Messaging Service (`MessagingServiceSid`, `MG...`), which picks the sender.
    MessagingService(String),
}

/// The settings of a [`Twilio`] notifier. `Debug` hides the auth token.
#[derive(Clone)]
pub struct TwilioConfig {
    /// API base: [`LIVE_BASE_URL`], or a fake's in tests.
    pub base_url: String,
    /// The account SID (`AC...`), the Basic-auth user.
    pub account_sid: String,
    /// The auth token: the Basic-auth password and the key status callbacks are
    /// signed with.
    pub auth_token: String,
    /// The sender.
    pub sender: TwilioSender,
    /// The public URL of the host's status-callback route (`StatusCallback`); `None`:
    /// no delivery reports.
    pub status_callback: Option<String>,
    /// The whole request's time limit; a send that outlasts it is retried later.
    pub timeout: Duration,
}

impl std::fmt::Debug for TwilioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioConfig")
            .field("base_url", &self.base_url)
            .field("account_sid", &self.account_sid)
            .field("auth_token", &"<redacted>")
            .field("sender", &self.sender)
            .field("status_callback", &self.status_callback)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Sends SMS through Twilio Messages.
#[derive(Clone, Debug)]
pub struct Twilio {
    config: TwilioConfig,
    endpoint: String,
    http: reqwest::Client,
}

impl Twilio {
    /// A notifier with these settings; refuses an empty SID, token or sender, or a base
    /// URL that is not HTTP(S).
    pub fn new(config: TwilioConfig) -> Result<Self, ProviderError> {
        let sender_empty = match &config.sender {
            TwilioSender::From(s) | TwilioSender::MessagingService(s) => s.trim().is_empty(),
        };
        if config.account_sid.trim().is_empty()
            || config.auth_token.trim().is_empty()
            || sender_empty
        {
            return Err(ProviderError::Config(
                "Twilio needs an account SID, an auth token and a sender".into(),
            ));
        }
        let endpoint = format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            base_url(&config.base_url)?,
            config.account_sid
        );
        let http = client(config.timeout)?;
        Ok(Twilio {
            config,
            endpoint,
            http,
        })
    }
}

#[derive(Deserialize)]
struct Created {
    sid: String,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(default)]
    code: Option<u32>,
}

/// Twilio error codes that refuse this message for good (invalid or unreachable `To`,
/// an unsubscribed recipient, a blocked destination).
const PERMANENT_CODES: &[u32] = &[21211, 21408, 21610, 21612, 21614];

#[async_trait]
impl Notifier for Twilio {
    async fn send_sms(&self, to: &Phone, message: &SmsMessage) -> Result<SmsAccepted, NotifyError> {
        let mut form = vec![("To", to.as_str()), ("Body", message.text.as_str())];
        match &self.config.sender {
            TwilioSender::From(f) => form.push(("From", f.as_str())),
            TwilioSender::MessagingService(s) => form.push(("MessagingServiceSid", s.as_str())),
        }
        if let Some(cb) = &self.config.status_callback {
            form.push(("StatusCallback", cb.as_str()));
        }
        let res = self
            .http
            .post(&self.endpoint)
            .basic_auth(&self.config.account_sid, Some(&self.config.auth_token))
            .header("Accept", "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|e| transport("Twilio", &e))?;
        let status = res.status().as_u16();
        if !res.status().is_success() {
            let code = res.json::<ApiError>().await.ok().and_then(|e| e.code);
            let detail = code.map(|c| format!(" (code {c})")).unwrap_or_default();
            let mut e = status_error("Twilio", status, &detail);
            if code.is_some_and(|c| PERMANENT_CODES.contains(&c)) {
                e.retryable = false;
            }
            return Err(e);
        }
        let created: Created = res
            .json()
            .await
            .map_err(|_| NotifyError::retryable("Twilio: unreadable answer to a send"))?;
        if created.sid.is_empty() {
            return Err(NotifyError::retryable("Twilio: created without a sid"));
        }
        Ok(SmsAccepted {
            message_id: created.sid,
        })
    }
}

/// The `X-Twilio-Signature` of a request to `url` with these POST parameters:
/// base64(HMAC-SHA1(auth token, url + each parameter sorted by name, name then value)).
pub fn signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()) else {
        return String::new();
    };
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `header` is the signature of this request (compared in constant time).
pub fn verify_signature(
    auth_token: &str,
    url: &str,
    params: &[(String, String)],
    header: &str,
) -> bool {
    let expected = signature(auth_token, url, params);
    !header.is_empty() && bool::from(expected.as_bytes().ct_eq(header.trim().as_bytes()))
}

/// One status callback of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusCallback {
    /// The message's sid (`SM...`), as the send answered.
    pub message_sid: String,
    /// `queued`, `sending`, `sent`, `delivered`, `undelivered`, `failed`, ...
    pub message_status: String,
    /// Twilio's error code of a failure (`30003`, ...), when given.
    pub error_code: Option<String>,
    /// The recipient, when given.
    pub to: Option<String>,
}

impl StatusCallback {
    /// Verifies the `X-Twilio-Signature` of a callback to `url` (the full public URL
    /// Twilio called, query included) and parses its form `body`. `BadSignature`
    /// unless it verifies; `BadCallback` without `MessageSid` or `MessageStatus`.
    pub fn verify_and_parse(
        auth_token: &str,
        url: &str,
        body: &[u8],
        signature_header: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let pairs = form_pairs(body);
        let ok = signature_header.is_some_and(|h| verify_signature(auth_token, url, &pairs, h));
        if !ok {
            return Err(ProviderError::BadSignature);
        }
        let get = |n: &str| {
            field(&pairs, n)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let (Some(message_sid), Some(message_status)) = (get("MessageSid"), get("MessageStatus"))
        else {
            return Err(ProviderError::BadCallback(
                "a Twilio status callback needs MessageSid and MessageStatus".into(),
            ));
        };
        Ok(StatusCallback {
            message_sid,
            message_status,
            error_code: get("ErrorCode"),
            to: get("To"),
        })
    }

    /// What the callback says of the message: `delivered` is delivered; `undelivered`
    /// and `failed` are final failures (reason: the error code); anything else is in
    /// progress.
    pub fn delivery(&self) -> SmsDelivery {
        match self.message_status.as_str() {
            "delivered" => SmsDelivery::Delivered,
            "undelivered" | "failed" => SmsDelivery::Failed {
                reason: self
                    .error_code
                    .clone()
                    .unwrap_or_else(|| self.message_status.clone()),
            },
            _ => SmsDelivery::InProgress,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str, v: &str) -> (String, String) {
        (k.into(), v.into())
    }

    /// The example of Twilio's security documentation ("Validating requests"): auth
    /// token `12345`, this URL and these parameters sign to `0/KCTR6DLpKmkAf8muzZqo1nDgQ=`.
    #[test]
    fn the_signature_matches_twilios_documented_example() {
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let params = vec![
            p("CallSid", "CA1234567890ABCDE"),
            p("Caller", "+12349013030"),
            p("Digits", "1234"),
            p("From", "+12349013030"),
            p("To", "+18005551212"),
        ];
        assert_eq!(
            signature("12345", url, &params),
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        );
        assert!(verify_signature(
            "12345",
            url,
            &params,
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        ));
        // Order of the form does not matter; any changed byte does.
        let mut shuffled = params.clone();
        shuffled.reverse();
        assert!(verify_signature(
            "12345",
            url,
            &shuffled,
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        ));
        assert!(!verify_signature(
            "12346",
            url,
            &params,
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        ));
        let mut changed = params.clone();
        changed[2].1 = "1235".into();
        assert!(!verify_signature(
            "12345",
            url,
            &changed,
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        ));
        assert!(!verify_signature("12345", url, &params, ""));
    }

    #[test]
    fn a_callback_is_parsed_only_when_signed() {
        let url = "https://api.example.com/v1/callbacks/sms/twilio";
        let body = b"MessageSid=SM1&MessageStatus=undelivered&ErrorCode=30003&To=%2B15550001";
        let pairs = form_pairs(body);
        let sig = signature("tok", url, &pairs);
        let cb = StatusCallback::verify_and_parse("tok", url, body, Some(&sig)).unwrap();
        assert_eq!(cb.message_sid, "SM1");
        assert_eq!(
            cb.delivery(),
            SmsDelivery::Failed {
                reason: "30003".into()
            }
        );
        for bad in [None, Some("x"), Some(sig.as_str())] {
            let token = if bad == Some(sig.as_str()) {
                "other"
            } else {
                "tok"
            };
            assert_eq!(
                StatusCallback::verify_and_parse(token, url, body, bad)
                    .unwrap_err()
                    .code(),
                "BAD_SIGNATURE"
            );
        }
    }

    #[test]
    fn the_token_is_not_in_debug() {
        let c = TwilioConfig {
            base_url: LIVE_BASE_URL.into(),
            account_sid: "AC1".into(),
            auth_token: "tok_secret".into(),
            sender: TwilioSender::From("+15550000".into()),
            status_callback: None,
            timeout: Duration::from_secs(5),
        };
        let t = Twilio::new(c.clone()).unwrap();
        assert!(!format!("{c:?} {t:?}").contains("tok_secret"));
    }
}
