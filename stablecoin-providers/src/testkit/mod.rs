//! Fake providers for tests: each is a real HTTP server on 127.0.0.1 (a random port),
//! started by the test and stopped when its handle is dropped, that speaks the
//! provider's documented shapes, errors and callbacks. Not mocks: the adapters talk to
//! them over HTTP exactly as to the provider.

// With no SMS feature on there is no SMS fake: their shared parts go unused.
#![cfg_attr(
    not(any(feature = "africastalking", feature = "twilio")),
    allow(dead_code)
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(feature = "africastalking")]
mod africastalking;
#[cfg(feature = "africastalking")]
pub use africastalking::FakeAfricasTalking;

#[cfg(feature = "twilio")]
mod twilio;
#[cfg(feature = "twilio")]
pub use twilio::FakeTwilio;

#[cfg(feature = "mpesa")]
mod mpesa;
#[cfg(feature = "mpesa")]
pub use mpesa::FakeMpesa;

#[cfg(feature = "chainalysis")]
mod chainalysis;
#[cfg(feature = "chainalysis")]
pub use chainalysis::FakeChainalysis;

#[cfg(feature = "mtn-momo")]
mod mtn_momo;
#[cfg(feature = "mtn-momo")]
pub use mtn_momo::FakeMtnMomo;

/// How a fake answers its next sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// As the provider does when all is well.
    Normal,
    /// This HTTP status (429, 500, ...) with the provider's error body; nothing sent.
    Status(u16),
    /// No answer at all (the connection stays open): the client's timeout fires.
    Hang,
}

/// One SMS a fake accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeSms {
    /// The message id the fake answered with.
    pub message_id: String,
    /// The recipient as sent.
    pub to: String,
    /// The sender field as sent, if any.
    pub from: Option<String>,
    /// The text as received.
    pub text: String,
}

/// What a fake received and how it answers, shared between its handle (each fake
/// derefs to it) and its server task.
#[derive(Debug)]
pub struct Recorder {
    pub(crate) behaviour: Mutex<Behaviour>,
    pub(crate) sent: Mutex<Vec<FakeSms>>,
    pub(crate) requests: Mutex<usize>,
}

impl Recorder {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Recorder {
            behaviour: Mutex::new(Behaviour::Normal),
            sent: Mutex::new(Vec::new()),
            requests: Mutex::new(0),
        })
    }

    /// How the next sends are answered.
    pub fn set_behaviour(&self, b: Behaviour) {
        if let Ok(mut g) = self.behaviour.lock() {
            *g = b;
        }
    }

    /// Requests received so far (accepted or not).
    pub fn requests(&self) -> usize {
        self.requests.lock().map(|n| *n).unwrap_or(0)
    }

    pub(crate) fn behaviour(&self) -> Behaviour {
        self.behaviour
            .lock()
            .map(|b| b.clone())
            .unwrap_or(Behaviour::Normal)
    }

    pub(crate) fn count_request(&self) {
        if let Ok(mut n) = self.requests.lock() {
            *n += 1;
        }
    }

    pub(crate) fn record(&self, sms: FakeSms) {
        if let Ok(mut v) = self.sent.lock() {
            v.push(sms);
        }
    }

    /// Every message accepted so far, oldest first.
    pub fn sent(&self) -> Vec<FakeSms> {
        self.sent.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// The newest one-time code (6 digits) the fake received for `to` (E.164).
    pub fn last_code_to(&self, to: &str) -> Option<String> {
        self.sent()
            .into_iter()
            .rev()
            .filter(|s| s.to == to)
            .find_map(|s| {
                s.text
                    .split(|c: char| !c.is_ascii_digit())
                    .find(|w| w.len() == 6)
                    .map(str::to_string)
            })
    }
}

/// A server task on 127.0.0.1 that stops when this is dropped.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) base_url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Server {
    /// Serves `router` on a random loopback port.
    pub(crate) async fn start(router: axum::Router) -> std::io::Result<Server> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Server {
            base_url: format!("http://{addr}"),
            stop: Some(stop),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Waits as a hung provider does: far longer than any client timeout.
pub(crate) async fn hang() {
    tokio::time::sleep(Duration::from_secs(3_600)).await;
}

/// Posts `form` to `url` after `delay`, `times` times, in the background (a provider's
/// callback, late or repeated).
pub(crate) fn post_later(
    url: String,
    form: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    delay: Duration,
    times: usize,
) -> tokio::task::JoinHandle<Vec<u16>> {
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let body = encode_form(&form);
        let mut statuses = Vec::new();
        for _ in 0..times {
            statuses.push(post_form(&url, &body, &headers).await.unwrap_or(0));
        }
        statuses
    })
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub(crate) fn encode_form(pairs: &[(String, String)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// A form POST (a provider's callback); the answer's status.
async fn post_form(url: &str, body: &str, headers: &[(String, String)]) -> Option<u16> {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    req.send().await.ok().map(|r| r.status().as_u16())
}

/// Sends `body` (JSON) to `url` by `method` after `delay`, `times` times, in the
/// background (a payout provider's result callback: late, repeated, or with `times`
/// 0, never). The task's result is the status of each answer (0: no answer).
#[cfg(any(feature = "mpesa", feature = "mtn-momo"))]
/// `answered` counts each callback once its receiver answered (or the attempt failed):
/// the event a test waits for before checking that a late callback changed nothing.
pub(crate) fn send_json_later(
    url: String,
    method: reqwest::Method,
    body: String,
    delay: Duration,
    times: usize,
    answered: Arc<std::sync::atomic::AtomicUsize>,
) -> tokio::task::JoinHandle<Vec<u16>> {
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let mut statuses = Vec::new();
        for _ in 0..times {
            let res = reqwest::Client::new()
                .request(method.clone(), &url)
                .header("Content-Type", "application/json")
                .body(body.clone())
                .send()
                .await;
            statuses.push(res.map(|r| r.status().as_u16()).unwrap_or(0));
            answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        statuses
    })
}

/// The token of an `Authorization: Bearer` header.
#[cfg(any(feature = "mpesa", feature = "mtn-momo"))]
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("Authorization")?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::to_string)
}

/// Whether an `Authorization: Basic` header carries `user:password`.
#[cfg(any(feature = "mpesa", feature = "mtn-momo"))]
pub(crate) fn basic_is(headers: &axum::http::HeaderMap, user: &str, password: &str) -> bool {
    use base64::Engine as _;
    let expected = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    headers
        .get("Authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .is_some_and(|v| v.trim() == expected)
}
