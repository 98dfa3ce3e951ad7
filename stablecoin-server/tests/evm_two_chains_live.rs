//! Two real EVM chains side by side through the server: Anvil as Polygon (137, 6-decimal
//! tokens) and Anvil as BNB Smart Chain (56, 18-decimal tokens), each configured by its
//! own `[rails.evm.<id>]` table. A wallet has its account on both; fund, send and
//! deposits on BSC move BSC only, to the base unit; readiness is per chain; the balance
//! read takes the chain or sums them.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set (as `scripts/test` does).

use crate::common;

use crate::common::{m, serve, temp_dir, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::EvmAddress;
use stablecoin_rails::evm::testkit::{World, find_anvil, shared_anvil};
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig};
use std::sync::Arc;

const SEED: u8 = 0x6a;
const A: &str = "+2250700000801";
const B: &str = "+2250700000802";

async fn balance(s: &common::Server, key: &str, phone: &str, network: &str) -> Value {
    let r = s
        .get(
            key,
            &format!(
                "/v1/users/balance?phone_number=%2B{}&network={network}",
                &phone[1..]
            ),
        )
        .await;
    r.expect(200);
    r.json()
}

#[tokio::test]
async fn polygon_and_bsc_run_side_by_side_each_to_its_base_unit() {
    if find_anvil().is_none() {
        assert!(
            std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
            "EVM_REQUIRE_ANVIL is set but no anvil binary was found"
        );
        eprintln!("SKIPPED: no anvil binary");
        return;
    }
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let polygon_url = shared_anvil(137).to_string();
    let bsc_url = shared_anvil(56).to_string();
    let polygon = World::deploy_for(&polygon_url, 137, true, signer.clone(), |_| {}).await;
    let bsc = World::deploy_for(&bsc_url, 56, true, signer.clone(), |_| {}).await;
    assert_eq!((polygon.decimals, bsc.decimals), (6, 18));
    let dir = temp_dir("evm-two-chains");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.evm_chains = vec![137, 56];
    config.rails.evm.insert(
        "137".into(),
        common::production::evm_chain(&polygon, &polygon_url),
    );
    let mut bsc_settings = common::production::evm_chain(&bsc, &bsc_url);
    for t in [&mut bsc_settings.usdc, &mut bsc_settings.usdt] {
        t.as_mut().unwrap().decimals = 18;
    }
    config.rails.evm.insert("56".into(), bsc_settings);
    let app = App::build(config).await.expect("app builds");
    let banner = app.banner("127.0.0.1:8080".parse().unwrap());
    assert!(banner.contains("real bsc, polygon"), "{banner}");
    let s = serve(app).await;
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await
        .json();
    assert_eq!(
        (ready["polygon"].as_str(), ready["bsc"].as_str()),
        (Some("READY"), Some("READY")),
        "{ready}"
    );

    let t = s.tenant("Acme", "100").await;
    for w in [&polygon, &bsc] {
        let treasury = w.account(&KeyPurpose::Treasury).await;
        w.mint(w.usdc, &treasury, 100_000_000).await;
    }
    let pa = s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let wallet_a = pa["wallet_id"].as_str().unwrap().to_string();
    let a_polygon = polygon.account(&KeyPurpose::Wallet(wallet_a.clone())).await;
    let a_bsc = bsc.account(&KeyPurpose::Wallet(wallet_a)).await;
    assert_eq!(
        balance(&s, &t.live, A, "bsc").await["address"]
            .as_str()
            .unwrap()
            .to_lowercase(),
        a_bsc.to_string().to_lowercase()
    );

    // Funded on BSC: 20 USDC is 20 * 10^18 base units there, and nothing on Polygon.
    let r = s
        .post(
            &t.live,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "20", "network": "bsc"})
                .to_string(),
        )
        .await;
    r.expect(202);
    s.settle().await;
    s.settle().await;
    let f = s.get(&t.live, &r.header("location").unwrap()).await.json();
    assert_eq!(
        (f["status"].as_str(), f["rail"].as_str()),
        (Some("SETTLED"), Some("bsc")),
        "{f}"
    );
    assert_eq!(bsc.usdc_of(&a_bsc).await, 20 * 10u128.pow(18));
    assert_eq!(polygon.usdc_of(&a_polygon).await, 0);
    assert_eq!(
        balance(&s, &t.live, A, "bsc").await["balance_usdc"],
        "20.000000"
    );
    assert_eq!(
        balance(&s, &t.live, A, "polygon").await["balance_usdc"],
        "0.000000"
    );

    // Sent on BSC with the service fee, to the base unit.
    let r = s
        .post(
            &t.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:10", "network": "bsc"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let sent = r.json();
    s.settle().await;
    s.settle().await;
    let tr = s.get(&t.live, &r.header("location").unwrap()).await.json();
    assert_eq!(
        (tr["status"].as_str(), tr["rail"].as_str()),
        (Some("SETTLED"), Some("bsc")),
        "{tr}"
    );
    let received = m(sent["recipient_amount"].as_str().unwrap()).0;
    let b_wallet = s.provision(&t.live, B).await["wallet_id"]
        .as_str()
        .unwrap()
        .to_string();
    let b_bsc: EvmAddress = bsc.account(&KeyPurpose::Wallet(b_wallet)).await;
    assert_eq!(bsc.usdc_of(&b_bsc).await, bsc.base(received));
    assert_eq!(bsc.usdc_of(&a_bsc).await, 10 * 10u128.pow(18));

    // An outside deposit on BSC is credited to BSC, once.
    bsc.mint(bsc.usdc, &a_bsc, 3_000_000).await;
    s.settle().await;
    s.settle().await;
    assert_eq!(
        balance(&s, &t.live, A, "bsc").await["balance_usdc"],
        "13.000000"
    );
    let all = balance(&s, &t.live, A, "all").await;
    assert_eq!(all["balance_usdc"], "13.000000", "{all}");
    assert_eq!(all["chains"].as_array().unwrap().len(), 2);
    // Polygon, the primary chain, moves on its own: funded (no network named), a send,
    // and an outside deposit, none of which touches BSC.
    let f = s.fund_settled(&t.live, A, "5").await;
    assert_eq!(
        (f["status"].as_str(), f["rail"].as_str()),
        (Some("SETTLED"), Some("polygon")),
        "{f}"
    );
    let r = s
        .post(
            &t.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:2"})
            .to_string(),
        )
        .await;
    r.expect(202);
    s.settle().await;
    s.settle().await;
    let tr = s.get(&t.live, &r.header("location").unwrap()).await.json();
    assert_eq!(
        (tr["status"].as_str(), tr["rail"].as_str()),
        (Some("SETTLED"), Some("polygon")),
        "{tr}"
    );
    polygon.mint(polygon.usdc, &a_polygon, 1_000_000).await;
    s.settle().await;
    s.settle().await;
    assert_eq!(polygon.usdc_of(&a_polygon).await, 4_000_000);
    assert_eq!(
        balance(&s, &t.live, A, "polygon").await["balance_usdc"],
        "4.000000"
    );
    assert_eq!(
        balance(&s, &t.live, A, "bsc").await["balance_usdc"],
        "13.000000"
    );
    assert_eq!(bsc.usdc_of(&a_bsc).await, 13 * 10u128.pow(18));
    // The ledger agrees, per chain.
    let e = s.app.engine();
    let id = stablecoin_core::domain::ids::WalletId(pa["wallet_id"].as_str().unwrap().into());
    let bsc_acct = e.wallet_account(
        &id,
        stablecoin_core::ports::RailId::Evm(56),
        stablecoin_core::domain::money::Token::Usdc,
    );
    let primary = e.wallet_account(
        &id,
        stablecoin_core::ports::RailId::Evm(137),
        stablecoin_core::domain::money::Token::Usdc,
    );
    let ledger = &e.ports().ledger;
    assert_eq!(
        ledger.balance(&bsc_acct.id).await.unwrap().available(),
        13_000_000
    );
    assert_eq!(
        ledger
            .balance(&primary.id)
            .await
            .map(|b| b.available())
            .unwrap_or(0),
        4_000_000
    );
}
