//! Kill tests of the real server (issue #33, item 3): the `stablecoin-server` binary,
//! under a load of keyed sends, is killed with SIGKILL at random points and restarted on
//! the same durable store. The nodes share one simulated chain (`stablecoin-server
//! sim-chain`, its own process), so a payment a killed node put on the chain is still
//! there for whoever resumes it.
//!
//! - SQLite: one server, killed and restarted three times mid-load.
//! - PostgreSQL: three servers on one database, one of them killed mid-load and never
//!   restarted: its claims are taken over once their lease lapses. Needs
//!   `STABLECOIN_TEST_PG_URL` (`scripts/test-postgres.sh` sets it); without it the case
//!   prints SKIPPED, unless `STABLECOIN_REQUIRE_PG` is set.
//!
//! The client retries every send with its idempotency key until a node answers it, as a
//! careful client does. Afterwards:
//! - every acknowledged (202) send is one transfer, and reaches a final state;
//! - no retry created a second transfer;
//! - the ledger and the chain agree on every wallet: nothing paid twice, nothing paid for
//!   a failed transfer;
//! - the webhook receiver got `transfer.settled` for exactly the settled transfers and
//!   `transfer.failed` for exactly the failed ones: none lost, none for a change that was
//!   never recorded.
//!
//! The kill points come from a seed, printed at the start; `KILL_SEED=<n>` replays them.

use crate::common::shared::{fresh_schema, pg_url};
use crate::common::webhook_receiver::{Received, recording_receiver};
use crate::common::{m, temp_dir};
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, Rail};
use stablecoin_rails::sim::SimProfile;
use stablecoin_rails::sim::http::RemoteSimRail;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SEED_HEX: &str = "4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b";
pub(crate) const A: &str = "+2250700000001";
pub(crate) const B: &str = "+2250700000002";
/// Keyed sends of 1 USDC from A to B.
const SENDS: usize = 240;
/// Sends in flight at once.
const CLIENTS: usize = 12;

/// A child process, killed (SIGKILL) and reaped when dropped.
pub(crate) struct Proc(pub(crate) std::process::Child);

impl Proc {
    pub(crate) fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A small deterministic generator (xorshift64*): the kill points of a run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn seed() -> u64 {
    let seed = std::env::var("KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("kill points from KILL_SEED={seed}");
    seed
}

/// The shared chain process and the environment every node gets.
pub(crate) struct Cluster {
    pub(crate) dir: PathBuf,
    env: Vec<(String, String)>,
    pub(crate) chain_url: String,
    _chain: Proc,
    starts: usize,
}

/// A running node: its process and URL.
pub(crate) struct Node {
    pub(crate) proc: Option<Proc>,
    port: u16,
    data: PathBuf,
}

impl Node {
    pub(crate) fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Cluster {
    /// Starts the chain process; `storage` is the nodes' storage environment.
    pub(crate) async fn start(tag: &str, storage: Vec<(String, String)>) -> Cluster {
        let dir = temp_dir(tag);
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let mut env: Vec<(String, String)> = [
            ("STABLECOIN_MASTER_SEED", SEED_HEX.to_string()),
            ("STABLECOIN_SIM_TREASURY_FLOAT", "1000000".to_string()),
            ("STABLECOIN_DEMO_TREASURY_CREDIT", "100000".to_string()),
            ("STABLECOIN_LOG", "warn".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let chain = Command::new(env!("CARGO_BIN_EXE_stablecoin-server"))
            .args(["sim-chain", "--listen", &format!("127.0.0.1:{port}")])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(log_file(&dir, "chain"))
            .spawn()
            .expect("the chain starts");
        let chain = Proc(chain);
        wait_for(&format!("{url}/"), true).await;
        env.extend(storage);
        env.extend(
            [
                ("STABLECOIN_SIM_CHAIN_URL", url.clone()),
                ("STABLECOIN_RATE_LIMITS", "false".into()),
                ("STABLECOIN_WEBHOOKS_ALLOW_NETWORKS", "127.0.0.1/32".into()),
                ("STABLECOIN_WORKER_INTERVAL_MS", "20".into()),
                ("STABLECOIN_ENGINE_POLL_INTERVAL_MS", "50".into()),
                // A dead node's claims lapse quickly, and a payment whose fate a kill
                // left unknown (killed between recording SUBMITTING and the chain's
                // answer) is failed a minute later (the shortest deadline allowed)
                // if the chain never saw it, not ten.
                ("STABLECOIN_ENGINE_CLAIM_LEASE_MS", "1500".into()),
                ("STABLECOIN_ENGINE_PAYMENT_VALIDITY_MS", "60000".into()),
                ("STABLECOIN_ENGINE_UNKNOWN_GRACE_MS", "1000".into()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v)),
        );
        Cluster {
            dir,
            env,
            chain_url: url,
            _chain: chain,
            starts: 0,
        }
    }

    pub(crate) fn node(&self, i: usize) -> Node {
        let data = self.dir.join(format!("node{i}"));
        std::fs::create_dir_all(&data).unwrap();
        Node {
            proc: None,
            port: free_port(),
            data,
        }
    }

    /// Starts (or restarts) `node` and waits until it answers.
    pub(crate) async fn run(&mut self, node: &mut Node) {
        self.starts += 1;
        let out = self.dir.join(format!("start{}.out", self.starts));
        let child = Command::new(env!("CARGO_BIN_EXE_stablecoin-server"))
            .arg("serve")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("STABLECOIN_LISTEN", format!("127.0.0.1:{}", node.port))
            .env("STABLECOIN_DATA_DIR", &node.data)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(log_file(&self.dir, &format!("start{}", self.starts)))
            .spawn()
            .expect("the server starts");
        node.proc = Some(Proc(child));
        wait_for(&format!("{}/health/live", node.base()), false).await;
    }

    /// The demo tenant's live key, from the banner of the first start.
    pub(crate) fn demo_key(&self) -> String {
        let banner = std::fs::read_to_string(self.dir.join("start1.out")).unwrap();
        banner
            .lines()
            .find_map(|l| l.trim().strip_prefix("live key:"))
            .map(|k| k.trim().to_string())
            .unwrap_or_else(|| panic!("no live key in the banner:\n{banner}"))
    }
}

fn log_file(dir: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(dir.join(format!("{name}.log"))).unwrap()
}

/// Waits until `url` answers (any status when `any`, else 200), for at most 60 s.
async fn wait_for(url: &str, any: bool) {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(url).send().await
            && (any || r.status() == 200)
        {
            return;
        }
        assert!(Instant::now() < deadline, "{url} never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A JSON request; `None` when no node answered (connection refused or reset).
pub(crate) async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    key: &str,
    idem: Option<&str>,
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    let mut req = client
        .request(method, url)
        .header("X-API-Key", key)
        .timeout(Duration::from_secs(20));
    if let Some(k) = idem {
        req = req.header("Idempotency-Key", k);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    let r = req.send().await.ok()?;
    let status = r.status().as_u16();
    let bytes = r.bytes().await.ok()?;
    Some((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// Sends `SENDS` keyed transfers through `bases` (round robin, `CLIENTS` at a time),
/// each retried with its key until a node accepts it; the transfer id of every key.
/// `acks` counts the acknowledged sends as they come (the kill points are counts).
async fn load(bases: Vec<String>, key: String, acks: Arc<AtomicUsize>) -> BTreeMap<String, String> {
    let client = reqwest::Client::new();
    let body = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
        "quote_id": "DIRECT_CRYPTO:USDC:1"});
    let next = AtomicUsize::new(0);
    let acked = tokio::sync::Mutex::new(BTreeMap::new());
    let worker = || async {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= SENDS {
                return;
            }
            let idem = format!("kill-{i}");
            let deadline = Instant::now() + Duration::from_secs(120);
            for attempt in 0.. {
                assert!(Instant::now() < deadline, "{idem} was never accepted");
                let base = &bases[(i + attempt) % bases.len()];
                let url = format!("{base}/v1/transfers/send");
                match call(
                    &client,
                    reqwest::Method::POST,
                    &url,
                    &key,
                    Some(&idem),
                    Some(&body),
                )
                .await
                {
                    Some((202, v)) => {
                        let id = v["id"].as_str().unwrap().to_string();
                        acked.lock().await.insert(idem.clone(), id);
                        acks.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                    // In flight elsewhere, or the node is going down: retry the key.
                    Some((409 | 500..=599, _)) | None => {
                        tokio::time::sleep(Duration::from_millis(30)).await;
                    }
                    Some((status, v)) => panic!("{idem}: unexpected {status}: {v}"),
                }
            }
        }
    };
    futures_util::future::join_all((0..CLIENTS).map(|_| worker())).await;
    acked.into_inner()
}

/// Random kill points: `n` increasing counts of acknowledged sends, inside the load.
fn kill_points(rng: &mut Rng, n: usize) -> Vec<usize> {
    let mut points: Vec<usize> = (0..n)
        .map(|_| 20 + rng.below((SENDS - 40) as u64) as usize)
        .collect();
    points.sort();
    points
}

/// Waits until `acks` reaches `n`.
async fn acked_at_least(acks: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while acks.load(Ordering::Relaxed) < n {
        assert!(
            Instant::now() < deadline,
            "the load stalled before {n} acks"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Waits until every transfer in `ids` is final; their views by id.
pub(crate) async fn final_views(
    base: &str,
    key: &str,
    ids: &BTreeSet<String>,
) -> BTreeMap<String, Value> {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut done = BTreeMap::new();
    while done.len() < ids.len() {
        let open: Vec<&String> = ids.iter().filter(|id| !done.contains_key(*id)).collect();
        for id in open {
            let url = format!("{base}/v1/transfers/{id}");
            if let Some((200, v)) = call(&client, reqwest::Method::GET, &url, key, None, None).await
                && matches!(v["status"].as_str(), Some("SETTLED" | "FAILED"))
            {
                done.insert(id.clone(), v);
            }
        }
        if done.len() < ids.len() {
            assert!(
                Instant::now() < deadline,
                "{} of {} transfers never reached a final state",
                ids.len() - done.len(),
                ids.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    done
}

/// The transfer ids of the received webhook deliveries of `event`.
pub(crate) fn delivered(got: &Received, event: &str) -> BTreeSet<String> {
    got.lock()
        .unwrap()
        .iter()
        .filter_map(|(_, body)| serde_json::from_slice::<Value>(body).ok())
        .filter(|v| v["event"] == event)
        .map(|v| v["transfer_id"].as_str().unwrap().to_string())
        .collect()
}

/// Provisions A and B, funds A with 500 USDC (waiting until it settles) and registers
/// the webhook receiver; A's and B's addresses.
async fn prepare(base: &str, key: &str, hooks: &str) -> (ChainAddress, ChainAddress) {
    prepare_funded(base, key, hooks, "500").await
}

/// [`prepare`], funding A with `amount` USDC.
pub(crate) async fn prepare_funded(
    base: &str,
    key: &str,
    hooks: &str,
    amount: &str,
) -> (ChainAddress, ChainAddress) {
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        let (client, url) = (&client, format!("{base}{path}"));
        async move {
            call(client, reqwest::Method::POST, &url, key, None, Some(&body))
                .await
                .expect("the node answers")
        }
    };
    let mut addresses = Vec::new();
    for phone in [A, B] {
        let (status, v) = post("/v1/users/provision", json!({"phone_number": phone})).await;
        assert_eq!(status, 200, "{v}");
        addresses.push(ChainAddress(v["address"].as_str().unwrap().to_string()));
    }
    let (status, v) = post(
        "/v1/webhook-endpoints",
        json!({"url": hooks, "events": ["transfer.settled", "transfer.failed"]}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let (status, v) = post(
        "/v1/users/fund",
        json!({"phone_number": A, "token": "USDC", "amount": amount}),
    )
    .await;
    assert_eq!(status, 202, "{v}");
    let url = format!("{base}/v1/fundings/{}", v["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let f = call(&client, reqwest::Method::GET, &url, key, None, None).await;
        if let Some((200, f)) = f
            && f["status"] == "SETTLED"
        {
            break;
        }
        assert!(Instant::now() < deadline, "the funding never settled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (addresses.remove(0), addresses.remove(0))
}

/// The checks after the load (see the module docs).
async fn check(
    base: &str,
    key: &str,
    chain_url: &str,
    acked: &BTreeMap<String, String>,
    got: &Received,
    (a, b): (ChainAddress, ChainAddress),
) {
    assert_eq!(acked.len(), SENDS, "every send was acknowledged");
    let ids: BTreeSet<String> = acked.values().cloned().collect();
    assert_eq!(ids.len(), SENDS, "one transfer per key");
    let views = final_views(base, key, &ids).await;
    let client = reqwest::Client::new();
    let (_, list) = call(
        &client,
        reqwest::Method::GET,
        &format!("{base}/v1/transfers?limit=1"),
        key,
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(list["total"], SENDS, "no retry created another transfer");
    let settled: BTreeSet<String> = views
        .iter()
        .filter(|(_, v)| v["status"] == "SETTLED")
        .map(|(id, _)| id.clone())
        .collect();
    let failed: BTreeSet<String> = ids.difference(&settled).cloned().collect();
    eprintln!("{} settled, {} failed", settled.len(), failed.len());
    assert!(!settled.is_empty());
    let sum = |field: &str| {
        Micros(
            settled
                .iter()
                .map(|id| m(views[id][field].as_str().unwrap()).get())
                .sum(),
        )
    };
    let (sent, received) = (sum("amount"), sum("recipient_amount"));
    let balance = |phone: &'static str| {
        let client = client.clone();
        async move {
            let url = format!(
                "{base}/v1/users/balance?phone_number={}",
                phone.replace('+', "%2B")
            );
            let (_, v) = call(&client, reqwest::Method::GET, &url, key, None, None)
                .await
                .unwrap();
            m(v["balance_usdc"].as_str().unwrap())
        }
    };
    let chain = RemoteSimRail::new(chain_url, SimProfile::Evm(137)).unwrap();
    let expect_a = Micros(m("500").get() - sent.get());
    assert_eq!(balance(A).await, expect_a, "A's ledger");
    assert_eq!(balance(B).await, received, "B's ledger");
    assert_eq!(
        chain.balance(&a, Token::Usdc).await.unwrap(),
        expect_a,
        "A on the chain: nothing paid twice or for a failed transfer"
    );
    assert_eq!(chain.balance(&b, Token::Usdc).await.unwrap(), received);
    // Webhooks: every final state delivered, nothing else.
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered(got, "transfer.settled") != settled
        || delivered(got, "transfer.failed") != failed
    {
        let (s, f) = (
            delivered(got, "transfer.settled"),
            delivered(got, "transfer.failed"),
        );
        assert!(
            s.is_subset(&settled) && f.is_subset(&failed),
            "an event for a change never recorded: {:?} {:?}",
            s.difference(&settled).collect::<Vec<_>>(),
            f.difference(&failed).collect::<Vec<_>>()
        );
        assert!(
            Instant::now() < deadline,
            "webhooks lost: {} of {} settled, {} of {} failed delivered",
            s.len(),
            settled.len(),
            f.len(),
            failed.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_mid_load_on_sqlite_loses_and_repeats_nothing() {
    let mut rng = Rng(seed());
    let mut cluster = Cluster::start("kill-sqlite", vec![]).await;
    let mut node = cluster.node(1);
    cluster.run(&mut node).await;
    let key = cluster.demo_key();
    let (hooks, got) = recording_receiver().await;
    let addresses = prepare(&node.base(), &key, &hooks).await;
    let acks = Arc::new(AtomicUsize::new(0));
    let load = tokio::spawn(load(vec![node.base()], key.clone(), acks.clone()));
    for point in kill_points(&mut rng, 3) {
        acked_at_least(&acks, point).await;
        node.proc.take().unwrap().kill();
        eprintln!("killed after {} acks", acks.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
        cluster.run(&mut node).await;
    }
    let acked = load.await.unwrap();
    assert_eq!(
        cluster.starts, 4,
        "started, then killed and restarted three times"
    );
    let chain_url = cluster.chain_url.clone();
    check(&node.base(), &key, &chain_url, &acked, &got, addresses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_three_servers_on_postgres_killed_mid_load_loses_and_repeats_nothing() {
    let Some(url) = pg_url("one_of_three_servers_on_postgres_killed_mid_load") else {
        return;
    };
    let mut rng = Rng(seed());
    let storage = vec![
        ("STABLECOIN_STORAGE".to_string(), "postgres".to_string()),
        (
            "STABLECOIN_POSTGRES_URL".to_string(),
            fresh_schema(&url).await,
        ),
    ];
    let mut cluster = Cluster::start("kill-pg", storage).await;
    let mut nodes: Vec<Node> = (1..=3).map(|i| cluster.node(i)).collect();
    // The first start creates the demo tenant (and prints its key); then the others.
    for node in nodes.iter_mut() {
        cluster.run(node).await;
    }
    let key = cluster.demo_key();
    let (hooks, got) = recording_receiver().await;
    let addresses = prepare(&nodes[0].base(), &key, &hooks).await;
    let bases: Vec<String> = nodes.iter().map(Node::base).collect();
    let acks = Arc::new(AtomicUsize::new(0));
    let load = tokio::spawn(load(bases, key.clone(), acks.clone()));
    acked_at_least(&acks, kill_points(&mut rng, 1)[0]).await;
    // Node 2 dies holding whatever it had claimed; nodes 1 and 3 take over its claims
    // once their lease lapses. The client's retries reach the live nodes.
    nodes[1].proc.take().unwrap().kill();
    eprintln!("node 2 killed after {} acks", acks.load(Ordering::Relaxed));
    let acked = load.await.unwrap();
    let chain_url = cluster.chain_url.clone();
    check(&nodes[0].base(), &key, &chain_url, &acked, &got, addresses).await;
}
