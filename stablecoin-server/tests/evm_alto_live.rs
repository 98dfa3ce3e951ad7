//! The reference server on a real EVM chain bundled by an external ERC-4337 bundler:
//! Anvil (chain id 8453, Base) with EntryPoint v0.8 at its canonical address, Alto
//! (`@pimlico/alto`, listening on 127.0.0.1 only) in front of it, and `[rails.evm.8453]`
//! naming Alto as its `bundler_url`, on SQLite, over loopback HTTP; then a send whose
//! `eth_sendUserOperation` reply is lost, reconciled by its user-operation hash; and a
//! send Alto drops (its mempool cleared, as a restart does), handed over again, the same
//! operation, and paid once. Base, not Polygon:
//! on chain 137 Alto prices gas from Polygon's public gas station, off the machine.
//!
//! Without Anvil and Alto the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set (as `scripts/test` does).

use crate::common;

use crate::common::{m, serve, temp_dir, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::testkit::{Alto, Anvil, ENTRY_POINT_V08, World, alto_or_skip};
use stablecoin_rails::evm::{EvmAddress, JsonRpc};
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig};
use std::sync::Arc;
use std::time::Duration;

const SEED: u8 = 0x7a;
const A: &str = "+2250700000801";
const B: &str = "+2250700000802";

/// Runs the workers until the operation at `loc` is final (an external bundler mines
/// its bundle a moment after accepting the operation); its final state.
async fn settled(s: &common::Server, key: &str, loc: &str) -> Value {
    for _ in 0..300 {
        s.settle().await;
        let r = s.get(key, loc).await;
        r.expect(200);
        let v = r.json();
        if ["SETTLED", "COMPLETED", "REFUNDED", "FAILED"]
            .contains(&v["status"].as_str().unwrap_or(""))
        {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{loc} never settled");
}

/// The bundle transaction `tx`: a successful `handleOps` to the canonical EntryPoint,
/// sent by Alto's executor, not by the service's sponsor key.
async fn assert_bundled_by_alto(w: &World, alto: &Alto, sponsor: &EvmAddress, tx: &str) {
    let t = w
        .node
        .rpc
        .request("eth_getTransactionByHash", json!([tx]))
        .await
        .unwrap();
    assert_eq!(t["to"], json!(ENTRY_POINT_V08.to_hex()), "{t}");
    assert_eq!(t["from"], json!(alto.executor.to_hex()), "{t}");
    assert_ne!(t["from"], json!(sponsor.to_hex()));
    let r = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([tx]))
        .await
        .unwrap();
    assert_eq!(r["status"], "0x1");
}

/// A loopback HTTP hop in front of Alto that can lose an answer: when armed, it forwards
/// the next `eth_sendUserOperation` to Alto (which takes it) and then closes the
/// connection without a word, as a network that drops the reply would. It counts every
/// `eth_sendUserOperation` it forwards, and keeps each one's operation and Alto's answer.
struct LossyHop {
    url: String,
    armed: Arc<std::sync::atomic::AtomicBool>,
    sends: Arc<std::sync::atomic::AtomicUsize>,
    /// `(params, Alto's answer)` of each `eth_sendUserOperation`, in order.
    sent: Arc<std::sync::Mutex<Vec<(Value, Value)>>>,
}

impl LossyHop {
    async fn start(upstream: &str) -> LossyHop {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sends = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (a, n, log, upstream) = (
            armed.clone(),
            sends.clone(),
            sent.clone(),
            upstream.to_string(),
        );
        let http = reqwest::Client::new();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let (a, n, log, upstream, http) = (
                    a.clone(),
                    n.clone(),
                    log.clone(),
                    upstream.clone(),
                    http.clone(),
                );
                tokio::spawn(async move {
                    // One request per connection (answered with `Connection: close`).
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    let body = loop {
                        let Ok(k) = conn.read(&mut chunk).await else {
                            return;
                        };
                        if k == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..k]);
                        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break buf[end + 4..end + 4 + len].to_vec();
                        }
                    };
                    let request = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
                    let is_send = request["method"] == "eth_sendUserOperation";
                    if is_send {
                        n.fetch_add(1, Ordering::SeqCst);
                    }
                    let answer = http
                        .post(&upstream)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await;
                    let Ok(answer) = answer else { return };
                    let status = answer.status().as_u16();
                    let Ok(text) = answer.bytes().await else {
                        return;
                    };
                    if is_send {
                        let reply = serde_json::from_slice(&text).unwrap_or(Value::Null);
                        log.lock().unwrap().push((request["params"].clone(), reply));
                    }
                    if is_send && a.swap(false, Ordering::SeqCst) {
                        return; // Alto took it; the reply is lost.
                    }
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        text.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(&text).await;
                });
            }
        });
        LossyHop {
            url,
            armed,
            sends,
            sent,
        }
    }
}

#[tokio::test]
async fn the_server_settles_fund_and_send_with_fees_through_an_external_bundler() {
    if !alto_or_skip() {
        return;
    }
    let anvil = Anvil::start(8453, true);
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_canonical(&anvil.url, 8453, signer.clone(), |_| {}).await;
    let alto = Alto::start(&w.node, &anvil.url).await;
    let dir = temp_dir("evm-alto-live");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.evm_chains = vec![8453];
    let mut chain = common::production::evm_chain(&w, &anvil.url);
    // Alto behind a hop that can lose a reply (the last part of the test).
    let hop = LossyHop::start(&alto.url).await;
    chain.bundler_url = Some(Secret::new(hop.url.clone()));
    config.rails.evm.insert("8453".into(), chain);
    let app = App::build(config).await.expect("app builds");
    assert!(
        !app.banner("127.0.0.1:8080".parse().unwrap())
            .contains(&hop.url),
        "the bundler URL is a secret"
    );
    let s = serve(app).await;
    // Ready: the bundler serves the chain's EntryPoint.
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["base"], "READY", "{}", ready.text());

    let sponsor = stablecoin_rails::evm::testkit::owner_of(&*signer, &KeyPurpose::Sponsor).await;
    // The service's own key pays for no bundle: leave it nothing to pay with.
    w.node.set_balance(&sponsor, 0).await;
    let t = s.tenant("Acme", "100").await;
    let fee_account = w
        .account(&KeyPurpose::Wallet("tenant_fee_acme".into()))
        .await;
    s.flat_tenant_fee(&t, 250_000, &fee_account.to_string())
        .await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;
    let pa = s.provision(&t.live, A).await;
    let pb = s.provision(&t.live, B).await;
    let addr_a: EvmAddress = pa["address"].as_str().unwrap().parse().unwrap();
    let addr_b: EvmAddress = pb["address"].as_str().unwrap().parse().unwrap();

    // Fund A through Alto.
    let r = s
        .post(
            &t.live,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "20"}).to_string(),
        )
        .await;
    r.expect(202);
    let f = settled(&s, &t.live, &r.header("location").unwrap()).await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(w.usdc_of(&addr_a).await, 20_000_000);
    assert_eq!(w.usdc_of(&treasury).await, 80_000_000);
    assert_bundled_by_alto(&w, &alto, &sponsor, f["tx_hash"].as_str().unwrap()).await;

    // A -> B with the service fee (0.30%) and the tenant's flat fee, in one operation.
    let r = s
        .post(
            &t.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                    "quote_id": "DIRECT_CRYPTO:USDC:10"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let sent = r.json();
    let tr = settled(&s, &t.live, &r.header("location").unwrap()).await;
    assert_eq!(tr["status"], "SETTLED", "{tr}");
    let tx = tr["tx_hash"].as_str().unwrap();
    assert_ne!(tx, f["tx_hash"].as_str().unwrap());
    assert_bundled_by_alto(&w, &alto, &sponsor, tx).await;
    let service_fee = m(sent["service_fee"].as_str().unwrap()).0 as u128;
    let tenant_fee = m(sent["tenant_fee"].as_str().unwrap()).0 as u128;
    let received = m(sent["recipient_amount"].as_str().unwrap()).0 as u128;
    assert_eq!((service_fee, tenant_fee), (30_000, 250_000));
    assert_eq!(received + service_fee + tenant_fee, 10_000_000);
    let fees = w.account(&KeyPurpose::ServiceFees).await;
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000);
    assert_eq!(w.usdc_of(&addr_b).await, received);
    assert_eq!(w.usdc_of(&fees).await, service_fee);
    assert_eq!(w.usdc_of(&fee_account).await, tenant_fee);
    let bal = s
        .get(
            &t.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await;
    bal.expect(200);
    assert_eq!(bal.json()["balance_usdc"], "10.000000", "{}", bal.text());
    // Sponsored: neither account nor the service's key spent native coin.
    assert_eq!(w.node.native_balance(&addr_a).await, 0);
    assert_eq!(w.node.native_balance(&addr_b).await, 0);
    assert_eq!(w.node.native_balance(&sponsor).await, 0);

    // Lost response: Alto takes B -> A but its reply never arrives. The operation is
    // found by its user-operation hash (Alto's receipt), never sent a second time.
    let before = hop.sends.load(std::sync::atomic::Ordering::SeqCst);
    hop.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = s
        .post(
            &t.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": B, "to_phone_number": A, "token": "USDC",
                    "quote_id": "DIRECT_CRYPTO:USDC:1"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let back = r.json();
    let lost = settled(&s, &t.live, &r.header("location").unwrap()).await;
    assert!(
        !hop.armed.load(std::sync::atomic::Ordering::SeqCst),
        "the reply to the send was dropped"
    );
    assert_eq!(lost["status"], "SETTLED", "{lost}");
    assert_eq!(
        hop.sends.load(std::sync::atomic::Ordering::SeqCst) - before,
        1,
        "one eth_sendUserOperation: reconciled by hash, never sent again"
    );
    assert_bundled_by_alto(&w, &alto, &sponsor, lost["tx_hash"].as_str().unwrap()).await;
    let back_received = m(back["recipient_amount"].as_str().unwrap()).0 as u128;
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000 + back_received);
    assert_eq!(
        w.usdc_of(&addr_b).await,
        received - 1_000_000,
        "B paid the whole 1 USDC (fees come out of it)"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Alto's JSON-RPC `method` with `params`, straight to Alto (not through the service).
async fn alto_call(alto: &Alto, method: &str, params: Value) -> Result<Value, String> {
    let rpc = stablecoin_rails::evm::HttpJsonRpc::new(&alto.url, Duration::from_secs(10));
    rpc.request(method, params).await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_user_operation_the_bundler_drops_is_handed_over_again_and_pays_once() {
    use std::sync::atomic::Ordering;
    if !alto_or_skip() {
        return;
    }
    let anvil = Anvil::start(8453, true);
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_canonical(&anvil.url, 8453, signer.clone(), |_| {}).await;
    let alto = Alto::start(&w.node, &anvil.url).await;
    let dir = temp_dir("evm-alto-dropped");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.evm_chains = vec![8453];
    let mut chain = common::production::evm_chain(&w, &anvil.url);
    let hop = LossyHop::start(&alto.url).await;
    chain.bundler_url = Some(Secret::new(hop.url.clone()));
    // Handed over again at most every 300 ms (default 30 s), so the test stays short.
    chain.bundler_resend_after_ms = 300;
    config.rails.evm.insert("8453".into(), chain);
    let s = serve(App::build(config).await.expect("app builds")).await;
    let t = s.tenant("Acme", "100").await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;
    let pa = s.provision(&t.live, A).await;
    let pb = s.provision(&t.live, B).await;
    let addr_a: EvmAddress = pa["address"].as_str().unwrap().parse().unwrap();
    let addr_b: EvmAddress = pb["address"].as_str().unwrap().parse().unwrap();
    let r = s
        .post(
            &t.live,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "20"}).to_string(),
        )
        .await;
    r.expect(202);
    let f = settled(&s, &t.live, &r.header("location").unwrap()).await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(w.usdc_of(&addr_a).await, 20_000_000);

    // Alto holds what it accepts (manual bundling), so the send waits in its mempool.
    alto_call(&alto, "debug_bundler_setBundlingMode", json!(["manual"]))
        .await
        .unwrap();
    let before = hop.sends.load(Ordering::SeqCst);
    let r = s
        .post(
            &t.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                    "quote_id": "DIRECT_CRYPTO:USDC:10"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let sent = r.json();
    let loc = r.header("location").unwrap();
    for _ in 0..100 {
        if hop.sends.load(Ordering::SeqCst) > before {
            break;
        }
        s.settle().await;
    }
    // The first hand-over (a status poll may already have handed it over again: Alto
    // answers that one "Already known").
    let (op, answer) = hop.sent.lock().unwrap()[before].clone();
    let hash = answer["result"]
        .as_str()
        .unwrap_or_else(|| panic!("Alto did not take it: {answer}"))
        .to_string();
    let dump = alto_call(
        &alto,
        "debug_bundler_dumpMempool",
        json!([ENTRY_POINT_V08.to_hex()]),
    )
    .await
    .unwrap();
    assert_eq!(dump.as_array().map(Vec::len), Some(1), "{dump}");

    // Alto loses its mempool (as a restart does): it no longer knows the operation.
    alto_call(&alto, "debug_bundler_clearState", json!([]))
        .await
        .unwrap();
    for m in ["eth_getUserOperationReceipt", "eth_getUserOperationByHash"] {
        assert_eq!(
            alto_call(&alto, m, json!([hash])).await.unwrap(),
            Value::Null,
            "{m}"
        );
    }
    alto_call(&alto, "debug_bundler_setBundlingMode", json!(["auto"]))
        .await
        .unwrap();
    let tr = settled(&s, &t.live, &loc).await;
    assert_eq!(tr["status"], "SETTLED", "{tr}");

    // Handed over again: the same signed operation (same hash, same nonce).
    let log = hop.sent.lock().unwrap().clone();
    let again = &log[log.len() - (hop.sends.load(Ordering::SeqCst) - before)..];
    assert!(again.len() >= 2, "sent, then re-sent: {again:?}");
    assert!(
        again.iter().all(|(p, _)| *p == op),
        "one operation: {again:?}"
    );
    assert!(
        again.iter().any(|(_, a)| a["result"] == json!(hash)),
        "same hash: {again:?}"
    );
    let receipt = alto_call(&alto, "eth_getUserOperationReceipt", json!([hash]))
        .await
        .unwrap();
    assert_eq!(
        receipt["receipt"]["transactionHash"], tr["tx_hash"],
        "{receipt}"
    );

    // Paid once: A paid 10 USDC once and B got its share once.
    let received = m(sent["recipient_amount"].as_str().unwrap()).0 as u128;
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000);
    assert_eq!(w.usdc_of(&addr_b).await, received);
    // And can never pay twice: the same operation handed over once more is refused by
    // the EntryPoint's simulation (its account is deployed, AA10, and its nonce used,
    // AA25), and nothing moves.
    let refused = alto_call(&alto, "eth_sendUserOperation", op).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("AA10") || e.contains("AA25")),
        "{refused:?}"
    );
    s.settle().await;
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000);
    assert_eq!(w.usdc_of(&addr_b).await, received);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
