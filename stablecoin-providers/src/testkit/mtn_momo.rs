//! A fake of MTN MoMo's Disbursement API: token, transfer, transfer status, callbacks.

use super::{Behaviour, Recorder, Server, basic_is, bearer, hang, send_json_later};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The sandbox's failing payee numbers (PROVIDERS.md; unverified) and their reasons.
const SANDBOX_FAILURES: &[(&str, &str, &str)] = &[
    ("46733123450", "PAYEE_FAILED", "Payee failed"),
    ("46733123455", "NOT_ENOUGH_FUNDS", "Not enough funds"),
    ("46733123457", "PAYEE_NOT_FOUND", "Payee does not exist"),
    (
        "46733123462",
        "INTERNAL_PROCESSING_ERROR",
        "Internal processing error",
    ),
];

/// MTN MoMo Disbursement as the adapter sees it:
///
/// - `POST /disbursement/token/`: 401 without the right Basic `apiUser:apiKey` and
///   subscription key, else `{access_token, token_type, expires_in}`.
/// - `POST /disbursement/v1_0/transfer`: 401 for a wrong subscription key or token;
///   400 for a bad body, a reference id that is not a UUID, or a currency the
///   environment refuses (`sandbox`: EUR only); 409 `RESOURCE_ALREADY_EXIST` for a
///   reference it holds (nothing paid again); else 202 and the transfer is processed:
///   the sandbox failure numbers fail, others are paid (or held pending, see
///   [`FakeMtnMomo::set_hold`]); the result is sent to `X-Callback-Url` by PUT.
/// - `GET /disbursement/v1_0/transfer/{referenceId}`: the transfer, or 404.
///
/// [`Behaviour`] applies to the transfer routes (never to the token's).
#[derive(Debug)]
pub struct FakeMtnMomo {
    server: Server,
    shared: Arc<Recorder>,
    state: Arc<MomoState>,
}

#[derive(Debug)]
struct MomoState {
    api_user: String,
    api_key: String,
    subscription_key: String,
    shared: Arc<Recorder>,
    m: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    tokens: HashMap<String, Instant>,
    token_ttl: u64,
    token_requests: usize,
    /// By reference id: the body as the GET answers it, and the callback URL.
    transfers: HashMap<String, (Value, Option<String>)>,
    paid: HashMap<String, usize>,
    failures: HashMap<String, (String, String)>,
    hold: bool,
    lose_answers: bool,
    callbacks: (usize, Duration),
    /// Callbacks (results) sent and answered so far, of every payment.
    callbacks_answered: Arc<std::sync::atomic::AtomicUsize>,
    /// Transfer requests that passed authentication.
    transfer_requests: usize,
    next: u64,
}

impl MomoState {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn momo_error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"code": code, "message": message})),
    )
        .into_response()
}

impl FakeMtnMomo {
    /// Starts the fake (environment `sandbox`); it accepts `api_user:api_key` with
    /// `subscription_key` only.
    pub async fn start(
        api_user: &str,
        api_key: &str,
        subscription_key: &str,
    ) -> std::io::Result<Self> {
        let shared = Recorder::new();
        let failures = SANDBOX_FAILURES
            .iter()
            .map(|(n, c, m)| (n.to_string(), (c.to_string(), m.to_string())))
            .collect();
        let state = Arc::new(MomoState {
            api_user: api_user.into(),
            api_key: api_key.into(),
            subscription_key: subscription_key.into(),
            shared: shared.clone(),
            m: Mutex::new(Inner {
                tokens: HashMap::new(),
                token_ttl: 3_600,
                token_requests: 0,
                transfers: HashMap::new(),
                paid: HashMap::new(),
                failures,
                hold: false,
                lose_answers: false,
                callbacks: (1, Duration::ZERO),
                callbacks_answered: Arc::default(),
                transfer_requests: 0,
                next: 0,
            }),
        });
        let router = axum::Router::new()
            .route("/disbursement/token/", post(token))
            .route("/disbursement/v1_0/transfer", post(transfer))
            .route("/disbursement/v1_0/transfer/{reference}", get(status))
            .with_state(state.clone());
        Ok(FakeMtnMomo {
            server: Server::start(router).await?,
            shared,
            state,
        })
    }

    /// The base URL to configure the adapter with.
    pub fn base_url(&self) -> &str {
        &self.server.base_url
    }

    /// The `expires_in` (seconds) of the tokens issued from now on.
    pub fn set_token_ttl(&self, secs: u64) {
        self.state.lock().token_ttl = secs;
    }

    /// Token requests received (granted or not).
    pub fn token_requests(&self) -> usize {
        self.state.lock().token_requests
    }

    /// Makes every token issued so far invalid (the next call with one gets 401).
    pub fn revoke_tokens(&self) {
        self.state.lock().tokens.clear();
    }

    /// While on, new transfers stay `PENDING` until [`FakeMtnMomo::complete_held`].
    pub fn set_hold(&self, hold: bool) {
        self.state.lock().hold = hold;
    }

    /// Pays the pending transfers and sends their callbacks.
    pub fn complete_held(&self) {
        let mut g = self.state.lock();
        let held: Vec<String> = g
            .transfers
            .iter()
            .filter(|(_, (t, _))| t["status"] == "PENDING")
            .map(|(r, _)| r.clone())
            .collect();
        for r in held {
            g.next += 1;
            let ftid = format!("{}", 363_440_000 + g.next);
            let external = match g.transfers.get_mut(&r) {
                Some((t, _)) => {
                    t["status"] = json!("SUCCESSFUL");
                    t["financialTransactionId"] = json!(ftid);
                    t["externalId"].as_str().unwrap_or("").to_string()
                }
                None => continue,
            };
            *g.paid.entry(external).or_default() += 1;
            send_callback(&g, &r);
        }
    }

    /// While on, a transfer is processed and then never answered (the answer is lost:
    /// the client times out).
    pub fn set_lose_answers(&self, lose: bool) {
        self.state.lock().lose_answers = lose;
    }

    /// Each final transfer's callback is sent `times` times (0: never), `delay` after
    /// it is final. Default: once, at once.
    pub fn set_callbacks(&self, times: usize, delay: Duration) {
        self.state.lock().callbacks = (times, delay);
    }

    /// Callbacks (results) this fake has sent and had answered (or failed to deliver)
    /// so far: the event a test waits for instead of sleeping until a late callback has
    /// surely come.
    pub fn callbacks_answered(&self) -> usize {
        self.state
            .lock()
            .callbacks_answered
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Transfer requests received with valid credentials (duplicates included).
    pub fn transfer_requests(&self) -> usize {
        self.state.lock().transfer_requests
    }

    /// How many times the payout `external_id` was paid (0 or 1 unless something
    /// pays twice).
    pub fn paid_count(&self, external_id: &str) -> usize {
        self.state
            .lock()
            .paid
            .get(external_id)
            .copied()
            .unwrap_or(0)
    }

    /// Every transfer held, as (reference id, body).
    pub fn transfers(&self) -> Vec<(String, Value)> {
        let mut v: Vec<_> = self
            .state
            .lock()
            .transfers
            .iter()
            .map(|(r, (t, _))| (r.clone(), t.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

fn subscription_ok(st: &MomoState, headers: &HeaderMap) -> bool {
    headers
        .get("Ocp-Apim-Subscription-Key")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|k| k == st.subscription_key)
}

async fn token(State(st): State<Arc<MomoState>>, headers: HeaderMap) -> Response {
    let mut g = st.lock();
    g.token_requests += 1;
    if !subscription_ok(&st, &headers) || !basic_is(&headers, &st.api_user, &st.api_key) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "login_failed"})),
        )
            .into_response();
    }
    g.next += 1;
    let token = format!("momo_tok_{}", g.next);
    let ttl = g.token_ttl;
    g.tokens
        .insert(token.clone(), Instant::now() + Duration::from_secs(ttl));
    axum::Json(json!({"access_token": token, "token_type": "access_token", "expires_in": ttl}))
        .into_response()
}

/// `None` when the subscription key, token and environment are right, else the answer.
async fn refuse(st: &MomoState, headers: &HeaderMap) -> Option<Response> {
    let token_ok = bearer(headers).is_some_and(|t| {
        st.lock()
            .tokens
            .get(&t)
            .is_some_and(|until| Instant::now() < *until)
    });
    if !subscription_ok(st, headers) || !token_ok {
        return Some(momo_error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "Access denied due to invalid subscription key or token.",
        ));
    }
    if headers
        .get("X-Target-Environment")
        .and_then(|v| v.to_str().ok())
        != Some("sandbox")
    {
        return Some(momo_error(
            StatusCode::FORBIDDEN,
            "NOT_ALLOWED_TARGET_ENVIRONMENT",
            "Access to target environment is forbidden.",
        ));
    }
    match st.shared.behaviour() {
        Behaviour::Normal => None,
        Behaviour::Hang => {
            hang().await;
            Some(StatusCode::GATEWAY_TIMEOUT.into_response())
        }
        Behaviour::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            Some(momo_error(
                status,
                "INTERNAL_PROCESSING_ERROR",
                "An internal error occurred.",
            ))
        }
    }
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_amount(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().filter(|b| *b == b'.').count() <= 1
        && s.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

fn send_callback(g: &Inner, reference: &str) {
    let Some((body, Some(url))) = g.transfers.get(reference) else {
        return;
    };
    let (times, delay) = g.callbacks;
    send_json_later(
        url.clone(),
        reqwest::Method::PUT,
        body.to_string(),
        delay,
        times,
        g.callbacks_answered.clone(),
    );
}

async fn transfer(
    State(st): State<Arc<MomoState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    st.shared.count_request();
    if let Some(r) = refuse(&st, &headers).await {
        return r;
    }
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let reference = header("X-Reference-Id").unwrap_or_default();
    if !is_uuid(&reference) {
        return momo_error(
            StatusCode::BAD_REQUEST,
            "INVALID_REFERENCE_ID",
            "Reference id is not a UUID.",
        );
    }
    let Ok(b) = serde_json::from_slice::<Value>(&body) else {
        return momo_error(
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
            "Request body is malformed.",
        );
    };
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let (amount, currency, external) = (s(&b["amount"]), s(&b["currency"]), s(&b["externalId"]));
    let party = s(&b["payee"]["partyId"]);
    if !is_amount(&amount) || b["payee"]["partyIdType"] != "MSISDN" || party.is_empty() {
        return momo_error(
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
            "Invalid amount or payee.",
        );
    }
    if currency != "EUR" {
        return momo_error(
            StatusCode::BAD_REQUEST,
            "INVALID_CURRENCY",
            "Currency not supported.",
        );
    }
    let lose = {
        let mut g = st.lock();
        g.transfer_requests += 1;
        if g.transfers.contains_key(&reference) {
            return momo_error(
                StatusCode::CONFLICT,
                "RESOURCE_ALREADY_EXIST",
                "Duplicated reference id. Creation of resource failed.",
            );
        }
        g.next += 1;
        let mut t = json!({
            "amount": amount, "currency": currency, "externalId": external,
            "payee": {"partyIdType": "MSISDN", "partyId": party},
            "payerMessage": s(&b["payerMessage"]), "payeeNote": s(&b["payeeNote"]),
        });
        if let Some((code, message)) = g.failures.get(&party) {
            t["status"] = json!("FAILED");
            t["reason"] = json!({"code": code, "message": message});
        } else if g.hold {
            t["status"] = json!("PENDING");
        } else {
            t["status"] = json!("SUCCESSFUL");
            t["financialTransactionId"] = json!(format!("{}", 363_440_000 + g.next));
            *g.paid.entry(external).or_default() += 1;
        }
        let pending = t["status"] == "PENDING";
        g.transfers
            .insert(reference.clone(), (t, header("X-Callback-Url")));
        if !pending {
            send_callback(&g, &reference);
        }
        g.lose_answers
    };
    if lose {
        hang().await;
        return StatusCode::GATEWAY_TIMEOUT.into_response();
    }
    StatusCode::ACCEPTED.into_response()
}

async fn status(
    State(st): State<Arc<MomoState>>,
    Path(reference): Path<String>,
    headers: HeaderMap,
) -> Response {
    st.shared.count_request();
    if let Some(r) = refuse(&st, &headers).await {
        return r;
    }
    match st.lock().transfers.get(&reference) {
        Some((t, _)) => axum::Json(t.clone()).into_response(),
        None => momo_error(
            StatusCode::NOT_FOUND,
            "RESOURCE_NOT_FOUND",
            "Requested resource was not found.",
        ),
    }
}

/// The recorder's reads and controls (`set_behaviour`, `requests`).
impl Deref for FakeMtnMomo {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        &self.shared
    }
}
