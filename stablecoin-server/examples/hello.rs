//! A plain axum hello-world: the ceiling the server's load benchmark is measured against
//! (same runtime, same machine, same load generator; see `scripts/bench-server.sh`).
//!
//! ```text
//! cargo run --release -p stablecoin-server --example hello -- 127.0.0.1:8090
//! ```

use axum::{Router, routing::get};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8090".to_string());
    let app = Router::new().route("/", get(|| async { "Hello, World!" }));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("hello listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await
}
