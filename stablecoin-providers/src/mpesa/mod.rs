//! M-Pesa Daraja B2C: a [`PayoutProvider`] paying Kenyan M-Pesa wallets from a B2C
//! shortcode, with the parser of Daraja's result callbacks and the store
//! ([`MpesaResults`]) the results land in.
//!
//! - Token: `GET /oauth/v1/generate?grant_type=client_credentials` with Basic
//!   `consumerKey:consumerSecret`, kept until shortly before its `expires_in` and
//!   fetched again when Daraja answers 401.
//! - Submit: `POST /mpesa/b2c/v3/paymentrequest`. Our payout id is the
//!   `OriginatorConversationID`; an answer saying "duplicate" is `Ok` (already held),
//!   but the engine never relies on it (see "No re-submit" below). The
//!   `Amount` is whole shillings: a payout in another currency than KES, or with cents,
//!   is refused (`Rejected`) before anything is sent. `ResponseCode` "0" means accepted
//!   for processing, not paid.
//! - Status: `POST /mpesa/transactionstatus/v1/query` by `OriginatorConversationID`.
//!
//! # Why the status query's result is the truth and the payment callback a hint
//!
//! Daraja has no synchronous status read: the transaction-status query (its own
//! "reconciliation path for when callbacks do not arrive") is acknowledged at once and
//! its result is POSTed later to a `ResultURL`, like the payment's own result. So the
//! adapter shares an [`MpesaResults`] store (in the database) with the host's
//! `ResultURL` route, which hands it every body it verified ([`MpesaResults::record`]),
//! and `status`:
//!
//! 1. returns a final outcome (Delivered, Failed) the store already has from one of its
//!    own queries' results, without asking again;
//! 2. otherwise issues a query, records the `ConversationID` Daraja acknowledges it
//!    with, and waits up to [`MpesaConfig::result_wait`] for that query's result;
//! 3. answers from the newest query result: `TransactionStatus` Completed is
//!    `Delivered{reference: ReceiptNo}`, Failed / Cancelled / Declined / Expired /
//!    Reversed is `Failed{reason}`, a "no such transaction" code
//!    ([`DEFAULT_NOT_FOUND_CODES`]) is `NotFound`, any other non-zero code is a failure
//!    of the query, not of the payout (`Unknown`; a 2001 "initiator invalid" on a query
//!    must never refund a payout that may have been paid); no result yet is `Pending`.
//!
//! # Why a result is believed
//!
//! Daraja signs nothing. Each request names its payout's own `ResultURL` and
//! `QueueTimeOutURL`, ending in `/{payout id}/{token}` with the token an HMAC of the
//! payout id under the server's callback secret ([`CallbackKey`]): only Daraja is given
//! it, over TLS, so a body at that URL concerns that payout and no other, and a forger
//! without the URL is refused by the host before anything is read. The host then
//! hands the body to [`MpesaResults::record`] with the payout's amount and payee: a
//! status result counts only if it answers one of the adapter's own queries (its
//! `ConversationID`) and, when it says Completed, shows the payout's amount and payee;
//! anything else is refused. Results live in the database, so the node that asks need
//! not be the node Daraja calls back. The payment's own result stays a hint
//! ([`MpesaResults::hint`]): it never changes a status.
//!
//! # No re-submit
//!
//! Daraja does not document that it refuses a re-used `OriginatorConversationID`, so
//! [`PayoutProvider::resubmit_is_idempotent`] is false: the engine never sends a payout
//! again after "not found" (it may be held unseen); it waits for a definite answer or for
//! staff. A duplicate answer (409) to a submit is still read as "already held".
//!
//! # Settings the operator supplies
//!
//! `security_credential` is the initiator's password already RSA-encrypted with
//! M-Pesa's public certificate and base64-encoded (Daraja's portal generates it); the
//! adapter sends it as given and never sees the password. `result_url` and
//! `queue_timeout_url` are the bases of the host's callback routes, `callback_secret`
//! the secret of their per-payout tokens.

mod results;

pub use results::{DEFAULT_NOT_FOUND_CODES, Expected, MpesaResult, MpesaResults, Recorded};

use crate::ProviderError;
use crate::callback::CallbackKey;
use crate::http::{base_url, client};
use crate::token::{TokenCache, clip, read_token_answer, transport};
use async_trait::async_trait;
use results::QueryOutcome;
use serde::Deserialize;
use stablecoin_core::ports::{Clock, Payout, PayoutError, PayoutProvider, PayoutStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The production API base.
pub const LIVE_BASE_URL: &str = "https://api.safaricom.co.ke";
/// The sandbox API base.
pub const SANDBOX_BASE_URL: &str = "https://sandbox.safaricom.co.ke";

const PROVIDER: &str = "M-Pesa";

/// The settings of an [`MpesaB2c`]. `Debug` hides the consumer secret and the security
/// credential.
#[derive(Clone)]
pub struct MpesaConfig {
    /// API base: [`LIVE_BASE_URL`], [`SANDBOX_BASE_URL`], or a fake's in tests.
    pub base_url: String,
    /// The Daraja app's consumer key.
    pub consumer_key: String,
    /// The Daraja app's consumer secret.
    pub consumer_secret: String,
    /// The B2C initiator's user name (`InitiatorName`, `Initiator`).
    pub initiator_name: String,
    /// The initiator's password RSA-encrypted with M-Pesa's certificate, base64: the
    /// operator supplies it encrypted; it is sent as given.
    pub security_credential: String,
    /// The B2C shortcode paying (`PartyA`).
    pub shortcode: String,
    /// `BusinessPayment` (the default), `SalaryPayment` or `PromotionPayment`.
    pub command_id: String,
    /// The base of the host's result route (feeding [`MpesaResults::record`]); each
    /// request's `ResultURL` is `{result_url}/{payout id}/{token}` ([`CallbackKey`]).
    pub result_url: String,
    /// The base of the host's queue-timeout route (outcome unknown: the adapter
    /// queries); per payout, as `result_url`.
    pub queue_timeout_url: String,
    /// The server secret each payout's callback token is derived under (at least 32
    /// characters; the host verifies with the same).
    pub callback_secret: String,
    /// `Remarks` of each request (Daraja requires a non-empty one).
    pub remarks: String,
    /// `Occasion` of each request.
    pub occasion: String,
    /// Each request's time limit; a call that outlasts it is `Unknown`.
    pub timeout: Duration,
    /// How long `status` waits for its query's result before answering `Pending`.
    pub result_wait: Duration,
}

impl Default for MpesaConfig {
    /// The sandbox, `BusinessPayment`, a 10 s timeout and a 2 s result wait; every
    /// credential, the shortcode and the URLs empty (to be set).
    fn default() -> Self {
        MpesaConfig {
            base_url: SANDBOX_BASE_URL.into(),
            consumer_key: String::new(),
            consumer_secret: String::new(),
            initiator_name: String::new(),
            security_credential: String::new(),
            shortcode: String::new(),
            command_id: "BusinessPayment".into(),
            result_url: String::new(),
            queue_timeout_url: String::new(),
            callback_secret: String::new(),
            remarks: "Withdrawal".into(),
            occasion: String::new(),
            timeout: Duration::from_secs(10),
            result_wait: Duration::from_secs(2),
        }
    }
}

impl std::fmt::Debug for MpesaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpesaConfig")
            .field("base_url", &self.base_url)
            .field("consumer_key", &self.consumer_key)
            .field("consumer_secret", &"<redacted>")
            .field("initiator_name", &self.initiator_name)
            .field("security_credential", &"<redacted>")
            .field("shortcode", &self.shortcode)
            .field("command_id", &self.command_id)
            .field("result_url", &self.result_url)
            .field("queue_timeout_url", &self.queue_timeout_url)
            .field("callback_secret", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("result_wait", &self.result_wait)
            .finish_non_exhaustive()
    }
}

/// Pays M-Pesa wallets through Daraja B2C.
#[derive(Debug)]
pub struct MpesaB2c {
    config: MpesaConfig,
    base: String,
    http: reqwest::Client,
    token: TokenCache,
    results: Arc<MpesaResults>,
    callbacks: CallbackKey,
}

/// Daraja's synchronous answer to a request.
#[derive(Deserialize)]
struct Ack {
    #[serde(rename = "ConversationID", default)]
    conversation_id: String,
    #[serde(rename = "ResponseCode", default)]
    response_code: Option<serde_json::Value>,
    #[serde(rename = "ResponseDescription", default)]
    response_description: String,
}

/// Daraja's error body (`{requestId, errorCode, errorMessage}`).
#[derive(Deserialize, Default)]
struct ApiError {
    #[serde(rename = "errorCode", default)]
    code: String,
    #[serde(rename = "errorMessage", default)]
    message: String,
}

/// How a request ended, before the caller maps it.
enum Answer {
    Ok(Ack),
    Error(u16, ApiError),
}

impl MpesaB2c {
    /// An adapter with these settings, recording into (and reading results from)
    /// `results`, the store the host's `ResultURL` route records into. Refuses an empty
    /// credential, shortcode or command, or a base or callback URL that is not HTTP(S).
    pub fn new(config: MpesaConfig, results: Arc<MpesaResults>) -> Result<Self, ProviderError> {
        let required = [
            ("consumer_key", &config.consumer_key),
            ("consumer_secret", &config.consumer_secret),
            ("initiator_name", &config.initiator_name),
            ("security_credential", &config.security_credential),
            ("shortcode", &config.shortcode),
            ("command_id", &config.command_id),
        ];
        if let Some((name, _)) = required.iter().find(|(_, v)| v.trim().is_empty()) {
            return Err(ProviderError::Config(format!("M-Pesa needs {name}")));
        }
        base_url(&config.result_url)?;
        base_url(&config.queue_timeout_url)?;
        let callbacks = CallbackKey::new(&config.callback_secret)?;
        let base = base_url(&config.base_url)?;
        let http = client(config.timeout)?;
        Ok(MpesaB2c {
            config,
            base,
            http,
            token: TokenCache::new(),
            results,
            callbacks,
        })
    }

    /// Measures the access token's lifetime on `clock` instead of the system clock, so a
    /// test can move past the renewal point instead of sleeping until it.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.token.set_clock(clock);
        self
    }

    /// The store the host's `ResultURL` route records into.
    pub fn results(&self) -> &Arc<MpesaResults> {
        &self.results
    }

    /// Parses a body Daraja POSTed to a `ResultURL` (a B2C result or a status query's
    /// result), without recording it ([`MpesaResults::record`] records it).
    pub fn parse_result(body: &[u8]) -> Result<MpesaResult, ProviderError> {
        results::parse(body)
    }

    async fn fetch_token(&self) -> Result<(String, Duration), PayoutError> {
        let url = format!(
            "{}/oauth/v1/generate?grant_type=client_credentials",
            self.base
        );
        let res = self
            .http
            .get(url)
            .basic_auth(
                &self.config.consumer_key,
                Some(&self.config.consumer_secret),
            )
            .send()
            .await
            .map_err(|e| transport(PROVIDER, &e))?;
        read_token_answer(PROVIDER, res).await
    }

    /// POSTs `body` to `path` with the cached token; on 401/403 fetches a new token and
    /// tries once more. Transport failures are `Unknown`.
    async fn post(&self, path: &str, body: &serde_json::Value) -> Result<Answer, PayoutError> {
        let url = format!("{}{path}", self.base);
        let mut refreshed = false;
        loop {
            let token = self.token.get(|| self.fetch_token()).await?;
            let res = self
                .http
                .post(&url)
                .bearer_auth(&token)
                .json(body)
                .send()
                .await
                .map_err(|e| transport(PROVIDER, &e))?;
            let status = res.status().as_u16();
            if (status == 401 || status == 403) && !refreshed {
                self.token.invalidate(&token).await;
                refreshed = true;
                continue;
            }
            if res.status().is_success() {
                let ack = res.json::<Ack>().await.map_err(|_| {
                    PayoutError::Unknown(format!("M-Pesa: unreadable answer to {path}"))
                })?;
                return Ok(Answer::Ok(ack));
            }
            let err = res.json::<ApiError>().await.unwrap_or_default();
            return Ok(Answer::Error(status, err));
        }
    }

    fn response_code(ack: &Ack) -> String {
        match &ack.response_code {
            Some(serde_json::Value::String(s)) => s.trim().to_string(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => String::new(),
        }
    }

    /// The whole-shilling amount of `payout`, or why it cannot be paid by B2C.
    fn amount(payout: &Payout) -> Result<u64, PayoutError> {
        if payout.currency != "KES" {
            return Err(PayoutError::Rejected(format!(
                "M-Pesa B2C pays KES only, not {}",
                clip(&payout.currency, 8)
            )));
        }
        if !payout.amount.is_integer()
            || !payout.amount.is_sign_positive()
            || payout.amount.is_zero()
        {
            return Err(PayoutError::Rejected(format!(
                "M-Pesa B2C pays whole shillings: {} KES is not a positive whole amount",
                payout.amount
            )));
        }
        // The decimal's own text, so no float is ever involved.
        payout.amount.normalize().to_string().parse().map_err(|_| {
            PayoutError::Rejected(format!("M-Pesa B2C: {} KES is too large", payout.amount))
        })
    }

    /// Waits up to `result_wait` for a status query's result for `payout_id` (it may
    /// arrive at any node: read from the database).
    async fn wait_outcome(&self, payout_id: &str) {
        let until = Instant::now() + self.config.result_wait;
        while self.results.outcome(payout_id).await.is_none() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The payout's own `(ResultURL, QueueTimeOutURL)`.
    fn callback_urls(&self, payout_id: &str) -> Result<(String, String), PayoutError> {
        let url = |base: &str| {
            self.callbacks
                .url(base, payout_id)
                .map_err(|e| PayoutError::Rejected(format!("M-Pesa: {e}")))
        };
        Ok((
            url(&self.config.result_url)?,
            url(&self.config.queue_timeout_url)?,
        ))
    }

    /// Records what Daraja acknowledged; a storage failure makes the call `Unknown`
    /// (the acknowledgement is then re-learnt by the next status query).
    fn stored(r: Result<(), ProviderError>) -> Result<(), PayoutError> {
        r.map_err(|e| PayoutError::Unknown(format!("M-Pesa: {e}")))
    }
}

/// Whether an error answer says the `OriginatorConversationID` is already held.
fn is_duplicate(status: u16, err: &ApiError) -> bool {
    let msg = err.message.to_ascii_lowercase();
    status == 409 || (msg.contains("duplicate") && msg.contains("originatorconversationid"))
}

#[async_trait]
impl PayoutProvider for MpesaB2c {
    /// `mpesa:<shortcode>`: the paying account; another shortcode (or app) cannot
    /// answer for its payouts.
    fn identity(&self) -> String {
        format!("mpesa:{}", self.config.shortcode)
    }

    /// No: Daraja does not document that a re-used `OriginatorConversationID` is
    /// refused, so a payout it may hold is never sent again (see the module docs).
    fn resubmit_is_idempotent(&self) -> bool {
        false
    }

    /// Whole shillings: B2C's `Amount` has no cents (see [`MpesaB2c::submit`]).
    fn payout_decimals(&self, _currency: &stablecoin_core::domain::money::Currency) -> u32 {
        0
    }

    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        let amount = Self::amount(payout)?;
        let party_b = payout.phone.as_str().trim_start_matches('+');
        let (result_url, timeout_url) = self.callback_urls(&payout.id)?;
        let body = serde_json::json!({
            "OriginatorConversationID": payout.id,
            "InitiatorName": self.config.initiator_name,
            "SecurityCredential": self.config.security_credential,
            "CommandID": self.config.command_id,
            "Amount": amount,
            "PartyA": self.config.shortcode,
            "PartyB": party_b,
            "Remarks": self.config.remarks,
            "QueueTimeOutURL": timeout_url,
            "ResultURL": result_url,
            "Occasion": self.config.occasion,
        });
        match self.post("/mpesa/b2c/v3/paymentrequest", &body).await? {
            Answer::Ok(ack) => {
                let code = Self::response_code(&ack);
                if code == "0" {
                    Self::stored(
                        self.results
                            .submitted(&payout.id, Some(&ack.conversation_id))
                            .await,
                    )
                } else {
                    Err(PayoutError::Rejected(format!(
                        "M-Pesa: ResponseCode {} {}",
                        clip(&code, 16),
                        clip(&ack.response_description, 80)
                    )))
                }
            }
            Answer::Error(status, err) if is_duplicate(status, &err) => {
                Self::stored(self.results.submitted(&payout.id, None).await)
            }
            // A documented validation refusal (`400.002.02 Bad Request - Invalid
            // PartyB`, ...): Daraja took nothing.
            Answer::Error(400, err) => Err(PayoutError::Rejected(format!(
                "M-Pesa: HTTP 400 {} {}",
                clip(&err.code, 16),
                clip(&err.message, 80)
            ))),
            Answer::Error(status, err) => Err(PayoutError::Unknown(format!(
                "M-Pesa: HTTP {status} {}",
                clip(&err.code, 16)
            ))),
        }
    }

    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        match self.results.outcome(payout_id).await {
            Some(QueryOutcome::Completed(reference)) => {
                return Ok(PayoutStatus::Delivered { reference });
            }
            Some(QueryOutcome::Failed(reason)) => return Ok(PayoutStatus::Failed { reason }),
            _ => {}
        }
        let (result_url, timeout_url) = self.callback_urls(payout_id)?;
        let body = serde_json::json!({
            "Initiator": self.config.initiator_name,
            "SecurityCredential": self.config.security_credential,
            "CommandID": "TransactionStatusQuery",
            "OriginatorConversationID": payout_id,
            "PartyA": self.config.shortcode,
            "IdentifierType": "4",
            "ResultURL": result_url,
            "QueueTimeOutURL": timeout_url,
            "Remarks": self.config.remarks,
            "Occasion": self.config.occasion,
        });
        match self
            .post("/mpesa/transactionstatus/v1/query", &body)
            .await?
        {
            Answer::Ok(ack)
                if Self::response_code(&ack) == "0" && !ack.conversation_id.is_empty() =>
            {
                Self::stored(
                    self.results
                        .query_sent(payout_id, &ack.conversation_id)
                        .await,
                )?;
            }
            Answer::Ok(ack) => {
                return Err(PayoutError::Unknown(format!(
                    "M-Pesa: status query not accepted: {}",
                    clip(&ack.response_description, 80)
                )));
            }
            Answer::Error(status, err) => {
                return Err(PayoutError::Unknown(format!(
                    "M-Pesa: status query: HTTP {status} {}",
                    clip(&err.code, 16)
                )));
            }
        }
        self.wait_outcome(payout_id).await;
        match self.results.take_transient(payout_id).await {
            Some(QueryOutcome::Completed(reference)) => Ok(PayoutStatus::Delivered { reference }),
            Some(QueryOutcome::Failed(reason)) => Ok(PayoutStatus::Failed { reason }),
            Some(QueryOutcome::NotFound) => Ok(PayoutStatus::NotFound),
            Some(QueryOutcome::QueryFailed(why)) => Err(PayoutError::Unknown(format!(
                "M-Pesa: status query failed: {}",
                clip(&why, 100)
            ))),
            Some(QueryOutcome::Pending) | None => Ok(PayoutStatus::Pending),
        }
    }
}

#[cfg(test)]
mod tests;
