//! A refund by claim link, claimed by the payer on its hosted page, in headless
//! Chromium against the real server over loopback: the page shows the refund, refuses
//! an address that is not the network's with the reason on the page, takes the payer's
//! own address once, and shows the refund sent and then completed, on the simulated
//! chain; the session's payment page shows the payer the refund, its claim link and,
//! at the end, that it was refunded. Screenshots of each state under target/screenshots/refund_claim_page/.

use crate::checkout_refunds::{PAYER, Shop};
use crate::common::browser::Browser;
use crate::common::m;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_by_claim_link_is_claimed_on_its_page() {
    let Some(mut b) = Browser::launch("refund_claim_page").await else {
        return;
    };
    let shop = Shop::open().await;
    let (id, _) = shop.paid_session("30").await;
    let r = shop
        .refund(
            &id,
            json!({"amount": "5", "reason": "paid twice by mistake"}),
            "claim-page",
        )
        .await;
    r.expect(201);
    let v = r.json();
    let rf = v["refund_id"].as_str().unwrap().to_string();
    let url = format!("{}{}", shop.s.base, v["claim_url"].as_str().unwrap());

    // The payment page shows the payer the refund and its claim link.
    let pay = format!("{}/pay/{id}", shop.s.base);
    b.navigate(&pay).await;
    let refunds = b.eval("document.getElementById('refunds').innerText").await;
    assert!(
        refunds.as_str().unwrap().contains("5.000000 USDC"),
        "{refunds}"
    );
    b.shot("payment_page_refund").await;
    b.click_and_load("#refunds a").await;
    assert_eq!(b.eval("location.pathname").await, v["claim_url"]);
    let text = b.eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(text.contains("5.000000 USDC"), "{text}");
    assert!(text.contains("paid twice by mistake"), "{text}");
    assert!(text.contains("order-9"), "{text}");
    assert_eq!(
        b.eval("document.getElementById('refund-status').dataset.status")
            .await,
        "awaiting_claim"
    );
    b.shot("awaiting_claim").await;

    // A TRON-looking address on Polygon is refused on the page, nothing claimed.
    b.fill("#network", "polygon").await;
    b.fill("#address", "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7")
        .await;
    b.click_and_load("#claim-submit").await;
    let error = b
        .eval("document.getElementById('claim-error').innerText")
        .await;
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("not an address of polygon"),
        "{error}"
    );
    assert_eq!(shop.read_refund(&rf).await["status"], "awaiting_claim");
    b.shot("refused_address").await;

    // The payer's own address: claimed, once.
    b.fill("#address", PAYER).await;
    b.click_and_load("#claim-submit").await;
    assert_eq!(
        b.eval("document.getElementById('refund-status').dataset.status")
            .await,
        "pending"
    );
    assert_eq!(
        b.eval("document.getElementById('refund-address').innerText")
            .await,
        PAYER
    );
    assert_eq!(
        b.eval("document.getElementById('claim') === null").await,
        true,
        "no second claim"
    );
    b.shot("claimed").await;

    let done = shop.until_final(&rf).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(shop.on_chain(PAYER).await, m("5"));
    b.navigate(&url).await;
    assert_eq!(
        b.eval("document.getElementById('refund-status').dataset.status")
            .await,
        "completed"
    );
    let tx = b
        .eval("document.getElementById('refund-tx').innerText")
        .await;
    assert_eq!(tx, done["tx_hash"]);
    b.shot("completed").await;
    b.navigate(&pay).await;
    assert_eq!(
        b.eval("document.querySelector('#refunds li').dataset.status")
            .await,
        "completed"
    );
    b.shot("payment_page_refunded").await;
}
