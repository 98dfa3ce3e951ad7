//! The server of the exports' memory measurement (`scripts/export-memory.sh`,
//! BENCHMARKS.md): the reference server on an embedded SQLite file in a fresh
//! directory, with one tenant holding N operations (default 100,000), serving on
//! loopback until killed. With `memory` as second argument, the in-process memory
//! store instead (every record is in RAM before the export starts, so what the export
//! adds is its own buffers alone; SQLite adds its readers' page caches, up to 64 MiB
//! each, filled by any read of that much data).
//!
//! ```text
//! cargo run -p stablecoin-server --example export_memory -- 100000 [sqlite|memory]
//! ```
//!
//! Prints `READY <base url> <tenant key> <operations>` once the operations are stored.
//! One funding goes through the engine for real (provision, fund, settle); the rest are
//! copies of it with their own ids and creation times, committed in batches of 1,000
//! (an export reads records, whoever wrote them, and driving 100,000 fundings through
//! the simulated chain would take the measurement's whole budget).

use stablecoin_core::domain::ids::OperationId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{KeyKind, KeyMode, Operation};
use stablecoin_core::ports::Record;
use stablecoin_core::ports::store::Batch;
use stablecoin_server::config::{Secret, StorageConfig};
use stablecoin_server::{App, Config};

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let memory = std::env::args().nth(2).as_deref() == Some("memory");
    let dir = std::env::temp_dir().join(format!("export-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("data dir");
    let mut c = Config {
        listen: "127.0.0.1:0".into(),
        master_seed: Some(Secret::new("07".repeat(32))),
        run_workers: false,
        storage: if memory {
            StorageConfig::Memory
        } else {
            StorageConfig::Sqlite {
                path: Some(dir.join("stablecoin.db")),
                max_background: 4,
            }
        },
        ..Default::default()
    };
    c.demo.enabled = false;
    c.engine.poll_interval_ms = 0;
    let app = App::build(c).await.expect("app builds");
    let e = app.engine();
    let t = e.create_tenant("Bench").await.expect("tenant");
    e.credit_treasury(&t.id, Token::Usdc, Micros(1_000_000_000), "wire-bench")
        .await
        .expect("credit");
    let key = e
        .issue_api_key(&t.id, KeyKind::Tenant, KeyMode::Live)
        .await
        .expect("key")
        .secret;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let served = app.clone();
    tokio::spawn(async move { served.serve(listener, std::future::pending()).await });

    let http = reqwest::Client::new();
    let post = |path: &str, body: String| {
        http.post(format!("{base}{path}"))
            .header("X-API-Key", &key)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
    };
    let phone = "+2250700000001";
    post(
        "/v1/users/provision",
        format!("{{\"phone_number\":\"{phone}\"}}"),
    )
    .await
    .expect("provision");
    let r = post(
        "/v1/users/fund",
        format!("{{\"phone_number\":\"{phone}\",\"token\":\"USDC\",\"amount\":\"1\"}}"),
    )
    .await
    .expect("fund");
    let funded: serde_json::Value = r.json().await.expect("fund answer");
    let id = funded["id"].as_str().expect("funding id").to_string();
    app.engine().settle_all(100).await;

    let store = app.state().storage.store.clone();
    let rec = store
        .get("operation", &id)
        .await
        .expect("read")
        .expect("the funding");
    let base_op = Operation::from_stored(&rec).expect("decode");
    let t0 = Timestamp::parse_rfc3339("2025-01-01T00:00:00Z")
        .expect("t0")
        .millis();
    for start in (0..n).step_by(1_000) {
        let mut batch = Batch::default();
        for i in start..(start + 1_000).min(n) {
            let mut op = base_op.clone();
            op.id = OperationId(format!("fd_bench{i:07}"));
            op.created_at = Timestamp::from_millis(t0 + i as i64 * 1_000);
            op.tx_hash = None;
            op.holds.clear();
            batch.puts.push(op.insert().expect("encode"));
        }
        store.commit(batch).await.expect("commit");
    }
    println!("READY {base} {key} {}", n + 1);
    std::future::pending::<()>().await;
}
