//! A payment link in headless Chromium (issue #50): the link page with a payer-chosen
//! amount, a refused amount shown in words, then a good one that lands on a payment page
//! of the payer's own, paid (test mode), and the link's count; a deactivated link's page.
//! Screenshots under target/screenshots/payment_links_browser/.

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payer_chooses_an_amount_on_the_link_page_and_pays_the_session_it_opens() {
    let Some(mut b) = Browser::launch("payment_links_browser").await else {
        return;
    };
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let key = &acme.business_test;
    let r = s
        .post(
            key,
            "/api/v1/payment-links",
            &json!({"min_amount": "5", "max_amount": "50", "currency": "USDC",
                "description": "Donation"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let id = r.json()["link_id"].as_str().unwrap().to_string();

    b.navigate(&format!("{}/pay/l/{id}", s.base)).await;
    let text = b.eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(
        text.contains("Donation") && text.contains("Between 5.000000 and 50.000000 USDC"),
        "{text}"
    );
    assert!(text.contains("TEST MODE"));
    b.shot("link-page").await;

    b.fill("#amount", "500").await;
    b.click_and_load("#continue").await;
    let code = b
        .eval("document.getElementById('link-error').getAttribute('data-code')")
        .await;
    assert_eq!(code.as_str(), Some("AMOUNT_OUT_OF_RANGE"));
    let text = b.eval("document.body.innerText").await;
    assert!(
        text.as_str()
            .unwrap()
            .contains("Enter an amount between 5.000000 and 50.000000")
    );
    b.shot("amount-refused").await;

    b.fill("#amount", "12.34").await;
    b.click_and_load("#continue").await;
    let path = b.eval("location.pathname").await;
    let path = path.as_str().unwrap().to_string();
    let session = path
        .strip_prefix("/pay/")
        .expect("on the payment page")
        .to_string();
    assert!(session.starts_with("cs_"), "{path}");
    let text = b.eval("document.body.innerText").await;
    assert!(text.as_str().unwrap().contains("12.340000"), "{text}");
    b.shot("session-page").await;

    let paid = s
        .post(
            key,
            &format!("/api/v1/checkout/sessions/{session}/simulate-payment"),
            "{}",
        )
        .await;
    paid.expect(200);
    assert_eq!(paid.json()["payment_link_id"], id.as_str());
    b.wait_for(
        "document.body.innerText.toLowerCase().includes('paid')",
        Duration::from_secs(10),
    )
    .await;
    b.shot("session-paid").await;
    let l = s
        .get(key, &format!("/api/v1/payment-links/{id}"))
        .await
        .json();
    assert_eq!(
        (l["sessions_count"].as_u64(), l["payments_count"].as_u64()),
        (Some(1), Some(1))
    );

    s.post(key, &format!("/api/v1/payment-links/{id}/deactivate"), "")
        .await
        .expect(200);
    b.navigate(&format!("{}/pay/l/{id}", s.base)).await;
    let text = b.eval("document.body.innerText").await;
    assert!(text.as_str().unwrap().contains("no longer active"));
    assert_eq!(b.eval("document.forms.length").await.as_u64(), Some(0));
    b.shot("deactivated").await;
}
