//! Many operations in one bundle through the whole server on Anvil: the fundings and
//! transfers a tick claims go to the chain as one multi-op `handleOps`, every one of them
//! settles with that bundle's real hash, and the ledger and the chain agree.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set (as `scripts/test` does).

use crate::common;

use crate::common::{serve, temp_dir, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::testkit::{World, find_anvil, shared_anvil};
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig};
use std::collections::BTreeSet;
use std::sync::Arc;

const SEED: u8 = 0x5b;

#[tokio::test]
async fn the_operations_of_one_tick_share_a_bundle_and_each_settles() {
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
    let dir = temp_dir("evm-bundled-live");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), common::production::evm_chain(&w, &url));
    // No background workers: the test ticks, so one tick claims everything queued.
    config.run_workers = false;
    let s = serve(App::build(config).await.expect("app builds")).await;
    let t = s.tenant("Acme", "1000").await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 1_000_000_000).await;
    let phones: Vec<String> = (1..=6).map(|i| format!("+22507000009{i:02}")).collect();
    let mut addresses = Vec::new();
    for p in &phones {
        let provisioned = s.provision(&t.live, p).await;
        let address: stablecoin_rails::evm::EvmAddress =
            provisioned["address"].as_str().unwrap().parse().unwrap();
        addresses.push(address);
    }
    // Six fundings queued, then one tick: one batch, bundled together.
    let mut ids = Vec::new();
    for p in &phones {
        let r = s
            .post(
                &t.live,
                "/v1/users/fund",
                &json!({"phone_number": p, "token": "USDC", "amount": "10"}).to_string(),
            )
            .await;
        r.expect(202);
        ids.push(r.header("location").unwrap());
    }
    s.settle().await;
    s.settle().await;
    let mut hashes = BTreeSet::new();
    for loc in &ids {
        let f: Value = s.get(&t.live, loc).await.json();
        assert_eq!(f["status"], "SETTLED", "{f}");
        hashes.insert(f["tx_hash"].as_str().unwrap().to_string());
    }
    assert!(
        hashes.len() < ids.len(),
        "fundings of one tick share bundles: {hashes:?}"
    );
    // Then transfers between them, also of one tick.
    let mut sent = Vec::new();
    for pair in phones.chunks(2) {
        let r = s
            .post(
                &t.live,
                "/v1/transfers/send",
                &json!({"from_phone_number": pair[0], "to_phone_number": pair[1],
                    "token": "USDC", "quote_id": "DIRECT_CRYPTO:USDC:4"})
                .to_string(),
            )
            .await;
        r.expect(202);
        sent.push((r.header("location").unwrap(), r.json()));
    }
    s.settle().await;
    s.settle().await;
    for (loc, accepted) in &sent {
        let tr: Value = s.get(&t.live, loc).await.json();
        assert_eq!(tr["status"], "SETTLED", "{tr}");
        assert_eq!(tr["recipient_amount"], accepted["recipient_amount"]);
    }
    // The chain and the API agree for every wallet, and nothing was credited twice by
    // the deposit scanner (a bundle's transfers come from wallets and the treasury).
    for (i, p) in phones.iter().enumerate() {
        let bal: Value = s
            .get(
                &t.live,
                &format!("/v1/users/balance?phone_number=%2B{}", &p[1..]),
            )
            .await
            .json();
        let expected = if i % 2 == 0 {
            "6.000000".to_string()
        } else {
            let got = common::m(sent[i / 2].1["recipient_amount"].as_str().unwrap());
            stablecoin_core::domain::money::Micros(10_000_000 + got.0).to_decimal_string()
        };
        assert_eq!(bal["balance_usdc"], expected.as_str(), "{p}: {bal}");
        // ... and the chain holds exactly that at the wallet's address.
        let on_chain = w.usdc_of(&addresses[i]).await;
        assert_eq!(
            on_chain,
            u128::from(common::m(&expected).0),
            "{p}: the token's balanceOf({}) on Anvil",
            addresses[i]
        );
    }
}
