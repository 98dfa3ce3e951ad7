//! MTN MoMo Disbursement: a [`PayoutProvider`] over the MoMo Open API's `transfer`,
//! with the parser of its callbacks.
//!
//! - Token: `POST /disbursement/token/` with Basic `apiUser:apiKey` and the
//!   `Ocp-Apim-Subscription-Key`, kept until shortly before its `expires_in` and fetched
//!   again when MTN answers 401.
//! - Submit: `POST /disbursement/v1_0/transfer`. The `X-Reference-Id` is the idempotency
//!   key and the status id: a UUID derived from our payout id ([`reference_id`]: the
//!   first 16 bytes of SHA-256 of the id, shaped as a version-4 UUID), so a re-submit
//!   reuses it and MTN answers 409 (already held), which is `Ok`. `202 Accepted` means
//!   received, not paid. The body's `externalId` is our payout id; the amount is the
//!   payout's decimal text.
//! - Status: `GET /disbursement/v1_0/transfer/{referenceId}`: `PENDING` is `Pending`,
//!   `SUCCESSFUL` is `Delivered{reference: financialTransactionId}`, `FAILED` is
//!   `Failed{reason}`, 404 is `NotFound`. This GET is the truth.
//! - Callback: MTN PUTs (or POSTs) the same body as the GET to `X-Callback-Url`, once.
//!   It is unsigned, so each transfer's `X-Callback-Url` is its own:
//!   `{callback_url}/{payout id}/{token}` ([`CallbackKey`]), and the host refuses a body
//!   at a wrong token, or one naming another payout, amount, currency or payee
//!   ([`MomoTransfer::mismatch`]). Even then it is only a hint: the GET decides.

use crate::ProviderError;
use crate::callback::CallbackKey;
use crate::http::{base_url, client};
use crate::token::{TokenCache, clip, read_token_answer, transport};
use async_trait::async_trait;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use stablecoin_core::ports::{Clock, Payout, PayoutError, PayoutProvider, PayoutStatus};
use std::sync::Arc;
use std::time::Duration;

/// The sandbox API base.
pub const SANDBOX_BASE_URL: &str = "https://sandbox.momodeveloper.mtn.com";

const PROVIDER: &str = "MTN MoMo";

/// The settings of an [`MtnMomoDisbursement`]. `Debug` hides the API key and the
/// subscription key.
#[derive(Clone)]
pub struct MtnMomoConfig {
    /// API base: [`SANDBOX_BASE_URL`], the production base MTN gives, or a fake's.
    pub base_url: String,
    /// The API user (a UUID).
    pub api_user: String,
    /// The API user's key.
    pub api_key: String,
    /// The Disbursement product's subscription key (`Ocp-Apim-Subscription-Key`).
    pub subscription_key: String,
    /// `X-Target-Environment`: `sandbox`, `mtnuganda`, `mtnghana`, ...
    pub target_environment: String,
    /// The base of the host's callback route, if MTN should call back (a hint only);
    /// each transfer's `X-Callback-Url` is `{callback_url}/{payout id}/{token}`.
    pub callback_url: Option<String>,
    /// The server secret of the callback tokens (at least 32 characters); required
    /// with `callback_url`.
    pub callback_secret: Option<String>,
    /// `payerMessage` of each transfer.
    pub payer_message: String,
    /// `payeeNote` of each transfer.
    pub payee_note: String,
    /// Each request's time limit; a call that outlasts it is `Unknown`.
    pub timeout: Duration,
}

impl std::fmt::Debug for MtnMomoConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MtnMomoConfig")
            .field("base_url", &self.base_url)
            .field("api_user", &self.api_user)
            .field("api_key", &"<redacted>")
            .field("subscription_key", &"<redacted>")
            .field("target_environment", &self.target_environment)
            .field("callback_url", &self.callback_url)
            .field("callback_secret", &"<redacted>")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Pays MTN Mobile Money wallets through the Disbursement API.
#[derive(Debug)]
pub struct MtnMomoDisbursement {
    config: MtnMomoConfig,
    base: String,
    http: reqwest::Client,
    token: TokenCache,
    callbacks: Option<CallbackKey>,
}

/// The `X-Reference-Id` of the payout `payout_id`: the first 16 bytes of
/// SHA-256(`payout_id`), with the version (4) and variant bits set, as a UUID. The same
/// id always gives the same reference, so a re-submit is deduplicated by MTN.
pub fn reference_id(payout_id: &str) -> String {
    let d = Sha256::digest(payout_id.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A transfer as MTN describes it: the status GET's answer and the callback's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MomoTransfer {
    /// `PENDING`, `SUCCESSFUL` or `FAILED` (other words are kept as given).
    pub status: String,
    /// `financialTransactionId`, MTN's reference once paid.
    pub financial_transaction_id: Option<String>,
    /// `externalId`: our payout id.
    pub external_id: Option<String>,
    /// `amount`, as MTN wrote it.
    pub amount: Option<String>,
    /// `currency`.
    pub currency: Option<String>,
    /// `payee.partyId`.
    pub payee: Option<String>,
    /// Why it failed: `reason.code` (and `reason.message`), or `reason` as text.
    pub reason: Option<String>,
}

impl MomoTransfer {
    /// Why this transfer (a callback's body) cannot be the payout `payout_id` of
    /// `amount` `currency` to `party_id` (digits, no `+`), if it cannot: another
    /// `externalId`, amount, currency or payee.
    pub fn mismatch(
        &self,
        payout_id: &str,
        amount: rust_decimal::Decimal,
        currency: &str,
        party_id: &str,
    ) -> Option<String> {
        if self.external_id.as_deref() != Some(payout_id) {
            return Some("externalId is not this payout".into());
        }
        let same_amount = self
            .amount
            .as_deref()
            .and_then(|a| a.trim().parse::<rust_decimal::Decimal>().ok())
            .is_some_and(|a| a.normalize() == amount.normalize());
        if !same_amount {
            return Some("amount is not the payout's".into());
        }
        if self.currency.as_deref() != Some(currency) {
            return Some("currency is not the payout's".into());
        }
        if self.payee.as_deref() != Some(party_id) {
            return Some("payee is not the payout's".into());
        }
        None
    }

    /// The [`PayoutStatus`] this describes. `SUCCESSFUL` without a
    /// `financialTransactionId` cannot be evidenced and stays `Pending`.
    pub fn payout_status(&self) -> PayoutStatus {
        match self.status.to_ascii_uppercase().as_str() {
            "SUCCESSFUL" => match self
                .financial_transaction_id
                .as_deref()
                .filter(|s| !s.is_empty())
            {
                Some(r) => PayoutStatus::Delivered {
                    reference: r.to_string(),
                },
                None => PayoutStatus::Pending,
            },
            "FAILED" => PayoutStatus::Failed {
                reason: format!("MTN MoMo: {}", self.reason.as_deref().unwrap_or("FAILED")),
            },
            _ => PayoutStatus::Pending,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TransferBody {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    financial_transaction_id: Option<String>,
    #[serde(default)]
    external_id: Option<String>,
    #[serde(default)]
    amount: Option<String>,
    #[serde(default)]
    currency: Option<String>,
    #[serde(default)]
    reason: Option<serde_json::Value>,
    #[serde(default)]
    payee: Option<serde_json::Value>,
}

fn parse_transfer(body: &[u8]) -> Result<MomoTransfer, ProviderError> {
    let t: TransferBody = serde_json::from_slice(body)
        .map_err(|_| ProviderError::BadCallback("MTN MoMo: not a transfer body".into()))?;
    let Some(status) = t.status.filter(|s| !s.is_empty()) else {
        return Err(ProviderError::BadCallback(
            "MTN MoMo: a transfer body needs a status".into(),
        ));
    };
    let reason = match t.reason {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Object(o)) => {
            let field = |k: &str| o.get(k).and_then(|v| v.as_str()).unwrap_or("");
            let (code, message) = (field("code"), field("message"));
            Some(match (code.is_empty(), message.is_empty()) {
                (false, false) => format!("{code}: {}", clip(message, 80)),
                (false, true) => code.to_string(),
                _ => clip(message, 80),
            })
            .filter(|s| !s.is_empty())
        }
        _ => None,
    };
    Ok(MomoTransfer {
        status,
        financial_transaction_id: t.financial_transaction_id,
        external_id: t.external_id,
        amount: t.amount,
        currency: t.currency,
        payee: t
            .payee
            .as_ref()
            .and_then(|p| p.get("partyId"))
            .and_then(|v| v.as_str())
            .map(str::to_string),
        reason,
    })
}

/// How a request ended, before the caller maps it.
struct Reply {
    status: u16,
    body: Vec<u8>,
}

impl MtnMomoDisbursement {
    /// An adapter with these settings; refuses an empty credential or target
    /// environment, or a base or callback URL that is not HTTP(S).
    pub fn new(config: MtnMomoConfig) -> Result<Self, ProviderError> {
        let required = [
            ("api_user", &config.api_user),
            ("api_key", &config.api_key),
            ("subscription_key", &config.subscription_key),
            ("target_environment", &config.target_environment),
        ];
        if let Some((name, _)) = required.iter().find(|(_, v)| v.trim().is_empty()) {
            return Err(ProviderError::Config(format!("MTN MoMo needs {name}")));
        }
        let callbacks = match &config.callback_url {
            Some(cb) => {
                base_url(cb)?;
                let secret = config.callback_secret.as_deref().ok_or_else(|| {
                    ProviderError::Config("MTN MoMo needs callback_secret with callback_url".into())
                })?;
                Some(CallbackKey::new(secret)?)
            }
            None => None,
        };
        let base = base_url(&config.base_url)?;
        let http = client(config.timeout)?;
        Ok(MtnMomoDisbursement {
            config,
            base,
            http,
            token: TokenCache::new(),
            callbacks,
        })
    }

    /// Measures the access token's lifetime on `clock` instead of the system clock, so a
    /// test can move past the renewal point instead of sleeping until it.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.token.set_clock(clock);
        self
    }

    /// Parses a callback body (PUT or POST to `X-Callback-Url`: the status GET's
    /// shape). A hint only: the host checks it against the payout
    /// ([`MomoTransfer::mismatch`]) and the engine asks [`PayoutProvider::status`].
    pub fn parse_callback(body: &[u8]) -> Result<MomoTransfer, ProviderError> {
        parse_transfer(body)
    }

    async fn fetch_token(&self) -> Result<(String, Duration), PayoutError> {
        let res = self
            .http
            .post(format!("{}/disbursement/token/", self.base))
            .basic_auth(&self.config.api_user, Some(&self.config.api_key))
            .header("Ocp-Apim-Subscription-Key", &self.config.subscription_key)
            .header("Content-Length", "0")
            .send()
            .await
            .map_err(|e| transport(PROVIDER, &e))?;
        read_token_answer(PROVIDER, res).await
    }

    /// Sends what `build` makes of a bearer-authorized request; on 401/403 fetches a new
    /// token and tries once more. Transport failures are `Unknown`.
    async fn send(
        &self,
        build: impl Fn(&str) -> reqwest::RequestBuilder,
    ) -> Result<Reply, PayoutError> {
        let mut refreshed = false;
        loop {
            let token = self.token.get(|| self.fetch_token()).await?;
            let res = build(&token)
                .header("Ocp-Apim-Subscription-Key", &self.config.subscription_key)
                .header("X-Target-Environment", &self.config.target_environment)
                .send()
                .await
                .map_err(|e| transport(PROVIDER, &e))?;
            let status = res.status().as_u16();
            if (status == 401 || status == 403) && !refreshed {
                self.token.invalidate(&token).await;
                refreshed = true;
                continue;
            }
            let body = res
                .bytes()
                .await
                .map_err(|e| transport(PROVIDER, &e))?
                .to_vec();
            return Ok(Reply { status, body });
        }
    }
}

/// The `code` of MTN's error body (`{code, message}`), if any.
fn error_code(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("code").and_then(|c| c.as_str()).map(|c| clip(c, 40)))
        .unwrap_or_default()
}

#[async_trait]
impl PayoutProvider for MtnMomoDisbursement {
    /// `mtn_momo:<api user>@<target environment>`: the API user and environment whose
    /// transfers the status GET can see.
    fn identity(&self) -> String {
        format!(
            "mtn_momo:{}@{}",
            self.config.api_user, self.config.target_environment
        )
    }

    /// Yes: MTN documents `X-Reference-Id` as the idempotency key of a transfer (a
    /// second POST with it answers 409 and pays nothing).
    fn resubmit_is_idempotent(&self) -> bool {
        true
    }

    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        if !payout.amount.is_sign_positive() || payout.amount.is_zero() {
            return Err(PayoutError::Rejected(format!(
                "MTN MoMo: {} is not a positive amount",
                payout.amount
            )));
        }
        let body = serde_json::json!({
            "amount": payout.amount.normalize().to_string(),
            "currency": payout.currency,
            "externalId": payout.id,
            "payee": {
                "partyIdType": "MSISDN",
                "partyId": payout.phone.as_str().trim_start_matches('+'),
            },
            "payerMessage": self.config.payer_message,
            "payeeNote": self.config.payee_note,
        });
        let url = format!("{}/disbursement/v1_0/transfer", self.base);
        let reference = reference_id(&payout.id);
        let callback = match (&self.callbacks, &self.config.callback_url) {
            (Some(k), Some(base)) => Some(
                k.url(base, &payout.id)
                    .map_err(|e| PayoutError::Rejected(format!("MTN MoMo: {e}")))?,
            ),
            _ => None,
        };
        let reply = self
            .send(|token| {
                let mut req = self
                    .http
                    .post(&url)
                    .bearer_auth(token)
                    .header("X-Reference-Id", &reference)
                    .json(&body);
                if let Some(cb) = &callback {
                    req = req.header("X-Callback-Url", cb);
                }
                req
            })
            .await?;
        match reply.status {
            // Accepted; or already held under this reference (a re-submit).
            202 | 409 => Ok(()),
            // A validation refusal (`{code, message}`): MTN created nothing.
            400 => Err(PayoutError::Rejected(format!(
                "MTN MoMo: HTTP 400 {}",
                error_code(&reply.body)
            ))),
            s => Err(PayoutError::Unknown(format!(
                "MTN MoMo: HTTP {s} {}",
                error_code(&reply.body)
            ))),
        }
    }

    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        let url = format!(
            "{}/disbursement/v1_0/transfer/{}",
            self.base,
            reference_id(payout_id)
        );
        let reply = self
            .send(|token| self.http.get(&url).bearer_auth(token))
            .await?;
        match reply.status {
            200 => {
                let t = parse_transfer(&reply.body).map_err(|_| {
                    PayoutError::Unknown("MTN MoMo: unreadable transfer status".into())
                })?;
                if t.external_id.as_deref().is_some_and(|e| e != payout_id) {
                    return Err(PayoutError::Unknown(
                        "MTN MoMo: the transfer's externalId is not this payout's".into(),
                    ));
                }
                Ok(t.payout_status())
            }
            404 => Ok(PayoutStatus::NotFound),
            s => Err(PayoutError::Unknown(format!(
                "MTN MoMo: status: HTTP {s} {}",
                error_code(&reply.body)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_is_a_stable_v4_shaped_uuid() {
        let a = reference_id("wd_1");
        assert_eq!(a, reference_id("wd_1"));
        assert_ne!(a, reference_id("wd_2"));
        assert_eq!(a.len(), 36);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn callbacks_parse_and_map() {
        let ok = br#"{"financialTransactionId":"363440463","externalId":"wd_1","amount":"100",
          "currency":"EUR","payee":{"partyIdType":"MSISDN","partyId":"46733123453"},
          "payerMessage":"m","payeeNote":"n","status":"SUCCESSFUL"}"#;
        let t = MtnMomoDisbursement::parse_callback(ok).unwrap();
        assert_eq!(t.external_id.as_deref(), Some("wd_1"));
        assert_eq!(
            t.payout_status(),
            PayoutStatus::Delivered {
                reference: "363440463".into()
            }
        );
        let failed = br#"{"externalId":"wd_2","status":"FAILED",
          "reason":{"code":"PAYEE_NOT_FOUND","message":"Payee does not exist"}}"#;
        assert!(matches!(
            MtnMomoDisbursement::parse_callback(failed).unwrap().payout_status(),
            PayoutStatus::Failed { reason } if reason.contains("PAYEE_NOT_FOUND")
        ));
        let pending = br#"{"externalId":"wd_3","status":"PENDING"}"#;
        assert_eq!(
            MtnMomoDisbursement::parse_callback(pending)
                .unwrap()
                .payout_status(),
            PayoutStatus::Pending
        );
        let no_ref = br#"{"status":"SUCCESSFUL"}"#;
        assert_eq!(
            MtnMomoDisbursement::parse_callback(no_ref)
                .unwrap()
                .payout_status(),
            PayoutStatus::Pending
        );
        for bad in [&b""[..], b"{}", br#"{"status":""}"#, b"[1]"] {
            assert_eq!(
                MtnMomoDisbursement::parse_callback(bad).unwrap_err().code(),
                "BAD_CALLBACK"
            );
        }
    }

    #[test]
    fn keys_are_not_in_debug() {
        let c = MtnMomoConfig {
            base_url: SANDBOX_BASE_URL.into(),
            api_user: "user".into(),
            api_key: "api_key_secret".into(),
            subscription_key: "sub_key_secret".into(),
            target_environment: "sandbox".into(),
            callback_url: None,
            callback_secret: None,
            payer_message: "m".into(),
            payee_note: "n".into(),
            timeout: Duration::from_secs(5),
        };
        let a = MtnMomoDisbursement::new(c.clone()).unwrap();
        let shown = format!("{c:?} {a:?}");
        assert!(!shown.contains("api_key_secret") && !shown.contains("sub_key_secret"));
        let bad = MtnMomoConfig {
            subscription_key: String::new(),
            ..c
        };
        assert_eq!(
            MtnMomoDisbursement::new(bad).unwrap_err().code(),
            "PROVIDER_CONFIG"
        );
    }
}
