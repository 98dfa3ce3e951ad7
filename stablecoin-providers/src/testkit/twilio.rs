//! A fake of Twilio's Messages API and its signed status callbacks.

use super::{Behaviour, FakeSms, Recorder, Server, hang, post_later};
use crate::twilio::signature;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `POST /2010-04-01/Accounts/{sid}/Messages.json` as Twilio answers it: 401 (code
/// 20003) for wrong Basic credentials, 400 (code 21211) for a number set invalid, 201
/// `{sid: "SM...", status: "queued", ...}`, or what [`Behaviour`] says. Every accepted
/// message is recorded with its `StatusCallback`.
#[derive(Debug)]
pub struct FakeTwilio {
    server: Server,
    shared: Arc<Recorder>,
    state: Arc<TwState>,
}

#[derive(Debug)]
struct TwState {
    account_sid: String,
    auth_token: String,
    shared: Arc<Recorder>,
    invalid: Mutex<BTreeSet<String>>,
    callbacks: Mutex<BTreeMap<String, String>>,
    next: Mutex<u64>,
}

impl FakeTwilio {
    /// Starts the fake for one account.
    pub async fn start(account_sid: &str, auth_token: &str) -> std::io::Result<Self> {
        let shared = Recorder::new();
        let state = Arc::new(TwState {
            account_sid: account_sid.into(),
            auth_token: auth_token.into(),
            shared: shared.clone(),
            invalid: Mutex::new(BTreeSet::new()),
            callbacks: Mutex::new(BTreeMap::new()),
            next: Mutex::new(0),
        });
        let router = axum::Router::new()
            .route("/2010-04-01/Accounts/{sid}/Messages.json", post(messages))
            .with_state(state.clone());
        Ok(FakeTwilio {
            server: Server::start(router).await?,
            shared,
            state,
        })
    }

    /// The base URL to configure the adapter with.
    pub fn base_url(&self) -> &str {
        &self.server.base_url
    }

    /// Sends to `number` are refused with 400, code 21211 (invalid `To`).
    pub fn refuse_number(&self, number: &str) {
        if let Ok(mut s) = self.state.invalid.lock() {
            s.insert(number.into());
        }
    }

    /// Posts a status callback of message `sid` to the `StatusCallback` it was sent
    /// with, signed with the auth token as Twilio signs it, after `delay`, `times`
    /// times. `None` if the message had no callback URL.
    pub fn post_status_callback(
        &self,
        sid: &str,
        status: &str,
        error_code: Option<&str>,
        delay: Duration,
        times: usize,
    ) -> Option<tokio::task::JoinHandle<Vec<u16>>> {
        let url = self.state.callbacks.lock().ok()?.get(sid).cloned()?;
        let to = self
            .sent()
            .into_iter()
            .find(|s| s.message_id == sid)
            .map(|s| s.to)
            .unwrap_or_default();
        let mut form = vec![
            ("MessageSid".to_string(), sid.to_string()),
            ("SmsSid".to_string(), sid.to_string()),
            ("MessageStatus".to_string(), status.to_string()),
            ("SmsStatus".to_string(), status.to_string()),
            ("AccountSid".to_string(), self.state.account_sid.clone()),
            ("To".to_string(), to),
            ("ApiVersion".to_string(), "2010-04-01".to_string()),
        ];
        if let Some(c) = error_code {
            form.push(("ErrorCode".into(), c.into()));
        }
        let sig = signature(&self.state.auth_token, &url, &form);
        let headers = vec![("X-Twilio-Signature".to_string(), sig)];
        Some(post_later(url, form, headers, delay, times))
    }
}

fn error(status: StatusCode, code: u32, message: &str) -> Response {
    let body = serde_json::json!({
        "code": code, "message": message, "status": status.as_u16(),
        "more_info": format!("https://www.twilio.com/docs/errors/{code}"),
    });
    (status, axum::Json(body)).into_response()
}

fn authorized(st: &TwState, sid: &str, headers: &HeaderMap) -> bool {
    let Some(b64) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    else {
        return false;
    };
    let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else {
        return false;
    };
    let expected = format!("{}:{}", st.account_sid, st.auth_token);
    sid == st.account_sid && raw == expected.as_bytes()
}

async fn messages(
    State(st): State<Arc<TwState>>,
    Path(sid): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    st.shared.count_request();
    if !authorized(&st, &sid, &headers) {
        return error(StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    match st.shared.behaviour() {
        Behaviour::Normal => {}
        Behaviour::Hang => {
            hang().await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Behaviour::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let twilio_code = if code == 429 { 20429 } else { 20500 };
            return error(status, twilio_code, "Request failed");
        }
    }
    let form: Vec<(String, String)> = form_urlencoded::parse(&body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |n: &str| form.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let (Some(to), Some(text)) = (get("To"), get("Body")) else {
        return error(
            StatusCode::BAD_REQUEST,
            21604,
            "A 'To' phone number and a 'Body' are required.",
        );
    };
    let from = get("From").or_else(|| get("MessagingServiceSid"));
    if from.is_none() {
        return error(
            StatusCode::BAD_REQUEST,
            21603,
            "A 'From' or 'MessagingServiceSid' parameter is required to send a message",
        );
    }
    if st.invalid.lock().is_ok_and(|s| s.contains(&to)) {
        return error(
            StatusCode::BAD_REQUEST,
            21211,
            "The 'To' number is not a valid phone number.",
        );
    }
    let id = match st.next.lock() {
        Ok(mut g) => {
            *g += 1;
            format!("SM{:032x}", *g)
        }
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    if let (Some(cb), Ok(mut m)) = (get("StatusCallback"), st.callbacks.lock()) {
        m.insert(id.clone(), cb);
    }
    st.shared.record(FakeSms {
        message_id: id.clone(),
        to: to.clone(),
        from: from.clone(),
        text: text.clone(),
    });
    let body = serde_json::json!({
        "sid": id, "status": "queued", "to": to, "from": from, "body": text,
        "account_sid": st.account_sid, "error_code": null, "error_message": null,
        "num_segments": "1", "direction": "outbound-api", "api_version": "2010-04-01",
    });
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// The recorder's reads and controls (`sent`, `last_code_to`, `set_behaviour`, ...).
impl Deref for FakeTwilio {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        &self.shared
    }
}
