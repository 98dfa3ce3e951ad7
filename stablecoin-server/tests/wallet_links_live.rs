//! Wallet deep links on the payment page of a real EVM chain (issue #50): Anvil (chain
//! id 137) with its 6-decimal USDC configured through `[rails.evm.137]`. The page's
//! "Open in wallet" link and QR carry an EIP-681 `transfer` of that USDC contract, on
//! chain 137, to the session's own address, for the amount due in base units; decoded
//! back, and paid as a wallet would pay it (an ERC-20 transfer of exactly those fields),
//! the session is paid. In headless Chromium, with screenshots under
//! target/screenshots/wallet_links_live/.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set (as `scripts/test` does).

use crate::common;
use crate::common::browser::Browser;
use crate::common::{build_shifted, serve, test_config};
use serde_json::json;
use stablecoin_checkout::wallet_links::decode_eip681_transfer;
use stablecoin_core::memory::LocalSigner;
use stablecoin_rails::evm::EvmAddress;
use stablecoin_rails::evm::testkit::{World, shared_anvil};
use stablecoin_server::config::Secret;
use std::sync::Arc;

const SEED: u8 = 0x6d;

/// The first `href="ethereum:..."` of the page, unescaped.
fn wallet_href(html: &str) -> String {
    let at = html.find("href=\"ethereum:").expect("an EIP-681 link") + "href=\"".len();
    let end = html[at..].find('"').unwrap();
    html[at..at + end].replace("&amp;", "&")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payment_pages_eip681_request_pays_the_session_on_anvil() {
    if !common::production::anvil_or_skip(&["EVM_REQUIRE_ANVIL"]) {
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer, |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.rails.evm_chains = vec![137];
    let mut chain = common::production::evm_chain(&w, &url);
    chain.confirmations = 1;
    chain.scan_start_block = w.node.eth().block_number().await.unwrap();
    config.rails.evm.insert("137".into(), chain);
    let (app, _clock) = build_shifted(config).await;
    let s = serve(app).await;
    let t = s.tenant("Anvil Shop", "0").await;
    let key = t.business_live.clone();
    let r = s
        .post(
            &key,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25.5", "currency": "USDC", "networks": ["polygon"]}).to_string(),
        )
        .await;
    r.expect(201);
    let id = r.json()["session_id"].as_str().unwrap().to_string();
    let address: EvmAddress = r.json()["payment_options"][0]["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    let page = s
        .send(reqwest::Method::GET, &format!("/pay/{id}"), None, None, &[])
        .await;
    page.expect(200);
    let uri = wallet_href(&page.text());
    let request = decode_eip681_transfer(&uri).unwrap();
    assert_eq!(request.chain_id, Some(137));
    assert_eq!(request.token.parse::<EvmAddress>().unwrap(), w.usdc);
    assert_eq!(request.to.parse::<EvmAddress>().unwrap(), address);
    assert_eq!(
        request.amount, 25_500_000,
        "base units of a 6-decimal token"
    );
    // The status JSON carries the same request.
    let status = s
        .send(
            reqwest::Method::GET,
            &format!("/pay/{id}/status"),
            None,
            None,
            &[],
        )
        .await
        .json();
    assert_eq!(status["options"][0]["wallet_uri"], uri.as_str());

    if let Some(mut b) = Browser::launch("wallet_links_live").await {
        b.navigate(&format!("{}/pay/{id}", s.base)).await;
        let href = b
            .eval("document.querySelector('a.wallet-link').getAttribute('href')")
            .await;
        assert_eq!(href.as_str(), Some(uri.as_str()));
        let qr = b
            .eval("document.querySelectorAll('[data-qr=\"wallet\"] svg.qr').length")
            .await;
        assert_eq!(qr.as_u64(), Some(1));
        b.shot("eip681-request").await;
    }

    // A wallet pays exactly what the request says; the scanner finds it.
    let token: EvmAddress = request.token.parse().unwrap();
    let to: EvmAddress = request.to.parse().unwrap();
    w.mint(token, &to, u64::try_from(request.amount).unwrap())
        .await;
    for _ in 0..3 {
        w.node.mine(1).await;
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{r:?}");
    }
    let read = s
        .get(&key, &format!("/api/v1/checkout/sessions/{id}"))
        .await
        .json();
    assert_eq!(read["status"], "paid", "{read}");
    assert_eq!(read["amount_received"], "25.500000");
    // Nothing is due any more: no request is offered.
    let after = s
        .send(reqwest::Method::GET, &format!("/pay/{id}"), None, None, &[])
        .await
        .text();
    assert!(!after.contains("href=\"ethereum:"));
}
