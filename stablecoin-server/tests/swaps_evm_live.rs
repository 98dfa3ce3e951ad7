//! Swaps through the server on a real chain: Anvil (137) with the Uniswap V2 factory,
//! router and pair from the npm packages, `[swaps] venue = "uniswap_v2"`. A swap settles
//! at the pool's price to the base unit, in one sponsored `executeBatch` (approve +
//! swap); its read equals its webhook; the same key creates it once; a pool moved past
//! the slippage allowed fails it with nothing moved.
//!
//! Without anvil or the Uniswap artifacts the test prints SKIPPED and passes, unless
//! `EVM_REQUIRE_ANVIL` is set (as `scripts/test` does).

use crate::common;

use crate::common::webhook_receiver::recording_receiver;
use crate::common::{serve, temp_dir, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::testkit::{
    World, find_anvil, shared_anvil, uniswap_amount_out, uniswap_or_skip,
};
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig, SwapVenueKind};
use std::sync::Arc;

const SEED: u8 = 0x7b;
const A: &str = "+2250700000901";

fn swap_body(amount: &str, bps: u32) -> String {
    json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
        "amount_in": amount, "max_slippage_bps": bps})
    .to_string()
}

#[tokio::test]
async fn swaps_settle_at_the_pools_price_and_fail_past_their_slippage() {
    if find_anvil().is_none() || !uniswap_or_skip() {
        assert!(
            std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
            "EVM_REQUIRE_ANVIL is set but anvil or the Uniswap artifacts are missing"
        );
        eprintln!("SKIPPED: no anvil or Uniswap artifacts");
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer.clone(), |_| {}).await;
    let uni = w.deploy_uniswap(1_000_000_000_000).await;
    let dir = temp_dir("swaps-evm-live");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.webhooks_allow_loopback_http = true;
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), common::production::evm_chain(&w, &url));
    config.swaps.venue = SwapVenueKind::UniswapV2;
    config.swaps.uniswap_v2_router = Some(uni.router.to_string());
    let s = serve(App::build(config).await.expect("app builds")).await;
    let t = s.tenant("Acme", "1000").await;
    let (hook, got) = recording_receiver().await;
    s.post(
        &t.live,
        "/v1/webhook-endpoints",
        &json!({"url": hook, "events": ["swap.settled", "swap.failed"]}).to_string(),
    )
    .await
    .expect(201);
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 1_000_000_000).await;
    let wallet = s.provision(&t.live, A).await["wallet_id"]
        .as_str()
        .unwrap()
        .to_string();
    let account = w.account(&KeyPurpose::Wallet(wallet)).await;
    let f = s.fund_settled(&t.live, A, "100").await;
    assert_eq!(f["status"], "SETTLED", "{f}");

    // Settled at the pool's price, to the base unit.
    let (r_in, r_out) = uni.reserves(&w.node, &w.usdc, &w.usdt).await;
    let expected = uniswap_amount_out(25_000_000, r_in, r_out);
    let r = s
        .post_idem(&t.live, "/v1/swaps", &swap_body("25", 50), "swap-live-1")
        .await;
    r.expect(202);
    let id = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(r.json()["quoted_amount_out"], m_str(expected));
    let again = s
        .post_idem(&t.live, "/v1/swaps", &swap_body("25", 50), "swap-live-1")
        .await;
    assert_eq!(
        again.json()["id"],
        id.as_str(),
        "the same key creates it once"
    );
    s.settle().await;
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    let read = s.get(&t.live, &format!("/v1/swaps/{id}")).await.json();
    assert_eq!(read["status"], "SETTLED", "{read}");
    assert_eq!(read["venue"], "uniswap_v2");
    assert_eq!(read["amount_out"], m_str(expected), "{read}");
    assert_eq!(w.usdc_of(&account).await, 75_000_000);
    assert_eq!(w.node.token_balance(&w.usdt, &account).await, expected);
    assert_eq!(uni.allowance(&w.node, &w.usdc, &account).await, 0);
    assert_eq!(w.node.native_balance(&account).await, 0, "gas sponsored");
    let settled = events(&got, "swap.settled");
    assert_eq!(settled.len(), 1);
    for field in [
        "status",
        "token_in",
        "token_out",
        "amount_in",
        "tx_hash",
        "updated_at",
    ] {
        assert_eq!(settled[0][field], read[field], "{field}");
    }
    assert_eq!(settled[0]["swap_id"], read["id"]);
    let bal = s
        .get(
            &t.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await
        .json();
    assert_eq!(bal["balance_usdt"], m_str(expected));

    // Accepted with no slippage allowed; the pool then moves against it (USDC paid into
    // the pair and synced): the swap fails, nothing moved, the hold returned.
    let r = s.post(&t.live, "/v1/swaps", &swap_body("10", 0)).await;
    r.expect(202);
    let id2 = r.json()["id"].as_str().unwrap().to_string();
    w.mint(w.usdc, &uni.pair, 50_000_000_000).await;
    w.node
        .send(Some(uni.pair), abi::call("sync()", &[] as &[Abi]), 0)
        .await;
    s.settle().await;
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    let failed = s.get(&t.live, &format!("/v1/swaps/{id2}")).await.json();
    assert_eq!(failed["status"], "FAILED", "{failed}");
    let reason = failed["error_reason"].as_str().unwrap();
    assert!(reason.contains("INSUFFICIENT_OUTPUT_AMOUNT"), "{reason}");
    assert!(failed.get("amount_out").is_none());
    assert_eq!(w.usdc_of(&account).await, 75_000_000, "nothing moved");
    assert_eq!(w.node.token_balance(&w.usdt, &account).await, expected);
    assert_eq!(uni.allowance(&w.node, &w.usdc, &account).await, 0);
    let f = events(&got, "swap.failed");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["reason"], failed["error_reason"]);
    assert_eq!(f[0]["swap_id"], id2.as_str());
    // The hold is back: the wallet's ledger balance is its chain balance again.
    let bal = s
        .get(
            &t.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await
        .json();
    assert_eq!(bal["balance_usdc"], "75.000000");
    let e = s.app.engine();
    let wid = stablecoin_core::domain::ids::WalletId(
        s.provision(&t.live, A).await["wallet_id"]
            .as_str()
            .unwrap()
            .into(),
    );
    let acct = e.wallet_account(
        &wid,
        stablecoin_core::ports::RailId::Evm(137),
        stablecoin_core::domain::money::Token::Usdc,
    );
    assert_eq!(
        e.ports()
            .ledger
            .balance(&acct.id)
            .await
            .unwrap()
            .available(),
        75_000_000
    );
}

fn m_str(base: u128) -> String {
    stablecoin_core::domain::money::Micros(base as u64).to_decimal_string()
}

fn events(got: &common::webhook_receiver::Received, name: &str) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap())
        .filter(|e| e["event"] == name)
        .collect()
}
