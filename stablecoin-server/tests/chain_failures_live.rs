//! Operations that fail on a real chain give their value back to the tenant (issue #48,
//! item 6), read over HTTP: a funding and a transfer whose user operation reverts on
//! Anvil (the test token refuses a blocked address, `setBlocked`), and a TRON transfer
//! the TRON node refuses at broadcast. Each ends FAILED with a reason; the tenant's
//! treasury (its dashboard) or the wallet's ledger balance (a send of all of it is
//! accepted and settles) is whole again, and nothing moved on chain. The reverted
//! transfer's `transfer.failed` is captured by a receiver over HTTP with the spec's
//! fields and the hash of the bundle that reverted (issue #48, item 5, at the chain).
//!
//! Without an anvil binary the EVM test prints SKIPPED and passes, unless
//! `EVM_REQUIRE_ANVIL` is set; the TRON node runs its native token ledger then, unless
//! `TRON_REQUIRE_ANVIL` is set.

use crate::common::console::Console;
use crate::common::webhook_receiver::recording_receiver;
use crate::common::{self, Server, m, serve, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::evm::EvmAddress;
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, shared_anvil};
use stablecoin_rails::tron::TronAddress;
use stablecoin_server::App;
use stablecoin_server::config::Secret;
use std::sync::Arc;

const A: &str = "+2250700000901";
const B: &str = "+2250700000902";

/// The tenant's USDC treasury as its dashboard shows it (`Treasury USDC` card).
async fn dashboard_treasury(s: &Server, key: &str) -> String {
    let mut c = Console::sign_in(&s.base, key).await;
    let page = c.get("/dashboard").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let card = "<div class=\"l\">Treasury USDC</div><div class=\"v\">";
    let at = page.body.find(card).expect("the treasury card") + card.len();
    page.body[at..].split('<').next().unwrap().to_string()
}

async fn read(s: &Server, key: &str, loc: &str) -> Value {
    let r = s.get(key, loc).await;
    r.expect(200);
    r.json()
}

/// `POST path` (202 expected); its `Location`.
async fn accepted(s: &Server, key: &str, path: &str, body: Value) -> String {
    let r = s.post(key, path, &body.to_string()).await;
    r.expect(202);
    r.header("location").unwrap()
}

fn send_body(amount: &str, token: &str) -> Value {
    json!({"from_phone_number": A, "to_phone_number": B, "token": token,
        "quote_id": format!("DIRECT_CRYPTO:{token}:{amount}")})
}

/// FAILED with a reason that contains `why`, and the transaction that failed on chain
/// when it was mined.
fn assert_failed(op: &Value, why: &str) {
    assert_eq!(op["status"], "FAILED", "{op}");
    let reason = op["error_reason"].as_str().unwrap_or_default();
    assert!(reason.contains(why), "{op}");
}

async fn set_blocked(w: &World, who: &EvmAddress, blocked: bool) {
    w.node
        .send(
            Some(w.usdc),
            abi::call(
                "setBlocked(address,bool)",
                &[Abi::address(&who.0), Abi::uint(u128::from(blocked))],
            ),
            0,
        )
        .await;
}

#[tokio::test]
async fn a_funding_and_a_transfer_reverted_on_anvil_give_their_value_back_to_the_tenant() {
    if !anvil_or_skip() {
        return;
    }
    const SEED: u8 = 0x5c;
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer, |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), common::production::evm_chain(&w, &url));
    config.webhooks_allow_loopback_http = true;
    let s = serve(App::build(config).await.expect("app builds")).await;
    let t = s.tenant("Acme", "100").await;
    let (hook, got) = recording_receiver().await;
    s.post(
        &t.live,
        "/v1/webhook-endpoints",
        &json!({"url": hook, "events": ["transfer.failed"]}).to_string(),
    )
    .await
    .expect(201);
    let fee_account = w
        .account(&KeyPurpose::Wallet("tenant_fee_acme".into()))
        .await;
    s.flat_tenant_fee(&t, 250_000, &fee_account.to_string())
        .await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;
    let address = |p: Value| -> EvmAddress { p["address"].as_str().unwrap().parse().unwrap() };
    let addr_a = address(s.provision(&t.live, A).await);
    let addr_b = address(s.provision(&t.live, B).await);
    assert_eq!(dashboard_treasury(&s, &t.live).await, "100.000000");

    // A funding whose token transfer reverts on chain (the token refuses A).
    set_blocked(&w, &addr_a, true).await;
    let loc = accepted(
        &s,
        &t.live,
        "/v1/users/fund",
        json!({"phone_number": A, "token": "USDC", "amount": "60"}),
    )
    .await;
    assert_eq!(
        dashboard_treasury(&s, &t.live).await,
        "40.000000",
        "held while in flight"
    );
    s.settle().await;
    let f = read(&s, &t.live, &loc).await;
    assert_failed(&f, "blocked");
    let tx = f["tx_hash"]
        .as_str()
        .expect("mined: the bundle that reverted");
    assert!(tx.starts_with("0x"), "{f}");
    assert_eq!(dashboard_treasury(&s, &t.live).await, "100.000000");
    assert_eq!(w.usdc_of(&addr_a).await, 0);
    assert_eq!(w.usdc_of(&treasury).await, 100_000_000);

    // Unblocked, the same treasury funds A.
    set_blocked(&w, &addr_a, false).await;
    let f = s.fund_settled(&t.live, A, "20").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(dashboard_treasury(&s, &t.live).await, "80.000000");

    // A transfer whose recipient leg reverts: the whole batch (recipient, service fee,
    // tenant fee) is undone on chain and every hold on A's balance is released.
    set_blocked(&w, &addr_b, true).await;
    let loc = accepted(&s, &t.live, "/v1/transfers/send", send_body("10", "USDC")).await;
    s.settle().await;
    let tr = read(&s, &t.live, &loc).await;
    assert_failed(&tr, "blocked");
    // Its webhook: the spec's fields, and the reverted bundle's hash as read.
    s.app.state().webhooks.round().await.unwrap();
    let failed: Vec<Value> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap())
        .filter(|v| v["event"] == "transfer.failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let ev = &failed[0];
    let mut fields: Vec<&str> = ev.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "amount_usdc",
            "event",
            "reason",
            "status",
            "token",
            "transfer_id",
            "tx_hash",
            "updated_at"
        ],
        "{ev}"
    );
    assert_eq!(ev["transfer_id"], tr["id"]);
    assert_eq!(ev["status"], "FAILED");
    assert_eq!(ev["tx_hash"], tr["tx_hash"], "{ev}");
    assert!(tr["tx_hash"].as_str().is_some_and(|h| h.starts_with("0x")));
    assert_eq!(w.usdc_of(&addr_a).await, 20_000_000);
    assert_eq!(w.usdc_of(&addr_b).await, 0);
    assert_eq!(w.usdc_of(&fee_account).await, 0);
    // All of A's 20 is available again: a send of all of it is accepted and settles.
    set_blocked(&w, &addr_b, false).await;
    let loc = accepted(&s, &t.live, "/v1/transfers/send", send_body("20", "USDC")).await;
    s.settle().await;
    let tr = read(&s, &t.live, &loc).await;
    assert_eq!(tr["status"], "SETTLED", "{tr}");
    assert_eq!(w.usdc_of(&addr_a).await, 0);
    assert_eq!(
        w.usdc_of(&addr_b).await,
        m(tr["recipient_amount"].as_str().unwrap()).0 as u128
    );
    assert_eq!(w.usdc_of(&fee_account).await, 250_000);
    assert_eq!(dashboard_treasury(&s, &t.live).await, "80.000000");
}

#[tokio::test]
async fn a_transfer_the_tron_node_refuses_gives_the_wallet_its_value_back() {
    use stablecoin_tron_node::{NodeConfig, TronNode, backend_from_env};
    const SEED: u8 = 0x7c;
    const TRX: u64 = 1_000_000;
    /// TriggerSmartContract: the TRC-20 transfer.
    const TRIGGER: i32 = 31;
    let node = TronNode::start(NodeConfig {
        backend: backend_from_env(),
        block_per_head_read: true,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = LocalSigner::from_seed([SEED; 32]);
    let key = signer
        .public_key(&KeyPurpose::Sponsor, Curve::Secp256k1)
        .await
        .unwrap();
    let sponsor = TronAddress::from_public_key(&key.bytes).unwrap();
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 1, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 0, 10_000 * TRX).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.rails.tron_node = Some(common::production::tron_node(node.url(), &usdt));
    let s = serve(App::build(config).await.expect("app builds")).await;
    let t = s.tenant("Acme", "0").await;
    let pa = s.provision_on(&t.live, "tron", A).await;
    let pb = s.provision_on(&t.live, "tron", B).await;
    let addr_a = TronAddress::parse(pa["address"].as_str().unwrap()).unwrap();
    let addr_b = TronAddress::parse(pb["address"].as_str().unwrap()).unwrap();
    node.mint_usdt(addr_a.as_bytes(), 25_000_000).await;
    s.settle().await;

    node.controls().refuse_next_broadcast(
        TRIGGER,
        "CONTRACT_VALIDATE_ERROR",
        "contract validate error : this node refuses the transfer",
    );
    let loc = accepted(
        &s,
        &t.live,
        "/v1/tron/transfers/send",
        send_body("10", "USDT"),
    )
    .await;
    s.settle().await;
    let tr = read(&s, &t.live, &loc).await;
    assert_failed(&tr, "CONTRACT_VALIDATE_ERROR");
    assert_eq!(node.usdt_balance(addr_a.as_bytes()).await, 25_000_000);
    assert_eq!(node.usdt_balance(addr_b.as_bytes()).await, 0);
    // The sponsor's lent resources came back with the refusal.
    for resource in [0, 1] {
        assert_eq!(
            node.delegated(sponsor.as_bytes(), addr_a.as_bytes(), resource)
                .await,
            0
        );
    }
    // All of A's 25 is available again: a send of all of it is accepted and settles.
    let loc = accepted(
        &s,
        &t.live,
        "/v1/tron/transfers/send",
        send_body("25", "USDT"),
    )
    .await;
    s.settle().await;
    let tr = read(&s, &t.live, &loc).await;
    assert_eq!(tr["status"], "SETTLED", "{tr}");
    assert_eq!(node.usdt_balance(addr_a.as_bytes()).await, 0);
    assert_eq!(node.usdt_balance(addr_b.as_bytes()).await, 25_000_000);
}
