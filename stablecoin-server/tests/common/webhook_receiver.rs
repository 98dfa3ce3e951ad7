//! A webhook receiver on a loopback port: answers 200 and keeps every request's headers
//! and body, as received.

use axum::body::Bytes;
use axum::http::HeaderMap;
use std::sync::{Arc, Mutex};

/// Every request received: headers and exact body bytes, in order.
pub type Received = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// Starts the receiver; its URL (`http://127.0.0.1:<port>/hooks`) and what it received.
pub async fn recording_receiver() -> (String, Received) {
    let got: Received = Arc::default();
    let g = got.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let g = g.clone();
            async move {
                g.lock().unwrap().push((headers, body));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}
