//! Paying a session from a phone wallet in headless Chromium (issue #50 item 4): from
//! the payment page's link to the phone page, the number, a wrong code refused in words
//! (nothing paid), then the right code landing on the payment page, paid. Screenshots
//! under target/screenshots/phone_pay_browser/.

use crate::common::browser::Browser;
use crate::phone_payments_http::{PhoneShop, wrong};

const PAYER: &str = "+2250700000101";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payer_pays_the_session_from_their_phone_wallet_after_a_wrong_code() {
    let Some(mut b) = Browser::launch("phone_pay_browser").await else {
        return;
    };
    let p = PhoneShop::open("40").await;
    let id = p.session("25").await;

    b.navigate(&format!("{}/pay/{id}", p.s.base)).await;
    b.shot("payment-page").await;
    b.click_and_load("#phone-pay-link").await;
    let text = b.eval("document.body.innerText").await;
    let text = text.as_str().unwrap().to_string();
    assert!(
        text.contains("Pay 25.000000 USDC from your wallet") && text.contains("Acme"),
        "{text}"
    );
    b.shot("phone-page").await;

    b.fill("#phone_number", PAYER).await;
    b.click_and_load("#send-code").await;
    let sent = b
        .eval("document.getElementById('code-sent').innerText")
        .await;
    assert!(
        sent.as_str().unwrap().contains("a code is on its way"),
        "{sent}"
    );
    b.shot("code-sent").await;
    let code = p.code(PAYER).expect("the SMS");

    b.fill("#code", &wrong(&code)).await;
    b.click_and_load("#pay-with-code").await;
    let err = b
        .eval("document.getElementById('phone-pay-error').innerText")
        .await;
    assert!(
        err.as_str().unwrap().contains("That code is not right"),
        "{err}"
    );
    assert_eq!(p.read(&id).await["status"], "pending", "nothing paid");
    assert_eq!(p.wallet_ledger().await, 40_000_000);
    b.shot("wrong-code").await;

    b.fill("#code", &code).await;
    b.click_and_load("#pay-with-code").await;
    let path = b.eval("location.pathname").await;
    assert_eq!(path.as_str(), Some(format!("/pay/{id}").as_str()));
    let status = b
        .eval("document.getElementById('pay').getAttribute('data-status')")
        .await;
    assert_eq!(status.as_str(), Some("paid"));
    let text = b.eval("document.body.innerText").await;
    assert!(text.as_str().unwrap().contains("Paid"), "{text}");
    assert_eq!(
        b.eval("document.getElementById('phone-pay-link') === null")
            .await
            .as_bool(),
        Some(true),
        "a paid session offers no phone payment"
    );
    assert_eq!(p.read(&id).await["status"], "paid");
    assert_eq!(p.wallet_ledger().await, 15_000_000);
    b.shot("paid").await;
}
