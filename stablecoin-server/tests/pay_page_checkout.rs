//! The hosted payment page of a real checkout session, on the real server over loopback,
//! in headless Chromium: the page shows the address and amount, the session is paid on
//! the simulated chain while the page is open, and the page turns to confirming, then
//! paid, without a reload. A screenshot of each state is saved under
//! target/screenshots/pay_page_checkout/.

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::json;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{ChainAddress, RailId};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_paid_on_the_simulated_chain_turns_the_open_page_to_paid() {
    let Some(mut b) = Browser::launch("pay_page_checkout").await else {
        return;
    };
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let r = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": "USDC", "networks": ["polygon"],
                "reference": "order-7", "description": "Two coffees"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let session = r.json();
    let id = session["session_id"].as_str().unwrap().to_string();
    let address = session["payment_options"][0]["address"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(session["payment_url"], format!("/pay/{id}"));

    b.navigate(&format!("{}/pay/{id}", s.base)).await;
    b.eval("window.__loadId = Math.random(); true").await;
    let load_id = b.eval("window.__loadId").await;
    let text = b.eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(text.contains(&address), "the address is shown: {text}");
    assert!(text.contains("25"), "the amount is shown: {text}");
    assert!(text.contains("USDC"));
    b.shot("awaiting").await;

    // Paid on the chain; seen (below the confirmation depth), then confirmed.
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    chain
        .mint(&ChainAddress(address.clone()), Token::Usdc, m("25"))
        .unwrap();
    chain.mine(1);
    s.app.state().checkout.tick().await;
    b.wait_for(
        "document.body.innerText.toLowerCase().includes('confirming')",
        Duration::from_secs(10),
    )
    .await;
    b.shot("confirming").await;
    for _ in 0..4 {
        chain.mine(1);
        s.app.state().checkout.tick().await;
    }
    let read = s
        .get(
            &acme.business_live,
            &format!("/api/v1/checkout/sessions/{id}"),
        )
        .await
        .json();
    assert_eq!(read["status"], "paid");
    b.wait_for(
        "document.body.innerText.toLowerCase().includes('paid') && \
         !document.body.innerText.toLowerCase().includes('confirming')",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(b.eval("window.__loadId").await, load_id, "no reload");
    b.shot("paid").await;

    // Another session's id, or a made-up one, shows nothing.
    let r = s
        .send(
            reqwest::Method::GET,
            "/pay/cs_01JD0000000000000000000000",
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
    assert!(!r.text().contains(&address));
}
