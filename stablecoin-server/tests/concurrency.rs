//! Concurrency at the HTTP edge, over real loopback HTTP (issue #33, item 5):
//!
//! - 1,000 concurrent requests carrying ONE idempotency key move money once: on SQLite
//!   (one server), and on PostgreSQL across two servers that share nothing but the
//!   database and the chain (so no in-process guard sees the duplicates: the engine's
//!   idempotency record, committed with the operation, must);
//! - concurrent sends draining one wallet never overdraw it: exactly as many are
//!   accepted as the balance covers, the rest are `422 INSUFFICIENT_FUNDS`, and after
//!   settlement the wallet holds what it was funded minus what was accepted, on the
//!   ledger and on the chain.
//!
//! The PostgreSQL cases need `STABLECOIN_TEST_PG_URL` (`scripts/test-postgres.sh` sets
//! it); without it they print SKIPPED, unless `STABLECOIN_REQUIRE_PG` is set.

use crate::common::shared::{fresh_schema, pg_url, shared_chain};
use crate::common::{Resp, Server, m, serve, temp_dir, test_config};
use futures_util::future::join_all;
use serde_json::json;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, Rail, RailId};
use stablecoin_server::config::{Secret, StorageConfig};
use stablecoin_server::{App, Config};
use std::sync::Arc;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";
const DUPLICATES: usize = 1_000;

/// The test defaults without per-key rate limits: the load comes from one key, and a
/// 429 would hide what the test is about.
fn config() -> Config {
    let mut c = test_config();
    c.rate_limits.enabled = false;
    c
}

async fn sqlite_server() -> Server {
    let mut c = config();
    c.data_dir = temp_dir("concurrency");
    c.storage = StorageConfig::Sqlite {
        path: None,
        max_background: 4,
    };
    serve(App::build(c).await.expect("app builds")).await
}

/// Two servers on a fresh PostgreSQL schema and one shared simulated chain, or `None`
/// (SKIPPED) without a database.
async fn two_pg_servers(test: &str) -> Option<(Server, Server)> {
    let url = pg_url(test)?;
    let mut base = config();
    base.storage = StorageConfig::Postgres {
        url: Secret::new(fresh_schema(&url).await),
        connect_timeout_secs: 30,
    };
    base.sim.chain_url = Some(shared_chain(&base).await);
    let node = |worker: &str| {
        let mut c = base.clone();
        c.engine.worker_id = Some(worker.into());
        c
    };
    let s1 = serve(App::build(node("node-1")).await.expect("app builds")).await;
    let s2 = serve(App::build(node("node-2")).await.expect("app builds")).await;
    Some((s1, s2))
}

fn send_body(amount: &str) -> String {
    json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
        "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
    .to_string()
}

/// The balance the API reports for `phone` (the ledger's).
async fn balance(s: &Server, key: &str, phone: &str) -> Micros {
    let r = s
        .get(
            key,
            &format!(
                "/v1/users/balance?phone_number={}",
                phone.replace('+', "%2B")
            ),
        )
        .await;
    r.expect(200);
    m(r.json()["balance_usdc"].as_str().unwrap())
}

/// A tenant on `s` with B provisioned and A provisioned and funded with 50 USDC: the
/// tenant's live key, and A's provisioning answer (its address).
async fn funded_sender(s: &Server) -> (String, serde_json::Value) {
    let t = s.tenant("Acme", "100").await;
    let a = s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    s.fund_settled(&t.live, A, "50").await;
    (t.live, a)
}

/// `n` sends of `body` (with `idem` as their key, if any), spread over `servers` and
/// released together by a barrier; their answers.
async fn sends_at_once(
    servers: &[&Server],
    n: usize,
    key: &str,
    body: &str,
    idem: Option<&str>,
) -> Vec<Resp> {
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    join_all((0..n).map(|i| {
        let (server, barrier) = (servers[i % servers.len()], barrier.clone());
        async move {
            barrier.wait().await;
            match idem {
                Some(k) => server.post_idem(key, "/v1/transfers/send", body, k).await,
                None => server.post(key, "/v1/transfers/send", body).await,
            }
        }
    }))
    .await
}

/// Fires `DUPLICATES` sends with one key at once, spread over `servers`, and checks
/// that they moved money once: every answer is the one 202 (byte for byte) or 409
/// `IDEMPOTENCY_KEY_IN_USE`, one transfer exists, and after settlement the sender was
/// debited once and paid once on the chain.
async fn duplicates_move_money_once(servers: &[&Server], chain: Arc<dyn Rail>) {
    let s = servers[0];
    let (key, a) = funded_sender(s).await;
    let body = send_body("20");
    let answers = sends_at_once(servers, DUPLICATES, &key, &body, Some("one-key")).await;
    let mut accepted = Vec::new();
    let mut busy = 0;
    for r in &answers {
        match r.status {
            202 => accepted.push(r),
            409 => {
                assert_eq!(r.code(), "IDEMPOTENCY_KEY_IN_USE", "{}", r.text());
                busy += 1;
            }
            other => panic!("unexpected {other}: {}", r.text()),
        }
    }
    assert!(!accepted.is_empty(), "at least the first is accepted");
    assert!(
        accepted.iter().all(|r| r.bytes == accepted[0].bytes),
        "every 202 is the same response"
    );
    assert_eq!(accepted.len() + busy, DUPLICATES);
    // A retry after the storm replays the one answer, on every server.
    for server in servers {
        let again = server
            .post_idem(&key, "/v1/transfers/send", &body, "one-key")
            .await;
        assert_eq!(again.bytes, accepted[0].bytes);
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    }
    let list = s.get(&key, "/v1/transfers").await.json();
    assert_eq!(list["total"], 1, "executed once: {list}");
    s.settle().await;
    let loc = accepted[0].header("location").unwrap();
    assert_eq!(s.get(&key, &loc).await.json()["status"], "SETTLED");
    assert_eq!(balance(s, &key, A).await, m("30"), "debited once");
    assert_eq!(
        on_chain(&chain, &a).await,
        m("30"),
        "paid on the chain once"
    );
}

/// What the chain says `provisioned`'s wallet holds in USDC.
async fn on_chain(chain: &Arc<dyn Rail>, provisioned: &serde_json::Value) -> Micros {
    let address = ChainAddress(provisioned["address"].as_str().unwrap().to_string());
    chain.balance(&address, Token::Usdc).await.unwrap()
}

/// Fires 200 sends of 1 USDC at once (no keys: each is a new transfer) from a wallet
/// funded with 50, spread over `servers`: exactly 50 are accepted, the others are
/// refused for funds, and the wallet never goes below zero, on the ledger or the chain.
async fn concurrent_sends_never_overdraw(servers: &[&Server], chain: Arc<dyn Rail>) {
    const SENDS: usize = 200;
    let s = servers[0];
    let (key, a) = funded_sender(s).await;
    let answers = sends_at_once(servers, SENDS, &key, &send_body("1"), None).await;
    let mut accepted = 0;
    for r in &answers {
        match r.status {
            202 => accepted += 1,
            422 => assert_eq!(r.code(), "INSUFFICIENT_FUNDS", "{}", r.text()),
            other => panic!("unexpected {other}: {}", r.text()),
        }
    }
    assert_eq!(accepted, 50, "exactly what the balance covers");
    s.settle().await;
    for server in servers {
        server.settle().await;
    }
    assert_eq!(balance(s, &key, A).await, Micros::ZERO);
    assert_eq!(on_chain(&chain, &a).await, Micros::ZERO);
    let list = s.get(&key, "/v1/transfers?limit=100").await.json();
    assert_eq!(list["total"], 50, "{list}");
}

fn local_chain(s: &Server) -> Arc<dyn Rail> {
    s.app
        .sim_rail(RailId::Evm(137))
        .expect("an in-process chain")
        .clone()
}

fn remote_chain(s: &Server) -> Arc<dyn Rail> {
    s.app
        .remote_sim_rail(RailId::Evm(137))
        .expect("the shared chain")
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_duplicates_of_one_key_move_money_once_on_sqlite() {
    let s = sqlite_server().await;
    duplicates_move_money_once(&[&s], local_chain(&s)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sends_never_overdraw_a_wallet_on_sqlite() {
    let s = sqlite_server().await;
    concurrent_sends_never_overdraw(&[&s], local_chain(&s)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_duplicates_of_one_key_across_two_servers_on_postgres_move_money_once() {
    let Some((s1, s2)) =
        two_pg_servers("a_thousand_duplicates_of_one_key_across_two_servers_on_postgres").await
    else {
        return;
    };
    duplicates_move_money_once(&[&s1, &s2], remote_chain(&s1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sends_across_two_servers_on_postgres_never_overdraw_a_wallet() {
    let Some((s1, s2)) =
        two_pg_servers("concurrent_sends_across_two_servers_on_postgres_never_overdraw").await
    else {
        return;
    };
    concurrent_sends_never_overdraw(&[&s1, &s2], remote_chain(&s1)).await;
}
