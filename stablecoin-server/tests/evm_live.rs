//! The reference server on a real EVM chain: Anvil (chain id 137) running EntryPoint v0.8,
//! SimpleAccountFactory, the service's VerifyingPaymaster and a 6-decimal USDC, configured
//! through `[rails.evm.137]` exactly as an operator would, on SQLite, over loopback HTTP.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set (as `scripts/test` does).

use crate::common;

use crate::common::{m, serve, temp_dir, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::JsonRpc;
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::testkit::{World, find_anvil, owner_of, shared_anvil};
use stablecoin_server::App;
use stablecoin_server::config::{EvmChainSettings, Secret, StorageConfig};
use stablecoin_signer::service::{SignerService, spawn_on_loopback};
use std::sync::Arc;

const SEED: u8 = 0x5e;
const A: &str = "+2250700000701";
const B: &str = "+2250700000702";

fn settings(w: &World, url: &str) -> EvmChainSettings {
    common::production::evm_chain(w, url)
}

async fn factory_address(w: &World, owner: &str) -> String {
    let out = w
        .node
        .eth()
        .call(
            &w.config.factory,
            &abi::call(
                "getAddress(address,uint256)",
                &[
                    Abi::address(
                        &owner
                            .parse::<stablecoin_rails::evm::EvmAddress>()
                            .unwrap()
                            .0,
                    ),
                    Abi::uint(0),
                ],
            ),
        )
        .await
        .unwrap();
    abi::word(&out, 0)
        .map(|w| stablecoin_rails::evm::rpc::topic_address(&w).to_string())
        .unwrap()
}

/// `GET /v1/users/balance` USDC, in micro-units.
async fn usdc_balance(s: &common::Server, key: &str, phone: &str) -> u128 {
    let r = s
        .get(
            key,
            &format!("/v1/users/balance?phone_number=%2B{}", &phone[1..]),
        )
        .await;
    r.expect(200);
    m(r.json()["balance_usdc"].as_str().unwrap()).0 as u128
}

async fn op_status(s: &common::Server, key: &str, loc: &str) -> Value {
    let r = s.get(key, loc).await;
    r.expect(200);
    r.json()
}

/// Sends `amount` USDC from `from` to `to` and settles it; the accepted answer (with
/// its fees) and the settled transfer.
async fn send_settled(
    s: &common::Server,
    key: &str,
    from: &str,
    to: &str,
    amount: &str,
) -> (Value, Value) {
    let r = s
        .post(
            key,
            "/v1/transfers/send",
            &json!({"from_phone_number": from, "to_phone_number": to, "token": "USDC",
                    "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
            .to_string(),
        )
        .await;
    r.expect(202);
    let loc = r.header("location").unwrap();
    s.settle().await;
    let tr = op_status(s, key, &loc).await;
    assert_eq!(tr["status"], "SETTLED", "{tr}");
    (r.json(), tr)
}

#[tokio::test]
async fn the_server_runs_a_real_evm_chain_configured_by_its_operator() {
    if find_anvil().is_none() {
        assert!(
            std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
            "EVM_REQUIRE_ANVIL is set but no anvil binary was found"
        );
        eprintln!("SKIPPED: no anvil binary");
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer.clone(), |_| {}).await;
    let dir = temp_dir("evm-live");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.evm_chains = vec![137, 8453];
    config.rails.evm.insert("137".into(), settings(&w, &url));
    let (app, clock) = common::build_shifted(config.clone()).await;

    // The banner tells the operator what to fund; the other chain stays simulated.
    let banner = app.banner("127.0.0.1:8080".parse().unwrap());
    let sponsor = owner_of(&*signer, &KeyPurpose::Sponsor).await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    assert!(banner.contains("real polygon"), "{banner}");
    assert!(banner.contains("simulated base"), "{banner}");
    assert!(banner.contains(&sponsor.to_string()), "{banner}");
    assert!(banner.contains(&treasury.to_string()), "{banner}");
    assert!(!banner.contains(&url), "the RPC URL is a secret");

    let s = serve(app).await;
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["polygon"], "READY", "{}", ready.text());
    assert_eq!(ready.json()["base"], "READY");

    let t = s.tenant("Acme", "100").await;
    let fee_account = w
        .account(&KeyPurpose::Wallet("tenant_fee_acme".into()))
        .await;
    s.flat_tenant_fee(&t, 250_000, &fee_account.to_string())
        .await;
    // The treasury account holds the tokens fundings pay out (the operator's deposit).
    w.mint(w.usdc, &treasury, 100_000_000).await;

    // Provisioning is offline and gives the factory's counterfactual address.
    let pa = s.provision(&t.live, A).await;
    let pb = s.provision(&t.live, B).await;
    for p in [&pa, &pb] {
        assert_eq!(p["rail"], "polygon");
        let owner = owner_of(
            &*signer,
            &KeyPurpose::Wallet(p["wallet_id"].as_str().unwrap().into()),
        )
        .await;
        assert_eq!(
            p["address"].as_str().unwrap().to_lowercase(),
            factory_address(&w, &owner.to_string()).await.to_lowercase()
        );
        let code = w
            .node
            .eth()
            .code(&p["address"].as_str().unwrap().parse().unwrap())
            .await
            .unwrap();
        assert!(code.is_empty(), "not deployed by provisioning");
    }
    let addr_a: stablecoin_rails::evm::EvmAddress =
        pa["address"].as_str().unwrap().parse().unwrap();
    let addr_b: stablecoin_rails::evm::EvmAddress =
        pb["address"].as_str().unwrap().parse().unwrap();

    // Fund A on chain.
    let f = s.fund_settled(&t.live, A, "20").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(w.usdc_of(&addr_a).await, 20_000_000);
    // tx_hash is the bundle transaction: a handleOps call to the EntryPoint.
    let tx = f["tx_hash"].as_str().unwrap();
    let onchain = w
        .node
        .rpc
        .request("eth_getTransactionByHash", json!([tx]))
        .await
        .unwrap();
    assert_eq!(
        onchain["to"].as_str().unwrap().to_lowercase(),
        w.config.entry_point.to_string().to_lowercase()
    );

    // P2P with the service fee (0.30%) and the tenant's flat fee in one bundle.
    let (sent, _) = send_settled(&s, &t.live, A, B, "10").await;
    let service_fee = m(sent["service_fee"].as_str().unwrap()).0 as u128;
    let tenant_fee = m(sent["tenant_fee"].as_str().unwrap()).0 as u128;
    let received = m(sent["recipient_amount"].as_str().unwrap()).0 as u128;
    assert_eq!(service_fee, 30_000);
    assert_eq!(tenant_fee, 250_000);
    assert_eq!(received + service_fee + tenant_fee, 10_000_000);
    let fees = w.account(&KeyPurpose::ServiceFees).await;
    assert_eq!(w.usdc_of(&addr_b).await, received);
    assert_eq!(w.usdc_of(&fee_account).await, tenant_fee);
    assert_eq!(w.usdc_of(&fees).await, service_fee);
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000);
    let bal = s
        .get(
            &t.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await;
    bal.expect(200);
    assert_eq!(bal.json()["balance_usdc"], "10.000000", "{}", bal.text());
    // All gas sponsored: the accounts never held native coin.
    assert_eq!(w.node.native_balance(&addr_a).await, 0);
    assert_eq!(w.node.native_balance(&addr_b).await, 0);

    // An external ERC-20 transfer into B is credited once, from the scanner.
    w.mint(w.usdc, &addr_b, 3_000_000).await;
    s.settle().await;
    assert_eq!(usdc_balance(&s, &t.live, B).await, received + 3_000_000);
    let cursor = s
        .app
        .engine()
        .ports()
        .store
        .get("scan_cursor", "polygon")
        .await
        .unwrap()
        .expect("the scan cursor is persisted");
    let scanned_to: u64 = cursor.body.to_value().unwrap()["positions"]["wallet"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(scanned_to > 0, "{cursor:?}");

    // Sponsor health: a bundler below its threshold stops sends with a reason (503)
    // before they would fail on chain; provisioning and reads go on.
    w.node.set_balance(&sponsor, 1).await;
    let ttl = s.app.engine().config().readiness_cache_ms;
    clock.advance_ms(ttl + 1);
    let r = s
        .post(
            &t.live,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "1"}).to_string(),
        )
        .await;
    r.expect_err(503, "RAIL_NOT_READY");
    assert!(r.text().contains("bundler"), "{}", r.text());
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["polygon"], "INBOUND_READY", "{}", ready.text());
    w.node
        .set_balance(&sponsor, 10 * stablecoin_rails::evm::testkit::ETH)
        .await;
    let mut s = s;
    s.shutdown().await;
    drop(s);

    // A restart on the same database: same addresses, nothing credited twice.
    let app = App::build(config).await.expect("app restarts");
    let s = serve(app).await;
    let again = s.provision(&t.live, A).await;
    assert_eq!(again["outcome"], "ALREADY_EXISTS");
    assert_eq!(again["address"], pa["address"]);
    s.settle().await;
    assert_eq!(usdc_balance(&s, &t.live, B).await, received + 3_000_000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Production mode on the real chain: key custody out of the API process (the server
/// signs through the signing service, `signer.kind = "remote"`, over loopback HTTP), a
/// real SMS gateway and rate feed (their fakes, separate HTTP servers), SQLite, no demo
/// tenant, no simulated chain, payouts disabled. User operations, sponsorships and
/// bundles all verify on chain, and the data directory holds no seed.
#[tokio::test]
async fn a_production_server_with_the_remote_signer_settles_on_a_real_evm_chain_and_holds_no_seed()
{
    if find_anvil().is_none() {
        assert!(
            std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
            "EVM_REQUIRE_ANVIL is set but no anvil binary was found"
        );
        eprintln!("SKIPPED: no anvil binary");
        return;
    }
    const REMOTE_SEED: [u8; 32] = [0x6e; 32];
    const TOKEN: &str = "the-signer-token-of-the-evm-live-test";
    let url = shared_anvil(137).to_string();
    // The operator's tooling deploys the contracts for the seed's sponsor key; the server
    // itself never sees the seed.
    let operator = Arc::new(LocalSigner::from_seed(REMOTE_SEED));
    let w = World::deploy_for(&url, 137, true, operator.clone(), |_| {}).await;
    let signer = spawn_on_loopback(SignerService::new(REMOTE_SEED, TOKEN).unwrap())
        .await
        .unwrap();
    let dir = temp_dir("evm-remote-signer");
    let mut config = test_config();
    common::use_remote_signer(&mut config, &signer.url, TOKEN, &dir);
    config.rails.evm_chains = vec![137];
    config.rails.evm.insert("137".into(), settings(&w, &url));
    config.rails.tron = false;
    let _providers = common::production::production(&mut config).await;
    let s = serve(App::build(config).await.expect("app builds")).await;
    // The details (`rails`) need the metrics token.
    let ready = s.ready_details().await;
    assert_eq!(ready.json()["polygon"], "READY", "{}", ready.text());
    assert_eq!(ready.json()["mode"], "production");
    assert_eq!(ready.json()["rails"]["polygon"]["simulated"], false);
    assert_eq!(ready.json()["tron"], "DISABLED");

    let t = s.tenant("Acme", "100").await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;
    let pa = s.provision(&t.live, A).await;
    let pb = s.provision(&t.live, B).await;
    let addr_a: stablecoin_rails::evm::EvmAddress =
        pa["address"].as_str().unwrap().parse().unwrap();
    let addr_b: stablecoin_rails::evm::EvmAddress =
        pb["address"].as_str().unwrap().parse().unwrap();
    // The address is the one the seed's key owns: the service signs for the seed.
    let owner = owner_of(
        &*operator,
        &KeyPurpose::Wallet(pa["wallet_id"].as_str().unwrap().into()),
    )
    .await;
    assert_eq!(
        pa["address"].as_str().unwrap().to_lowercase(),
        factory_address(&w, &owner.to_string()).await.to_lowercase()
    );

    let f = s.fund_settled(&t.live, A, "20").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(w.usdc_of(&addr_a).await, 20_000_000);

    let (sent, _) = send_settled(&s, &t.live, A, B, "10").await;
    let received = m(sent["recipient_amount"].as_str().unwrap()).0 as u128;
    assert_eq!(w.usdc_of(&addr_b).await, received);
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000);

    // Quotes come from the feed, with the spread: 600 XOF x 1.01 = 606.
    let q = s
        .post(
            &t.live,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":"6060","local_currency":"XOF","target_token":"USDC"}"#,
        )
        .await;
    q.expect(200);
    assert_eq!(q.json()["rate"], "606", "{}", q.text());
    // No payout provider: a withdrawal is refused before anything is held.
    let r = s
        .post(
            &t.live,
            "/v1/users/withdraw",
            &json!({"phone_number": A, "token": "USDC", "amount": "1", "payout_currency": "XOF"})
                .to_string(),
        )
        .await;
    r.expect_err(503, "WITHDRAWALS_UNAVAILABLE");
    assert_eq!(w.usdc_of(&addr_a).await, 10_000_000);

    common::assert_database_and_no_seed(&dir);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
