//! A fake of Africa's Talking's messaging API and delivery reports.

use super::{Behaviour, FakeSms, Recorder, Server, hang, post_later};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `POST /version1/messaging` as Africa's Talking answers it: 401 for a wrong `apiKey`
/// or username, 201 with one `Recipients` entry per number (statusCode 101 and an
/// `ATXid_` message id, or the status code set for that number), or what
/// [`Behaviour`] says. Every accepted message is recorded.
#[derive(Debug)]
pub struct FakeAfricasTalking {
    server: Server,
    shared: Arc<Recorder>,
    state: Arc<AtState>,
}

#[derive(Debug)]
struct AtState {
    api_key: String,
    username: String,
    shared: Arc<Recorder>,
    /// Per-number recipient status codes other than 101.
    refusals: Mutex<BTreeMap<String, (u16, String)>>,
    next: Mutex<u64>,
}

impl FakeAfricasTalking {
    /// Starts the fake; it accepts `api_key` for `username` only.
    pub async fn start(username: &str, api_key: &str) -> std::io::Result<Self> {
        let shared = Recorder::new();
        let state = Arc::new(AtState {
            api_key: api_key.into(),
            username: username.into(),
            shared: shared.clone(),
            refusals: Mutex::new(BTreeMap::new()),
            next: Mutex::new(0),
        });
        let router = axum::Router::new()
            .route("/version1/messaging", post(messaging))
            .with_state(state.clone());
        Ok(FakeAfricasTalking {
            server: Server::start(router).await?,
            shared,
            state,
        })
    }

    /// The base URL to configure the adapter with.
    pub fn base_url(&self) -> &str {
        &self.server.base_url
    }

    /// Sends to `number` get this recipient `statusCode` and `status` (e.g. 403
    /// `InvalidPhoneNumber`) instead of 101.
    pub fn refuse_number(&self, number: &str, code: u16, status: &str) {
        if let Ok(mut m) = self.state.refusals.lock() {
            m.insert(number.into(), (code, status.into()));
        }
    }

    /// Posts a delivery report of `message_id` to `callback_url` after `delay`, `times`
    /// times (late, or twice), as Africa's Talking does: a form with `id`, `status`,
    /// `phoneNumber`, `networkCode`, `failureReason` (for failures) and `retryCount`.
    /// The task's result is the status of each answer.
    pub fn post_delivery_report(
        &self,
        callback_url: &str,
        message_id: &str,
        status: &str,
        failure_reason: Option<&str>,
        delay: Duration,
        times: usize,
    ) -> tokio::task::JoinHandle<Vec<u16>> {
        let phone = self
            .sent()
            .into_iter()
            .find(|s| s.message_id == message_id)
            .map(|s| s.to)
            .unwrap_or_default();
        let mut form = vec![
            ("id".to_string(), message_id.to_string()),
            ("status".to_string(), status.to_string()),
            ("phoneNumber".to_string(), phone),
            ("networkCode".to_string(), "63902".to_string()),
            ("retryCount".to_string(), "0".to_string()),
        ];
        if let Some(r) = failure_reason {
            form.push(("failureReason".into(), r.into()));
        }
        post_later(callback_url.into(), form, Vec::new(), delay, times)
    }
}

async fn messaging(
    State(st): State<Arc<AtState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    st.shared.count_request();
    let form: Vec<(String, String)> = form_urlencoded::parse(&body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |n: &str| form.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let key_ok = headers
        .get("apiKey")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|k| k == st.api_key);
    if !key_ok || get("username").as_deref() != Some(st.username.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            "The supplied authentication is invalid",
        )
            .into_response();
    }
    match st.shared.behaviour() {
        Behaviour::Normal => {}
        Behaviour::Hang => {
            hang().await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Behaviour::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, "Request failed").into_response();
        }
    }
    let (Some(to), Some(message)) = (get("to"), get("message")) else {
        return (StatusCode::BAD_REQUEST, "Missing to or message").into_response();
    };
    let mut recipients = Vec::new();
    for number in to.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let refusal = st.refusals.lock().ok().and_then(|m| m.get(number).cloned());
        if let Some((code, status)) = refusal {
            recipients.push(serde_json::json!({
                "statusCode": code, "number": number, "status": status,
                "cost": "0", "messageId": "None",
            }));
            continue;
        }
        let id = match st.next.lock() {
            Ok(mut g) => {
                *g += 1;
                format!("ATXid_{:032x}", *g)
            }
            Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        };
        st.shared.record(FakeSms {
            message_id: id.clone(),
            to: number.to_string(),
            from: get("from"),
            text: message.clone(),
        });
        recipients.push(serde_json::json!({
            "statusCode": 101, "number": number, "status": "Success",
            "cost": "KES 0.8000", "messageId": id,
        }));
    }
    let sent = recipients.iter().filter(|r| r["statusCode"] == 101).count();
    let body = serde_json::json!({
        "SMSMessageData": {
            "Message": format!("Sent to {sent}/{} Total Cost: KES 0.8000", recipients.len()),
            "Recipients": recipients,
        }
    });
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// The recorder's reads and controls (`sent`, `last_code_to`, `set_behaviour`, ...).
impl Deref for FakeAfricasTalking {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        &self.shared
    }
}
