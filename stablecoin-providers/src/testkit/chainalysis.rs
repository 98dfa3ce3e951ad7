//! A fake of Chainalysis's free sanctions screening API.

use super::{Behaviour, Recorder, Server, hang};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

/// Chainalysis's sanctions API as the adapter sees it:
///
/// - `GET /api/v1/address/{address}`: 401 `{"message"}` without the right `X-API-Key`;
///   else 200 `{"identifications": [...]}`: one identification (`category`
///   `sanctions`, `name`, `description`, `url`) for an address listed with
///   [`FakeChainalysis::sanction`], `[]` for any other.
///
/// [`Behaviour`] applies to every request after the key check: `Status(429)`,
/// `Status(500)`... answer that status with `{"message"}`; `Hang` never answers.
#[derive(Debug)]
pub struct FakeChainalysis {
    server: Server,
    shared: Arc<Recorder>,
    state: Arc<State_>,
}

#[derive(Debug)]
struct State_ {
    api_key: String,
    shared: Arc<Recorder>,
    /// Address as listed (exact text) to the designation's name.
    listed: Mutex<HashMap<String, String>>,
}

impl FakeChainalysis {
    /// Starts the fake, accepting `api_key`.
    pub async fn start(api_key: &str) -> std::io::Result<FakeChainalysis> {
        let shared = Recorder::new();
        let state = Arc::new(State_ {
            api_key: api_key.into(),
            shared: shared.clone(),
            listed: Mutex::new(HashMap::new()),
        });
        let router = axum::Router::new()
            .route("/api/v1/address/{address}", get(lookup))
            .with_state(state.clone());
        Ok(FakeChainalysis {
            server: Server::start(router).await?,
            shared,
            state,
        })
    }

    /// The base URL to configure the adapter with.
    pub fn base_url(&self) -> &str {
        &self.server.base_url
    }

    /// Lists `address` (as the API matches it: the exact text, EVM addresses without
    /// case) under a designation named `name`.
    pub fn sanction(&self, address: &str, name: &str) {
        if let Ok(mut l) = self.state.listed.lock() {
            l.insert(key(address), name.into());
        }
    }
}

impl Deref for FakeChainalysis {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        &self.shared
    }
}

fn key(address: &str) -> String {
    if address.starts_with("0x") {
        address.to_ascii_lowercase()
    } else {
        address.to_string()
    }
}

fn message(status: StatusCode, text: &str) -> Response {
    (status, axum::Json(json!({ "message": text }))).into_response()
}

async fn lookup(
    State(s): State<Arc<State_>>,
    Path(address): Path<String>,
    headers: HeaderMap,
) -> Response {
    s.shared.count_request();
    let given = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    if given != Some(s.api_key.as_str()) {
        return message(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    match s.shared.behaviour() {
        Behaviour::Normal => {}
        Behaviour::Hang => {
            hang().await;
            return message(StatusCode::GATEWAY_TIMEOUT, "timeout");
        }
        Behaviour::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return message(status, "error");
        }
    }
    let name = s
        .listed
        .lock()
        .ok()
        .and_then(|l| l.get(&key(&address)).cloned());
    let identifications = match name {
        None => json!([]),
        Some(name) => json!([{
            "category": "sanctions",
            "name": name,
            "description": format!("This address is listed: {name}"),
            "url": "https://home.treasury.gov/policy-issues/financial-sanctions/recent-actions",
        }]),
    };
    axum::Json(json!({ "identifications": identifications })).into_response()
}
