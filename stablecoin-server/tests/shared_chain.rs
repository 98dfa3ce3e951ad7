//! Several server processes on one simulated chain (`[sim] chain_url`, the `sim-chain`
//! command's `SimChainServer`, here a task of the test on 127.0.0.1:0):
//!
//! - two servers' `App`s on ONE PostgreSQL database and one shared chain: money is
//!   funded and sent through server 1, only server 2's workers run, and every transfer
//!   settles, each paid on the chain exactly once; then a send that server 1's worker
//!   submits and server 2's confirms. Needs `STABLECOIN_TEST_PG_URL`
//!   (`scripts/test-postgres.sh` sets it); without it the test prints SKIPPED, unless
//!   `STABLECOIN_REQUIRE_PG` is set, when it fails;
//! - a server on the shared chain settles and mints no float of its own (memory storage);
//! - PostgreSQL storage with a per-process simulated chain refuses to start.

use crate::common::shared::{fresh_schema, pg_url, shared_chain};
use crate::common::{Server, m, serve, test_config};
use serde_json::json;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, RailId};
use stablecoin_server::config::{Secret, StorageConfig};
use stablecoin_server::{App, Config};
use std::sync::Arc;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";
const C: &str = "+2250700000003";

async fn start(config: Config) -> Server {
    serve(App::build(config).await.expect("app builds")).await
}

async fn send(s: &Server, key: &str, from: &str, to: &str, amount: &str) -> String {
    let body = json!({"from_phone_number": from, "to_phone_number": to, "token": "USDC",
        "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")});
    let r = s.post(key, "/v1/transfers/send", &body.to_string()).await;
    r.expect(202);
    r.header("location").unwrap()
}

async fn fund(s: &Server, key: &str, phone: &str, amount: &str) -> String {
    let body = json!({"phone_number": phone, "token": "USDC", "amount": amount});
    let r = s.post(key, "/v1/users/fund", &body.to_string()).await;
    r.expect(202);
    r.header("location").unwrap()
}

#[tokio::test]
async fn two_servers_on_one_database_and_one_chain_settle_each_transfer_once() {
    let Some(url) = pg_url("two_servers_on_one_database_and_one_chain_settle_each_transfer_once")
    else {
        return;
    };
    let mut base = test_config();
    base.storage = StorageConfig::Postgres {
        url: Secret::new(fresh_schema(&url).await),
        connect_timeout_secs: 30,
    };
    base.sim.chain_url = Some(shared_chain(&base).await);
    let config = |worker: &str| {
        let mut c = base.clone();
        c.engine.worker_id = Some(worker.into());
        c
    };
    let s1 = start(config("server-1")).await;
    let s2 = start(config("server-2")).await;
    let chain = s1.app.remote_sim_rail(RailId::Evm(137)).unwrap().clone();
    assert!(
        s1.app.sim_rail(RailId::Evm(137)).is_none(),
        "no chain in the process"
    );
    let accepted_before = chain.submit_count().await.unwrap();

    // Everything through server 1; only server 2's workers run.
    let t = s1.tenant("Shared Co", "100").await;
    let (a, b, c) = (A, B, C);
    let mut addresses = Vec::new();
    for phone in [a, b, c] {
        let p = s1.provision(&t.live, phone).await;
        addresses.push(ChainAddress(p["address"].as_str().unwrap().to_string()));
    }
    let funding = fund(&s1, &t.live, a, "50").await;
    s2.settle().await;
    let f = s1.get(&t.live, &funding).await;
    assert_eq!(f.json()["status"], "SETTLED", "{}", f.text());
    let sends = [
        send(&s1, &t.live, a, b, "10").await,
        send(&s1, &t.live, a, c, "5").await,
        send(&s1, &t.live, a, b, "2").await,
    ];
    s2.settle().await;
    // Server 1 has nothing left to do: server 2 settled it all.
    assert!(s1.app.engine().tick().await.is_idle());
    for loc in &sends {
        let r = s1.get(&t.live, loc).await;
        r.expect(200);
        assert_eq!(r.json()["status"], "SETTLED", "{}", r.text());
    }

    // On the chain: one funding and three sends, each accepted once, paid once.
    assert_eq!(chain.submit_count().await.unwrap() - accepted_before, 4);
    let balance = |i: usize| {
        let (chain, a) = (chain.clone(), addresses[i].clone());
        async move { chain.balance(&a, Token::Usdc).await.unwrap() }
    };
    // The service fee is taken from each send (the amounts received are read back).
    let received = |loc: &String| {
        let loc = loc.clone();
        let (s, key) = (&s1, t.live.clone());
        async move {
            m(s.get(&key, &loc).await.json()["recipient_amount"]
                .as_str()
                .unwrap())
        }
    };
    let to_b = received(&sends[0]).await.get() + received(&sends[2]).await.get();
    let to_c = received(&sends[1]).await.get();
    assert_eq!(balance(1).await, Micros(to_b));
    assert_eq!(balance(2).await, Micros(to_c));
    assert_eq!(balance(0).await, m("33"));

    // Server 1's worker submits, server 2's confirms: only one chain seen by both
    // settles it (on a chain of its own, server 2 would never find the payment).
    let last = send(&s1, &t.live, a, c, "3").await;
    let r = s1.app.engine().tick().await;
    assert_eq!(r.submitted, 1, "{r:?}");
    s2.settle().await;
    let r = s1.get(&t.live, &last).await;
    assert_eq!(r.json()["status"], "SETTLED", "{}", r.text());
    assert_eq!(chain.submit_count().await.unwrap() - accepted_before, 5);
    assert_eq!(balance(0).await, m("30"));
}

#[tokio::test]
async fn a_server_on_the_shared_chain_settles_and_mints_no_float_of_its_own() {
    let mut config = test_config();
    config.sim.treasury_float = "1000".into();
    config.sim.chain_url = Some(shared_chain(&config).await);
    let s1 = start(config.clone()).await;
    // A second server on the same chain (its own memory store) mints nothing either.
    let s2 = start(config).await;
    let chain = s1.app.remote_sim_rail(RailId::Evm(137)).unwrap().clone();
    assert!(s2.app.remote_sim_rail(RailId::Tron).is_some());
    assert!(s2.app.remote_sim_rail(RailId::Solana).is_some());
    let treasury = chain.address_for(&KeyPurpose::Treasury).await.unwrap();
    assert_eq!(
        chain.balance(&treasury, Token::Usdc).await.unwrap(),
        m("1000")
    );
    let ready = s1
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["polygon"], "READY", "{}", ready.text());

    let t = s1.tenant("Acme", "100").await;
    let p = s1.provision(&t.live, A).await;
    let a = ChainAddress(p["address"].as_str().unwrap().to_string());
    let f = s1.fund_settled(&t.live, A, "25").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(chain.balance(&a, Token::Usdc).await.unwrap(), m("25"));
    assert_eq!(
        chain.balance(&treasury, Token::Usdc).await.unwrap(),
        m("975")
    );
}

#[tokio::test]
async fn postgres_with_a_per_process_chain_refuses_to_start() {
    let mut config = test_config();
    // Nothing listens there: the refusal comes before any connection.
    config.storage = StorageConfig::Postgres {
        url: Secret::new("postgres://u:pw@127.0.0.1:1/db"),
        connect_timeout_secs: 1,
    };
    let err = App::build(config.clone()).await.unwrap_err().to_string();
    assert!(err.contains("storage.kind = \"postgres\""), "{err}");
    assert!(err.contains("polygon, tron, solana"), "{err}");
    assert!(err.contains("chain_url"), "{err}");
    // Only the simulated chains matter: with none, the build goes on (to the storage,
    // which is unreachable here).
    let mut none = config.clone();
    none.rails.evm_chains.clear();
    none.rails.tron = false;
    none.rails.solana = false;
    let err = App::build(none).await.unwrap_err().to_string();
    assert!(!err.contains("chain_url"), "{err}");
    // With a shared chain, likewise.
    config.sim.chain_url = Some("http://127.0.0.1:9650".into());
    let err = App::build(config.clone()).await.unwrap_err().to_string();
    assert!(!err.contains("chain_url"), "{err}");
    // SQLite and memory keep the in-process chain.
    for storage in [
        StorageConfig::Memory,
        StorageConfig::Sqlite {
            path: None,
            max_background: 4,
        },
    ] {
        let mut c = test_config();
        c.storage = storage;
        assert_eq!(c.shared_chain_refusal(), None);
    }
    // The chain URL must be loopback HTTP with a port.
    for bad in [
        "http://0.0.0.0:9650",
        "https://127.0.0.1:9650",
        "http://127.0.0.1",
        "http://127.0.0.1:0",
    ] {
        let mut c = test_config();
        c.sim.chain_url = Some(bad.into());
        let err = c.validate().unwrap_err().to_string();
        assert!(err.contains("sim.chain_url"), "{bad}: {err}");
    }
}

/// The server binary with no `STABLECOIN_*` variable of the environment.
fn bin() -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_stablecoin-server"));
    for var in stablecoin_server::config::env_var_names().chain(["STABLECOIN_CONFIG"]) {
        c.env_remove(var);
    }
    c.env("STABLECOIN_MASTER_SEED", "07".repeat(32))
        .env("STABLECOIN_STORAGE", "memory")
        .env("STABLECOIN_LOG", "warn")
        // Ends with the test, whatever happens to it.
        .kill_on_drop(true);
    c
}

#[cfg(unix)]
#[tokio::test]
async fn the_sim_chain_command_hosts_the_configured_chains_on_loopback_only() {
    use stablecoin_rails::sim::http::RemoteSimRail;
    use stablecoin_rails::{SimConfig, SimProfile, SimRail};
    use tokio::io::AsyncBufReadExt;

    let out = bin()
        .args(["sim-chain", "--listen", "0.0.0.0:0"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1 only"));

    let mut child = bin()
        .env("STABLECOIN_SIM_TREASURY_FLOAT", "500")
        .env("STABLECOIN_RAILS_SOLANA", "false")
        .args(["sim-chain", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().expect("a banner");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    let names: Vec<String> = RemoteSimRail::hosted(&url)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["polygon", "tron"]);
    // Keyed by the configuration's seed: the treasury is where this process would put
    // it, and holds the float, minted once.
    let polygon = RemoteSimRail::new(&url, SimProfile::Evm(137)).unwrap();
    let local = SimRail::new(
        SimProfile::Evm(137),
        Arc::new(LocalSigner::from_seed([7; 32])),
        SimConfig::for_profile(SimProfile::Evm(137)),
    );
    let treasury = local.address_for(&KeyPurpose::Treasury).await.unwrap();
    assert_eq!(
        polygon.address_for(&KeyPurpose::Treasury).await.unwrap(),
        treasury
    );
    for token in [Token::Usdc, Token::Usdt] {
        assert_eq!(polygon.balance(&treasury, token).await.unwrap(), m("500"));
    }

    // `check-config` refuses PostgreSQL with per-process chains, accepts the shared one.
    let pg = |c: &mut tokio::process::Command| {
        c.env("STABLECOIN_STORAGE", "postgres")
            .env("STABLECOIN_POSTGRES_URL", "postgres://u@127.0.0.1:1/db")
            .arg("check-config");
    };
    let mut c = bin();
    pg(&mut c);
    let out = c.output().await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("chain_url"));
    let mut c = bin();
    pg(&mut c);
    let out = c
        .env("STABLECOIN_SIM_CHAIN_URL", &url)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("evm 137 (simulated, shared chain)"));

    let pid = child.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    assert_eq!(child.wait().await.unwrap().code(), Some(0));
}
