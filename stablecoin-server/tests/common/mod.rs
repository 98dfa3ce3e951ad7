//! A real server on a loopback port, and a small client for it.
#![allow(dead_code)]

pub mod browser;
pub mod console;
pub mod production;
pub mod shared;
pub mod webhook_receiver;

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;
use stablecoin_core::domain::ids::{ApiKeyId, TenantId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::engine::{KeyKind, KeyMode};
use stablecoin_core::memory::{MemoryStore, ShiftedClock};
use stablecoin_server::{App, BuildOptions, Config};
use std::sync::Arc;
use tokio::sync::oneshot;

pub struct Server {
    pub app: App,
    pub base: String,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// A tenant with a credited treasury and one key of each kind and mode.
pub struct Tenant {
    pub id: TenantId,
    pub live: String,
    pub test: String,
    pub business_live: String,
    pub business_test: String,
    pub live_key_id: ApiKeyId,
}

pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub bytes: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or_else(|_| {
            panic!(
                "not JSON ({}): {}",
                self.status,
                String::from_utf8_lossy(&self.bytes)
            )
        })
    }
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no error code ({}): {}", self.status, self.text()))
            .to_string()
    }
    pub fn param(&self) -> Option<String> {
        self.json()["error"]["param"].as_str().map(str::to_string)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status, status, "body: {}", self.text());
        self
    }
    #[track_caller]
    pub fn expect_err(&self, status: u16, code: &str) -> &Self {
        assert_eq!(self.status, status, "body: {}", self.text());
        assert_eq!(self.code(), code, "body: {}", self.text());
        self
    }
}

/// Test defaults: memory storage, no demo tenant, fixed seed, fast confirmations, and no
/// background workers (so commit counts are stable; tests drive the engine or turn the
/// workers on).
pub fn test_config() -> Config {
    let mut c = Config {
        listen: "127.0.0.1:0".into(),
        master_seed: Some(stablecoin_server::config::Secret::new("07".repeat(32))),
        run_workers: false,
        worker_interval_ms: 10,
        // Memory keeps the HTTP suites fast and isolated; `quickstart.rs` covers SQLite.
        storage: stablecoin_server::config::StorageConfig::Memory,
        ..Default::default()
    };
    c.demo.enabled = false;
    c.engine.poll_interval_ms = 0;
    c.engine.unknown_grace_ms = 0;
    c
}

/// Points `c` at the signing service at `url` (`signer.kind = "remote"`): no seed in this
/// process, and durable (SQLite) storage in `dir`, where a local seed file would go.
pub fn use_remote_signer(c: &mut Config, url: &str, token: &str, dir: &std::path::Path) {
    c.master_seed = None;
    c.data_dir = dir.to_path_buf();
    c.storage = stablecoin_server::config::StorageConfig::Sqlite {
        path: None,
        max_background: 4,
    };
    c.signer = stablecoin_server::config::SignerSettings::Remote {
        url: url.into(),
        token: stablecoin_server::config::Secret::new(token),
        timeout_ms: 10_000,
    };
}

/// The names of the files in `dir` (none when it does not exist).
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `dir` holds the database and no seed file.
#[track_caller]
pub fn assert_database_and_no_seed(dir: &std::path::Path) {
    let files = files_in(dir);
    assert!(files.iter().any(|f| f == "stablecoin.db"), "{files:?}");
    assert!(
        !files.iter().any(|f| f.contains("seed")),
        "no seed file: {files:?}"
    );
}

/// A fresh, empty directory under the system temp dir, unique per call.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "stablecoin-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub async fn start() -> Server {
    start_with(test_config()).await
}

pub async fn start_with(config: Config) -> Server {
    let app = App::build(config).await.expect("app builds");
    serve(app).await
}

/// The metrics token of the tests that read `/health/ready`'s details (which need it).
pub const METRICS_TOKEN: &str = "metrics-token-0123456789abcdef-012345";

/// Builds the app on a clock the test can move forward, to jump past a cache's
/// lifetime or an expiry instead of sleeping through it.
pub async fn build_shifted(config: Config) -> (App, Arc<ShiftedClock>) {
    let clock = Arc::new(ShiftedClock::new());
    let options = BuildOptions {
        clock: Some(clock.clone()),
        ..Default::default()
    };
    let app = App::build_with(config, options).await.expect("app builds");
    (app, clock)
}

/// [`start_with`] on a clock the test can move forward ([`build_shifted`]).
pub async fn start_shifted(config: Config) -> (Server, Arc<ShiftedClock>) {
    let (app, clock) = build_shifted(config).await;
    (serve(app).await, clock)
}

pub async fn serve(app: App) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_on(app, listener).await
}

/// Serves `app` on a listener bound beforehand (a test that must put the server's own
/// URL in its configuration, such as an SMS gateway's callback URL).
pub async fn serve_on(app: App, listener: tokio::net::TcpListener) -> Server {
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let a = app.clone();
    let handle = tokio::spawn(async move {
        a.serve(listener, async {
            let _ = rx.await;
        })
        .await
    });
    Server {
        app,
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        stop: Some(tx),
        handle: Some(handle),
    }
}

pub fn m(s: &str) -> Micros {
    Micros::parse_decimal(s).unwrap()
}

impl Server {
    pub fn memory(&self) -> Arc<MemoryStore> {
        self.app
            .state()
            .storage
            .memory
            .clone()
            .expect("memory storage")
    }

    pub fn commits(&self) -> u64 {
        self.memory().commit_count()
    }

    /// Stops accepting, waits for in-flight requests and the worker.
    pub async fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            h.await.unwrap().unwrap();
        }
    }

    pub async fn tenant(&self, name: &str, usdc: &str) -> Tenant {
        let e = self.app.engine();
        let t = e.create_tenant(name).await.unwrap();
        if usdc != "0" {
            e.credit_treasury(&t.id, Token::Usdc, m(usdc), &format!("wire-{name}"))
                .await
                .unwrap();
        }
        let live = e
            .issue_api_key(&t.id, KeyKind::Tenant, KeyMode::Live)
            .await
            .unwrap();
        let test = e
            .issue_api_key(&t.id, KeyKind::Tenant, KeyMode::Test)
            .await
            .unwrap();
        let bl = e
            .issue_api_key(&t.id, KeyKind::Business, KeyMode::Live)
            .await
            .unwrap();
        let bt = e
            .issue_api_key(&t.id, KeyKind::Business, KeyMode::Test)
            .await
            .unwrap();
        Tenant {
            id: t.id,
            live: live.secret,
            test: test.secret,
            business_live: bl.secret,
            business_test: bt.secret,
            live_key_id: live.key.id,
        }
    }

    /// `GET /health/ready` with the details (`rails` with their reasons,
    /// `reconciliation`): the server must have [`METRICS_TOKEN`] as its metrics token.
    pub async fn ready_details(&self) -> Resp {
        self.get_with_metrics_token("/health/ready").await
    }

    /// `GET /metrics` of a server whose metrics token is [`METRICS_TOKEN`].
    pub async fn metrics_with_token(&self) -> Resp {
        self.get_with_metrics_token("/metrics").await
    }

    async fn get_with_metrics_token(&self, path: &str) -> Resp {
        let bearer = format!("Bearer {METRICS_TOKEN}");
        self.send(
            Method::GET,
            path,
            None,
            None,
            &[("Authorization", bearer.as_str())],
        )
        .await
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(k) = key {
            req = req.header("X-API-Key", k);
        }
        if let Some(b) = body {
            req = req
                .header("Content-Type", "application/json")
                .body(b.to_string());
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = req.send().await.expect("request");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let bytes = res.bytes().await.unwrap().to_vec();
        Resp {
            status,
            headers,
            bytes,
        }
    }

    pub async fn post(&self, key: &str, path: &str, body: &str) -> Resp {
        self.send(Method::POST, path, Some(key), Some(body), &[])
            .await
    }

    pub async fn post_idem(&self, key: &str, path: &str, body: &str, idem: &str) -> Resp {
        self.send(
            Method::POST,
            path,
            Some(key),
            Some(body),
            &[("Idempotency-Key", idem)],
        )
        .await
    }

    pub async fn get(&self, key: &str, path: &str) -> Resp {
        self.send(Method::GET, path, Some(key), None, &[]).await
    }

    pub async fn provision(&self, key: &str, phone: &str) -> Value {
        self.provision_at(key, "/v1/users/provision", phone).await
    }

    /// Provisions `phone` on `rail` (`tron`, `solana`): `POST /v1/<rail>/users/provision`.
    pub async fn provision_on(&self, key: &str, rail: &str, phone: &str) -> Value {
        self.provision_at(key, &format!("/v1/{rail}/users/provision"), phone)
            .await
    }

    async fn provision_at(&self, key: &str, path: &str, phone: &str) -> Value {
        let r = self
            .post(key, path, &format!("{{\"phone_number\":\"{phone}\"}}"))
            .await;
        r.expect(200);
        r.json()
    }

    /// Funds a wallet and drives the engine until it settles; the funding as read
    /// afterwards (its status says whether it settled).
    pub async fn fund_settled(&self, key: &str, phone: &str, amount: &str) -> Value {
        let r = self
            .post(
                key,
                "/v1/users/fund",
                &format!(
                    "{{\"phone_number\":\"{phone}\",\"token\":\"USDC\",\"amount\":\"{amount}\"}}"
                ),
            )
            .await;
        r.expect(202);
        let loc = r.header("location").unwrap();
        self.settle().await;
        let op = self.get(key, &loc).await;
        op.expect(200);
        op.json()
    }

    pub async fn settle(&self) {
        let r = self.app.engine().settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
    }

    /// Mines the simulated TRON chain and runs the escrow workers, five rounds: deposits
    /// confirm, payouts settle.
    pub async fn settle_escrows(&self) {
        let tron = self
            .app
            .sim_rail(stablecoin_core::ports::RailId::Tron)
            .expect("sim TRON");
        for _ in 0..5 {
            tron.mine(20);
            let r = self
                .app
                .state()
                .escrow
                .as_ref()
                .expect("escrow engine")
                .settle_all(100)
                .await;
            assert!(r.errors.is_empty(), "{:?}", r.errors);
        }
    }

    /// `POST /v1/transfers/send` of `amount` USDC (a `DIRECT_CRYPTO` quote) from `from`
    /// to `to`: 202 expected; the transfer as answered.
    pub async fn send_usdc(&self, key: &str, from: &str, to: &str, amount: &str) -> Value {
        let r = self
            .post(
                key,
                "/v1/transfers/send",
                &serde_json::json!({"from_phone_number": from, "to_phone_number": to,
                    "token": "USDC", "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
                .to_string(),
            )
            .await;
        r.expect(202);
        r.json()
    }

    /// Gives the tenant a flat fee of `fee` micro-units per transfer, paid to `address`.
    pub async fn flat_tenant_fee(&self, t: &Tenant, fee: u64, address: &str) {
        self.app
            .engine()
            .set_pricing(
                &t.id,
                stablecoin_core::domain::fees::TenantPricing::from_parts(
                    "FLAT",
                    None,
                    None,
                    Some(fee),
                )
                .unwrap(),
                Some(stablecoin_core::ports::ChainAddress(address.to_string())),
            )
            .await
            .unwrap();
    }

    pub async fn treasury(&self, t: &Tenant) -> Micros {
        self.app
            .engine()
            .treasury_balance(&t.id, Token::Usdc)
            .await
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Hex HMAC-SHA256 of `body` under `secret`: the payments family's `X-Webhook-Signature`,
/// computed independently of the server's code.
pub fn hex_hmac(secret: &str, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
