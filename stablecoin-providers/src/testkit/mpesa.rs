//! A fake of M-Pesa Daraja: OAuth, B2C payment requests and transaction-status queries,
//! with their results POSTed to the request's `ResultURL`.

use super::{Behaviour, Recorder, Server, basic_is, bearer, hang, send_json_later};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The status-query result code the fake answers for an unknown
/// `OriginatorConversationID` (the adapter's default "not found" code).
const NOT_FOUND_CODE: &str = "R000002";

/// Daraja as the adapter sees it:
///
/// - `GET /oauth/v1/generate?grant_type=client_credentials`: 401 without the right
///   Basic consumer key and secret, else `{access_token, expires_in}` (a string).
/// - `POST /mpesa/b2c/v3/paymentrequest`: 401 for a missing, unknown or expired token;
///   400 `Bad Request - Invalid PartyB` (or another field); 409 `Duplicate
///   OriginatorConversationID` for an id it already holds (nothing paid again); else
///   the payment is made (or failed, for a number set with [`FakeMpesa::fail_party`],
///   or for a wrong initiator: 2001) and acknowledged with `ResponseCode` "0", and its
///   result is POSTed to the `ResultURL` (see [`FakeMpesa::set_payment_callbacks`]).
/// - `POST /mpesa/transactionstatus/v1/query`: acknowledged at once; its result, POSTed
///   to the query's `ResultURL`, carries `TransactionStatus` and `ReceiptNo`, or
///   the code `R000002` for an unknown id (the adapter's default "not found" code,
///   `mpesa::DEFAULT_NOT_FOUND_CODES`).
///
/// [`Behaviour`] applies to the payment and query routes (never to the token's).
#[derive(Debug)]
pub struct FakeMpesa {
    server: Server,
    shared: Arc<Recorder>,
    state: Arc<MpState>,
}

#[derive(Debug)]
struct MpState {
    consumer_key: String,
    consumer_secret: String,
    initiator: String,
    credential: String,
    shared: Arc<Recorder>,
    m: Mutex<Inner>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PayState {
    Pending,
    Paid(String),
    Failed(String, String),
}

#[derive(Debug)]
struct Payment {
    party_b: String,
    amount: String,
    conversation_id: String,
    result_url: String,
    state: PayState,
}

#[derive(Debug)]
struct Inner {
    tokens: HashMap<String, Instant>,
    token_ttl: u64,
    token_requests: usize,
    payments: HashMap<String, Payment>,
    paid: HashMap<String, usize>,
    failures: HashMap<String, (String, String)>,
    hold: bool,
    lose_answers: bool,
    payment_callbacks: (usize, Duration),
    /// Payment results (the `ResultURL` callbacks of payments, not of status queries)
    /// sent and answered so far.
    callbacks_answered: Arc<std::sync::atomic::AtomicUsize>,
    query_results: (usize, Duration),
    /// Payment requests that passed the token check.
    payment_requests: usize,
    /// The worst case of an undocumented behaviour: a re-used
    /// `OriginatorConversationID` is taken as a new payment and paid again.
    duplicates_pay: bool,
    /// Status queries answer "not found" for every id (a ledger that lags).
    queries_not_found: bool,
    next: u64,
}

impl Inner {
    fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

impl MpState {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn daraja_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({"requestId": "fake-req", "errorCode": code, "errorMessage": message});
    (status, axum::Json(body)).into_response()
}

impl FakeMpesa {
    /// Starts the fake; it accepts `consumer_key:consumer_secret` for tokens, and pays
    /// only for the initiator `initiator` with the credential `security_credential`.
    pub async fn start(
        consumer_key: &str,
        consumer_secret: &str,
        initiator: &str,
        security_credential: &str,
    ) -> std::io::Result<Self> {
        let shared = Recorder::new();
        let state = Arc::new(MpState {
            consumer_key: consumer_key.into(),
            consumer_secret: consumer_secret.into(),
            initiator: initiator.into(),
            credential: security_credential.into(),
            shared: shared.clone(),
            m: Mutex::new(Inner {
                tokens: HashMap::new(),
                token_ttl: 3_599,
                token_requests: 0,
                payments: HashMap::new(),
                paid: HashMap::new(),
                failures: HashMap::new(),
                hold: false,
                lose_answers: false,
                payment_callbacks: (1, Duration::ZERO),
                callbacks_answered: Arc::default(),
                query_results: (1, Duration::ZERO),
                payment_requests: 0,
                duplicates_pay: false,
                queries_not_found: false,
                next: 0,
            }),
        });
        let router = axum::Router::new()
            .route("/oauth/v1/generate", get(token))
            .route("/mpesa/b2c/v3/paymentrequest", post(payment))
            .route("/mpesa/transactionstatus/v1/query", post(query))
            .with_state(state.clone());
        Ok(FakeMpesa {
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

    /// Payments to `party_b` (`2547...`) fail with this result code and description
    /// (e.g. 2040 "The receiver is not registered").
    pub fn fail_party(&self, party_b: &str, code: &str, desc: &str) {
        self.state
            .lock()
            .failures
            .insert(party_b.into(), (code.into(), desc.into()));
    }

    /// While on, new payments stay pending until [`FakeMpesa::complete_held`].
    pub fn set_hold(&self, hold: bool) {
        self.state.lock().hold = hold;
    }

    /// Pays the held payments and posts their results.
    pub fn complete_held(&self) {
        let mut g = self.state.lock();
        let held: Vec<String> = g
            .payments
            .iter()
            .filter(|(_, p)| p.state == PayState::Pending)
            .map(|(id, _)| id.clone())
            .collect();
        for id in held {
            let n = g.next();
            if let Some(p) = g.payments.get_mut(&id) {
                p.state = PayState::Paid(format!("SIM{n:07}"));
            }
            *g.paid.entry(id.clone()).or_default() += 1;
            post_payment_result(&g, &id);
        }
    }

    /// While on, a payment request is processed and then never answered (the answer
    /// is lost: the client times out).
    pub fn set_lose_answers(&self, lose: bool) {
        self.state.lock().lose_answers = lose;
    }

    /// Each payment's result is POSTed `times` times (0: never), `delay` after it
    /// is final. Default: once, at once.
    pub fn set_payment_callbacks(&self, times: usize, delay: Duration) {
        self.state.lock().payment_callbacks = (times, delay);
    }

    /// Payment results (not status-query results) this fake has sent and had answered
    /// (or failed to deliver) so far: the event a test waits for instead of sleeping until a late callback has
    /// surely come.
    pub fn callbacks_answered(&self) -> usize {
        self.state
            .lock()
            .callbacks_answered
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Each status query's result is POSTed `times` times (0: never), `delay` after
    /// the query. Default: once, at once.
    pub fn set_query_results(&self, times: usize, delay: Duration) {
        self.state.lock().query_results = (times, delay);
    }

    /// Payment requests received with a valid token (any id, duplicates included).
    pub fn payment_requests(&self) -> usize {
        self.state.lock().payment_requests
    }

    /// While on, a payment request re-using an `OriginatorConversationID` is paid
    /// again instead of refused with 409: Daraja does not document which it does, so a
    /// test can hold the adapter and the engine to the worst case.
    pub fn set_duplicates_pay(&self, on: bool) {
        self.state.lock().duplicates_pay = on;
    }

    /// While on, every status query's result is "not found" (`R000002`), as from a
    /// ledger that has not caught up with a payment yet.
    pub fn set_queries_not_found(&self, on: bool) {
        self.state.lock().queries_not_found = on;
    }

    /// How many times the payment `originator_conversation_id` was paid (0 or 1
    /// unless something pays twice).
    pub fn paid_count(&self, originator_conversation_id: &str) -> usize {
        self.state
            .lock()
            .paid
            .get(originator_conversation_id)
            .copied()
            .unwrap_or(0)
    }

    /// The M-Pesa receipt (`TransactionReceipt`) of the payment
    /// `originator_conversation_id`, once paid: the reference a caller must end up with.
    pub fn receipt(&self, originator_conversation_id: &str) -> Option<String> {
        match &self
            .state
            .lock()
            .payments
            .get(originator_conversation_id)?
            .state
        {
            PayState::Paid(receipt) => Some(receipt.clone()),
            _ => None,
        }
    }

    /// Every payment held, as (`OriginatorConversationID`, `PartyB`, `Amount`).
    pub fn payments(&self) -> Vec<(String, String, String)> {
        let mut v: Vec<_> = self
            .state
            .lock()
            .payments
            .iter()
            .map(|(id, p)| (id.clone(), p.party_b.clone(), p.amount.clone()))
            .collect();
        v.sort();
        v
    }
}

async fn token(
    State(st): State<Arc<MpState>>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut g = st.lock();
    g.token_requests += 1;
    if q.get("grant_type").map(String::as_str) != Some("client_credentials") {
        return daraja_error(
            StatusCode::BAD_REQUEST,
            "400.008.02",
            "Invalid grant type passed",
        );
    }
    if !basic_is(&headers, &st.consumer_key, &st.consumer_secret) {
        return daraja_error(
            StatusCode::UNAUTHORIZED,
            "400.008.01",
            "Invalid Authentication passed",
        );
    }
    let n = g.next();
    let token = format!("mpesa_tok_{n}");
    let ttl = g.token_ttl;
    g.tokens
        .insert(token.clone(), Instant::now() + Duration::from_secs(ttl));
    axum::Json(json!({"access_token": token, "expires_in": ttl.to_string()})).into_response()
}

/// `None` when the bearer token is valid, else the 401 to answer.
fn refuse_token(st: &MpState, headers: &HeaderMap) -> Option<Response> {
    let ok = bearer(headers).is_some_and(|t| {
        st.lock()
            .tokens
            .get(&t)
            .is_some_and(|until| Instant::now() < *until)
    });
    (!ok).then(|| {
        daraja_error(
            StatusCode::UNAUTHORIZED,
            "404.001.04",
            "Invalid Access Token",
        )
    })
}

/// The behaviour's answer, if it is not [`Behaviour::Normal`].
async fn misbehave(st: &MpState) -> Option<Response> {
    match st.shared.behaviour() {
        Behaviour::Normal => None,
        Behaviour::Hang => {
            hang().await;
            Some(StatusCode::GATEWAY_TIMEOUT.into_response())
        }
        Behaviour::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            Some(daraja_error(
                status,
                &format!("{code}.003.02"),
                "Spike arrest violation",
            ))
        }
    }
}

fn text(body: &Value, key: &str) -> String {
    match body.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn post_payment_result(g: &Inner, id: &str) {
    let Some(p) = g.payments.get(id) else { return };
    let (times, delay) = g.payment_callbacks;
    let result = match &p.state {
        PayState::Pending => return,
        PayState::Paid(receipt) => json!({
            "ResultType": 0, "ResultCode": 0,
            "ResultDesc": "The service request is processed successfully.",
            "OriginatorConversationID": id, "ConversationID": p.conversation_id,
            "TransactionID": receipt,
            "ResultParameters": {"ResultParameter": [
                {"Key": "TransactionAmount", "Value": p.amount.parse::<u64>().unwrap_or(0)},
                {"Key": "TransactionReceipt", "Value": receipt},
                {"Key": "ReceiverPartyPublicName", "Value": format!("{} - Fake Payee", p.party_b)},
                {"Key": "TransactionCompletedDateTime", "Value": "01.01.2025 12:00:00"},
                {"Key": "B2CRecipientIsRegisteredCustomer", "Value": "Y"},
            ]},
            "ReferenceData": {"ReferenceItem": {"Key": "QueueTimeoutURL", "Value": "https://internalsandbox.safaricom.co.ke/mpesa/b2cresults/v1/submit"}},
        }),
        PayState::Failed(code, desc) => json!({
            "ResultType": 0, "ResultCode": code.parse::<i64>().map(Value::from).unwrap_or(Value::from(code.clone())),
            "ResultDesc": desc, "OriginatorConversationID": id,
            "ConversationID": p.conversation_id, "TransactionID": "MAS0000000",
            "ReferenceData": {"ReferenceItem": {"Key": "QueueTimeoutURL", "Value": "https://internalsandbox.safaricom.co.ke/mpesa/b2cresults/v1/submit"}},
        }),
    };
    let body = json!({ "Result": result }).to_string();
    send_json_later(
        p.result_url.clone(),
        reqwest::Method::POST,
        body,
        delay,
        times,
        g.callbacks_answered.clone(),
    );
}

fn valid_party_b(p: &str) -> bool {
    p.len() == 12 && p.starts_with("254") && p.bytes().all(|b| b.is_ascii_digit())
}

async fn payment(
    State(st): State<Arc<MpState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    st.shared.count_request();
    if let Some(r) = refuse_token(&st, &headers) {
        return r;
    }
    if let Some(r) = misbehave(&st).await {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return daraja_error(
            StatusCode::BAD_REQUEST,
            "400.002.05",
            "Invalid Request Payload",
        );
    };
    let id = text(&body, "OriginatorConversationID");
    let amount = text(&body, "Amount");
    let party_b = text(&body, "PartyB");
    let command = text(&body, "CommandID");
    let result_url = text(&body, "ResultURL");
    let invalid = if id.is_empty() {
        Some("OriginatorConversationID")
    } else if !["BusinessPayment", "SalaryPayment", "PromotionPayment"].contains(&command.as_str())
    {
        Some("CommandID")
    } else if amount.is_empty() || !amount.bytes().all(|b| b.is_ascii_digit()) || amount == "0" {
        Some("Amount")
    } else if !valid_party_b(&party_b) {
        Some("PartyB")
    } else if text(&body, "PartyA").is_empty() {
        Some("PartyA")
    } else if !result_url.starts_with("http") || !text(&body, "QueueTimeOutURL").starts_with("http")
    {
        Some("ResultURL")
    } else {
        None
    };
    if let Some(field) = invalid {
        return daraja_error(
            StatusCode::BAD_REQUEST,
            "400.002.02",
            &format!("Bad Request - Invalid {field}"),
        );
    }
    let lose = {
        let mut g = st.lock();
        g.payment_requests += 1;
        if g.payments.contains_key(&id) && !g.duplicates_pay {
            return daraja_error(
                StatusCode::CONFLICT,
                "409.001.01",
                "Duplicate OriginatorConversationID",
            );
        }
        let n = g.next();
        let conversation_id = format!("AG_20250101_{n:020x}");
        let state = if text(&body, "InitiatorName") != st.initiator
            || text(&body, "SecurityCredential") != st.credential
        {
            PayState::Failed(
                "2001".into(),
                "The initiator information is invalid.".into(),
            )
        } else if let Some((code, desc)) = g.failures.get(&party_b) {
            PayState::Failed(code.clone(), desc.clone())
        } else if g.hold {
            PayState::Pending
        } else {
            PayState::Paid(format!("SIM{n:07}"))
        };
        if matches!(state, PayState::Paid(_)) {
            *g.paid.entry(id.clone()).or_default() += 1;
        }
        g.payments.insert(
            id.clone(),
            Payment {
                party_b,
                amount,
                conversation_id: conversation_id.clone(),
                result_url,
                state,
            },
        );
        post_payment_result(&g, &id);
        g.lose_answers.then_some(()).ok_or(conversation_id)
    };
    match lose {
        Ok(()) => {
            hang().await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Err(conversation_id) => axum::Json(json!({
            "ConversationID": conversation_id,
            "OriginatorConversationID": id,
            "ResponseCode": "0",
            "ResponseDescription": "Accept the service request successfully.",
        }))
        .into_response(),
    }
}

async fn query(
    State(st): State<Arc<MpState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    st.shared.count_request();
    if let Some(r) = refuse_token(&st, &headers) {
        return r;
    }
    if let Some(r) = misbehave(&st).await {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return daraja_error(
            StatusCode::BAD_REQUEST,
            "400.002.05",
            "Invalid Request Payload",
        );
    };
    let target = text(&body, "OriginatorConversationID");
    let result_url = text(&body, "ResultURL");
    if text(&body, "CommandID") != "TransactionStatusQuery"
        || text(&body, "IdentifierType") != "4"
        || (target.is_empty() && text(&body, "TransactionID").is_empty())
        || !result_url.starts_with("http")
    {
        return daraja_error(
            StatusCode::BAD_REQUEST,
            "400.002.02",
            "Bad Request - Invalid Request",
        );
    }
    let mut g = st.lock();
    let n = g.next();
    let conversation_id = format!("AG_20250101_q{n:019x}");
    let originator = format!("fake-query-{n}");
    let head = |code: Value, desc: &str| {
        json!({"ResultType": 0, "ResultCode": code, "ResultDesc": desc,
               "OriginatorConversationID": originator, "ConversationID": conversation_id})
    };
    let mut result = if text(&body, "Initiator") != st.initiator {
        let mut r = head(json!(2001), "The initiator information is invalid.");
        r["TransactionID"] = json!("MAS0000000");
        r
    } else if let Some(p) = g.payments.get(&target).filter(|_| !g.queries_not_found) {
        let (status, receipt, reason) = match &p.state {
            PayState::Pending => ("Pending", String::new(), String::new()),
            PayState::Paid(r) => ("Completed", r.clone(), String::new()),
            PayState::Failed(code, desc) => ("Failed", String::new(), format!("{code} {desc}")),
        };
        let mut r = head(
            json!(0),
            "The service request has been accepted successsfully.",
        );
        r["TransactionID"] = json!(if receipt.is_empty() {
            "MAS0000000"
        } else {
            receipt.as_str()
        });
        r["ResultParameters"] = json!({"ResultParameter": [
            {"Key": "DebitPartyName", "Value": "600000 - Fake Shortcode"},
            {"Key": "CreditPartyName", "Value": format!("{} - Fake Payee", p.party_b)},
            {"Key": "OriginatorConversationID", "Value": target},
            {"Key": "DebitAccountType", "Value": "Utility Account"},
            {"Key": "ReasonType", "Value": reason},
            {"Key": "TransactionStatus", "Value": status},
            {"Key": "Amount", "Value": p.amount.parse::<u64>().unwrap_or(0)},
            {"Key": "ConversationID", "Value": p.conversation_id},
            {"Key": "ReceiptNo", "Value": receipt},
        ]});
        r
    } else {
        head(json!(NOT_FOUND_CODE), "The transaction could not be found.")
    };
    result["ReferenceData"] = json!({"ReferenceItem": {"Key": "Occasion"}});
    let (times, delay) = g.query_results;
    let body = json!({ "Result": result }).to_string();
    send_json_later(
        result_url,
        reqwest::Method::POST,
        body,
        delay,
        times,
        // Not a payment's callback: not counted by `callbacks_answered`.
        Arc::default(),
    );
    drop(g);
    axum::Json(json!({
        "OriginatorConversationID": originator,
        "ConversationID": conversation_id,
        "ResponseCode": "0",
        "ResponseDescription": "Accept the service request successfully.",
    }))
    .into_response()
}

/// The recorder's reads and controls (`set_behaviour`, `requests`).
impl Deref for FakeMpesa {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        &self.shared
    }
}
