//! N nodes as one service (issue #46, item 3), over real loopback HTTP: the
//! `stablecoin-server` binary, two processes on one PostgreSQL database and one shared
//! simulated chain.
//!
//! - singleton jobs: each (the chain scan `inbound`, `reconciliation`, `retention`) runs
//!   on exactly one node, as each node's `/health/ready` says and the lease records in
//!   the database agree; when that node is killed (SIGKILL: no release), the other takes
//!   every job over, never before the dead node's lease expired; a node restarted
//!   afterwards runs none of them while the other lives;
//! - rate limits: a key's budget is one budget across the nodes (kept in the database):
//!   with a quota of N, N requests pass spread over both nodes and the next one, on
//!   either node, is `429 RATE_LIMITED` with `Retry-After`; the `RateLimit` headers
//!   count down across the nodes;
//! - PgBouncer: two nodes reaching the database only through PgBouncer in transaction
//!   pooling mode (Debian's, started by `scripts/test-postgres.sh`) fund a wallet and
//!   settle sends once, share a rate budget, and hand a singleton lease to one node;
//! - a node whose database does not answer still limits each key, in its own process.
//!
//! Needs `STABLECOIN_TEST_PG_URL` (`scripts/test-postgres.sh` sets it); without it the
//! cases print SKIPPED, unless `STABLECOIN_REQUIRE_PG` is set.

use crate::common::shared::{fresh_database_behind_pgbouncer, fresh_schema, pg_url, shared_chain};
use crate::common::{METRICS_TOKEN, Server, serve, temp_dir, test_config};
use serde_json::Value;
use stablecoin_core::kernel::LeaseRecord;
use stablecoin_core::ports::get_record;
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig};
use stablecoin_store::{PgConfig, PgStore};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SINGLETONS: [&str; 3] = ["inbound", "reconciliation", "retention"];
/// The lease of a singleton job in these tests (the default): renewed every second, so a
/// node whose renewals starve on a busy machine for a moment keeps its jobs.
const LEASE_MS: u64 = 3_000;

/// A server process, killed (SIGKILL) and reaped when dropped.
struct Node {
    child: Option<std::process::Child>,
    base: String,
    id: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Node {
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// `GET /health/ready` with the metrics token: the `node` object.
    async fn role(&self) -> Option<(String, BTreeSet<String>)> {
        let r = reqwest::Client::new()
            .get(format!("{}/health/ready", self.base))
            .bearer_auth(METRICS_TOKEN)
            .send()
            .await
            .ok()?;
        let body: Value = r.json().await.ok()?;
        let node = body.get("node")?;
        let held = node["singletons"]
            .as_array()?
            .iter()
            .filter_map(|j| j.as_str().map(str::to_string))
            .collect();
        Some((node["id"].as_str()?.to_string(), held))
    }

    async fn held(&self) -> BTreeSet<String> {
        self.role().await.map(|(_, h)| h).unwrap_or_default()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two (or more) nodes' shared environment: the database, the chain, the seed.
struct Cluster {
    dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Cluster {
    async fn start(db_url: &str) -> Cluster {
        let config = test_config();
        let chain = shared_chain(&config).await;
        let env = [
            ("STABLECOIN_STORAGE", "postgres".to_string()),
            ("STABLECOIN_POSTGRES_URL", db_url.to_string()),
            ("STABLECOIN_SIM_CHAIN_URL", chain),
            ("STABLECOIN_MASTER_SEED", "07".repeat(32)),
            ("STABLECOIN_DEMO", "false".into()),
            ("STABLECOIN_METRICS_TOKEN", METRICS_TOKEN.into()),
            ("STABLECOIN_WORKER_INTERVAL_MS", "50".into()),
            ("STABLECOIN_ENGINE_SINGLETON_LEASE_MS", LEASE_MS.to_string()),
            ("STABLECOIN_LOG", "warn".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let dir = temp_dir("nodes");
        std::fs::create_dir_all(&dir).unwrap();
        Cluster { dir, env }
    }

    /// Starts node `id` and waits until it answers.
    async fn node(&self, id: &str) -> Node {
        let port = free_port();
        let data = self.dir.join(id);
        std::fs::create_dir_all(&data).unwrap();
        let log = |ext: &str| std::fs::File::create(self.dir.join(format!("{id}.{ext}"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_stablecoin-server"))
            .arg("serve")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("STABLECOIN_LISTEN", format!("127.0.0.1:{port}"))
            .env("STABLECOIN_DATA_DIR", &data)
            .env("STABLECOIN_ENGINE_WORKER_ID", id)
            .stdin(Stdio::null())
            .stdout(log("out"))
            .stderr(log("log"))
            .spawn()
            .expect("the server starts");
        let node = Node {
            child: Some(child),
            base: format!("http://127.0.0.1:{port}"),
            id: id.into(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while node.role().await.is_none() {
            assert!(
                Instant::now() < deadline,
                "{id} never answered (logs in {:?})",
                self.dir
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        node
    }
}

fn all() -> BTreeSet<String> {
    SINGLETONS.iter().map(|s| s.to_string()).collect()
}

/// Waits (at most `within`) until `node` holds every singleton; how long it took.
async fn until_it_holds_all(node: &Node, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if node.held().await == all() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "{} never took every singleton (holds {:?})",
            node.id,
            node.held().await
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The lease records in the database, by job.
async fn leases(store: &PgStore) -> Vec<LeaseRecord> {
    let mut out = Vec::new();
    for job in SINGLETONS {
        let v = get_record::<LeaseRecord>(store, job)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no lease record of {job}"));
        out.push(v.record);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_singleton_job_runs_on_exactly_one_of_two_nodes_and_moves_when_it_dies() {
    let Some(url) = pg_url("each_singleton_job_runs_on_exactly_one_of_two_nodes") else {
        return;
    };
    let db = fresh_schema(&url).await;
    let store = PgStore::connect(PgConfig::new(db.clone()))
        .await
        .expect("the test reads the database");
    let cluster = Cluster::start(&db).await;

    // Node 1 starts alone and takes every singleton.
    let mut one = cluster.node("node-1").await;
    until_it_holds_all(&one, Duration::from_secs(30)).await;
    // Node 2 joins: across several lease lengths, node 1 keeps every job and node 2
    // runs none; each node's readiness names it.
    let two = cluster.node("node-2").await;
    assert_eq!(one.role().await.unwrap().0, "node-1");
    assert_eq!(two.role().await.unwrap().0, "node-2");
    let watch_until = Instant::now() + Duration::from_millis(LEASE_MS * 2);
    let mut polls = 0;
    while Instant::now() < watch_until {
        let (h1, h2) = (one.held().await, two.held().await);
        assert!(h1.is_disjoint(&h2), "both nodes hold {:?}", &h1 & &h2);
        assert_eq!(h1, all(), "node 1 kept every job");
        polls += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(polls > 3);
    for l in leases(&store).await {
        assert_eq!(l.holder.as_deref(), Some("node-1"), "{l:?}");
    }

    // Node 1 dies without a word (SIGKILL: no release). Node 2 takes every job over,
    // and never before node 1's lease on it expired.
    one.kill();
    // Its last word on each lease (read at once: node 2 may take none before it expires).
    let before = leases(&store).await;
    for l in &before {
        assert_eq!(l.holder.as_deref(), Some("node-1"), "{l:?}");
    }
    let took = until_it_holds_all(&two, Duration::from_secs(30)).await;
    eprintln!(
        "node 2 took the singletons {} ms after node 1 died (lease {LEASE_MS} ms)",
        took.as_millis()
    );
    let after = leases(&store).await;
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(new.holder.as_deref(), Some("node-2"), "{new:?}");
        assert!(
            new.taken_at >= old.expires_at,
            "{} taken at {:?}, before node 1's lease expired at {:?}",
            new.job,
            new.taken_at,
            old.expires_at
        );
    }

    // Node 1 comes back: node 2 keeps the jobs, node 1 runs none.
    let back = cluster.node("node-1").await;
    let watch_until = Instant::now() + Duration::from_millis(LEASE_MS * 2);
    while Instant::now() < watch_until {
        let (h1, h2) = (back.held().await, two.held().await);
        assert!(h1.is_empty(), "the restarted node took {h1:?}");
        assert_eq!(h2, all());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two servers in this process on a fresh schema and one shared chain, with `quota`
/// reads per hour per key (nothing refills during the test).
async fn two_limited_servers(url: &str, quota: u32) -> (Server, Server) {
    let mut base = test_config();
    base.storage = StorageConfig::Postgres {
        url: Secret::new(fresh_schema(url).await),
        connect_timeout_secs: 30,
    };
    base.sim.chain_url = Some(shared_chain(&base).await);
    base.rate_limits.enabled = true;
    base.rate_limits.window_s = 3_600;
    base.rate_limits.read = quota;
    let node = |id: &str| {
        let mut c = base.clone();
        c.engine.worker_id = Some(id.into());
        c
    };
    let s1 = serve(App::build(node("node-1")).await.expect("app builds")).await;
    let s2 = serve(App::build(node("node-2")).await.expect("app builds")).await;
    (s1, s2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keys_rate_budget_is_one_budget_across_two_nodes() {
    let Some(url) = pg_url("a_keys_rate_budget_is_one_budget_across_two_nodes") else {
        return;
    };
    const QUOTA: u32 = 6;
    let (s1, s2) = two_limited_servers(&url, QUOTA).await;
    let t = s1.tenant("Acme", "0").await;
    let other = s2.tenant("Other", "0").await;
    let path = "/v1/transfers";
    // The quota, alternating nodes: each passes, and `RateLimit` counts down across both
    // (an interval of 3600 s / 6 = 600 s: the budget is whole again 600 s per request
    // spent after the last).
    for i in 0..QUOTA {
        let node = if i % 2 == 0 { &s1 } else { &s2 };
        let r = node.get(&t.live, path).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        assert_eq!(
            r.header("ratelimit").as_deref(),
            Some(format!("\"read\";r={};t={}", QUOTA - 1 - i, 600 * (i + 1)).as_str()),
            "request {i}"
        );
        assert_eq!(
            r.header("ratelimit-policy").as_deref(),
            Some(format!("\"read\";q={QUOTA};w=3600").as_str())
        );
    }
    // The next one is refused on either node: N nodes do not give a key N budgets.
    for node in [&s1, &s2] {
        let r = node.get(&t.live, path).await;
        r.expect_err(429, "RATE_LIMITED");
        let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!(
            (590..=600).contains(&retry),
            "Retry-After {retry}: one interval"
        );
        assert_eq!(
            r.header("ratelimit").as_deref(),
            Some("\"read\";r=0;t=3600")
        );
    }
    // Another key's budget is its own.
    assert_eq!(s2.get(&other.live, path).await.status, 200);
    assert_eq!(s1.app.state().rate_limiter.backend(), "shared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_through_pgbouncer_in_transaction_mode_settle_sends_once() {
    let test = "two_nodes_through_pgbouncer_in_transaction_mode_settle_sends_once";
    let Some(url) = fresh_database_behind_pgbouncer(test).await else {
        return;
    };
    let mut base = test_config();
    base.storage = StorageConfig::Postgres {
        url: Secret::new(url),
        connect_timeout_secs: 30,
    };
    base.sim.chain_url = Some(shared_chain(&base).await);
    base.rate_limits.enabled = true;
    base.rate_limits.window_s = 3_600;
    base.rate_limits.read = 20;
    let node = |id: &str| {
        let mut c = base.clone();
        c.engine.worker_id = Some(id.into());
        c
    };
    let s1 = serve(App::build(node("node-1")).await.expect("app builds")).await;
    let s2 = serve(App::build(node("node-2")).await.expect("app builds")).await;
    let t = s1.tenant("Pooled Co", "100").await;
    for phone in ["+2250700000001", "+2250700000002"] {
        s1.provision(&t.live, phone).await;
    }
    // Funded through node 1, settled by node 2's workers.
    let r = s1
        .post(
            &t.live,
            "/v1/users/fund",
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"50"}"#,
        )
        .await;
    r.expect(202);
    let funding = r.header("location").unwrap();
    s2.settle().await;
    assert_eq!(s1.get(&t.live, &funding).await.json()["status"], "SETTLED");
    // Two sends through node 2, settled by node 1.
    let mut sends = Vec::new();
    for amount in ["10", "5"] {
        let body = serde_json::json!({"from_phone_number": "+2250700000001",
            "to_phone_number": "+2250700000002", "token": "USDC",
            "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")});
        let r = s2
            .post(&t.live, "/v1/transfers/send", &body.to_string())
            .await;
        r.expect(202);
        sends.push(r.header("location").unwrap());
    }
    s1.settle().await;
    assert!(s2.app.engine().tick().await.is_idle(), "nothing left to do");
    for loc in &sends {
        let r = s2.get(&t.live, loc).await;
        assert_eq!(r.json()["status"], "SETTLED", "{}", r.text());
    }
    let balance = s1
        .get(&t.live, "/v1/users/balance?phone_number=%2B2250700000001")
        .await;
    balance.expect(200);
    assert!(
        balance.text().contains("\"35"),
        "50 funded, 15 sent: {}",
        balance.text()
    );
    // The rate budget is shared through the pooler too: 20 reads an hour in all, some
    // already spent above; the rest go, then 429 on either node.
    let mut ok = 0;
    for i in 0..40 {
        let node = if i % 2 == 0 { &s1 } else { &s2 };
        match node.get(&t.live, "/v1/transfers").await.status {
            200 => ok += 1,
            429 => {}
            other => panic!("status {other}"),
        }
    }
    assert!(ok < 20, "{ok} reads passed after the earlier ones");
    assert_eq!(s1.get(&t.live, "/v1/transfers").await.status, 429);
    assert_eq!(s2.get(&t.live, "/v1/transfers").await.status, 429);
    // The singleton leases through the pooler: one node takes a job, the other sees it.
    use stablecoin_core::kernel::LeaseStatus;
    let (l1, l2) = (&s1.app.state().leases, &s2.app.state().leases);
    assert!(matches!(
        l1.acquire("inbound").await.unwrap(),
        LeaseStatus::Held { .. }
    ));
    match l2.acquire("inbound").await.unwrap() {
        LeaseStatus::Elsewhere { holder, .. } => assert_eq!(holder, "node-1"),
        other => panic!("{other:?}"),
    }
    l1.release("inbound").await.unwrap();
    assert!(matches!(
        l2.acquire("inbound").await.unwrap(),
        LeaseStatus::Held { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_counts_in_its_own_process_when_the_database_does_not_answer() {
    use stablecoin_server::rate_limit::{Budget, Class, RateLimiter, RateLimits};
    let Some(url) = pg_url("a_node_counts_in_its_own_process_when_the_database_does_not_answer")
    else {
        return;
    };
    let pg = PgStore::connect(PgConfig::new(fresh_schema(&url).await))
        .await
        .unwrap();
    let limits = RateLimits {
        read: Budget {
            quota: 3,
            window_s: 3_600,
        },
        ..RateLimits::default()
    };
    let limiter = RateLimiter::shared(limits, pg.clone());
    assert_eq!(limiter.backend(), "shared");
    assert!(limiter.check("k", Class::Read).await.allowed, "shared");
    // The database goes away: the limits still hold, counted in this process.
    pg.close().await;
    for i in 0..3 {
        assert!(limiter.check("k", Class::Read).await.allowed, "request {i}");
    }
    let d = limiter.check("k", Class::Read).await;
    assert!(!d.allowed && d.retry_after_s >= 1, "{d:?}");
}
